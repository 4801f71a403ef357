package uprobe

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestListDamagedVersion lists the functions of a copy of python3.11 in
// which one defined .dynsym function has an undefined version index
// (issue 10, item 6): List gives every other function of the intact file
// and calls Warn once with a *FormatError at the damaged .gnu.version
// entry. The damaged entry is chosen in the file at test time.
func TestListDamagedVersion(t *testing.T) {
	src := testutil.RequireFile(t, testutil.Python311)
	good, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	var dynsym, versym *elf.Section
	for _, s := range ef.Sections {
		switch s.Type {
		case elf.SHT_DYNSYM:
			dynsym = s
		case elf.SHT_GNU_VERSYM:
			versym = s
		}
	}
	if dynsym == nil || versym == nil {
		t.Fatal("no .dynsym or .gnu.version")
	}
	le := binary.LittleEndian
	syms, err := ef.DynamicSymbols() // entry i+1 of .dynsym
	if err != nil {
		t.Fatal(err)
	}
	lost := ""
	var off uint64
	for i, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF {
			lost, off = s.Name, versym.Offset+uint64(2*(i+1))
			break
		}
	}
	if lost == "" {
		t.Fatal("no defined function in .dynsym")
	}
	raw := bytes.Clone(good)
	le.PutUint16(raw[off:], 0x7ff0)
	path := filepath.Join(t.TempDir(), "python3.11")
	if err := os.WriteFile(path, raw, 0o755); err != nil {
		t.Fatal(err)
	}

	names := func(objs []Object) []string {
		var n []string
		for _, o := range objs {
			for _, s := range o.Symbols {
				if s.Name != lost {
					n = append(n, s.Name)
				}
			}
		}
		return n
	}
	intact, err := List(&ListOptions{Paths: []string{src}})
	if err != nil {
		t.Fatal(err)
	}
	var warnings []error
	damaged, err := List(&ListOptions{Paths: []string{path}, Warn: func(err error) { warnings = append(warnings, err) }})
	if err != nil {
		t.Fatal(err)
	}
	if have, want := names(damaged), names(intact); !reflect.DeepEqual(have, want) || len(have) == 0 {
		t.Errorf("have %d functions, want the %d of the intact file but %s", len(have), len(want), lost)
	}
	for _, s := range damaged[0].Symbols {
		if s.Name == lost {
			t.Errorf("%s is listed", lost)
		}
	}
	var fe *elfnotes.FormatError
	if len(warnings) != 1 || !errors.As(warnings[0], &fe) || fe.Off != int64(off) {
		t.Errorf("have warnings %v, want one *FormatError at %#x", warnings, off)
	}
}
