package unwind

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestBPFWalkMatchesUnwindCorpus: on installed Debian binaries built
// without frame pointers, each stack the program's CFI walk finds (what
// a stack-keyed map has by default) is the stack Unwind finds (what
// --unwind cfi prints) in the copy of the same hit: one program at the
// C library's malloc, in the process the test starts, walks and then
// copies the stack. Each command waits reading its stdin until the
// tables know its mappings, then reads its input and exits. Where the
// stack is deeper than the copy, the walk begins with Unwind's frames
// and goes on.
func TestBPFWalkMatchesUnwindCorpus(t *testing.T) {
	testutil.RequireBPF(t)
	lines := strings.Repeat("delta\nalpha\ncharlie\nbravo\n", 200)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"sort", []string{"sort"}},
		{"mawk", []string{"mawk", "{ n[$0]++ } END { for (k in n) print k, n[k] }"}},
		{"perl", []string{"perl", "-e", "my @l = <STDIN>; print sort @l"}},
		{"python3.11", []string{testutil.Python311, "-c", "import sys; print(sorted(sys.stdin.read().split())[:3])"}},
		{"gdb", []string{"gdb", "-nx", "-q", "-batch", "-ex", "python import sys; sys.stdin.read()", "-ex", "info types ^no_such_type$"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := tc.args[0]
			if filepath.IsAbs(bin) {
				testutil.RequireFile(t, bin)
			} else {
				bin = testutil.RequireTool(t, bin)
			}
			cmd := exec.Command(bin, tc.args[1:]...)
			cmd.Env = append(os.Environ(), "LC_ALL=C")
			tr := testutil.StartCmd(t, cmd)
			tr.Discard()
			waitReadingStdin(t, tr.PID())
			sp, u, b := processTables(t, tr.PID(), &Options{MaxDepth: stackcap.DefaultMaxFrames})
			libc := ""
			for _, m := range sp.exec {
				if strings.HasPrefix(filepath.Base(m.Path), "libc.so") {
					libc = m.Path
				}
			}
			if libc == "" {
				t.Fatalf("%s maps no libc.so", bin)
			}
			p := stacktest.Attach(t, libc, "malloc", &stacktest.Options{Mode: stacktest.CFIWalkCopy, Entry: true, PID: tr.PID(), CFIMaps: b.Maps()})
			if _, err := tr.Stdin().Write([]byte(lines)); err != nil {
				t.Fatal(err)
			}
			tr.Quit(t)
			recs := p.Pending(t)
			if len(recs) == 0 {
				t.Fatalf("%s called malloc never", bin)
			}
			objs := map[string]bool{}
			longest := 0
			stops := map[Stop]int{}
			for i, r := range recs {
				c := r.Copy
				want, err := u.Unwind(sp, elf.EM_X86_64, Regs{PC: c.IP, SP: c.SP, FP: c.FP, Entry: true}, Stack{Base: c.Base, Data: c.Stack})
				if err != nil {
					t.Fatal(err)
				}
				var wantPCs []uint64
				for _, f := range want.Frames {
					wantPCs = append(wantPCs, f.PC)
					objs[filepath.Base(sp.objectPath(f.PC))] = true
				}
				longest = max(longest, len(wantPCs))
				stops[want.Stop]++
				ok := slices.Equal(r.Frames, wantPCs)
				if want.Stop == StopOutsideCopy {
					ok = len(r.Frames) > len(wantPCs) && slices.Equal(r.Frames[:len(wantPCs)], wantPCs)
				}
				if !ok {
					t.Errorf("hit %d of %d: the program's walk\n%s\nUnwind (stop %v, %v)\n%s", i, len(recs), framesText(sp, r.Frames), want.Stop, want.Err, framesText(sp, wantPCs))
				}
			}
			t.Logf("%d hits, up to %d frames, stops %v, through %v", len(recs), longest, stops, slices.Sorted(func(yield func(string) bool) {
				for o := range objs {
					if !yield(o) {
						return
					}
				}
			}))
			// Whole stacks: to the outermost frame (_start), the
			// comparison is of more than a frame or two.
			if stops[StopEnd] == 0 || longest < 5 {
				t.Errorf("no stack is whole (stops %v) or none has 5 frames (longest %d)", stops, longest)
			}
		})
	}
}

// objectPath returns the path of the file mapped executable at pc, or "".
func (s *Space) objectPath(pc uint64) string {
	if m, ok := s.Mapping(pc); ok {
		return m.Path
	}
	return ""
}

// framesText lists frames as "object+offset" lines, for messages.
func framesText(sp *Space, pcs []uint64) string {
	var b strings.Builder
	for _, pc := range pcs {
		if m, ok := sp.Mapping(pc); ok {
			fmt.Fprintf(&b, "\t%#x %s+%#x\n", pc, filepath.Base(m.Path), pc-m.Start+m.Offset)
		} else {
			fmt.Fprintf(&b, "\t%#x\n", pc)
		}
	}
	return b.String()
}

// waitReadingStdin returns once process pid waits in read(2) on its
// standard input (/proc/PID/syscall: "0 0x0 …"): it then maps every
// library it links and has loaded what it loads before reading.
func waitReadingStdin(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(string(b), "0 0x0 ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d does not read its stdin: %s", pid, b)
		}
		// No event says a process blocked in a system call.
		time.Sleep(time.Millisecond)
	}
}
