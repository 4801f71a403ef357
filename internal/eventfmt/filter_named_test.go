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
