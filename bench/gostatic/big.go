//go:build usdtkit_bigbench

package main

// Built with -tags usdtkit_bigbench, gostatic is a ~20 MB executable, as
// large programs are, for BenchmarkStaticLink: more code from large
// packages, and 12 MB of initialised data that the post-link step scans
// for probe tables.

import (
	"os"

	_ "github.com/cilium/ebpf/link"
	_ "github.com/go-delve/delve/pkg/proc"
	_ "net/http"
)

var pad = [12 << 20]byte{1}

func init() {
	if len(os.Args) > 1<<20 {
		println(pad[len(os.Args)])
	}
}
