package sdt_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
	"golang.org/x/sys/unix"
)

// TestListPIDUnprivilegedDeleted is list -p of one's own process by an
// unprivileged user (issue 10 item 8) that maps a deleted ELF: opening it
// needs map_files, hence CAP_SYS_ADMIN, so that object is skipped with a
// warning wrapping os.ErrPermission, and the mapped file that still has
// its name is listed. The test re-runs itself as nobody (uid 65534).
func TestListPIDUnprivilegedDeleted(t *testing.T) {
	if os.Getenv("USDTKIT_SDT_CHILD") != "" {
		unprivilegedList(t, os.Getenv("USDTKIT_SDT_CHILD"))
		return
	}
	testutil.RequireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "usdtkit-sdt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	for _, err := range []error{os.Chmod(dir, 0o755), os.Mkdir(tmp, 0o700), os.Chown(tmp, 65534, 65534)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	test := filepath.Join(dir, "sdt.test")
	if err := os.WriteFile(test, b, 0o755); err != nil {
		t.Fatal(err)
	}
	swapper := filepath.Join(dir, "swapper")
	testutil.BuildSwapper(t, swapper, false)

	cmd := exec.Command(test, "-test.run=^TestListPIDUnprivilegedDeleted$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "USDTKIT_SDT_CHILD="+swapper, "TMPDIR="+tmp)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as uid 65534: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestListPIDUnprivilegedDeleted") {
		t.Fatalf("child did not run the test:\n%s", out)
	}
	t.Logf("child:\n%s", out)
}

// unprivilegedList maps two copies of swapper, deletes one, and lists its
// own process.
func unprivilegedList(t *testing.T, swapper string) {
	if os.Getuid() != 65534 {
		t.Fatalf("child runs as uid %d, want 65534", os.Getuid())
	}
	b, err := os.ReadFile(swapper)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kept, deleted := filepath.Join(dir, "kept"), filepath.Join(dir, "deleted")
	for _, p := range []string{kept, deleted} {
		if err := os.WriteFile(p, b, 0o700); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		m, err := unix.Mmap(int(f.Fd()), 0, len(b), unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Munmap(m) })
	}
	if err := os.Remove(deleted); err != nil {
		t.Fatal(err)
	}

	var warnings []error
	probes, err := sdt.List(&sdt.ListOptions{PID: os.Getpid(), Warn: func(err error) { warnings = append(warnings, err) }})
	if err != nil {
		t.Fatalf("list -p self: %v", err)
	}
	if len(warnings) != 1 || !errors.Is(warnings[0], os.ErrPermission) || !strings.Contains(warnings[0].Error(), deleted) {
		t.Errorf("have warnings %v, want one for %s wrapping os.ErrPermission", warnings, deleted)
	}
	var paths []string
	for _, p := range probes {
		if p.String() == "own:only" {
			paths = append(paths, p.Path)
		}
	}
	if len(paths) != 1 || paths[0] != kept {
		t.Errorf("have own:only in %v, want in %s only", paths, kept)
	}
	t.Log("deleted mapping:", warnings)
}
