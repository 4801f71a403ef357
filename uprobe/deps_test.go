package uprobe

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestListingLinksNoTracer: the packages that list probes and functions
// link neither cilium/ebpf nor go-delve/delve, so a program that only
// lists pays for neither.
func TestListingLinksNoTracer(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, pkg := range listingPackages {
		out, err := exec.Command(goTool, "list", "-deps", "github.com/usdtkit/usdtkit/"+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/cilium/ebpf") || strings.HasPrefix(dep, "github.com/go-delve/delve") {
				t.Errorf("%s links %s", pkg, dep)
				break
			}
		}
	}
}

// listingPackages are the packages TestListingLinksNoTracer checks.
var listingPackages = []string{"elfnotes", "uprobe", "internal/elf/symtab", "internal/proc/procfs", "internal/proc/target"}
