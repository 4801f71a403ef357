package symtab

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

const goProgram = `package main

var Counter int

//go:noinline
func bump() { Counter++ }

func main() { bump(); println(Counter) }
`

// TestReadGo reads a Go binary with .symtab, where data symbols are
// listed, and one stripped of it, where only the functions of .gopclntab
// are.
func TestReadGo(t *testing.T) {
	for _, tc := range []struct {
		name       string
		flags      []string
		wantSrc    Source
		wantObject bool
	}{
		{"symtab", nil, SourceSymtab, true},
		{"stripped", []string{"-ldflags=-s -w"}, SourceGopclntab, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := elfnotes.Open(testutil.BuildGoSource(t, goProgram, tc.flags...))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if !IsGo(f) {
				t.Error("IsGo = false, want true")
			}
			syms, err := Read(f)
			if err != nil {
				t.Fatal(err)
			}
			tab := NewTable(syms)
			fn, err := tab.Lookup("main.bump")
			if err != nil {
				t.Fatal(err)
			}
			text := f.Sections[fn.Section]
			if fn.Type != elf.STT_FUNC || fn.Source != tc.wantSrc || text.Name != ".text" ||
				fn.Value < text.Addr || fn.Value >= text.Addr+text.Size {
				t.Errorf("have %+v, want a function in .text from %v", fn, tc.wantSrc)
			}
			obj, err := tab.Lookup("main.Counter")
			if tc.wantObject {
				if err != nil || obj.Type != elf.STT_OBJECT || obj.Size != 8 {
					t.Errorf("have %+v, %v; want an 8-byte object", obj, err)
				}
			} else if !errors.Is(err, ErrNotFound) {
				t.Errorf("have %+v, %v; want ErrNotFound (gopclntab has functions only)", obj, err)
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
	f, err := elfnotes.Open(testutil.BuildGoSource(t, goProgram, "-ldflags=-s -w"))
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
