package usdtlink_test

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/usdtlink"
)

// TestStrongMaps checks that the weak maps of usdt.bpf.h become global and
// nothing else changes, in an object built with them weak.
func TestStrongMaps(t *testing.T) {
	b, err := os.ReadFile(buildBPF(t, false))
	if err != nil {
		t.Fatal(err)
	}
	orig := bytes.Clone(b)
	if err := usdtlink.StrongMaps(b); err != nil {
		t.Fatal(err)
	}
	binds := func(b []byte) map[string]elf.SymBind {
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		syms, err := f.Symbols()
		if err != nil {
			t.Fatal(err)
		}
		m := make(map[string]elf.SymBind)
		for _, s := range syms {
			m[s.Name] = elf.ST_BIND(s.Info)
		}
		return m
	}
	before, after := binds(orig), binds(b)
	for _, name := range []string{usdtlink.SpecsMap, usdtlink.IPMap} {
		if before[name] != elf.STB_WEAK || after[name] != elf.STB_GLOBAL {
			t.Errorf("%s: %v before, %v after", name, before[name], after[name])
		}
	}
	for name, bind := range before {
		if name != usdtlink.SpecsMap && name != usdtlink.IPMap && after[name] != bind {
			t.Errorf("%s: %v became %v", name, bind, after[name])
		}
	}
	var fe *elfnotes.FormatError
	if err := usdtlink.StrongMaps(orig[:100]); !errors.As(err, &fe) {
		t.Errorf("truncated object: %v, want an *elfnotes.FormatError", err)
	}
}

// FuzzStrongMaps rewrites arbitrary bytes: no panic, no change of length.
func FuzzStrongMaps(f *testing.F) {
	if b, err := os.ReadFile(committedObject); err == nil {
		f.Add(b)
	}
	f.Add([]byte("\x7fELF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n := len(b)
		usdtlink.StrongMaps(b)
		if len(b) != n {
			t.Fatal("length changed")
		}
	})
}
