package sdt_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestListingLinksNoBPF: package sdt lists probes and parses their
// arguments without linking cilium/ebpf; tracing is package trace's.
func TestListingLinksNoBPF(t *testing.T) {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", "github.com/usdtkit/usdtkit/sdt").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/cilium/ebpf") {
			t.Errorf("sdt links %s", dep)
		}
	}
}
