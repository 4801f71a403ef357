// Package btprint prints what a bpftrace program prints: maps, printf,
// time and print, in text or JSON, byte for byte as bpftrace 0.17 does. It
// knows nothing of probes or BPF.
//
// Entry points: AppendMap is print(@m); AppendMaps what SIGUSR1 prints;
// AppendExit what follows exit(). AppendPrintf, AppendTime, AppendValue,
// AppendAttached and AppendLost print the other lines.
//
// A Map holds values already summed over CPUs. The printers never change
// a Map and never fail. Sorting and the few places where usdtkit prints
// the right value and bpftrace a wrong one are in docs/language.md.
//
// Sources: bpftrace v0.17.0 src/output.cpp, src/bpftrace.cpp,
// src/format_string.cpp and src/mapkey.cpp; glibc's printf and strftime.
package btprint
