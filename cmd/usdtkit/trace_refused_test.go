package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/uprobe"
)

// TestTraceLibcGlobRefused traces every function of libc in a short
// command: the sites the kernel refuses (here the ones whose first
// instruction has a lock prefix, found by decoding libc; the kernel may
// refuse others) are skipped with one warning naming them, and the
// others are traced instead of the trace failing.
func TestTraceLibcGlobRefused(t *testing.T) {
	testutil.RequireBPF(t)
	true_ := testutil.RequireFile(t, "/bin/true")
	locked, path := lockedLibcSites(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"trace", "-e", "uprobe:libc:* { @ = count(); }", "-c", true_}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	var warnings []string
	for l := range strings.Lines(errb.String()) {
		if strings.HasPrefix(l, "usdtkit: warning: ") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("warnings %q, want one", warnings)
	}
	for off, names := range locked {
		found := false
		for _, n := range names {
			found = found || strings.Contains(warnings[0], " "+n+" in "+path+": ")
		}
		if !found {
			t.Errorf("warning %q names none of %v (offset %#x)", warnings[0], names, off)
		}
	}
	m := regexp.MustCompile(`(?m)^@: (\d+)$`).FindStringSubmatch(out.String())
	if m == nil || m[1] == "0" {
		t.Errorf("output %q, want @: N with the command's calls", out.String())
	}
}

// lockedLibcSites returns the names of the functions of libc whose first
// instruction has a lock prefix, by file offset, and libc's path.
func lockedLibcSites(t *testing.T) (map[uint64][]string, string) {
	t.Helper()
	fns, err := uprobe.Functions(&uprobe.ListOptions{Selectors: []uprobe.Selector{{Path: "libc", Func: "*"}}})
	if err != nil || len(fns) == 0 {
		t.Fatalf("libc's functions: %v (%d found)", err, len(fns))
	}
	f, err := os.Open(fns[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	locked := make(map[uint64][]string)
	for _, fn := range fns {
		if fn.Machine != 62 { // EM_X86_64
			skipUnlessStrict(t, fn.Path+" is not x86-64")
		}
		code := make([]byte, 15)
		n, _ := f.ReadAt(code, int64(fn.Symbol.Offset))
		inst, err := x86asm.Decode(code[:n], 64)
		if err != nil {
			continue
		}
		for _, p := range inst.Prefix {
			if p&0xff == x86asm.PrefixLOCK {
				name, _, _ := strings.Cut(fn.Symbol.Name, "@")
				locked[fn.Symbol.Offset] = append(locked[fn.Symbol.Offset], name)
				break
			}
		}
	}
	if len(locked) == 0 {
		skipUnlessStrict(t, "no function of libc starts with a lock-prefixed instruction")
	}
	return locked, fns[0].Path
}

// skipUnlessStrict skips the test, or fails it where skips are failures
// (testutil.Strict).
func skipUnlessStrict(t *testing.T, why string) {
	t.Helper()
	if testutil.Strict() {
		t.Fatal(why)
	}
	t.Skip(why)
}
