package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestListSymbolsLibc lists malloc through a library short name and checks
// it against readelf's symbol table and segments.
func TestListSymbolsLibc(t *testing.T) {
	lines := listJSONRaw(t, "list", "-o", "json", "uprobe:libc:malloc")
	if len(lines) != 1 {
		t.Fatalf("uprobe:libc:malloc: %d symbols, want 1: %v", len(lines), lines)
	}
	s := lines[0]
	if s["name"] != "malloc" || s["kind"] != "func" || s["bind"] != "global" || s["file_offset"] == nil {
		t.Errorf("malloc: %v", s)
	}
	path := s["path"].(string)
	out, err := exec.Command(testutil.RequireTool(t, "readelf"), "-sW", "--dyn-syms", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 8 && (f[7] == "malloc@@GLIBC_2.2.5" || f[7] == "malloc") && f[3] == "FUNC" {
			want = "0x" + strings.TrimLeft(f[1], "0")
		}
	}
	if s["address"] != want {
		t.Errorf("malloc at %v, readelf says %s", s["address"], want)
	}

	// A glob lists several, all matching.
	have := nonEmptyLines(usdtkit(t, "list", "uprobe:libc:mall*"))
	if len(have) < 3 || !slices.Contains(have, path+" malloc") {
		t.Errorf("uprobe:libc:mall*: %q", have)
	}
	for _, l := range have {
		if !strings.HasPrefix(l, path+" mall") {
			t.Errorf("uprobe:libc:mall* listed %q", l)
		}
	}
}

// TestListSymbolsGo lists the functions of a Go program we build, by their
// Go names, before and after stripping.
func TestListSymbolsGo(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	prog := "package main\n\ntype Server struct{ n int }\n\n//go:noinline\nfunc (s *Server) Handle(p string) int { return s.n + len(p) }\n\nfunc main() { println((&Server{}).Handle(\"x\")) }\n"
	if err := os.WriteFile(src, []byte(prog), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name  string
		flags []string
	}{
		{"plain", nil},
		{"stripped", []string{"-ldflags=-s -w"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			bin := filepath.Join(dir, v.name)
			args := append(append([]string{"build", "-o", bin}, v.flags...), src)
			cmd := exec.Command("go", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GO111MODULE=off", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			have := nonEmptyLines(usdtkit(t, "list", "uprobe:"+bin+":main.*"))
			want := []string{bin + " main.(*Server).Handle", bin + " main.main"}
			slices.Sort(have)
			if !slices.Equal(have, want) {
				t.Errorf("have %q, want %q", have, want)
			}
		})
	}
}

// TestListSymbolsPID finds libc's malloc in a running process.
func TestListSymbolsPID(t *testing.T) {
	pid := startPython(t)
	lines := listJSONRaw(t, "list", "-o", "json", "-p", strconv.Itoa(pid), "uprobe:libc:malloc")
	if len(lines) != 1 || lines[0]["name"] != "malloc" || lines[0]["pid"] != float64(pid) {
		t.Errorf("-p %d uprobe:libc:malloc: %v", pid, lines)
	}
}
