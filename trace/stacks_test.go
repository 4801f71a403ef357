package trace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// runChain traces src on a fresh chain.c built with flags, makes it call
// leaf through "levels" twice and "sort" once, lets it exit, and returns
// the ended Tracer (closed with the test) and what it printed.
func runChain(t *testing.T, src string, copts *trace.CompileOptions, flags ...string) (*trace.Tracer, string) {
	t.Helper()
	testutil.RequireBPF(t)
	bin := stacktest.BuildChain(t, flags...)
	tr := testutil.StartTracee(t, bin)
	tr.Do(t, "loop 0")
	o := trace.CompileOptions{PID: tr.PID()}
	if copts != nil {
		o.FramePointerStacks, o.Unwind = copts.FramePointerStacks, copts.Unwind
	}
	tracer, out := startOn(t, tr, bin, src, &o)
	tr.Do(t, "levels")
	tr.Do(t, "sort")
	tr.Do(t, "levels")
	tr.Quit(t)
	if err := tracer.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tracer, out.String()
}

// startOn compiles src, with BIN replaced by bin, for tracee tr with o
// and starts it, printing into the buffer it returns; the Tracer is
// closed with the test.
func startOn(t *testing.T, tr *testutil.Tracee, bin, src string, o *trace.CompileOptions) (*trace.Tracer, *bytes.Buffer) {
	t.Helper()
	prog, err := trace.Compile("t.bt", strings.ReplaceAll(src, "BIN", bin), o)
	if err != nil {
		t.Fatal(err)
	}
	out := new(bytes.Buffer)
	tracer, err := trace.Start(prog, &trace.Options{PID: tr.PID(), Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tracer.Close() })
	return tracer, out
}

func symbols(fs []trace.Frame) []string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Symbol)
	}
	return s
}

// TestStacks reads the stack-keyed maps of a finished trace with
// Tracer.Stacks: frames symbolized after the process exited, the other
// key fields and the values.
func TestStacks(t *testing.T) {
	tracer, _ := runChain(t, `uprobe:BIN:leaf { @[ustack, comm] = count(); @s[ustack(perf, 3)] = sum(3); }`, nil, "-O0", "-fno-omit-frame-pointer")
	stacks, err := tracer.Stacks()
	if err != nil {
		t.Fatal(err)
	}
	levels := []string{"leaf", "level3", "level2", "level1", "main"}
	found := map[string]bool{}
	for _, s := range stacks {
		syms := symbols(s.Frames)
		switch {
		case s.Map == "@" && len(syms) >= 5 && slices.Equal(syms[:5], levels):
			found["@ levels"] = true
			if s.Value != 2 || !slices.Equal(s.Keys, []string{"chain"}) {
				t.Errorf("@ levels: value %d, keys %q; want 2, [chain]", s.Value, s.Keys)
			}
		case s.Map == "@" && len(syms) >= 3 && slices.Equal(syms[:2], []string{"leaf", "cmp"}):
			found["@ sort"] = true
			if s.Value == 0 || s.Frames[2].Object == s.Frames[0].Object {
				t.Errorf("@ sort: value %d, third frame %+v: want hits and a C library frame", s.Value, s.Frames[2])
			}
		case s.Map == "@s" && slices.Equal(syms, levels[:3]):
			found["@s levels"] = true
			if s.Value != 6 || len(s.Keys) != 0 {
				t.Errorf("@s levels: value %d, keys %q; want 6, none", s.Value, s.Keys)
			}
		}
		if s.PID == 0 {
			t.Errorf("%s: no pid", s.Map)
		}
	}
	for _, k := range []string{"@ levels", "@ sort", "@s levels"} {
		if !found[k] {
			t.Errorf("no %s stack in %+v", k, stacks)
		}
	}
}

// TestStacksPrintfMethod: printf'd stacks are unwound with CFI from a
// copy of the stack by default, and are the kernel's frame-pointer walk
// with CompileOptions.FramePointerStacks: under qsort, whose C library
// code keeps no frame pointers, only the first goes on to sort_them.
func TestStacksPrintfMethod(t *testing.T) {
	const src = `uprobe:BIN:leaf { printf("%s|\n", ustack); }`
	for _, fp := range []bool{false, true} {
		tracer, out := runChain(t, src, &trace.CompileOptions{FramePointerStacks: fp}, "-O0", "-fno-omit-frame-pointer")
		parts := strings.Split(out, "|\n")
		if len(parts) < 3 {
			t.Fatalf("FramePointerStacks %v: %d stacks:\n%s", fp, len(parts)-1, out)
		}
		if !strings.Contains(parts[0], "\n        level3+") || !strings.Contains(parts[0], "\n        main+") {
			t.Errorf("FramePointerStacks %v: levels stack %q", fp, parts[0])
		}
		if has := strings.Contains(parts[1], "\n        sort_them+"); has == fp {
			t.Errorf("FramePointerStacks %v: sort stack has sort_them: %v, want %v:\n%s", fp, has, !fp, parts[1])
		}
		methods := tracer.UnwindMethods()
		if fp != (len(methods) == 0) {
			t.Errorf("FramePointerStacks %v: unwind methods %+v", fp, methods)
		}
		for _, m := range methods {
			if m.Method != "cfi" || m.Frames == 0 {
				t.Errorf("FramePointerStacks %v: %+v: want only CFI (every object has it)", fp, m)
			}
		}
	}
}

// TestStacksCommand: the stacks of a command traced from its first
// instruction (Options.Command) name its libraries' functions, though the
// command had only its executable and the loader mapped when the trace
// started, and has exited when the maps are printed (bpftrace 0.17 prints
// bare addresses for a -c command): its mappings are read again at its
// first stack.
func TestStacksCommand(t *testing.T) {
	testutil.RequireBPF(t)
	bin := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	prog, err := trace.Compile("t.bt", strings.ReplaceAll(`uprobe:BIN:leaf { @[ustack(perf)] = count(); printf("hit\n"); }`, "BIN", bin), &trace.CompileOptions{Executable: bin})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &signalWriter{seen: make(chan struct{})}
	tracer, err := trace.Start(prog, &trace.Options{Command: cmd, Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tracer.Close() })
	done := make(chan error, 1)
	go func() { done <- tracer.Run(context.Background()) }()
	if _, err := io.WriteString(stdin, "levels\nsort\n"); err != nil {
		t.Fatal(err)
	}
	// The first printf comes after the record announcing the process:
	// once it is printed, its mappings were read again.
	<-out.seen
	stdin.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	text := out.String()
	libcFrames := 0
	for l := range strings.Lines(text) {
		if !strings.HasPrefix(l, "\t") {
			continue
		}
		// "\tADDR FUNC+OFF (OBJECT)"
		f := strings.Fields(l)
		if len(f) != 3 || strings.HasPrefix(f[1], "0x") || strings.HasPrefix(f[1], "[") {
			t.Errorf("frame %q is not named", l)
		}
		if len(f) == 3 && strings.Contains(f[2], "libc.so") {
			libcFrames++
		}
	}
	if libcFrames == 0 || !strings.Contains(text, " main+") {
		t.Errorf("no C library frame or no main:\n%s", text)
	}
}

// signalWriter keeps what is written and closes seen at the first write.
type signalWriter struct {
	mu   sync.Mutex
	b    bytes.Buffer
	seen chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() == 0 && len(p) > 0 {
		close(w.seen)
	}
	return w.b.Write(p)
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestStacksCallerAtPushRBP: at the entry of a function that starts with
// push %rbp, where usdtkit leaves the caller to the kernel's walk on
// Linux 6.10 and later, and of one that starts with endbr64, where it
// reads the caller itself, the stack has the immediate caller.
func TestStacksCallerAtPushRBP(t *testing.T) {
	for _, flags := range [][]string{
		{"-O0", "-fno-omit-frame-pointer"},
		{"-O0", "-fno-omit-frame-pointer", "-fcf-protection=branch"},
	} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			tracer, _ := runChain(t, `uprobe:BIN:level3 { @[ustack] = count(); }`, nil, flags...)
			stacks, err := tracer.Stacks()
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"level3", "level2", "level1", "main"}
			for _, s := range stacks {
				if syms := symbols(s.Frames); len(syms) >= 4 && slices.Equal(syms[:4], want) && s.Value == 2 {
					return
				}
			}
			t.Errorf("no stack %q with 2 hits in %+v", want, stacks)
		})
	}
}

// TestFrameJSON: a Frame marshals with every key, "" and 0 where unknown,
// the address in hex.
func TestFrameJSON(t *testing.T) {
	tests := []struct {
		name string
		f    trace.Frame
		want string
	}{
		{"named", trace.Frame{Addr: 0x55d0c0de1234, Object: "/usr/bin/app", Offset: 0x1234, Symbol: "main", SymOffset: 18, File: "/src/app.c", Line: 7},
			`{"address":"0x55d0c0de1234","object":"/usr/bin/app","object_offset":4660,"symbol":"main","offset":18,"file":"/src/app.c","line":7,"inlined":false}`},
		{"inlined", trace.Frame{Addr: 0x401000, Object: "/bin/x", Offset: 0x1000, Symbol: "main.middle", File: "/x.go", Line: 3, Inlined: true},
			`{"address":"0x401000","object":"/bin/x","object_offset":4096,"symbol":"main.middle","offset":0,"file":"/x.go","line":3,"inlined":true}`},
		{"unknown", trace.Frame{Addr: 0x7f0000001000},
			`{"address":"0x7f0000001000","object":"","object_offset":0,"symbol":"","offset":0,"file":"","line":0,"inlined":false}`},
		{"bad utf-8", trace.Frame{Addr: 1, Symbol: "f\xff"},
			`{"address":"0x1","object":"","object_offset":0,"symbol":"f\ufffd","offset":0,"file":"","line":0,"inlined":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("have %s\nwant %s", b, tt.want)
			}
		})
	}
}

// TestStacksKeyMethod: in one block, a map key's stack is walked in the
// program and a printf'd stack is unwound with CFI in user space: under
// qsort, whose C library code keeps no frame pointers, the key's stack
// walked by frame pointer (UnwindFP) ends in the C library (as
// bpftrace's does), the key's stack walked with CFI in the program (the
// default) goes on to sort_them and main, as the printf'd one does;
// Tracer.UnwindMethods counts the printf'd frames only, all by CFI.
func TestStacksKeyMethod(t *testing.T) {
	for _, unwind := range []trace.Unwind{trace.UnwindFP, trace.UnwindCFIBPF} {
		t.Run(unwind.String(), func(t *testing.T) {
			tracer, out := runChain(t, `uprobe:BIN:leaf { @[ustack] = count(); printf("%s|\n", ustack); }`, &trace.CompileOptions{Unwind: unwind}, "-O0", "-fno-omit-frame-pointer")
			printed := strings.Split(out, "|\n")
			if len(printed) < 3 || !strings.Contains(printed[1], "\n        sort_them+") || !strings.Contains(printed[1], "\n        main+") {
				t.Fatalf("printf'd sort stack without sort_them and main:\n%s", out)
			}
			stacks, err := tracer.Stacks()
			if err != nil {
				t.Fatal(err)
			}
			sorts := 0
			for _, s := range stacks {
				syms := symbols(s.Frames)
				if len(syms) < 2 || syms[1] != "cmp" {
					continue
				}
				sorts++
				libc := len(s.Frames) >= 3 && s.Frames[2].Object != s.Frames[0].Object
				full := slices.Contains(syms, "sort_them") && slices.Contains(syms, "main")
				if !libc || full != (unwind == trace.UnwindCFIBPF) {
					t.Errorf("key stack under qsort %q: want cmp, then the C library, then sort_them and main: %v", syms, unwind == trace.UnwindCFIBPF)
				}
			}
			if sorts == 0 {
				t.Errorf("no key stack under qsort in %+v", stacks)
			}
			methods := tracer.UnwindMethods()
			if len(methods) == 0 {
				t.Error("no unwind methods for the printf'd stacks")
			}
			for _, m := range methods {
				if m.Method != "cfi" {
					t.Errorf("%+v: want only CFI (every object has it)", m)
				}
			}
		})
	}
}
