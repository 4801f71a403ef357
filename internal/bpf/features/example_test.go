package features_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"

	"github.com/usdtkit/usdtkit/internal/bpf/features"
)

// A tracer branches on the feature probes: it prefers one uprobe_multi link
// per file and falls back to classic links when the kernel lacks them.
func ExampleHaveUprobeMulti() {
	err := features.HaveUprobeMulti()
	switch {
	case err == nil:
		fmt.Println("one uprobe_multi link per file")
	case errors.Is(err, ebpf.ErrNotSupported):
		fmt.Println("one classic uprobe link per site")
	case errors.Is(err, os.ErrPermission):
		fmt.Println("tracing needs root or CAP_BPF+CAP_PERFMON")
	default:
		fmt.Println(err)
	}
}

// Check is what `usdtkit doctor` prints.
func ExampleCheck() {
	for _, r := range features.Check() {
		if r.OK {
			fmt.Printf("ok       %s: %s\n", r.Name, r.Detail)
		} else {
			fmt.Printf("missing  %s: %v; %s\n", r.Name, r.Err, r.Impact)
		}
	}
}
