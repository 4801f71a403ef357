package printf

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

func TestParse(t *testing.T) {
	tests := []struct {
		format string
		args   []Arg
		want   string
		kinds  []ArgKind
	}{
		{"%d %s\n", []Arg{{Int: -3}, {Str: "x"}}, "-3 x\n", []ArgKind{ArgInt, ArgString}},
		{"no verbs %% %i %+d\n", nil, "no verbs %% %i %+d\n", []ArgKind{}},
		{"%%d", ints(7), "%d", []ArgKind{ArgInt}},
		{"%%%%d", ints(7), "%%d", []ArgKind{ArgInt}},
		{"%%%d%%", ints(7), "%7%%", []ArgKind{ArgInt}},
		{"%5.2s|%-4c|", []Arg{{Str: "abc"}, {Int: 'z'}}, "   ab|z   |", []ArgKind{ArgString, ArgInt}},
		{"%c after", ints(0), " after", []ArgKind{ArgInt}},
		{"x\x00y%d", ints(1), "x", []ArgKind{ArgInt}},
		{"%lld %llx %hhd %hd %d", ints(-1<<63, -1<<63, 128, 32768, 1<<31), "-9223372036854775808 8000000000000000 -128 -32768 -2147483648", []ArgKind{ArgInt, ArgInt, ArgInt, ArgInt, ArgInt}},
		{"%X %o %u", ints(0xabc, 8, -2), "ABC 10 4294967294", []ArgKind{ArgInt, ArgInt, ArgInt}},
		{"%s", nil, "", []ArgKind{ArgString}},
		{"%-5d|%05d|%5s", ints(-1, -1), "-1   |-0001|     ", []ArgKind{ArgInt, ArgInt, ArgString}},
		// Buffers as bpftrace 0.17 prints them (checked with bpftrace:
		// buf("bye\001\n", 6)).
		{"%r|%rx|%rh|%rz", []Arg{{Bytes: []byte("bye\x01\n\x00")}, {Bytes: []byte("hi\x00")}, {Bytes: []byte("bye\x01\n\x00")}, {Bytes: []byte("z")}}, `bye\x01\x0a\x00|\x68\x69\x00|62 79 65 01 0a 00|zz`, []ArgKind{ArgBuffer, ArgBuffer, ArgBuffer, ArgBuffer}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			p, err := Parse(tt.format)
			if err != nil {
				t.Fatal(err)
			}
			if have := string(p.Append(nil, tt.args)); have != tt.want {
				t.Errorf("have %q, want %q", have, tt.want)
			}
			if have := p.Args(); !slices.Equal(have, tt.kinds) {
				t.Errorf("Args() = %v, want %v", have, tt.kinds)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		format string
		off    int
	}{
		{"50% off %d", 2},
		{"a %5 b %d", 2},
		{"%-4r %d", 0},
		{"%.2rx %d", 0},
		{"%100000d", 0},
		{"%.70000s", 0},
		{"ok %d then %q %d", 11},
	} {
		p, err := Parse(tt.format)
		var fe *FormatError
		if !errors.As(err, &fe) || p != nil {
			t.Errorf("Parse(%q) = %v, %v; want a *FormatError and no result", tt.format, p, err)
			continue
		}
		if fe.Off != tt.off {
			t.Errorf("Parse(%q): error at byte %d, want %d (%v)", tt.format, fe.Off, tt.off, err)
		}
	}
}

// FuzzParse checks that any format parses or fails cleanly, that
// formatting never panics, that a format whose verbs are all given
// arguments keeps its literal text, that Verbs and Args agree, and that
// Strict's error, if any, is inside the format.
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "printf", "*.txt"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/printf: %v", err)
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			f.Add(strings.ReplaceAll(line, `\n`, "\n"))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			if p != nil {
				t.Fatalf("error %v with a result", err)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Off < 0 || fe.Off >= len(s) {
				t.Fatalf("error %v: want a *FormatError inside the format", err)
			}
			return
		}
		kinds := p.Args()
		verbs := p.Verbs()
		if len(verbs) != len(kinds) {
			t.Fatalf("%d verbs, %d arguments", len(verbs), len(kinds))
		}
		for i, v := range verbs {
			if (v.Conv == 's') != (kinds[i] == ArgString) || !strings.HasPrefix(v.Token, "%") || v.Token[len(v.Token)-1] != v.Conv && v.Conv != 'r' {
				t.Fatalf("verb %d %+v, argument %v", i, v, kinds[i])
			}
		}
		if err := p.Strict(); err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Off < 0 || fe.Off >= len(s) || s[fe.Off] != '%' {
				t.Fatalf("Strict: %v: want a *FormatError at a '%%' of the format", err)
			}
		}
		args := make([]Arg, len(kinds))
		for i := range args {
			args[i] = Arg{Int: int64(i) * -12345, Str: "s"}
		}
		out := p.Append(nil, args)
		if len(kinds) == 0 && string(out) != s {
			t.Fatalf("no verbs: printed %q, want the format %q", out, s)
		}
		p.Append(nil, nil)
	})
}

// TestPrintfMatchesC formats every combination of bpftrace's flags,
// widths, precisions, lengths and verbs with Printf and with C's snprintf
// (testdata/snprintf, built at test time), on values around each width's
// limits.
func TestPrintfMatchesC(t *testing.T) {
	gcc := testutil.RequireTool(t, "gcc")
	bin := filepath.Join(t.TempDir(), "snprintf")
	if out, err := exec.Command(gcc, "-o", bin, filepath.Join("testdata", "snprintf", "snprintf.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	ints := []int64{0, 1, -1, 7, 42, 65, 127, 128, 255, 256, -129, 32767, 32768, 65535, 70000,
		1<<31 - 1, 1 << 31, -1 << 31, 1<<32 + 5, 5000000000, -5000000000, 1<<63 - 1, -1 << 63}
	strs := []string{"", "a", "abc", "héllo wörld", "with space"}
	type conv struct {
		format string
		arg    Arg
		isStr  bool
	}
	var convs []conv
	for _, flag := range []string{"", "-"} {
		for _, width := range []string{"", "0", "1", "5", "05", "012", "25"} {
			for _, prec := range []string{"", ".0", ".1", ".3", ".12", ".20"} {
				spec := "%" + flag + width + prec
				for _, length := range []string{"", "hh", "h", "l", "ll", "j", "z", "t"} {
					for _, verb := range "duoxXp" {
						for _, v := range ints {
							convs = append(convs, conv{spec + length + string(verb), Arg{Int: v}, false})
						}
					}
				}
				for _, v := range ints {
					convs = append(convs, conv{spec + "c", Arg{Int: v}, false})
				}
				for _, s := range strs {
					convs = append(convs, conv{spec + "s", Arg{Str: s}, true})
				}
			}
		}
	}
	var in strings.Builder
	for _, c := range convs {
		if c.isStr {
			fmt.Fprintf(&in, "%s\ns %s\n", c.format, c.arg.Str)
		} else {
			fmt.Fprintf(&in, "%s\ni %d\n", c.format, c.arg.Int)
		}
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(want) != len(convs) {
		t.Fatalf("C printed %d results for %d conversions", len(want), len(convs))
	}
	failed := 0
	for i, c := range convs {
		p, err := Parse(c.format)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.format, err)
		}
		if have := string(p.Append(nil, []Arg{c.arg})); have != want[i] && failed < 20 {
			failed++
			t.Errorf("%q of %+v: have %q, C printed %q", c.format, c.arg, have, want[i])
		}
	}
	t.Logf("%d conversions compared", len(convs))
}

func ints(v ...int64) []Arg {
	a := make([]Arg, len(v))
	for i := range v {
		a[i] = Arg{Int: v[i]}
	}
	return a
}
