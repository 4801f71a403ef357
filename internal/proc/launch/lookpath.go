package launch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Errors of LookPath, each already a sentence a user can act on.
var (
	// ErrNotExecutable means the file exists but cannot be run: it is not
	// a regular file or has no execute bit.
	ErrNotExecutable = errors.New("not executable")
	// ErrNoCommand means there is no such file, or no such command in
	// $PATH.
	ErrNoCommand = errors.New("no such command")
)

// LookPath finds the executable a command line's first word names, as a
// shell would: a word with a slash is a path, other words are looked up in
// $PATH. Unlike exec.LookPath its errors say what is wrong with the file,
// not only that exec was refused: they wrap ErrNoCommand or
// ErrNotExecutable, never os.ErrPermission (which would read as a lack of
// privileges to a tracer running as root).
func LookPath(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("an empty command name: %w", ErrNoCommand)
	}
	if !strings.Contains(name, "/") {
		path, err := exec.LookPath(name)
		switch {
		case err == nil:
			return path, nil
		case errors.Is(err, exec.ErrNotFound):
			return "", fmt.Errorf("%s: %w in $PATH", name, ErrNoCommand)
		case errors.Is(err, fs.ErrPermission):
			return "", fmt.Errorf("%s in $PATH is %w", name, ErrNotExecutable)
		}
		return "", err
	}
	fi, err := os.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: %w (no such file)", name, ErrNoCommand)
	}
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is %w", name, ErrNotExecutable)
	}
	return name, nil
}

// ThreadGroup returns the process (thread group) that thread tid belongs
// to: tid itself for a process's main thread. It wraps os.ErrNotExist when
// there is no such thread.
func ThreadGroup(tid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Tgid:"); ok {
			tgid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || tgid <= 0 {
				break
			}
			return tgid, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no Tgid line", tid)
}
