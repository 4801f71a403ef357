package btlang

import (
	"path"
	"testing"
)

// TestProbeStringRoundTrip checks that a probe whose parts are Printable
// prints as a spec that parses back to it, and that the bytes no part can
// hold are refused.
func TestProbeStringRoundTrip(t *testing.T) {
	for _, s := range probePartSeeds {
		checkProbeString(t, s)
	}
	for _, s := range []string{`a"b`, "a\nb"} {
		if err := (&Probe{Kind: ProbeUSDT, Path: "/bin/x", Provider: "p", Name: s}).Printable(); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

// probePartSeeds are parts that need quoting, or not.
var probePartSeeds = []string{
	"a", "*", "lib c", "{x}", "a:b", "x/*", "f+1", "1f", `\*`, "é\x00\x1b", "BEGIN", "a,b",
	"} BEGIN { exit(); } x", `a"b`, "/memfd:x (deleted)", "main.(*T).m", "$1", "ns::f(int)",
}

func checkProbeString(t *testing.T, s string) {
	t.Helper()
	usdt := &Probe{Kind: ProbeUSDT, Path: "/x y/" + s, Provider: "p", Name: s}
	fn := &Probe{Kind: ProbeUprobe, Path: "/x", Name: s}
	for _, want := range []*Probe{usdt, fn} {
		if err := want.Printable(); err != nil {
			return
		}
		spec := want.String()
		prog, err := Parse("f", []byte(spec+" {}"))
		if err != nil {
			t.Fatalf("%q: spec %q: %v", s, spec, err)
		}
		if len(prog.Blocks) != 1 || len(prog.Blocks[0].Probes) != 1 {
			t.Fatalf("%q: spec %q parses as %d blocks", s, spec, len(prog.Blocks))
		}
		have := *prog.Blocks[0].Probes[0]
		have.At = Pos{}
		if have != *want {
			t.Errorf("%q: spec %q parses as %+v, want %+v", s, spec, have, *want)
		}
	}
}

// FuzzProbeString: every Printable probe prints as a spec that parses
// back to it, in one probe of one block.
func FuzzProbeString(f *testing.F) {
	for _, s := range probePartSeeds {
		f.Add(s)
	}
	f.Add("x\ny")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return
		}
		checkProbeString(t, s)
	})
}

// TestQuoteGlob checks that a quoted name matches itself only.
func TestQuoteGlob(t *testing.T) {
	for _, s := range []string{"a", "operator[]", "main.(*T).m", `a\b`, "x?", "*"} {
		q := QuoteGlob(s)
		if ok, err := path.Match(q, s); !ok || err != nil {
			t.Errorf("%q: %q does not match it (%v)", s, q, err)
		}
		if s != "a" {
			if ok, _ := path.Match(q, "a"); ok {
				t.Errorf("%q: %q matches %q", s, q, "a")
			}
		}
	}
}

// TestFullName checks the probe builtin's names: unquoted, a usdt probe's
// provider always.
func TestFullName(t *testing.T) {
	for _, tt := range []struct {
		p    Probe
		want string
	}{
		{Probe{Kind: ProbeUSDT, Path: "/bin/a b", Provider: "p", Name: "n"}, "usdt:/bin/a b:p:n"},
		{Probe{Kind: ProbeUprobe, Path: "/bin/x", Name: "main.(*T).m", Offset: 4}, "uprobe:/bin/x:main.(*T).m+4"},
		{Probe{Kind: ProbeUretprobe, Path: "/bin/x", Name: "ns::f(int)"}, "uretprobe:/bin/x:ns::f(int)"},
		{Probe{Kind: ProbeProfile, Unit: "hz", Period: 99}, "profile:hz:99"},
	} {
		if have := tt.p.FullName(); have != tt.want {
			t.Errorf("%+v: have %q, want %q", tt.p, have, tt.want)
		}
	}
}

// TestProbeSpellings checks the probe spellings bpftrace 0.23 and later
// accept besides 0.17's: begin and end, and interval with the units of
// profile (us, hz).
func TestProbeSpellings(t *testing.T) {
	tests := []struct {
		src    string
		want   Probe
		string string
	}{
		{"begin", Probe{Kind: ProbeBegin, Lower: true}, "begin"},
		{"end", Probe{Kind: ProbeEnd, Lower: true}, "end"},
		{"BEGIN", Probe{Kind: ProbeBegin}, "BEGIN"},
		{"interval:us:100", Probe{Kind: ProbeInterval, Unit: "us", Period: 100}, "interval:us:100"},
		{"i:hz:997", Probe{Kind: ProbeInterval, Unit: "hz", Period: 997}, "interval:hz:997"},
		{"interval:s:1e3", Probe{Kind: ProbeInterval, Unit: "s", Period: 1000}, "interval:s:1000"},
		{"interval:s:1_0_0_0", Probe{Kind: ProbeInterval, Unit: "s", Period: 1000}, "interval:s:1000"},
		// Durations (bpftrace 0.21 and later), as whole microseconds.
		{"interval:100ms", Probe{Kind: ProbeInterval, Unit: "us", Period: 100_000}, "interval:us:100000"},
		{"i:5s", Probe{Kind: ProbeInterval, Unit: "us", Period: 5_000_000}, "interval:us:5000000"},
		{"interval:1us", Probe{Kind: ProbeInterval, Unit: "us", Period: 1}, "interval:us:1"},
		{"interval:5m", Probe{Kind: ProbeInterval, Unit: "us", Period: 300_000_000}, "interval:us:300000000"},
		{"profile:1us", Probe{Kind: ProbeProfile, Unit: "us", Period: 1}, "profile:us:1"},
		{"p:10ms", Probe{Kind: ProbeProfile, Unit: "us", Period: 10_000}, "profile:us:10000"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			prog, err := Parse("stdin", []byte(tt.src+" { exit(); }"))
			if err != nil {
				t.Fatal(err)
			}
			have := *prog.Blocks[0].Probes[0]
			have.At = Pos{}
			if have != tt.want {
				t.Errorf("have %+v, want %+v", have, tt.want)
			}
			if s := have.String(); s != tt.string {
				t.Errorf("String: have %q, want %q", s, tt.string)
			}
		})
	}
	for _, src := range []string{"begin:f {}", "end:x:y {}", "interval:unit:100 {}", "interval:s:1b {}", "interval {}", "interval:s:0 {}",
		"interval:100 {}", "profile:10 {}", "interval:1x {}", "interval:10000000000m {}"} {
		if _, err := Parse("stdin", []byte(src)); err == nil {
			t.Errorf("%s: no error", src)
		}
	}
}

// TestBeginPredicate: a predicate right after begin, as after BEGIN.
func TestBeginPredicate(t *testing.T) {
	prog, err := Parse("stdin", []byte("begin/1/{ exit(); } end/0/{ exit(); }"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range prog.Blocks {
		if b.Pred == nil {
			t.Errorf("%s: no predicate", b.Probes[0])
		}
	}
}
