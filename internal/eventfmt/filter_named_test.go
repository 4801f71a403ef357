package eventfmt

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
)

func TestParseNamedFilter(t *testing.T) {
	for _, tt := range []struct {
		in   string
		name string
		want bpfgen.Filter
		err  bool
	}{
		{in: "n > 3", name: "n", want: bpfgen.Filter{Op: bpfgen.OpGt, Value: 3}},
		{in: "s.hits==-1", name: "s.hits", want: bpfgen.Filter{Op: bpfgen.OpEq, Value: -1, Signed: true}},
		{in: "arg2 != 0x10", want: bpfgen.Filter{Arg: 2, Op: bpfgen.OpNe, Value: 16}},
		{in: "argx <= 1", name: "argx", want: bpfgen.Filter{Op: bpfgen.OpLe, Value: 1}},
		{in: "_x9 >= 0", name: "_x9", want: bpfgen.Filter{Op: bpfgen.OpGe}},
		{in: "9x > 1", err: true},
		{in: "a..b > 1", err: true},
		{in: "n", err: true},
		{in: "n > y", err: true},
		{in: "arg12 > 1", err: true},
	} {
		name, f, err := ParseNamedFilter(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("ParseNamedFilter(%q) error %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if err == nil && (name != tt.name || f != tt.want) {
			t.Errorf("ParseNamedFilter(%q) = %q, %+v; want %q, %+v", tt.in, name, f, tt.name, tt.want)
		}
	}
}

func FuzzParseNamedFilter(f *testing.F) {
	for _, s := range []string{"n > 3", "s.next.hits==-1", "arg2 != 0x10", "a..b > 1", "_ <= 0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, flt, err := ParseNamedFilter(s)
		if err != nil {
			if name != "" || flt != (bpfgen.Filter{}) {
				t.Fatalf("error %v with a result %q %+v", err, name, flt)
			}
			return
		}
		if name != "" && (!IsName(name) || flt.Arg != 0) {
			t.Fatalf("name %q, arg %d", name, flt.Arg)
		}
		if name == "" && (flt.Arg < 0 || flt.Arg >= bpfgen.MaxArgs) {
			t.Fatalf("arg %d", flt.Arg)
		}
	})
}

func TestAppendNamed(t *testing.T) {
	f, err := ParseFormat(`"%s n=%d hits=%5d ok=%d p=%p %s %d", path, n, s.hits, ok, p, missing, arg0`)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{"path": "/x", "n": int64(-3), "s.hits": uint64(40), "ok": true, "p": uint64(0xc000)}
	ev := &bpfgen.Event{NArgs: 1, Args: []uint64{7}, Strings: []string{""}}
	have := string(f.AppendNamed(nil, ev, func(name string) (any, bool) { v, ok := vals[name]; return v, ok }))
	want := "/x n=-3 hits=   40 ok=1 p=0xc000 <missing?> 7"
	if have != want {
		t.Errorf("have %q, want %q", have, want)
	}
	if names := f.Names(); len(names) != 6 || names[2] != "s.hits" {
		t.Errorf("Names: %v", names)
	}
}
