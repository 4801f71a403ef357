package trace_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// eventLine prints an event as tracee.c prints the probe's hit: "NAME V0
// V1 …", strings as text, and <fault> for an argument not read.
func eventLine(ev *trace.Event) string {
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(ev.Name, "tracee:"))
	for _, v := range ev.Args {
		b.WriteByte(' ')
		switch {
		case v.Fault:
			b.WriteString("<fault>")
		case v.IsString:
			b.WriteString(v.Str)
		default:
			b.WriteString(v.String())
		}
	}
	return b.String()
}

// traceEvents compiles probes against the tracee, starts it, runs
// commands in the tracee, and returns the events received until it quit.
func traceEvents(t *testing.T, bin string, probes []trace.EventProbe, commands ...string) (events []*trace.Event, printed []string) {
	t.Helper()
	tc := testutil.StartTracee(t, bin)
	// Answering, it has its executable mapped (Start returns earlier).
	tc.Do(t, "run 0")
	prog, err := trace.CompileEvents(probes, &trace.CompileOptions{PIDs: []int{tc.PID()}})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Start(prog, &trace.Options{PIDs: []int{tc.PID()}, OnEvent: func(ev *trace.Event) error {
		if ev.PID != tc.PID() || ev.TID != tc.PID() || ev.Comm != "tracee" || ev.Time == 0 || ev.FullName == "" || ev.Path == "" {
			return fmt.Errorf("event %+v: not of the tracee", ev)
		}
		events = append(events, ev.Clone())
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	done := make(chan error, 1)
	go func() { done <- tr.Run(context.Background()) }()
	for _, c := range commands {
		printed = append(printed, tc.Do(t, c)...)
	}
	tc.Quit(t)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rec, upd, err := tr.Lost(); err != nil || rec != 0 || upd != 0 {
		t.Errorf("Lost: %d records, %d updates, %v", rec, upd, err)
	}
	return events, printed
}

// TestEvents traces tracee.c's probes with CompileEvents and compares each
// event with the line the tracee printed for the hit: signed and unsigned
// integers of every size, strings, faults (an integer read as a string),
// and per-probe filters on integers and strings.
func TestEvents(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildTracee(t, "-O2")
	usdt := func(name string) string { return "usdt:" + bin + ":tracee:" + name }
	tests := []struct {
		name   string
		probes []trace.EventProbe
		// want picks, from the lines the tracee printed, those the
		// events must equal, in order; fix turns a printed line into
		// the event's.
		want func(line string) (string, bool)
	}{
		{
			name:   "ints",
			probes: []trace.EventProbe{{Probe: usdt("ints")}},
			want:   prefixed("ints "),
		},
		{
			name:   "globals and stack",
			probes: []trace.EventProbe{{Probe: usdt("global")}, {Probe: usdt("stack")}},
			want: func(l string) (string, bool) {
				return l, strings.HasPrefix(l, "global ") || strings.HasPrefix(l, "stack ")
			},
		},
		{
			name:   "string",
			probes: []trace.EventProbe{{Probe: usdt("str"), Strings: []int{0}}},
			want:   prefixed("str "),
		},
		{
			name:   "short string",
			probes: []trace.EventProbe{{Probe: usdt("str"), Strings: []int{0}, StrLen: 4}},
			want: func(l string) (string, bool) {
				f := strings.Fields(l)
				if f[0] != "str" {
					return "", false
				}
				return "str " + f[1][:3] + " " + f[2], true
			},
		},
		{
			// arg1 is k: an address nothing maps.
			name:   "fault",
			probes: []trace.EventProbe{{Probe: usdt("str"), Strings: []int{0, 1}}},
			want: func(l string) (string, bool) {
				f := strings.Fields(l)
				if f[0] != "str" {
					return "", false
				}
				return "str " + f[1] + " <fault>", true
			},
		},
		{
			name:   "one argument",
			probes: []trace.EventProbe{{Probe: usdt("ints"), Args: 1}},
			want: func(l string) (string, bool) {
				f := strings.Fields(l)
				if f[0] != "ints" {
					return "", false
				}
				return "ints " + f[1], true
			},
		},
		{
			name: "filters",
			probes: []trace.EventProbe{
				{Probe: usdt("ints"), Filter: "arg2 < -100000"},
				{Probe: usdt("str"), Strings: []int{0}, Filter: `str(arg0) == "hello-2" || arg1 == 0`},
				{Probe: usdt("consts")},
			},
			want: func(l string) (string, bool) {
				f := strings.Fields(l)
				switch f[0] {
				case "ints":
					return l, f[3] != "-3" // k = 0
				case "str":
					return l, f[1] == "hello-2" || f[2] == "0"
				case "consts":
					return l, true
				}
				return "", false
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, printed := traceEvents(t, bin, tt.probes, "run 4")
			var want, have []string
			for _, l := range printed {
				if w, ok := tt.want(l); ok {
					want = append(want, w)
				}
			}
			for _, ev := range events {
				have = append(have, eventLine(ev))
				if ev.Probe < 0 || ev.Probe >= len(tt.probes) || !strings.HasSuffix(tt.probes[ev.Probe].Probe, ev.Name) {
					t.Errorf("event of %s says it is of probes[%d]", ev.Name, ev.Probe)
				}
			}
			if len(want) == 0 || !slices.Equal(have, want) {
				t.Errorf("have\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func prefixed(p string) func(string) (string, bool) {
	return func(l string) (string, bool) { return l, strings.HasPrefix(l, p) }
}

// TestEventsSigned checks that events say which arguments are signed, as
// the probe's note does.
func TestEventsSigned(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildTracee(t, "-O2")
	events, _ := traceEvents(t, bin, []trace.EventProbe{{Probe: "usdt:" + bin + ":tracee:ints"}}, "run 1")
	if len(events) != 1 || len(events[0].Args) != 8 {
		t.Fatalf("have %d events (%v), want 1 of 8 arguments", len(events), events)
	}
	// c, sh, i, l are signed; uc, us, ui, ul are not.
	for i, v := range events[0].Args {
		if want := i < 4; v.Signed != want {
			t.Errorf("arg%d: Signed %v, want %v", i, v.Signed, want)
		}
	}
}

// TestCompileEventsErrors: bad requests fail before anything is compiled,
// and errors in a probe or filter name the field and column.
func TestCompileEventsErrors(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O0")
	probe := "usdt:" + bin + ":tracee:ints"
	tests := []struct {
		name   string
		probes []trace.EventProbe
		file   string // of the CompileError; "" for another error
		col    int
	}{
		{"none", nil, "", 0},
		{"empty", []trace.EventProbe{{}}, "", 0},
		{"brace", []trace.EventProbe{{Probe: probe + " { exit(); } " + probe}}, "", 0},
		{"newline", []trace.EventProbe{{Probe: probe, Filter: "1\n"}}, "", 0},
		{"args", []trace.EventProbe{{Probe: probe, Args: 13}}, "", 0},
		{"strlen", []trace.EventProbe{{Probe: probe, StrLen: 1}}, "", 0},
		{"string beyond args", []trace.EventProbe{{Probe: probe, Args: 1, Strings: []int{1}}}, "", 0},
		{"filter", []trace.EventProbe{{Probe: probe}, {Probe: probe, Filter: "arg0 > nosuch"}}, "probes[1].Filter", 8},
		{"probe", []trace.EventProbe{{Probe: "usdt:" + bin + ":tracee:nosuch"}}, "probes[0].Probe", 1},
		{"string the probe lacks", []trace.EventProbe{{Probe: probe}, {Probe: "usdt:" + bin + ":tracee:str", Strings: []int{2}}}, "probes[1].Probe", 1},
		{"injection", []trace.EventProbe{{Probe: probe, Filter: "1)/ {} " + probe + " /(1"}}, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := trace.CompileEvents(tt.probes, nil)
			if err == nil {
				t.Fatalf("compiled %d sites, want an error", prog.Sites())
			}
			t.Log(err)
			var ce *trace.CompileError
			if tt.file == "" {
				if errors.As(err, &ce) && ce.File != "probes" {
					// A CompileError is fine as long as it blames a field.
					if !strings.HasPrefix(ce.File, "probes[") {
						t.Errorf("error %v in file %q", err, ce.File)
					}
				}
				return
			}
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a CompileError", err)
			}
			if ce.File != tt.file || ce.Line != 1 || ce.Col != tt.col {
				t.Errorf("error at %s:%d:%d, want %s:1:%d (%v)", ce.File, ce.Line, ce.Col, tt.file, tt.col, err)
			}
		})
	}
}

// TestPIDs traces two processes at once: a map keyed by pid counts each
// one's hits separately, and Run ends once both have exited.
func TestPIDs(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildTracee(t, "-O2")
	a, b := testutil.StartTracee(t, bin), testutil.StartTracee(t, bin)
	pids := []int{a.PID(), b.PID()}
	a.Do(t, "run 0")
	b.Do(t, "run 0")
	prog, err := trace.Compile("pids.bt", `usdt::tracee:consts { @[pid] = count(); }`, &trace.CompileOptions{PIDs: pids})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	tr, err := trace.Start(prog, &trace.Options{PIDs: pids, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	done := make(chan error, 1)
	go func() { done <- tr.Run(context.Background()) }()
	a.Do(t, "run 2")
	b.Do(t, "run 5")
	a.Quit(t)
	b.Quit(t)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("\n\n@[%d]: 2\n@[%d]: 5\n", a.PID(), b.PID())
	if out.String() != want {
		t.Errorf("have\n%s\nwant\n%s", out.String(), want)
	}
}

// TestEventsFunctions traces a native function's entry (the C ABI's
// argument registers) and return (its value as arg0) with CompileEvents.
func TestEventsFunctions(t *testing.T) {
	testutil.RequireBPF(t)
	// -O0 keeps fill(long *a, int n, int k) a function of its own name.
	bin := testutil.BuildTracee(t, "-O0")
	events, _ := traceEvents(t, bin, []trace.EventProbe{
		{Probe: "uprobe:" + bin + ":fill", Args: 3},
		{Probe: "uretprobe:" + bin + ":fill"},
	}, "run 3")
	var have []string
	for _, ev := range events {
		if ev.Name != "fill" || ev.Args[0].Signed {
			t.Errorf("event of %q, arg0 signed %v", ev.Name, ev.Args[0].Signed)
		}
		if ev.Probe == 1 {
			have = append(have, fmt.Sprintf("ret %d", len(ev.Args)))
			continue
		}
		have = append(have, fmt.Sprintf("fill %d %d", ev.Args[1].Int(), ev.Args[2].Int()))
	}
	want := []string{"fill 4 0", "ret 1", "fill 4 1", "ret 1", "fill 4 2", "ret 1"}
	if !slices.Equal(have, want) {
		t.Errorf("have %q, want %q", have, want)
	}
}
