package testutil

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// FileID is a file's identity: stat's st_dev and st_ino.
type FileID struct{ Dev, Inode uint64 }

// StatID returns the identity of the file at path.
func StatID(tb testing.TB, path string) FileID {
	tb.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		tb.Fatal(err)
	}
	return FileID{Dev: st.Dev, Inode: st.Ino}
}

// BuildSwapper compiles testdata/swapper.c (its comment says what it does)
// to out, with -DHOST when host.
func BuildSwapper(tb testing.TB, out string, host bool) {
	tb.Helper()
	gcc := RequireTool(tb, "gcc")
	RequireFile(tb, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("no caller information to find swapper.c")
	}
	src := RequireFile(tb, filepath.Join(filepath.Dir(file), "testdata", "swapper.c"))
	args := []string{"-O1", "-g", "-o", out, src}
	if host {
		args = append([]string{"-DHOST"}, args...)
	}
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		tb.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
}

// SwapWith is what a Swap exchanges its executable's directory with.
type SwapWith int

const (
	// SwapSymlink is an absolute symlink to a directory holding the HOST
	// build of swapper.c under the same name.
	SwapSymlink SwapWith = iota
	// SwapFIFO is a directory holding a FIFO under the executable's name.
	SwapFIFO
)

// Swap is a running "swapper swap" in a mount namespace of its own: it
// keeps exchanging the directory it was started from with something else,
// so that the path in its maps names another file half of the time.
type Swap struct {
	Cmd *exec.Cmd
	// Own is the path the process was started from; OwnID its file.
	Own   string
	OwnID FileID
	// Host is the HOST build (SwapSymlink only); HostID its file.
	Host   string
	HostID FileID
}

// PID is the process's ID.
func (s *Swap) PID() int { return s.Cmd.Process.Pid }

// StartSwap builds both swappers, starts the process in its own mount
// namespace (mounts private) and waits for its ready line. It is killed
// when the test ends. Needs root.
func StartSwap(tb testing.TB, with SwapWith) *Swap {
	tb.Helper()
	RequireRoot(tb)
	work := tb.TempDir()
	d, s, host := filepath.Join(work, "d"), filepath.Join(work, "s"), filepath.Join(work, "host")
	for _, dir := range []string{d, host} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	sw := &Swap{Own: filepath.Join(d, "swapper")}
	BuildSwapper(tb, sw.Own, false)
	sw.OwnID = StatID(tb, sw.Own)
	switch with {
	case SwapSymlink:
		sw.Host = filepath.Join(host, "swapper")
		BuildSwapper(tb, sw.Host, true)
		sw.HostID = StatID(tb, sw.Host)
		if err := os.Symlink(host, s); err != nil {
			tb.Fatal(err)
		}
	case SwapFIFO:
		if err := os.Mkdir(s, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(s, "swapper"), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	cmd := exec.Command(sw.Own, "swap", d, s)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		tb.Fatalf("swapper: have %q, %v, want ready", sc.Text(), sc.Err())
	}
	sw.Cmd = cmd
	return sw
}

// StartMapper runs "swapper map files..." (the process maps each file
// executable) and waits for its ready line; it is killed when the test
// ends.
func StartMapper(tb testing.TB, exe string, files ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(exe, append([]string{"map"}, files...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		tb.Fatalf("swapper map: have %q, %v, want ready", sc.Text(), sc.Err())
	}
	return cmd
}

// StartGoodAndTruncated builds swapper and, from the C source csrc, a
// shared library libgood.so, writes libtruncated.so (its first 256 bytes:
// an ELF header whose sections lie past the end of the file), and runs
// swapper mapping both (StartMapper). It returns the process and the two
// libraries' paths.
func StartGoodAndTruncated(tb testing.TB, csrc string) (cmd *exec.Cmd, good, truncated string) {
	tb.Helper()
	gcc := RequireTool(tb, "gcc")
	dir := tb.TempDir()
	exe := filepath.Join(dir, "swapper")
	BuildSwapper(tb, exe, false)
	src := filepath.Join(dir, "good.c")
	if err := os.WriteFile(src, []byte(csrc), 0o644); err != nil {
		tb.Fatal(err)
	}
	good = filepath.Join(dir, "libgood.so")
	if b, err := exec.Command(gcc, "-shared", "-fPIC", "-o", good, src).CombinedOutput(); err != nil {
		tb.Fatalf("gcc: %v\n%s", err, b)
	}
	img, err := os.ReadFile(good)
	if err != nil {
		tb.Fatal(err)
	}
	truncated = filepath.Join(dir, "libtruncated.so")
	if err := os.WriteFile(truncated, img[:256], 0o644); err != nil {
		tb.Fatal(err)
	}
	return StartMapper(tb, exe, good, truncated), good, truncated
}
