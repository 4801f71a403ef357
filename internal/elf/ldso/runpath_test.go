package ldso_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/elf/ldso"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// reRunPath is readelf -d's line for DT_RUNPATH or DT_RPATH.
var reRunPath = regexp.MustCompile(`\((RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]`)

// TestRunPath builds executables with run paths at test time (DT_RUNPATH
// with the linker's new tags, DT_RPATH without) and checks RunPath's
// directories against readelf -d's entries with $ORIGIN expanded by hand
// to the directory the executable is in, reached through a symbolic link.
func TestRunPath(t *testing.T) {
	gcc := testutil.RequireTool(t, "gcc")
	readelf := testutil.RequireTool(t, "readelf")
	dir := t.TempDir()
	src := filepath.Join(dir, "main.c")
	if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		tag   string
		want  []string // with ORIGIN for the executable's directory
	}{
		{"runpath", []string{"-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../lib:/opt/x:${ORIGIN}/y:$LIB/z:rel"}, "RUNPATH", []string{"ORIGIN/../lib", "/opt/x", "ORIGIN/y"}},
		{"rpath", []string{"-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN"}, "RPATH", []string{"ORIGIN"}},
		{"none", nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(dir, tc.name, "bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			exe := filepath.Join(bin, "exe")
			args := append([]string{"-o", exe, src}, tc.flags...)
			if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
				t.Fatalf("gcc %v: %v\n%s", args, err, out)
			}
			out, err := exec.Command(readelf, "-d", exe).Output()
			if err != nil {
				t.Fatal(err)
			}
			m := reRunPath.FindSubmatch(out)
			switch {
			case tc.tag == "" && m != nil:
				t.Fatalf("readelf -d lists %s", m[0])
			case tc.tag != "" && (m == nil || string(m[1]) != tc.tag):
				t.Fatalf("readelf -d lists no %s:\n%s", tc.tag, out)
			}
			link := filepath.Join(dir, tc.name+"-link")
			if err := os.Symlink(exe, link); err != nil {
				t.Fatal(err)
			}
			got, err := ldso.RunPath(link)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, filepath.Clean(strings.Replace(w, "ORIGIN", bin, 1)))
			}
			if !slices.Equal(got, want) {
				t.Errorf("RunPath = %q, want %q (readelf: %s)", got, want, m)
			}
		})
	}
}

// TestFindRunPath checks that FindOptions.RunPath is searched before the
// cache: a copy of a library the cache lists, in a directory of its own,
// is found there.
func TestFindRunPath(t *testing.T) {
	sys, err := ldso.Find("libc", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sys)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(sys)), b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		runPath []string
		want    string
	}{
		{"run path first", []string{"/nonexistent", dir}, filepath.Join(dir, filepath.Base(sys))},
		{"no run path", nil, sys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ldso.Find("libc", &ldso.FindOptions{RunPath: tc.runPath})
			if err != nil || got != tc.want {
				t.Errorf("Find(libc) = %q, %v, want %q", got, err, tc.want)
			}
		})
	}
}
