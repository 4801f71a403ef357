package eventfmt

import (
	"errors"
	"strconv"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
)

func TestParseFilter(t *testing.T) {
	tests := []struct {
		in      string
		want    bpfgen.Filter
		wantErr bool
	}{
		{"arg0 > 100", bpfgen.Filter{Arg: 0, Op: bpfgen.OpGt, Value: 100}, false},
		{"arg1==3", bpfgen.Filter{Arg: 1, Op: bpfgen.OpEq, Value: 3}, false},
		{"arg2 != -1", bpfgen.Filter{Arg: 2, Op: bpfgen.OpNe, Value: -1, Signed: true}, false},
		{"arg11 <= 0x10", bpfgen.Filter{Arg: 11, Op: bpfgen.OpLe, Value: 16}, false},
		{"arg3 >= 0", bpfgen.Filter{Arg: 3, Op: bpfgen.OpGe}, false},
		{"arg4 < 18446744073709551615", bpfgen.Filter{Arg: 4, Op: bpfgen.OpLt, Value: -1}, false},
		{"arg12 > 1", bpfgen.Filter{}, true},
		{"arg01 > 1", bpfgen.Filter{}, true},
		{"x > 1", bpfgen.Filter{}, true},
		{"arg0 > ", bpfgen.Filter{}, true},
		{"arg0 ~ 1", bpfgen.Filter{}, true},
		{"arg0 > 1x", bpfgen.Filter{}, true},
		{"arg0 > 99999999999999999999", bpfgen.Filter{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			have, err := ParseFilter(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if have != tt.want {
				t.Errorf("have %+v, want %+v", have, tt.want)
			}
		})
	}
	var ne *strconv.NumError
	if _, err := ParseFilter("arg0 > 99999999999999999999"); !errors.Is(err, strconv.ErrRange) || errors.As(err, &ne) {
		t.Errorf("out of range: err = %v, want one wrapping strconv.ErrRange, without the NumError's text", err)
	}
}

func TestFormat(t *testing.T) {
	ev := &bpfgen.Event{
		NArgs:   4,
		Args:    []uint64{0x1000, 0x2000, 42, uint64(0xffffffffffffffff)},
		Strings: []string{"script.py", "main", "", ""},
		Faults:  0,
	}
	faulted := *ev
	faulted.Faults = 1 << 1
	tests := []struct {
		format  string
		ev      *bpfgen.Event
		want    string
		strings uint16
		nargs   int
	}{
		{`"%s %s:%d", str(arg0), str(arg1), arg2`, ev, "script.py main:42", 0b11, 3},
		{`%s %s:%d`, ev, "script.py main:42", 0b11, 3},
		{`"%d %u %x %#x %p", arg3, arg3, arg2, arg2, arg0`, ev, "-1 18446744073709551615 2a 0x2a 0x1000", 0, 4},
		{`"[%-10s] %5d %05d|%c\n", str(arg0), arg2, arg2, arg2`, ev, "[script.py ]    42 00042|*\n", 1, 3},
		{`"100%% of %d", arg2`, ev, "100% of 42", 0, 3},
		{`"no args"`, ev, "no args", 0, 0},
		{`"%s", str(arg1)`, &faulted, "<fault>", 0b10, 2},
		{`"%d", arg9`, ev, "<arg9?>", 0, 10},
		{`"%o \"q\"\t", arg2`, ev, "52 \"q\"\t", 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			f, err := ParseFormat(tt.format)
			if err != nil {
				t.Fatal(err)
			}
			if have := string(f.Append(nil, tt.ev)); have != tt.want {
				t.Errorf("have %q, want %q", have, tt.want)
			}
			if f.StringArgs() != tt.strings || f.NArgs() != tt.nargs {
				t.Errorf("StringArgs %b NArgs %d, want %b %d", f.StringArgs(), f.NArgs(), tt.strings, tt.nargs)
			}
		})
	}
}

func TestParseFormatErrors(t *testing.T) {
	for _, in := range []string{
		`"%s", arg0`,                             // %s needs str()
		`"%d", str(arg0)`,                        // str() needs %s
		`"%d %d", arg0`,                          // too few arguments
		`"%d", arg0, arg1`,                       // too many
		`"%d" arg0`,                              // no comma
		`"%d`,                                    // unterminated
		`"%q", arg0`,                             // unknown verb
		`"%d", str(arg0`,                         // missing )
		`"\z"`,                                   // unknown escape
		`"%5"`,                                   // verb without letter
		`"%d", arg99`,                            // no such argument
		`%d %d %d %d %d %d %d %d %d %d %d %d %d`, // more verbs than arguments exist
	} {
		if f, err := ParseFormat(in); err == nil {
			t.Errorf("ParseFormat(%s) = %+v, want an error", in, f)
		}
	}
}

func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{`"%s %s:%d", str(arg0), str(arg1), arg2`, `%s %d`, `"%-5.3x\n", arg11`, `"%"`, `%%`, `"%s n=%d", path, s.hits`} {
		f.Add(s)
	}
	ev := &bpfgen.Event{NArgs: 2, Args: []uint64{1, 2}, Strings: []string{"a", "b"}}
	f.Fuzz(func(t *testing.T, s string) {
		fm, err := ParseFormat(s)
		if err != nil {
			if fm != nil {
				t.Fatalf("error %v with a result", err)
			}
			return
		}
		fm.Append(nil, ev)
		fm.AppendNamed(nil, ev, func(name string) (any, bool) { return int64(len(name)), len(name)%2 == 0 })
		if fm.NArgs() > bpfgen.MaxArgs {
			t.Fatalf("NArgs %d", fm.NArgs())
		}
	})
}

func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"arg0 > 100", "arg1==-3", "arg11 <= 0xff", "arg0 !="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := ParseFilter(s)
		if err != nil && flt != (bpfgen.Filter{}) {
			t.Fatalf("error %v with a result %+v", err, flt)
		}
		if err == nil && (flt.Arg < 0 || flt.Arg >= bpfgen.MaxArgs) {
			t.Fatalf("arg %d", flt.Arg)
		}
	})
}
