package trace_test

import (
	"context"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// TestGoFunctionEvents sends events of the Go target's main.handle at its
// entry (with a filter by name and the field s.hits) and at its RETs:
// each carries the goroutine id and the values by name, as the target
// says it passed and returned them, the long path cut and marked
// truncated; entries and returns pair by goroutine.
func TestGoFunctionEvents(t *testing.T) {
	testutil.RequireBPF(t)
	exe := buildGoTarget(t)
	cmd := exec.Command(exe)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	prog, err := trace.CompileEvents([]trace.EventProbe{
		{Probe: "uprobe:" + exe + ":main.handle", Filter: "args.n > 3 && args.s.hits >= 0", Fields: []string{"s.hits"}},
		{Probe: "uretprobe:" + exe + ":main.handle"},
	}, &trace.CompileOptions{PID: cmd.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	events := runGoEvents(t, prog, cmd.Process.Pid, stdin)
	// Run ends when the target exits; its output is whole once Wait has
	// seen the copying goroutine end.
	if err := cmd.Wait(); err != nil {
		t.Fatalf("target: %v", err)
	}
	type call struct {
		path string
		n    int64
		code uint64
		ok   bool
	}
	var calls []call
	for _, l := range strings.Split(stdout.String(), "\n") {
		f := strings.Fields(l)
		if len(f) == 5 && f[0] == "call" {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			code, _ := strconv.ParseUint(f[3], 10, 64)
			calls = append(calls, call{f[1], n, code, f[4] == "true"})
		}
	}
	if len(calls) != 11 {
		t.Fatalf("target printed %d calls:\n%s", len(calls), stdout.String())
	}
	// Entries by n (each n is one call's), returns by goroutine.
	want, byN := map[int64]call{}, map[int64]call{}
	for _, c := range calls {
		if c.n > 3 {
			want[c.n], byN[c.n] = c, c
		}
	}
	entries := map[uint64]int64{} // goid -> n
	returns := 0
	for _, ev := range events {
		if !ev.Go || ev.GoID == 0 {
			t.Errorf("event %+v: want a Go function's, with a goroutine id", ev)
			continue
		}
		if ev.Results {
			returns++
			if ev.Probe != 1 || len(ev.Args) != 2 || ev.Args[0].Name != "status" || ev.Args[1].Name != "msg" {
				t.Errorf("return event %+v", ev)
				continue
			}
			n, ok := entries[ev.GoID]
			if !ok {
				continue // an entry the filter dropped
			}
			c := byN[n]
			if ev.Args[0].Go != n*10 || ev.Args[1].Go != ("ok:" + c.path)[:min(len(c.path)+3, trace.DefaultStrLen-2)] {
				t.Errorf("call n=%d: results %v %v, want %d %q", n, ev.Args[0], ev.Args[1], n*10, "ok:"+c.path)
			}
			continue
		}
		names := []string{}
		for _, v := range ev.Args {
			names = append(names, v.Name)
		}
		if ev.Probe != 0 || ev.Name != "main.handle" || strings.Join(names, ",") != "path,n,code,ok,s,s.hits" {
			t.Errorf("entry event %s %s: values %v", ev.Name, ev.FullName, names)
			continue
		}
		n, _ := ev.Args[1].Go.(int64)
		c, ok := want[n]
		if !ok {
			t.Errorf("entry with n=%v: the filter keeps n > 3", ev.Args[1])
			continue
		}
		delete(want, n)
		entries[ev.GoID] = n
		path := c.path[:min(len(c.path), trace.DefaultStrLen-2)]
		if ev.Args[0].Go != path || ev.Args[0].Truncated != (len(c.path) > len(path)) || ev.Args[2].Go != c.code || ev.Args[3].Go != c.ok {
			t.Errorf("call %+v: entry values %v", c, ev.Args)
		}
		if _, isPtr := ev.Args[4].Go.(trace.GoPointer); !isPtr || ev.Args[4].Type != "*main.server" {
			t.Errorf("s = %#v (%s), want a pointer", ev.Args[4].Go, ev.Args[4].Type)
		}
		if h, _ := ev.Args[5].Go.(int64); h < 0 || h >= int64(len(calls)) || ev.Args[5].Type != "int" {
			t.Errorf("s.hits = %v (%s), want 0 to %d", ev.Args[5], ev.Args[5].Type, len(calls)-1)
		}
		if s := ev.Args[0].String(); !strings.HasPrefix(s, strconv.Quote(path)) {
			t.Errorf("path prints %s", s)
		}
	}
	if len(want) != 0 || returns != len(calls) {
		t.Errorf("entries not seen %v, %d returns: want every call with n > 3 and %d returns", want, returns, len(calls))
	}
}

// TestGoFunctionEventAtOffset: an event inside a Go function (FUNC+OFFSET
// on an instruction) carries its goroutine id and no values, which DWARF
// does not place there.
func TestGoFunctionEventAtOffset(t *testing.T) {
	testutil.RequireBPF(t)
	exe := buildGoTarget(t)
	cmd := exec.Command(exe)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// main.many's second instruction: the first is at most 15 bytes, and
	// Compile refuses an offset that does not start an instruction.
	var prog *trace.Program
	for off := 1; off < 16 && prog == nil; off++ {
		prog, err = trace.CompileEvents([]trace.EventProbe{{Probe: "uprobe:" + exe + ":main.many+" + strconv.Itoa(off)}}, &trace.CompileOptions{PID: cmd.Process.Pid})
	}
	if prog == nil {
		t.Fatalf("no instruction boundary in main.many's first 16 bytes: %v", err)
	}
	events := runGoEvents(t, prog, cmd.Process.Pid, stdin)
	if len(events) != 1 || !events[0].Go || events[0].GoID == 0 || len(events[0].Args) != 0 || !strings.HasPrefix(events[0].Name, "main.many+") {
		t.Errorf("events %+v, want one of main.many+N with a goroutine id and no values", events)
	}
}

// runGoEvents traces prog's events in process pid, tells the target to go
// (a line on stdin) and returns the events once the target has exited.
func runGoEvents(t *testing.T, prog *trace.Program, pid int, stdin io.Writer) []*trace.Event {
	t.Helper()
	var events []*trace.Event
	tr, err := trace.Start(prog, &trace.Options{PID: pid, OnEvent: func(ev *trace.Event) error {
		events = append(events, ev.Clone())
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return events
}
