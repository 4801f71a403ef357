package trace_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
	"github.com/usdtkit/usdtkit/uprobe"
)

// spinner is a C program calling libc's spin lock functions (each call
// of spinCalls, none of pthread_spin_lock).
const spinner = `#include <pthread.h>
int main(void) {
	pthread_spinlock_t l;
	pthread_spin_init(&l, 0);
	for (int i = 0; i < 3; i++)
		if (pthread_spin_trylock(&l) == 0)
			pthread_spin_unlock(&l);
	pthread_spin_destroy(&l);
	return 0;
}
`

// spinCalls are the calls spinner makes, by function.
var spinCalls = map[string]int{"pthread_spin_init": 1, "pthread_spin_trylock": 3, "pthread_spin_unlock": 3, "pthread_spin_destroy": 1}

// buildSpinner compiles spinner and returns the executable's path.
func buildSpinner(t *testing.T) string {
	t.Helper()
	gcc := testutil.RequireTool(t, "gcc")
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "spinner.c"), filepath.Join(dir, "spinner")
	if err := os.WriteFile(src, []byte(spinner), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(gcc, "-O1", "-o", bin, src, "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return bin
}

// lockedSpin reads libc's pthread_spin* functions and returns those
// whose first instruction has a lock prefix (which the kernel refuses to
// probe), and the calls spinner makes to the others.
func lockedSpin(t *testing.T) (locked []string, accepted int) {
	t.Helper()
	fns, err := uprobe.Functions(&uprobe.ListOptions{Selectors: []uprobe.Selector{{Path: "libc", Func: "pthread_spin*"}}})
	if err != nil || len(fns) == 0 {
		t.Fatalf("libc's pthread_spin*: %v (%d found)", err, len(fns))
	}
	lockedAt := make(map[uint64]bool)
	for _, fn := range fns {
		if fn.Machine != 62 { // EM_X86_64
			skipUnlessStrict(t, fn.Path+" is not x86-64")
		}
		f, err := os.Open(fn.Path)
		if err != nil {
			t.Fatal(err)
		}
		code := make([]byte, 15)
		n, _ := f.ReadAt(code, int64(fn.Symbol.Offset))
		f.Close()
		inst, err := x86asm.Decode(code[:n], 64)
		if err != nil {
			t.Fatalf("%s at %#x: %v", fn.Symbol.Name, fn.Symbol.Offset, err)
		}
		name, _, _ := strings.Cut(fn.Symbol.Name, "@")
		if slices.ContainsFunc(inst.Prefix[:], func(p x86asm.Prefix) bool { return p&0xff == x86asm.PrefixLOCK }) {
			locked = append(locked, name)
			lockedAt[fn.Symbol.Offset] = true
		}
	}
	slices.Sort(locked)
	// Functions may share their code (one site listed under one name).
	for name, calls := range spinCalls {
		fns, err := uprobe.Functions(&uprobe.ListOptions{Selectors: []uprobe.Selector{{Path: "libc", Func: name}}})
		if err != nil || len(fns) != 1 {
			t.Fatalf("libc's %s: %v (%d found)", name, err, len(fns))
		}
		if !lockedAt[fns[0].Symbol.Offset] {
			accepted += calls
		}
	}
	if len(locked) == 0 {
		skipUnlessStrict(t, "no pthread_spin* function of libc starts with a lock-prefixed instruction")
	}
	return locked, accepted
}

// TestStartRefusedSites traces libc's pthread_spin* in a command: the
// functions whose first instruction the kernel refuses (a lock prefix,
// found here by decoding libc) are skipped with one warning naming them,
// and the others are traced; a program of refused functions only fails
// with them listed. With multi and classic links.
func TestStartRefusedSites(t *testing.T) {
	testutil.RequireBPF(t)
	testutil.RequireTool(t, "gcc")
	locked, accepted := lockedSpin(t)
	bin := buildSpinner(t)
	for _, classic := range []bool{false, true} {
		t.Run("classic="+strconv.FormatBool(classic), func(t *testing.T) {
			t.Run("some", func(t *testing.T) {
				c := exec.Command(bin)
				prog, err := trace.Compile("t.bt", `uprobe:libc:pthread_spin* { @ = count(); }`, &trace.CompileOptions{Executable: c.Path})
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				var warnings []error
				tr, err := trace.Start(prog, &trace.Options{Command: c, Stdout: &out, Classic: classic, Warn: func(err error) { warnings = append(warnings, err) }})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { tr.Close() })
				if err := tr.Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				var re *trace.RefusedError
				if len(warnings) != 1 || !errors.As(warnings[0], &re) {
					t.Fatalf("warnings %v, want one *RefusedError", warnings)
				}
				if have := refusedFuncs(re); !slices.Equal(have, locked) {
					t.Errorf("refused %v, want %v", have, locked)
				}
				m := regexp.MustCompile(`(?m)^@: (\d+)$`).FindStringSubmatch(out.String())
				if accepted == 0 && m != nil || accepted > 0 && (m == nil || m[1] != strconv.Itoa(accepted)) {
					t.Errorf("output %q, want @: %d", out.String(), accepted)
				}
			})
			t.Run("all", func(t *testing.T) {
				c := exec.Command(bin)
				prog, err := trace.Compile("t.bt", "uprobe:libc:"+strings.Join(locked, ",uprobe:libc:")+" { @ = count(); }", &trace.CompileOptions{Executable: c.Path})
				if err != nil {
					t.Fatal(err)
				}
				tr, err := trace.Start(prog, &trace.Options{Command: c, Stdout: &bytes.Buffer{}, Classic: classic})
				if err == nil {
					tr.Close()
					t.Fatal("Start attached a program whose sites the kernel refuses")
				}
				var re *trace.RefusedError
				if !errors.As(err, &re) || re.Attached != 0 {
					t.Fatalf("error %v, want a *RefusedError with nothing attached", err)
				}
				if have := refusedFuncs(re); !slices.Equal(have, locked) {
					t.Errorf("refused %v, want %v", have, locked)
				}
			})
		})
	}
}

// refusedFuncs returns the refused sites' functions, sorted, and checks
// each names its object.
func refusedFuncs(re *trace.RefusedError) []string {
	var fns []string
	for _, s := range re.Sites {
		if s.Object == "" || !strings.Contains(s.Object, "libc") {
			return []string{"site without libc's path: " + s.Object}
		}
		fns = append(fns, s.Func)
	}
	slices.Sort(fns)
	return fns
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

// TestRefusedSitesAgreeWithBpftrace attaches to each of libc's
// pthread_spin* functions alone, for every process, with usdtkit and with
// bpftrace: usdtkit refuses exactly the functions bpftrace cannot attach
// to.
func TestRefusedSitesAgreeWithBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	testutil.RequireTracefs(t)
	testutil.DefaultSIGINTForChildren()
	testutil.RequireTool(t, "bpftrace")
	fns, err := uprobe.Functions(&uprobe.ListOptions{Selectors: []uprobe.Selector{{Path: "libc", Func: "pthread_spin*"}}})
	if err != nil || len(fns) == 0 {
		t.Fatalf("libc's pthread_spin*: %v (%d found)", err, len(fns))
	}
	refused := 0
	for _, fn := range fns {
		name, _, _ := strings.Cut(fn.Symbol.Name, "@")
		t.Run(name, func(t *testing.T) {
			prog, err := trace.Compile("t.bt", "uprobe:"+fn.Path+":"+name+" { @ = count(); }", nil)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := trace.Start(prog, &trace.Options{Stdout: &bytes.Buffer{}})
			var re *trace.RefusedError
			if err != nil && !errors.As(err, &re) {
				t.Fatal(err)
			}
			if tr != nil {
				if err := tr.Close(); err != nil {
					t.Error(err)
				}
			}
			_, bterr := testutil.RunBpftrace(t, "-e", "uprobe:"+fn.Path+":"+name+" { @ = count(); } BEGIN { exit(); }")
			if (re != nil) != (bterr != nil) {
				t.Errorf("usdtkit: %v; bpftrace: %v", err, bterr)
			}
			if re != nil {
				refused++
			}
		})
	}
	if refused == 0 {
		skipUnlessStrict(t, "no pthread_spin* function of libc is refused by the kernel")
	}
}
