package uprobe

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
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

// buildGo builds goProgram with the given go build flags into a temporary
// directory and returns the binary's path.
func buildGo(t *testing.T, flags ...string) string {
	t.Helper()
	gobin := testutil.RequireTool(t, "go")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/prog\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "main.go"), goProgram)
	bin := filepath.Join(dir, "prog")
	args := append(append([]string{"build", "-trimpath", "-o", bin}, flags...), ".")
	cmd := exec.Command(gobin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	return bin
}

func TestGoSymbols(t *testing.T) {
	full := buildGo(t)
	stripped := buildGo(t, "-ldflags=-s -w")

	// The unstripped binary's .symtab is checked against readelf like any
	// other file.
	fullSyms := compareReadelf(t, full)
	strippedSyms := openSymbols(t, stripped)

	// Every function of the stripped binary's .gopclntab is in the
	// unstripped binary's .symtab at the same address. Where a function
	// has an ABI wrapper, .symtab names the ABI0 one "name.abi0"; the
	// gopclntab does not.
	inSymtab := make(map[refKey]bool, len(fullSyms))
	for _, s := range fullSyms {
		inSymtab[refKey{strings.TrimSuffix(s.Name, ".abi0"), s.Value}] = true
	}
	for _, s := range strippedSyms {
		if s.Source == SourceGopclntab && !inSymtab[refKey{s.Name, s.Value}] {
			t.Errorf("gopclntab has %s at %#x, .symtab does not", s.Name, s.Value)
		}
	}

	// A stripped PIE keeps its table in .data.rel.ro.gopclntab and has a
	// .dynsym of imports only; its addresses differ from full's.
	pie := buildGo(t, "-buildmode=pie", "-ldflags=-s -w")

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

// TestParseGopclntabMutated feeds debug/gosym, through parseGopclntab,
// corrupted copies of a real Go 1.20+ pclntab (a deterministic sequence):
// none may panic or exhaust memory, and each returns functions or a
// *FormatError. Before checkPclntab, such inputs made debug/gosym ask for
// tens of GiB.
func TestParseGopclntabMutated(t *testing.T) {
	f, err := elfnotes.Open(buildGo(t, "-ldflags=-s -w"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := gopclntabSection(f).Data()
	if err != nil {
		t.Fatal(err)
	}
	text := f.Section(".text").Addr
	if _, err := parseGopclntab(data, 0, text); err != nil {
		t.Fatalf("unmodified table: %v", err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		b := append([]byte(nil), data...)
		if r.IntN(2) == 0 {
			b = b[:r.IntN(len(b))] // spare capacity, as a caller might leave
		}
		for range 1 + r.IntN(8) {
			if len(b) == 0 {
				break
			}
			p := r.IntN(min(len(b), 128)) // mostly the header
			if r.IntN(3) == 0 {
				p = r.IntN(len(b))
			}
			b[p] = byte(r.Uint32())
		}
		funcs, err := parseGopclntab(b, 0, text)
		var fe *elfnotes.FormatError
		if (err == nil) == (funcs == nil) || (err != nil && !errors.As(err, &fe)) {
			t.Fatalf("have %d functions and error %v", len(funcs), err)
		}
	}
}

func TestCheckPclntab(t *testing.T) {
	le := binary.LittleEndian
	// A valid Go 1.20 table with one function named "f": header, name
	// table, functab, _func.
	valid := func() []byte {
		b := le.AppendUint32(nil, pclntab120)
		b = append(b, 0, 0, 1, 8)
		const hdr = 8 + 8*8
		words := []uint64{1, 0, 0, hdr, 0, 0, 0, hdr + 2} // nfunc, nfiles, text, names, cu, file, pc, pcln
		for _, w := range words {
			b = le.AppendUint64(b, w)
		}
		b = append(b, 'f', 0)                 // names at hdr
		b = le.AppendUint32(b, 0)             // functab: entryoff
		b = le.AppendUint32(b, 12)            // funcoff (relative to pcln)
		b = le.AppendUint32(b, 0x10)          // end entryoff
		b = le.AppendUint32(b, 0)             // _func.entryOff
		b = le.AppendUint32(b, 0)             // _func.nameOff
		return append(b, make([]byte, 40)...) // rest of _func
	}
	for _, tc := range []struct {
		name    string
		edit    func(b []byte) []byte
		wantAt  int
		wantErr bool
	}{
		{"valid", func(b []byte) []byte { return b }, 0, false},
		{"short", func(b []byte) []byte { return b[:7] }, 0, true},
		{"pointer size", func(b []byte) []byte { b[7] = 3; return b }, 7, true},
		{"go1.2 refused", func(b []byte) []byte { le.PutUint32(b, 0xfffffffb); return b }, 0, true},
		{"header truncated", func(b []byte) []byte { return b[:40] }, 0, true},
		{"too many functions", func(b []byte) []byte { le.PutUint64(b[8:], 1<<40); return b }, 8, true},
		{"no functions", func(b []byte) []byte { le.PutUint64(b[8:], 0); return b }, 8, true},
		{"names out of range", func(b []byte) []byte { le.PutUint64(b[8+3*8:], 1<<20); return b }, 8 + 3*8, true},
		{"functab out of range", func(b []byte) []byte { le.PutUint64(b[8+7*8:], 1<<62); return b }, 8 + 7*8, true},
		{"func record out of range", func(b []byte) []byte { le.PutUint32(b[72+2+4:], 0xfffffff0); return b }, 72 + 2 + 4, true},
		{"name out of range", func(b []byte) []byte { le.PutUint32(b[72+2+12+4:], 1<<20); return b }, 72 + 2 + 12 + 4, true},
		{"name unterminated", func(b []byte) []byte {
			le.PutUint32(b[72+2+12+4:], uint32(len(b)-1-72)) // the last byte, not NUL
			b[len(b)-1] = 'x'
			return b
		}, 72 + 2 + 12 + 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, msg := checkPclntab(tc.edit(valid()))
			if (msg != "") != tc.wantErr || at != tc.wantAt {
				t.Errorf("have %d %q, want offset %d, error %v", at, msg, tc.wantAt, tc.wantErr)
			}
		})
	}
}
