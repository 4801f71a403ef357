package sdt_test

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
	"github.com/usdtkit/usdtkit/sdt"
)

// TestListDamagedBuildID lists a gcc-built binary whose build-id note is
// corrupt (issue 10, item 6): every probe of the intact file is listed,
// and Warn is called once with a *FormatError at the broken note.
func TestListDamagedBuildID(t *testing.T) {
	bin := testutil.BuildTracee(t)
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	id := ef.Section(".note.gnu.build-id")
	if id == nil {
		t.Fatal("gcc wrote no .note.gnu.build-id")
	}
	binary.LittleEndian.PutUint32(raw[id.Offset:], 0xffffffff) // n_namesz past the section
	path := filepath.Join(t.TempDir(), "tracee")
	if err := os.WriteFile(path, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	want, err := sdt.List(&sdt.ListOptions{Paths: []string{bin}})
	if err != nil {
		t.Fatal(err)
	}
	var warnings []error
	have, err := sdt.List(&sdt.ListOptions{Paths: []string{path}, Warn: func(err error) { warnings = append(warnings, err) }})
	if err != nil {
		t.Fatal(err)
	}
	if h, w := probeNames(have), probeNames(want); !reflect.DeepEqual(h, w) || len(w) == 0 {
		t.Errorf("have probes %v, want %v", h, w)
	}
	var fe *elfnotes.FormatError
	if len(warnings) != 1 || !errors.As(warnings[0], &fe) || fe.Off != int64(id.Offset) {
		t.Errorf("have warnings %v, want one *FormatError at %#x", warnings, id.Offset)
	}
}
