package sdt_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
)

// maxRSS is the bound on the peak resident set size of listing a file that
// claims gigabytes of notes.
const maxRSS = 200 << 20

// sparseCopy writes a copy of the ELF file at src whose first note section
// other than .note.stapsdt (.note.gnu.property for gcc on Debian 12)
// claims size bytes of zeros at the end of the file: only the headers are written, the rest is
// a hole, so the file takes a few kilobytes of disk. It returns the copy's
// path. The other note sections, .note.stapsdt among them, stay intact.
func sparseCopy(t *testing.T, src string, size int64) string {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if ef.Class != elf.ELFCLASS64 || ef.Data != elf.ELFDATA2LSB {
		t.Fatalf("%s: want ELF64 little-endian", src)
	}
	idx := -1
	for i, s := range ef.Sections {
		if s.Type == elf.SHT_NOTE && s.Name != ".note.stapsdt" {
			idx = i
			break
		}
	}
	if idx < 0 {
		t.Fatalf("%s has no note section besides .note.stapsdt", src)
	}
	le := binary.LittleEndian
	shoff := le.Uint64(raw[0x28:])
	hdr := shoff + uint64(idx)*64
	off := (uint64(len(raw)) + 0xfff) &^ 0xfff
	le.PutUint64(raw[hdr+24:], off)          // sh_offset
	le.PutUint64(raw[hdr+32:], uint64(size)) // sh_size
	path := filepath.Join(t.TempDir(), fmt.Sprintf("sparse-%d.elf", size))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(off) + size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 > 1<<20 {
		t.Fatalf("%s: %d bytes on disk, want a sparse file", path, st.Blocks*512)
	}
	return path
}

// peakRSS runs fn with the peak resident set size of this process reset
// (clear_refs 5, Linux 4.0) and returns the peak during fn, in bytes.
func peakRSS(t *testing.T, fn func()) int64 {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("reset peak RSS: %v", err)
	}
	fn()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// mapFile starts a process that maps path PROT_READ|PROT_EXEC, as the
// issue's unprivileged attacker did, and returns its PID once it says it
// has.
func mapFile(t *testing.T, path string) int {
	t.Helper()
	gcc := testutil.RequireTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "mapper.c")
	if err := os.WriteFile(src, []byte(`#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Map argv[1] readable and executable, say "ready", wait for stdin to close. */
int main(int argc, char **argv) {
	int fd = open(argv[1], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) { perror("open"); return 1; }
	if (mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) { perror("mmap"); return 1; }
	printf("ready\n");
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0) {}
	return 0;
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "mapper")
	if out, err := exec.Command(gcc, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	m := testutil.StartCmd(t, exec.Command(bin, path))
	m.Expect(t, "ready")
	return m.PID()
}

// probeNames returns "provider:name@address" for each location of probes.
func probeNames(probes []sdt.Probe) []string {
	var names []string
	for _, p := range probes {
		for _, l := range p.Locations {
			names = append(names, fmt.Sprintf("%s@%#x", p.String(), l.Address))
		}
	}
	return names
}

// TestSparseNotes lists copies of a gcc-built binary with SDT probes whose
// first note section claims 1.5 GiB and 16 GiB of zeros (issue 10, item
// 3): through the library and the usdtkit binary, each from the file and
// from a process that maps it (list -p). Each lists the binary's probes, warns
// once that the zeros exceed the limit on notes, and stays under maxRSS.
func TestSparseNotes(t *testing.T) {
	testutil.RequireRoot(t) // clear_refs and list -p of another process
	tracee := testutil.BuildTracee(t)
	want, err := sdt.List(&sdt.ListOptions{Paths: []string{tracee}})
	if err != nil || len(want) == 0 {
		t.Fatalf("list %s: %d probes, %v", tracee, len(want), err)
	}
	usdtkit := testutil.BuildGo(t, "../cmd/usdtkit")

	for _, size := range []int64{3 << 29, 16 << 30} {
		t.Run(fmt.Sprintf("%dMiB", size>>20), func(t *testing.T) {
			path := sparseCopy(t, tracee, size)
			check := func(t *testing.T, opts sdt.ListOptions) {
				t.Helper()
				var warnings []error
				opts.Warn = func(err error) { warnings = append(warnings, err) }
				var probes []sdt.Probe
				rss := peakRSS(t, func() { probes, err = sdt.List(&opts) })
				if err != nil {
					t.Fatalf("List: %v", err)
				}
				if have, want := probeNames(probes), probeNames(want); !reflect.DeepEqual(have, want) {
					t.Errorf("have probes %v, want %v", have, want)
				}
				var fe *elfnotes.FormatError
				if len(warnings) != 1 || !errors.Is(warnings[0], elfnotes.ErrLimit) || !errors.As(warnings[0], &fe) || fe.Off <= 0 {
					t.Errorf("have warnings %v, want one wrapping ErrLimit with an offset", warnings)
				}
				if rss > maxRSS {
					t.Errorf("peak RSS %d MiB, want under %d MiB", rss>>20, maxRSS>>20)
				}
				t.Logf("peak RSS %d MiB for a %d MiB file; warning: %v", rss>>20, size>>20, warnings)
			}
			t.Run("file", func(t *testing.T) { check(t, sdt.ListOptions{Paths: []string{path}}) })
			t.Run("pid", func(t *testing.T) {
				check(t, sdt.ListOptions{PID: mapFile(t, path), Paths: []string{path}})
			})
			t.Run("usdtkit", func(t *testing.T) { runList(t, usdtkit, want, size, "list", path) })
			t.Run("usdtkit-pid", func(t *testing.T) {
				runList(t, usdtkit, want, size, "list", "-p", strconv.Itoa(mapFile(t, path)), path)
			})
		})
	}
}

// runList runs usdtkit with args, listing a sparse copy of size bytes of
// a binary with the probes want, and checks its output, its one warning
// and its peak RSS.
func runList(t *testing.T, usdtkit string, want []sdt.Probe, size int64, args ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(usdtkit, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("usdtkit list: %v\n%s", err, stderr.Bytes())
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	if rss > maxRSS {
		t.Errorf("usdtkit list: max RSS %d MiB, want under %d MiB", rss>>20, maxRSS>>20)
	}
	for _, p := range want {
		if !strings.Contains(stdout.String(), p.Provider+":"+p.Name) {
			t.Errorf("usdtkit list does not list %s:\n%s", p.String(), stdout.Bytes())
		}
	}
	if n := strings.Count(stderr.String(), "usdtkit: warning:"); n != 1 || !strings.Contains(stderr.String(), "notes") {
		t.Errorf("usdtkit list: want one warning about notes on stderr, have:\n%s", stderr.Bytes())
	}
	t.Logf("usdtkit list: max RSS %d MiB for a %d MiB file", rss>>20, size>>20)
}
