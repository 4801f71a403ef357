package gofunc

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/go-delve/delve/pkg/proc"
	"golang.org/x/sys/unix"
)

// The test binary re-executes itself as a child (childEnv names the mode,
// childPathEnv the binary to read) to show what a crafted binary does to
// a whole process: a crash or an allocation that a recover cannot stop.
const (
	childEnv     = "GOFUNC_TEST_CHILD"
	childPathEnv = "GOFUNC_TEST_CHILD_PATH"
	// childMemLimit is the child's address-space limit (RLIMIT_AS), so
	// that a runaway allocation fails in the child instead of
	// pressing the machine.
	childMemLimit = 4 << 30
	// maxChildRSS is what a child that opens a crafted binary may use.
	maxChildRSS = 200 << 20
)

// childMain runs the child's mode on path and returns its exit code.
//
//   - "delve": what Open did before it checked the DWARF: delve's
//     loader on the file. It crashes on the crafted binaries.
//   - "open": Open, then Func of each fixture function, printed as JSON
//     lines (childResult).
func childMain(mode, path string) int {
	lim := unix.Rlimit{Cur: childMemLimit, Max: childMemLimit}
	if err := unix.Setrlimit(unix.RLIMIT_AS, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		return 3
	}
	switch mode {
	case "delve":
		ef, err := elf.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		defer ef.Close()
		bi := proc.NewBinaryInfo("linux", runtime.GOARCH, true)
		err = bi.LoadBinaryInfo(path, ef.Entry, nil)
		fmt.Println("loaded:", err)
		return 0
	case "open":
		b, err := Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		defer b.Close()
		enc := json.NewEncoder(os.Stdout)
		head := childResult{DWARF: b.DWARF}
		if b.DWARFError != nil {
			head.Warning = b.DWARFError.Error()
		}
		enc.Encode(head)
		for _, ff := range fixtureFuncs {
			r := childResult{Name: ff.name}
			fn, err := b.Func(ff.name)
			if err != nil {
				r.Err = err.Error()
			} else {
				r.Entry, r.End, r.Site, r.Returns, r.Problems = fn.Entry, fn.End, fn.Site, fn.Returns, fn.Problems
			}
			enc.Encode(r)
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", mode)
	return 3
}

// childResult is the binary (first line: DWARF, Warning) or one function
// as the "open" child reads it.
type childResult struct {
	DWARF    bool     `json:"dwarf,omitempty"`
	Warning  string   `json:"warning,omitempty"`
	Name     string   `json:"name,omitempty"`
	Err      string   `json:"err,omitempty"`
	Entry    uint64   `json:"entry,omitempty"`
	End      uint64   `json:"end,omitempty"`
	Site     uint64   `json:"site,omitempty"`
	Returns  []uint64 `json:"returns,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// runChild runs this test binary as a child in mode on path and returns
// its exit code, output and peak RSS in bytes.
func runChild(t *testing.T, mode, path string) (code int, stdout, stderr string, maxRSS int64) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childPathEnv+"="+path)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage")
	}
	// Linux reports ru_maxrss in KiB.
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String(), ru.Maxrss << 10
}

// sectionHeader returns the file offset of the header of the section
// named name.
func sectionHeader(t *testing.T, data []byte, name string) (hdrOff int64, s *elf.Section) {
	t.Helper()
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if ef.Class != elf.ELFCLASS64 || ef.ByteOrder != binary.LittleEndian {
		t.Fatalf("fixture is %v %v, want a little-endian ELF64", ef.Class, ef.ByteOrder)
	}
	// e_shoff is at byte 0x28 of the ELF64 header, e_shentsize at 0x3a.
	shoff := int64(binary.LittleEndian.Uint64(data[0x28:]))
	shentsize := int64(binary.LittleEndian.Uint16(data[0x3a:]))
	for i, sec := range ef.Sections {
		if sec.Name == name {
			return shoff + int64(i)*shentsize, sec
		}
	}
	t.Fatalf("no section %s", name)
	return 0, nil
}

// formRefAddrOffsets returns the file offsets of the form codes of the
// attributes in .debug_abbrev that use DW_FORM_ref_addr: one bit flipped
// there changes how every entry of that abbreviation is read.
func formRefAddrOffsets(t *testing.T, data []byte) []int64 {
	t.Helper()
	_, s := sectionHeader(t, data, ".debug_abbrev")
	if s.Flags&elf.SHF_COMPRESSED != 0 {
		t.Fatal(".debug_abbrev is compressed")
	}
	ab := data[s.Offset : s.Offset+s.Size]
	uleb := func(p *int) uint64 {
		var v uint64
		for shift := 0; *p < len(ab); shift += 7 {
			c := ab[*p]
			*p++
			v |= uint64(c&0x7f) << shift
			if c < 0x80 {
				break
			}
		}
		return v
	}
	const formRefAddr, formImplicitConst = 0x10, 0x21
	var offs []int64
	for p := 0; p < len(ab); {
		if uleb(&p) == 0 { // abbreviation code 0 ends the table
			break
		}
		uleb(&p) // tag
		p++      // DW_CHILDREN_*
		for p < len(ab) {
			attr := uleb(&p)
			at := p
			form := uleb(&p)
			if form == formImplicitConst {
				uleb(&p)
			}
			if attr == 0 && form == 0 {
				break
			}
			if form == formRefAddr {
				offs = append(offs, int64(s.Offset)+int64(at))
			}
		}
	}
	return offs
}

// TestCraftedDWARF opens crafted copies of the fixture in a child
// process: one whose compressed .debug_line has SHF_COMPRESSED cleared
// (delve allocated tens of GB for it); one with a bit of an uncompressed
// .debug_abbrev flipped, chosen because delve's loader goroutine
// dereferences nil on it (shown by running delve's loader on it in a
// child); one with a bit of the compressed .debug_abbrev flipped. Each must open without a crash, in less than maxChildRSS, with
// a warning, and list every fixture function with the entry and RET
// sites of the undamaged binary.
func TestCraftedDWARF(t *testing.T) {
	bin := buildFixture(t, runtime.GOARCH, false)
	raw := buildFixture(t, runtime.GOARCH, false, "-ldflags=-compressdwarf=false")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}

	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	hdr, s := sectionHeader(t, data, ".debug_line")
	if s.Flags&elf.SHF_COMPRESSED == 0 {
		t.Fatal(".debug_line is not compressed")
	}
	// sh_flags is at byte 8 of an Elf64_Shdr.
	lineCopy := slices.Clone(data)
	binary.LittleEndian.PutUint64(lineCopy[hdr+8:], uint64(s.Flags&^elf.SHF_COMPRESSED))

	// The same damage in the compressed section of the default build:
	// a bit in the middle of its deflate stream.
	_, s = sectionHeader(t, data, ".debug_abbrev")
	if s.Flags&elf.SHF_COMPRESSED == 0 || s.FileSize < 64 {
		t.Fatal(".debug_abbrev is not compressed")
	}
	zabbrevCopy := slices.Clone(data)
	zabbrevCopy[s.Offset+24+(s.FileSize-24)/2] ^= 1

	rawData, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	var abbrevCopy []byte
	var flipped string
	tries := 0
search:
	for _, off := range formRefAddrOffsets(t, rawData) {
		for bit := range 8 {
			if tries++; tries > 40 {
				break search
			}
			d := slices.Clone(rawData)
			d[off] ^= 1 << bit
			p := write("abbrev-try", d)
			code, _, stderr, _ := runChild(t, "delve", p)
			if code != 0 && strings.Contains(stderr, "nil pointer dereference") &&
				strings.Contains(stderr, "loadDebugInfoMapsInlinedCalls") {
				abbrevCopy, flipped = d, fmt.Sprintf("bit %d of byte %#x", bit, off)
				break search
			}
		}
	}
	if abbrevCopy == nil {
		t.Fatalf("no bit of a DW_FORM_ref_addr in .debug_abbrev crashed delve's loader in %d tries", tries-1)
	}
	t.Logf(".debug_abbrev: flipping %s crashes delve's loader", flipped)

	want := make(map[string]*Func)
	for _, path := range []string{bin, raw} {
		b, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		// The check accepts what the toolchain writes.
		if !b.DWARF || b.DWARFError != nil {
			t.Fatalf("%s: DWARF %v, DWARFError %v; want the DWARF read", path, b.DWARF, b.DWARFError)
		}
		for _, ff := range fixtureFuncs {
			fn, err := b.Func(ff.name)
			if err != nil {
				t.Fatal(err)
			}
			if w := want[ff.name]; w != nil && (w.Entry != fn.Entry || !slices.Equal(w.Returns, fn.Returns)) {
				t.Fatalf("%s: the builds with compressed and uncompressed DWARF differ", ff.name)
			}
			want[ff.name] = fn
		}
		b.Close()
	}

	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"debug_line-SHF_COMPRESSED-cleared", lineCopy},
		{"debug_abbrev-bit-flipped", abbrevCopy},
		{"compressed-debug_abbrev-bit-flipped", zabbrevCopy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(tc.name, tc.data)
			code, stdout, stderr, rss := runChild(t, "open", p)
			if code != 0 {
				t.Fatalf("child exit %d:\n%s", code, stderr)
			}
			if rss >= maxChildRSS {
				t.Errorf("child peak RSS %d MiB, want < %d MiB", rss>>20, maxChildRSS>>20)
			}
			t.Logf("child peak RSS %d MiB", rss>>20)
			dec := json.NewDecoder(strings.NewReader(stdout))
			var head childResult
			if err := dec.Decode(&head); err != nil {
				t.Fatalf("%v in %s", err, stdout)
			}
			if head.DWARF || head.Warning == "" {
				t.Errorf("have DWARF %v, warning %q; want the DWARF ignored with a warning", head.DWARF, head.Warning)
			}
			t.Logf("warning: %s", head.Warning)
			n := 0
			for ; dec.More(); n++ {
				var r childResult
				if err := dec.Decode(&r); err != nil {
					t.Fatal(err)
				}
				w := want[r.Name]
				switch {
				case r.Err != "":
					t.Errorf("%s: %s", r.Name, r.Err)
				case w == nil:
					t.Errorf("unexpected function %q", r.Name)
				case r.Entry != w.Entry || r.End != w.End || !slices.Equal(r.Returns, w.Returns):
					t.Errorf("%s: have entry %#x end %#x returns %#x, want %#x %#x %#x", r.Name, r.Entry, r.End, r.Returns, w.Entry, w.End, w.Returns)
				case r.Site < r.Entry || r.Site >= r.End:
					t.Errorf("%s: site %#x outside %#x..%#x", r.Name, r.Site, r.Entry, r.End)
				case !slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, head.Warning) }):
					t.Errorf("%s: problems %q do not carry the warning", r.Name, r.Problems)
				}
			}
			if n != len(fixtureFuncs) {
				t.Errorf("%d functions listed, want %d", n, len(fixtureFuncs))
			}
		})
	}
}

// TestCheckDWARF patches the bases of FuzzFunc (see fuzzPatch) where
// delve's loader goroutines panic or allocate by a claimed count, and
// checks that checkDWARF refuses each with a *DWARFError naming the
// section.
func TestCheckDWARF(t *testing.T) {
	compressed := buildFuzzBase(t)
	raw := buildFuzzBase(t, "-ldflags=-compressdwarf=false")
	// Region indexes are those of fuzzSections.
	const hdrs, abbrev, info, lines = 1, 2, 3, 4
	patch := func(region byte, off uint32, b ...byte) []byte {
		return append([]byte{region, byte(off), byte(off >> 8), byte(off >> 16), byte(off >> 24)}, b...)
	}
	// Offsets in a DWARF 5 line table header: the directory count
	// follows 4 (unit_length) + 2 (version) + 2 (address and segment
	// selector sizes) + 4 (header_length) + 6 (min_inst_length ..
	// opcode_base) bytes, opcode_base-1 standard opcode lengths, and the
	// directory entry formats.
	lineData := raw.data[raw.regions[lines][0]:]
	opcodeBase := int(lineData[17])
	nformats := int(lineData[18+opcodeBase-1])
	dirCount := uint32(18 + opcodeBase - 1 + 1 + 2*nformats)
	if lineData[dirCount] >= 0x80 || nformats != 1 {
		t.Fatalf("unexpected line table header: % x", lineData[:dirCount+1])
	}
	var lineIndex uint32
	for i, sec := range mustELF(t, compressed.data).Sections {
		if sec.Name == ".debug_line" {
			lineIndex = uint32(i)
		}
	}
	var rawInfoIndex uint32
	for i, sec := range mustELF(t, raw.data).Sections {
		if sec.Name == ".debug_info" {
			rawInfoIndex = uint32(i)
		}
	}
	for _, tc := range []struct {
		name    string
		in      []byte
		section string
	}{
		// An uncompressed .debug_info claiming 2 GiB (sh_size, at byte
		// 32 of an Elf64_Shdr), as a sparse file can hold it: delve
		// would read it whole.
		{"info-huge", patch(hdrs, rawInfoIndex*64+32, 0, 0, 0, 0x80, 0, 0, 0, 0), ".debug_info"},
		{"line-SHF_COMPRESSED-cleared", patch(0x80|hdrs, lineIndex*64+8, 0, 0, 0, 0, 0, 0, 0, 0), ".debug_line"},
		// delve: make([]string, 0, 2^32-1) for the directories.
		{"line-dir-count", patch(lines, dirCount, 0xff, 0xff, 0xff, 0xff, 0x0f), ".debug_line"},
		// delve: no directory formats, so each of 2^32-1 entries takes
		// no bytes and it loops on.
		{"line-no-dir-formats", patch(lines, dirCount-3, 0, 0xff, 0xff, 0xff, 0xff, 0x0f), ".debug_line"},
		// delve's ReadUnitVersions slices past the end (debug/dwarf
		// refuses it first).
		{"info-unit-length", patch(info, 0, 0xf0, 0xff, 0xff, 0x0f), ".debug_info"},
		// Uncompressed data claimed by a compression header, 2^40 bytes.
		{"compressed-claim", patch(0x80|abbrev, 8, 0, 0, 0, 0, 0, 1, 0, 0), ".debug_abbrev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := fuzzPatch(compressed, raw, tc.in)
			// The file's size as a sparse file would have it: room for
			// every section the headers claim.
			err := checkDWARF(bytes.NewReader(data), int64(len(data))+4<<30)
			var de *DWARFError
			if !errors.As(err, &de) {
				t.Fatalf("have %v, want a *DWARFError", err)
			}
			if de.Section != tc.section {
				t.Errorf("have %v, want an error in %s", err, tc.section)
			}
			t.Log(err)
		})
	}
}

func mustELF(t *testing.T, data []byte) *elf.File {
	t.Helper()
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return ef
}
