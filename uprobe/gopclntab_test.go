package uprobe

import (
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

const goProgram = `package main

type T struct{ n int }

//go:noinline
func (t *T) M() int { return t.n + 1 }

func main() { println((&T{1}).M()) }
`

func TestGoSymbols(t *testing.T) {
	full := testutil.BuildGoSource(t, goProgram)
	stripped := testutil.BuildGoSource(t, goProgram, "-ldflags=-s -w")

	// The unstripped binary's .symtab is checked against readelf like any
	// other file.
	fullSyms := compareReadelf(t, full)
	strippedSyms := openSymbols(t, stripped)

	// Every function of the stripped binary's .gopclntab is in the
	// unstripped binary's .symtab at the same address. Where a function
	// has an ABI wrapper, .symtab names the ABI0 one "name.abi0"; the
	// gopclntab does not.
	type key struct {
		name  string
		value uint64
	}
	inSymtab := make(map[key]bool, len(fullSyms))
	for _, s := range fullSyms {
		inSymtab[key{strings.TrimSuffix(s.Name, ".abi0"), s.Value}] = true
	}
	for _, s := range strippedSyms {
		if s.Source == SourceGopclntab && !inSymtab[key{s.Name, s.Value}] {
			t.Errorf("gopclntab has %s at %#x, .symtab does not", s.Name, s.Value)
		}
	}

	// A stripped PIE keeps its table in .data.rel.ro.gopclntab and has a
	// .dynsym of imports only; its addresses differ from full's.
	pie := testutil.BuildGoSource(t, goProgram, "-buildmode=pie", "-ldflags=-s -w")

	for _, tc := range []struct {
		name    string
		path    string
		syms    []Symbol
		wantSrc SymbolSource
	}{
		{"symtab", full, fullSyms, SourceSymtab},
		{"stripped", stripped, strippedSyms, SourceGopclntab},
		{"stripped-pie", pie, openSymbols(t, pie), SourceGopclntab},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := elfnotes.Open(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if !IsGo(f) {
				t.Error("IsGo = false, want true")
			}
			if tc.wantSrc == SourceGopclntab && f.Section(".symtab") != nil {
				t.Fatal("-ldflags=-s left a .symtab")
			}
			loads := readelfLoads(t, tc.path)
			for _, name := range []string{"main.main", "main.(*T).M", "runtime.main"} {
				have := find(tc.syms, name)
				if len(have) != 1 {
					t.Fatalf("%s: have %+v, want one", name, have)
				}
				s := have[0]
				if s.Source != tc.wantSrc || s.Kind != SymFunc || s.Size == 0 || s.Demangled != "" {
					t.Errorf("have %+v, want a sized func from %v", s, tc.wantSrc)
				}
				if want := refOffset(loads, s.Value); s.Offset != want || want == 0 {
					t.Errorf("%s: have offset %#x, want %#x", name, s.Offset, want)
				}
				// Stripping must not move code.
				if ref := find(fullSyms, name); tc.path != pie && (len(ref) != 1 || ref[0].Value != s.Value) {
					t.Errorf("%s: have value %#x, unstripped binary has %+v", name, s.Value, ref)
				}
			}
		})
	}
}
