package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestPackageInitsLight runs usdtkit --version with the runtime's init
// trace and checks that no package of usdtkit allocates more than 16 KiB
// at init: every usdtkit process (each trace) pays for every package
// initialiser linked, so tables and regexps only some commands use are
// built on first use (sync.OnceValue), not at start.
func TestPackageInitsLight(t *testing.T) {
	cmd := exec.Command(usdtkitBin(t), "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("usdtkit --version: %v\n%s", err, out)
	}
	seen := 0
	for _, l := range strings.Split(string(out), "\n") {
		// init PKG @T ms, C ms clock, B bytes, N allocs
		f := strings.Fields(l)
		if len(f) < 11 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/usdtkit/usdtkit/") || f[8] != "bytes," {
			continue
		}
		seen++
		bytes, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if bytes > 16<<10 {
			t.Errorf("%s allocates %d bytes at init; build what only some commands use on first use", f[1], bytes)
		}
	}
	if seen == 0 {
		t.Fatalf("no init line of a usdtkit package in:\n%s", out)
	}
}
