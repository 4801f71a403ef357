package symbolize

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParsePerfMap(t *testing.T) {
	b, err := os.ReadFile("testdata/perf-1.map")
	if err != nil {
		t.Fatal(err)
	}
	syms, warnings, err := ParsePerfMap(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	want := []PerfSymbol{
		{0x7f0000001000, 0x40, "LJava/lang/String;::hashCode"},
		{0x7f0000001040, 0x20, "jit stub with spaces"},
		{0x7f0000001000, 0x10, "reused later"},
	}
	if len(syms) != len(want) {
		t.Fatalf("have %+v, want %+v", syms, want)
	}
	for i := range want {
		if syms[i] != want[i] {
			t.Errorf("symbol %d: have %+v, want %+v", i, syms[i], want[i])
		}
	}
	// "bad line", a bad size, and the last line without its newline.
	wantLines := []int{4, 5, 6}
	if len(warnings) != len(wantLines) {
		t.Fatalf("warnings %v, want lines %v", warnings, wantLines)
	}
	for i, w := range warnings {
		var fe *FormatError
		if !errors.As(w, &fe) || fe.Line != wantLines[i] {
			t.Errorf("warning %d: %v, want a FormatError at line %d", i, w, wantLines[i])
		}
	}

	idx := newPerfIndex(syms)
	for _, tt := range []struct {
		addr uint64
		want string
	}{
		{0x7f0000001000, "reused later"}, // the later line wins
		{0x7f000000100f, "reused later"},
		{0x7f0000001010, "LJava/lang/String;::hashCode"},
		{0x7f000000103f, "LJava/lang/String;::hashCode"},
		{0x7f0000001040, "jit stub with spaces"},
		{0x7f0000001060, ""},
		{0x7f0000000fff, ""},
	} {
		s, ok := idx.lookup(tt.addr)
		if s.Name != tt.want || ok != (tt.want != "") {
			t.Errorf("lookup(%#x) = %q, %v; want %q", tt.addr, s.Name, ok, tt.want)
		}
	}
}

func TestParsePerfMapLongLine(t *testing.T) {
	in := "1000 10 a\n2000 10 " + strings.Repeat("x", maxPerfLine+10) + "\n3000 10 c\n"
	syms, warnings, err := ParsePerfMap(strings.NewReader(in))
	if err != nil || len(syms) != 2 || syms[1].Name != "c" || len(warnings) != 1 {
		t.Errorf("have %+v, %v, %v; want a and c, one warning", syms, warnings, err)
	}
}

// FuzzParsePerfMap checks that no input panics ParsePerfMap, that every
// warning is a FormatError and that every symbol is named and does not
// wrap around; and that a lookup of each symbol's start finds a symbol
// containing it. Seeds: testdata/*.map.
func FuzzParsePerfMap(f *testing.F) {
	files, err := filepath.Glob("testdata/*.map")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata/*.map (%v)", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		syms, warnings, err := ParsePerfMap(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("err = %v from a bytes.Reader", err)
		}
		for _, w := range warnings {
			var fe *FormatError
			if !errors.As(w, &fe) {
				t.Fatalf("warning %v is not a FormatError", w)
			}
		}
		for _, s := range syms {
			if s.Name == "" || s.Start+s.Size < s.Start {
				t.Fatalf("bad symbol %+v", s)
			}
		}
		idx := newPerfIndex(syms)
		for _, s := range syms {
			if s.Size == 0 {
				continue
			}
			got, ok := idx.lookup(s.Start)
			if ok && (s.Start < got.Start || s.Start-got.Start >= got.Size) {
				t.Fatalf("lookup(%#x) = %+v, which does not contain it", s.Start, got)
			}
		}
	})
}
