// Package usdtlink attaches your own BPF programs to USDT probes: programs
// compiled against libbpf's <bpf/usdt.bpf.h> and loaded with cilium/ebpf,
// and programs written in Go with cilium/ebpf/asm.
package usdtlink
