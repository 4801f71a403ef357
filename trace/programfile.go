package trace

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// MaxProgramSize is the largest program file ReadProgram reads: far more
// than any tool (Debian's largest .bt is under 8 KiB), far less than what
// would let a planted file make a tracer, often root, spend memory.
const MaxProgramSize = 1 << 20

// ErrProgramFile is wrapped by ReadProgram's errors about what path is
// (not a regular file, too large).
var ErrProgramFile = errors.New("not a usable program file")

// ReadProgram reads the program file at path: a regular file (a path to
// a device such as /dev/zero, a FIFO or a directory is refused, without
// waiting on a FIFO's writer) of at most MaxProgramSize bytes.
func ReadProgram(path string) (string, error) {
	// O_NONBLOCK: opening a FIFO does not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s: %w: it is a %s, not a regular file", path, ErrProgramFile, fileKind(st.Mode()))
	}
	if st.Size() > MaxProgramSize {
		return "", fmt.Errorf("%s: %w: %d bytes, more than %d", path, ErrProgramFile, st.Size(), MaxProgramSize)
	}
	// The size can change while it is read: read one byte past the limit.
	b, err := io.ReadAll(io.LimitReader(f, MaxProgramSize+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxProgramSize {
		return "", fmt.Errorf("%s: %w: more than %d bytes", path, ErrProgramFile, MaxProgramSize)
	}
	return string(b), nil
}

// ReadProgramFrom reads a program from r, such as standard input
// (bpftrace's program file "-"), to its end: at most MaxProgramSize
// bytes, more is an error wrapping ErrProgramFile.
func ReadProgramFrom(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxProgramSize+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxProgramSize {
		return "", fmt.Errorf("%w: more than %d bytes", ErrProgramFile, MaxProgramSize)
	}
	return string(b), nil
}

// fileKind names the type of a file that is not regular.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}
