package sdt

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

// argCorpora maps the argument-string corpora in testdata to their machine.
var argCorpora = map[string]elf.Machine{
	"testdata/argspec-x86_64.txt":  elf.EM_X86_64,
	"testdata/argspec-aarch64.txt": elf.EM_AARCH64,
}

// realBinaries are system files with many USDT notes (libjvm has 531, many of
// them inlined copies with different operands).
var realBinaries = []string{
	"/usr/bin/python3.11",
	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	"/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so",
}

// readCorpus returns the non-comment, non-blank lines of a corpus file.
func readCorpus(tb testing.TB, path string) []string {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		tb.Fatalf("%s holds no argument strings", path)
	}
	return lines
}

// requireFile skips the test when path is absent, or fails it when the
// environment variable CI is set.
func requireFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v (required when CI is set)", err)
		}
		t.Skip(err)
	}
}

// requireTool is requireFile for a command in $PATH.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v (required when CI is set)", err)
		}
		t.Skip(err)
	}
	return p
}

func TestArgsCorpus(t *testing.T) {
	matches, err := filepath.Glob("testdata/argspec-*.txt")
	if err != nil || len(matches) != len(argCorpora) {
		t.Fatalf("glob testdata/argspec-*.txt: %v %v, want the %d corpora of argCorpora", matches, err, len(argCorpora))
	}
	for path, m := range argCorpora {
		t.Run(filepath.Base(path), func(t *testing.T) {
			for _, line := range readCorpus(t, path) {
				args, err := ParseArgs(m, line)
				if err != nil {
					t.Errorf("ParseArgs(%v, %q): %v", m, line, err)
					continue
				}
				for _, a := range args {
					checkRoundTrip(t, a)
					if _, ok := a.BaseRegister(); a.Reg != "" && !ok {
						t.Errorf("%q: base register %q does not resolve", a.Spec, a.Reg)
					}
				}
			}
		})
	}
}

// sdtNote is one NT_STAPSDT note as readelf -n prints it.
type sdtNote struct {
	provider, name string
	location       uint64
	args           string
}

// readelfNotes lists the stapsdt notes of path with readelf, a tool we did
// not write.
func readelfNotes(t *testing.T, path string) []sdtNote {
	t.Helper()
	readelf := requireTool(t, "readelf")
	out, err := exec.Command(readelf, "-n", path).Output()
	if err != nil {
		t.Fatalf("readelf -n %s: %v", path, err)
	}
	var notes []sdtNote
	var cur *sdtNote
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		// With long lines readelf may print "Provider:" after the note
		// header on the same line.
		if i := strings.Index(line, "Provider: "); i >= 0 {
			line = line[i:]
		}
		line = strings.TrimSpace(line)
		key, val, _ := strings.Cut(line, ":")
		val = strings.TrimSpace(val)
		switch key {
		case "Provider":
			notes = append(notes, sdtNote{provider: val})
			cur = &notes[len(notes)-1]
		case "Name":
			if cur != nil {
				cur.name = val
			}
		case "Location":
			if cur != nil {
				loc, _, _ := strings.Cut(val, ",")
				cur.location, err = strconv.ParseUint(loc, 0, 64)
				if err != nil {
					t.Fatalf("readelf location %q: %v", line, err)
				}
			}
		case "Arguments":
			if cur != nil {
				cur.args = val
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return notes
}

// TestArgsRealBinaries parses every argument of every note of the real
// binaries and checks that testdata/argspec-x86_64.txt holds each argument
// string, so the corpus test covers them on machines without these files.
func TestArgsRealBinaries(t *testing.T) {
	corpus := map[string]bool{}
	for _, l := range readCorpus(t, "testdata/argspec-x86_64.txt") {
		corpus[l] = true
	}
	for _, path := range realBinaries {
		t.Run(filepath.Base(path), func(t *testing.T) {
			requireFile(t, path)
			notes := readelfNotes(t, path)
			if len(notes) == 0 {
				t.Fatalf("readelf found no stapsdt notes in %s", path)
			}
			nargs := 0
			for _, n := range notes {
				args, err := ParseArgs(elf.EM_X86_64, n.args)
				if err != nil {
					t.Errorf("%s:%s at %#x: %v", n.provider, n.name, n.location, err)
				}
				nargs += len(args)
				if n.args != "" && !corpus[n.args] {
					t.Errorf("testdata/argspec-x86_64.txt lacks %q (%s:%s)", n.args, n.provider, n.name)
				}
			}
			t.Logf("%s: %d notes, %d arguments", path, len(notes), nargs)
		})
	}
}

// TestArgsTplist compares our reading of each argument of the real binaries
// with bcc's (tplist-bpfcc -vv), another implementation we did not write:
// size, signedness and location.
func TestArgsTplist(t *testing.T) {
	for _, path := range realBinaries {
		t.Run(filepath.Base(path), func(t *testing.T) {
			requireFile(t, path)
			tplist := requireTool(t, "tplist-bpfcc")
			notes := readelfNotes(t, path)
			out, err := exec.Command(tplist, "-vv", "-l", path).Output()
			if err != nil {
				t.Fatalf("tplist-bpfcc -vv -l %s: %v", path, err)
			}
			bcc := parseTplist(t, out)
			compared := 0
			for _, n := range notes {
				want, ok := bcc[n.location]
				if !ok {
					t.Errorf("tplist lists no location %#x (%s:%s)", n.location, n.provider, n.name)
					continue
				}
				args, _ := ParseArgs(elf.EM_X86_64, n.args)
				if len(args) != len(want) {
					t.Errorf("%#x %q: have %d args, tplist %d", n.location, n.args, len(args), len(want))
					continue
				}
				for i, a := range args {
					if a.Kind == ArgConst {
						want[i] = truncateBccConst(want[i], a)
					}
					if got := bccString(a); got != want[i] {
						t.Errorf("%#x arg %d %q: have %q, tplist %q", n.location, i, a.Spec, got, want[i])
					}
					compared++
				}
			}
			if compared == 0 {
				t.Fatal("compared no arguments")
			}
			t.Logf("%d arguments agree with tplist", compared)
		})
	}
}

// parseTplist maps each location address in tplist -vv output to its
// argument lines ("8 unsigned bytes @ *(bp - 20)").
func parseTplist(t *testing.T, out []byte) map[uint64][]string {
	t.Helper()
	locs := map[uint64][]string{}
	var cur uint64
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[0] == "location":
			addr, err := strconv.ParseUint(f[3], 0, 64)
			if err != nil {
				t.Fatalf("tplist line %q: %v", line, err)
			}
			cur = addr
			locs[cur] = []string{}
		case len(f) > 2 && f[0] == "argument":
			// "argument #1 8 unsigned bytes @ bx": drop "argument #1".
			locs[cur] = append(locs[cur], strings.Join(f[2:], " "))
		}
	}
	return locs
}

// bccString renders a the way bcc's tplist -vv prints an argument. bcc names
// registers by their pt_regs field (rax -> ax, any width), prints constants as
// written (before truncation), and memory as *(base +/- offset).
func bccString(a Arg) string {
	sign := "unsigned"
	if a.Signed {
		sign = "signed  "
	}
	// tplist pads "signed" to the width of "unsigned"; Fields above
	// collapsed the padding, so do the same here.
	prefix := strings.Join(strings.Fields(fmt.Sprintf("%d %s bytes @", a.Size, sign)), " ")
	reg := func(name string) string {
		r, _ := LookupRegister(a.Machine, name)
		if strings.HasPrefix(r.Name, "r") && len(r.Name) == 3 && !isDigit(r.Name[1]) {
			return r.Name[1:]
		}
		return r.Name
	}
	switch a.Kind {
	case ArgReg:
		return prefix + " " + reg(a.Reg)
	case ArgConst:
		return prefix + " " + strconv.FormatInt(a.Value, 10)
	case ArgMem:
		op := "+"
		off := a.Offset
		if off < 0 {
			op, off = "-", -off
		}
		s := fmt.Sprintf("*(%s %s %d", reg(a.Reg), op, off)
		if a.Index != "" {
			s += fmt.Sprintf(" + %s * %d", reg(a.Index), a.Scale)
		}
		return prefix + " " + s + ")"
	}
	return prefix + " ?"
}

// truncateBccConst rewrites the constant of a tplist argument line the way a
// tracer reports it (truncated to a's size, then extended): bcc prints the
// literal as written.
func truncateBccConst(line string, a Arg) string {
	head, lit, ok := strings.Cut(line, " @ ")
	if !ok {
		return line
	}
	v, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		return line
	}
	return head + " @ " + strconv.FormatInt(truncate(uint64(v), a.Size, a.Signed), 10)
}

// TestArgsGCC compiles testdata/argspec_gcc.c with the system GCC and
// sys/sdt.h in several code models and parses every argument of every note.
// Only the thread-local probe t:tls may fail, and only as unsupported.
func TestArgsGCC(t *testing.T) {
	gcc := requireTool(t, "gcc")
	requireFile(t, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	for _, flags := range [][]string{{"-O0"}, {"-O2"}, {"-O2", "-fno-pie"}, {"-O2", "-fPIC"}} {
		t.Run(strings.Join(flags, ""), func(t *testing.T) {
			obj := filepath.Join(t.TempDir(), "argspec_gcc.o")
			cmd := exec.Command(gcc, append(flags, "-w", "-c", "testdata/argspec_gcc.c", "-o", obj)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", cmd, err, out)
			}
			notes := readelfNotes(t, obj)
			if len(notes) != 9 {
				t.Fatalf("have %d notes, want the 9 probes of argspec_gcc.c", len(notes))
			}
			for _, n := range notes {
				args, err := ParseArgs(elf.EM_X86_64, n.args)
				if err == nil {
					for _, a := range args {
						checkRoundTrip(t, a)
					}
					continue
				}
				if n.name != "tls" || !errors.Is(err, ErrUnsupportedOperand) {
					t.Errorf("%s:%s %q: %v", n.provider, n.name, n.args, err)
				}
			}
		})
	}
}
