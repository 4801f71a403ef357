package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// realBinaries are cross-checked against readelf and tplist. What each holds
// is read from the file at test time: package updates change it.
var realBinaries = []struct {
	path string
}{
	{testutil.Python311},
	{testutil.LibStdcxx},
	{testutil.LibJVM},
}

// listJSONLine mirrors the documented `list -o json` schema.
type listJSONLine struct {
	Path            string  `json:"path"`
	PID             int     `json:"pid"`
	Provider        string  `json:"provider"`
	Name            string  `json:"name"`
	Address         string  `json:"address"`
	FileOffset      *string `json:"file_offset"`
	Semaphore       *string `json:"semaphore"`
	SemaphoreOffset *string `json:"semaphore_offset"`
	Args            []struct {
		Spec  string `json:"spec"`
		Kind  string `json:"kind"`
		Error string `json:"error"`
	} `json:"args"`
}

// usdtkit runs the CLI in-process and returns stdout; it fails the test on
// a non-zero exit.
func usdtkit(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("usdtkit %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// listJSONRaw runs usdtkit with args and decodes each output line.
func listJSONRaw(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range nonEmptyLines(usdtkit(t, args...)) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

func listJSON(t *testing.T, args ...string) []listJSONLine {
	t.Helper()
	out := usdtkit(t, append([]string{"list", "-o", "json"}, args...)...)
	var lines []listJSONLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l listJSONLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

// readelfNote is one NT_STAPSDT note as readelf -n prints it.
type readelfNote struct {
	provider, name, args      string
	location, base, semaphore uint64
}

var (
	reLocation = regexp.MustCompile(`Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), Semaphore: (0x[0-9a-f]+)`)
	reSection  = regexp.MustCompile(`\s\.stapsdt\.base\s+\S+\s+([0-9a-f]+)\s`)
)

func readelfNotes(t *testing.T, path string) []readelfNote {
	t.Helper()
	out, err := exec.Command(testutil.RequireTool(t, "readelf"), "-n", path).Output()
	if err != nil {
		t.Fatalf("readelf -n %s: %v", path, err)
	}
	var notes []readelfNote
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Provider: "):
			notes = append(notes, readelfNote{provider: strings.TrimPrefix(line, "Provider: ")})
		case len(notes) == 0:
		case strings.HasPrefix(line, "Name: "):
			notes[len(notes)-1].name = strings.TrimPrefix(line, "Name: ")
		case strings.HasPrefix(line, "Arguments:"):
			notes[len(notes)-1].args = strings.TrimSpace(strings.TrimPrefix(line, "Arguments:"))
		case reLocation.MatchString(line):
			m := reLocation.FindStringSubmatch(line)
			n := &notes[len(notes)-1]
			n.location, n.base, n.semaphore = parseHex(t, m[1]), parseHex(t, m[2]), parseHex(t, m[3])
		}
	}
	return notes
}

// stapsdtBase returns the address of .stapsdt.base per readelf -S.
func stapsdtBase(t *testing.T, path string) (uint64, bool) {
	t.Helper()
	out, err := exec.Command(testutil.RequireTool(t, "readelf"), "-S", "--wide", path).Output()
	if err != nil {
		t.Fatalf("readelf -S %s: %v", path, err)
	}
	m := reSection.FindSubmatch(out)
	if m == nil {
		return 0, false
	}
	return parseHex(t, "0x"+string(m[1])), true
}

func parseHex(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return v
}

// TestListMatchesReadelf compares `list -o json` with readelf -n note by
// note, on the real binaries and on the generated fixtures (whose notes all
// need the .stapsdt.base adjustment, and some of whose arguments are bad on
// purpose).
func TestListMatchesReadelf(t *testing.T) {
	type file struct {
		path    string
		notes   int
		badArgs bool
	}
	// anyNotes: as many as readelf shows of a system file, but not none.
	const anyNotes = -1
	files := []file{
		{"testdata/x86_64.elf", 6, true},
		{"testdata/aarch64.elf", 1, false},
		{"testdata/ppc64.elf", 1, true},
	}
	for _, bin := range realBinaries {
		files = append(files, file{bin.path, anyNotes, false})
	}
	for _, bin := range files {
		t.Run(bin.path, func(t *testing.T) {
			testutil.RequireFile(t, bin.path)
			want := readelfNotes(t, bin.path)
			if bin.notes == anyNotes && len(want) == 0 || bin.notes != anyNotes && len(want) != bin.notes {
				t.Fatalf("readelf shows %d notes, want %d (-1: any but none)", len(want), bin.notes)
			}
			sect, hasSect := stapsdtBase(t, bin.path)
			have := listJSON(t, bin.path)
			if len(have) != len(want) {
				t.Fatalf("have %d notes, readelf %d", len(have), len(want))
			}
			for i, w := range want {
				h := have[i]
				adj := func(v uint64) uint64 {
					if !hasSect || v == 0 {
						return v
					}
					return v + sect - w.base
				}
				wantSem := "<nil>"
				if w.semaphore != 0 {
					wantSem = fmt.Sprintf("%#x", adj(w.semaphore))
				}
				var specs []string
				for _, a := range h.Args {
					specs = append(specs, a.Spec)
					if !bin.badArgs && (a.Error != "" || a.Kind == "") {
						t.Errorf("note %d %s:%s: argument %q does not parse: %s", i, h.Provider, h.Name, a.Spec, a.Error)
					}
				}
				haveRow := fmt.Sprintf("%s:%s @%s sem=%s args=%q", h.Provider, h.Name, h.Address, deref(h.Semaphore), strings.Join(specs, " "))
				wantRow := fmt.Sprintf("%s:%s @%#x sem=%s args=%q", w.provider, w.name, adj(w.location), wantSem, w.args)
				if haveRow != wantRow {
					t.Errorf("note %d:\nhave %s\nwant %s", i, haveRow, wantRow)
				}
				if h.Path != bin.path || (h.FileOffset == nil && h.Name != "nosite") {
					t.Errorf("note %d: path %q file_offset %v", i, h.Path, h.FileOffset)
				}
				if (h.Semaphore == nil) != (h.SemaphoreOffset == nil) {
					t.Errorf("note %d: semaphore %v but semaphore_offset %v", i, deref(h.Semaphore), deref(h.SemaphoreOffset))
				}
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestListMatchesTplist compares the default text output with tplist-bpfcc -l:
// the same probes, in the same order.
func TestListMatchesTplist(t *testing.T) {
	tplist := testutil.RequireTool(t, "tplist-bpfcc")
	for _, bin := range realBinaries {
		t.Run(bin.path, func(t *testing.T) {
			testutil.RequireFile(t, bin.path)
			out, err := exec.Command(tplist, "-l", bin.path).Output()
			if err != nil {
				t.Fatalf("tplist-bpfcc -l %s: %v", bin.path, err)
			}
			want := nonEmptyLines(string(out))
			have := nonEmptyLines(usdtkit(t, "list", bin.path))
			if !slices.Equal(have, want) {
				t.Errorf("have %d probes, tplist %d\nhave %q\nwant %q", len(have), len(want), head(have), head(want))
			}
		})
	}
}

func nonEmptyLines(s string) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func head(s []string) []string { return s[:min(len(s), 5)] }
