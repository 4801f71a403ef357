package elfnotes

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Real binaries with SDT notes on the Debian test image. How many probes
// each has is read from the file at test time (readelf -n): package
// updates change it.
var realBinaries = []string{
	"/usr/bin/python3.11",
	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	"/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so",
}

// fromReadelf as compareWithReadelf's wantProbes takes readelf's count of
// stapsdt notes, which must not be zero.
const fromReadelf = -1

// requireFile skips when path is absent, except under CI where the image
// must have it.
func requireFile(tb testing.TB, path string) {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("CI: %v", err)
		}
		tb.Skip(err)
	}
}

func requireTool(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("CI: %v", err)
		}
		tb.Skip(err)
	}
	return p
}

// readelfNote is one note as `readelf -n` prints it.
type readelfNote struct {
	section string // "" for notes read from a segment
	owner   string
	size    uint64
	typ     string // description column, up to the first space
	sdt     *Stapsdt
}

// readelfNotes runs `readelf -n path` and parses its output; a warning of
// readelf fails the test.
func readelfNotes(t *testing.T, path string) []readelfNote {
	t.Helper()
	return runReadelfNotes(t, path, false)
}

// runReadelfNotes runs `readelf -n path` and parses its output. Warnings
// of readelf (about a damaged file) fail the test unless allowWarnings.
func runReadelfNotes(t *testing.T, path string, allowWarnings bool) []readelfNote {
	t.Helper()
	cmd := exec.Command(requireTool(t, "readelf"), "-n", path)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if allowWarnings && errors.As(err, &exit) {
		// readelf exits 1 after an error about a corrupt note, having
		// listed the others.
		err = nil
	}
	if err != nil {
		t.Fatalf("readelf -n %s: %v: %s", path, err, stderr.Bytes())
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		// readelf looks for PT_INTERP's string even with -n; in a debug
		// file .interp is NOBITS and it complains.
		if line != "" && !allowWarnings && !strings.Contains(line, "Unable to find program interpreter name") {
			t.Errorf("readelf -n %s warns: %s", path, line)
		}
	}
	var (
		notes   []readelfNote
		section string
	)
	hex := func(s string) uint64 {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(s), "0x"), 16, 64)
		if err != nil {
			t.Fatalf("readelf output: %v", err)
		}
		return v
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Displaying notes found in: "):
			section = strings.TrimPrefix(line, "Displaying notes found in: ")
		case strings.HasPrefix(line, "Displaying notes found at file offset"):
			section = ""
		case strings.HasPrefix(line, "  Owner"), line == "":
		case strings.HasPrefix(line, "  <corrupt"):
			// readelf's mark for a note it cannot decode: no probe.
		case strings.HasPrefix(line, "    Provider: "):
			notes[len(notes)-1].sdt = &Stapsdt{Provider: strings.TrimPrefix(line, "    Provider: ")}
		case strings.HasPrefix(line, "    Name: "):
			notes[len(notes)-1].sdt.Name = strings.TrimPrefix(line, "    Name: ")
		case strings.HasPrefix(line, "    Location: "):
			var loc, base, sema string
			for _, kv := range strings.Split(strings.TrimPrefix(line, "    "), ", ") {
				k, v, _ := strings.Cut(kv, ": ")
				switch k {
				case "Location":
					loc = v
				case "Base":
					base = v
				case "Semaphore":
					sema = v
				}
			}
			s := notes[len(notes)-1].sdt
			s.PC, s.Base, s.Semaphore = hex(loc), hex(base), hex(sema)
		case strings.HasPrefix(line, "    Arguments: "):
			notes[len(notes)-1].sdt.Args = strings.TrimPrefix(line, "    Arguments: ")
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   "):
			fields := strings.Fields(line)
			if len(fields) < 3 {
				t.Fatalf("readelf output: unexpected note line %q", line)
			}
			notes = append(notes, readelfNote{section: section, owner: fields[0], size: hex(fields[1]), typ: fields[2]})
		}
	}
	return notes
}

// compareWithReadelf checks Notes and SDTProbes of path against readelf:
// same notes in the same order with the same owner, size and type name,
// and for SDT notes the same provider, name, location, base, semaphore
// and arguments.
func compareWithReadelf(t *testing.T, path string, wantProbes int) *File {
	t.Helper()
	want := readelfNotes(t, path)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	notes, err := f.Notes()
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != len(want) {
		t.Fatalf("Notes: have %d, readelf %d", len(notes), len(want))
	}
	probes, err := f.SDTProbes()
	if err != nil {
		t.Fatal(err)
	}
	if wantProbes == fromReadelf {
		wantProbes = 0
		for _, w := range want {
			if w.sdt != nil {
				wantProbes++
			}
		}
		if wantProbes == 0 {
			t.Fatalf("readelf -n %s shows no stapsdt notes", path)
		}
	}
	if len(probes) != wantProbes {
		t.Fatalf("SDTProbes: have %d, want %d", len(probes), wantProbes)
	}
	pi := 0
	for i, n := range notes {
		w := want[i]
		if n.Section != w.section || n.Owner != w.owner || uint64(len(n.Desc)) != w.size {
			t.Errorf("note %d: have %s %q size %#x, readelf %s %q size %#x", i, n.Section, n.Owner, len(n.Desc), w.section, w.owner, w.size)
		}
		if tn := n.TypeName(); !strings.HasPrefix(tn, "0x") && tn != w.typ {
			t.Errorf("note %d: type have %s, readelf %s", i, tn, w.typ)
		}
		if w.sdt == nil {
			continue
		}
		if pi >= len(probes) {
			t.Fatalf("readelf has more SDT notes than SDTProbes")
		}
		if p := probes[pi]; p.Stapsdt != *w.sdt || p.NoteOffset != n.Offset {
			t.Errorf("probe %d: have %+v at %#x, readelf %+v at %#x", pi, p.Stapsdt, p.NoteOffset, *w.sdt, n.Offset)
		}
		pi++
	}
	if pi != len(probes) {
		t.Errorf("readelf shows %d SDT notes, SDTProbes %d", pi, len(probes))
	}
	return f
}

func TestReadelfRealBinaries(t *testing.T) {
	for _, path := range realBinaries {
		t.Run(filepath.Base(path), func(t *testing.T) {
			requireFile(t, path)
			compareWithReadelf(t, path, fromReadelf)
		})
	}
}

// TestReadelfFixtures checks that readelf reads the files Builder writes,
// in all four flavours, as we do.
func TestReadelfFixtures(t *testing.T) {
	for _, c := range classes {
		for _, o := range []fixtureOpts{{baseSection: true}, {noSectionHeaders: true}} {
			o.class, o.data = c.class, c.data
			name := fmt.Sprintf("%s/sh=%v", c.name, !o.noSectionHeaders)
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "fixture.elf")
				if err := os.WriteFile(path, buildFixture(t, o), 0o600); err != nil {
					t.Fatal(err)
				}
				compareWithReadelf(t, path, len(fixtureProbes))
			})
		}
	}
}

// segments parses the LOAD lines of `readelf -lW path`.
func readelfLoads(t *testing.T, path string) []Prog {
	t.Helper()
	cmd := exec.Command(requireTool(t, "readelf"), "-lW", path)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("readelf -lW: %v", err)
	}
	var loads []Prog
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != "LOAD" {
			continue
		}
		var v [5]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(strings.TrimPrefix(f[i+1], "0x"), 16, 64); err != nil {
				t.Fatalf("readelf -lW line %q: %v", line, err)
			}
		}
		loads = append(loads, Prog{Off: v[0], Vaddr: v[1], Filesz: v[3]})
	}
	if len(loads) == 0 {
		t.Fatal("readelf -lW shows no LOAD segments")
	}
	return loads
}

func TestAddrToOffsetPython(t *testing.T) {
	const path = "/usr/bin/python3.11"
	requireFile(t, path)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	probes, err := f.SDTProbes()
	if err != nil {
		t.Fatal(err)
	}
	loads := readelfLoads(t, path)
	segmentMath := func(addr uint64) uint64 {
		for _, l := range loads {
			if addr >= l.Vaddr && addr-l.Vaddr < l.Filesz {
				return l.Off + addr - l.Vaddr
			}
		}
		t.Fatalf("no readelf LOAD holds %#x", addr)
		return 0
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probes {
		// .stapsdt.base of python3.11 was not moved after the notes were
		// written, so nothing is adjusted.
		if p.Addr != p.PC || p.SemaphoreAddr != p.Semaphore {
			t.Errorf("%s: adjusted %#x/%#x from %#x/%#x", p.Name, p.Addr, p.SemaphoreAddr, p.PC, p.Semaphore)
		}
		off, err := f.AddrToOffset(p.Addr)
		if want := segmentMath(p.Addr); err != nil || off != want {
			t.Errorf("%s: AddrToOffset(%#x) have %#x, %v, want %#x", p.Name, p.Addr, off, err, want)
		}
		// sys/sdt.h puts a nop at every probe site.
		if err == nil && text[off] != 0x90 {
			t.Errorf("%s: byte at %#x is %#x, want nop", p.Name, off, text[off])
		}
		off, err = f.AddrToOffset(p.SemaphoreAddr)
		if want := segmentMath(p.SemaphoreAddr); err != nil || off != want {
			t.Errorf("%s: AddrToOffset(sema %#x) have %#x, %v, want %#x", p.Name, p.SemaphoreAddr, off, err, want)
		}
	}
	// The first probe and its semaphore as readelf -n prints them (not as
	// we parse them), placed by hand through readelf -lW's segments.
	var first *Stapsdt
	for _, n := range readelfNotes(t, path) {
		if n.sdt != nil {
			first = n.sdt
			break
		}
	}
	if first == nil || first.Semaphore == 0 {
		t.Fatalf("readelf -n %s: first stapsdt note %+v, want one with a semaphore", path, first)
	}
	for _, addr := range []uint64{first.PC, first.Semaphore} {
		if have, err := f.AddrToOffset(addr); err != nil || have != segmentMath(addr) {
			t.Errorf("AddrToOffset(%#x): have %#x, %v, want %#x", addr, have, err, segmentMath(addr))
		}
	}
	// The first, middle and last file byte of each readelf LOAD map back
	// to their addresses, as a symbolizer maps a PC's file offset.
	m := f.LoadMap()
	for _, l := range loads {
		if l.Filesz == 0 {
			continue
		}
		for _, d := range []uint64{0, l.Filesz / 2, l.Filesz - 1} {
			want := l.Vaddr + d
			if have, err := f.OffsetToAddr(l.Off + d); err != nil || have != want {
				t.Errorf("OffsetToAddr(%#x): have %#x, %v, want %#x", l.Off+d, have, err, want)
			}
			if have, ok := m.OffsetToAddr(l.Off + d); !ok || have != want {
				t.Errorf("LoadMap.OffsetToAddr(%#x): have %#x, %v, want %#x", l.Off+d, have, ok, want)
			}
		}
	}
}

// TestDebugFile reads a separate debug file: notes kept, code sections
// NOBITS, PT_LOAD segments without file data.
func TestDebugFile(t *testing.T) {
	const path = "/usr/bin/python3.11"
	requireFile(t, path)
	objcopy := requireTool(t, "objcopy")
	dbg := filepath.Join(t.TempDir(), "x.debug")
	if out, err := exec.Command(objcopy, "--only-keep-debug", path, dbg).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v: %s", err, out)
	}
	orig, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { orig.Close() })
	want, err := orig.SDTProbes()
	if err != nil {
		t.Fatal(err)
	}

	f := compareWithReadelf(t, dbg, len(want))
	if s := f.Section(".text"); s == nil || s.Type != elf.SHT_NOBITS {
		t.Fatalf(".text: have %+v, want SHT_NOBITS", s)
	} else if data, err := s.Data(); data != nil || err != nil {
		t.Errorf(".text Data(): have %d bytes, %v, want nil, nil", len(data), err)
	}
	probes, err := f.SDTProbes()
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range probes {
		// The notes are the same bytes at other offsets; .stapsdt.base is
		// NOBITS but keeps its address, so the adjustment is the same.
		p.NoteOffset = want[i].NoteOffset
		if p != want[i] {
			t.Errorf("probe %d: have %+v, want %+v", i, p, want[i])
		}
		if off, err := f.AddrToOffset(p.Addr); !errors.Is(err, ErrNoSegment) {
			t.Errorf("%s: AddrToOffset(%#x) in debug file: have %#x, %v, want ErrNoSegment", p.Name, p.Addr, off, err)
		}
	}
}
