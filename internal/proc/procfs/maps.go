package procfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ErrNoProcess means the process does not exist (any more).
var ErrNoProcess = errors.New("no such process")

// deletedSuffix is what d_path appends to the name of an unlinked file.
const deletedSuffix = " (deleted)"

// Mapping is one line of /proc/PID/maps: a virtual memory area.
type Mapping struct {
	Start, End uint64 // address range [Start, End)
	Offset     uint64 // file offset of Start
	// Perms is the permission column as printed, e.g. "r-xp": read, write,
	// execute, then 'p' (private) or 's' (shared).
	Perms        string
	Major, Minor uint32 // device of the file; 0:0 for anonymous memory
	Inode        uint64 // inode of the file; 0 for anonymous and pseudo mappings
	// Path is the pathname column with a trailing " (deleted)" removed; ""
	// for anonymous memory; pseudo names such as "[heap]" and "[vdso]" are
	// kept as they are.
	Path    string
	Deleted bool // the pathname ended in " (deleted)"
}

// Read reports whether the mapping is readable.
func (m Mapping) Read() bool { return len(m.Perms) > 0 && m.Perms[0] == 'r' }

// Write reports whether the mapping is writable.
func (m Mapping) Write() bool { return len(m.Perms) > 1 && m.Perms[1] == 'w' }

// Exec reports whether the mapping is executable.
func (m Mapping) Exec() bool { return len(m.Perms) > 2 && m.Perms[2] == 'x' }

// FileBacked reports whether the mapping maps a file (inode != 0). memfd
// mappings ("/memfd:NAME (deleted)") and deleted files are file-backed.
func (m Mapping) FileBacked() bool { return m.Inode != 0 }

// FormatError is a malformed line in a maps file.
type FormatError struct {
	Line int    // 1-based line number
	Msg  string // what is wrong
	Val  any    // the offending text, if any
}

func (e *FormatError) Error() string {
	msg := fmt.Sprintf("maps line %d: %s", e.Line, e.Msg)
	if e.Val != nil {
		msg += fmt.Sprintf(" %q", e.Val)
	}
	return msg
}

// maxLine bounds a maps line: five short fields plus a path of at most
// PATH_MAX (4096) bytes, each newline possibly escaped to four bytes.
const maxLine = 64 << 10

// ParseMaps parses the /proc/PID/maps format. Lines must be complete; an
// empty input gives no mappings and no error. A malformed line gives a
// *FormatError and no mappings.
func ParseMaps(r io.Reader) ([]Mapping, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	var maps []Mapping
	line := 0
	for sc.Scan() {
		line++
		m, err := parseLine(sc.Bytes(), line)
		if err != nil {
			return nil, err
		}
		maps = append(maps, m)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &FormatError{Line: line + 1, Msg: "line longer than 64 KiB"}
		}
		return nil, err
	}
	return maps, nil
}

// ReadMaps reads and parses /proc/PID/maps. See the package documentation
// for the errors it may wrap.
func ReadMaps(pid int) ([]Mapping, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, procError(pid, err)
	}
	maps, err := ParseMaps(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	return maps, nil
}

// procError adds ErrNoProcess to err when it says the process is gone:
// ENOENT on the /proc/PID directory, or ESRCH when it exits while being read.
func procError(pid int, err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("pid %d: %w: %w", pid, ErrNoProcess, err)
	}
	return fmt.Errorf("pid %d: %w", pid, err)
}

// parseLine parses one maps line. The five leading fields are separated by
// single spaces; the kernel pads before the pathname, which may itself
// contain spaces.
func parseLine(b []byte, line int) (Mapping, error) {
	bad := func(msg string, val any) (Mapping, error) {
		return Mapping{}, &FormatError{Line: line, Msg: msg, Val: val}
	}
	s := string(b)
	var m Mapping
	field := func() (string, bool) {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			f := s
			s = ""
			return f, f != ""
		}
		f := s[:i]
		s = s[i+1:]
		return f, f != ""
	}

	rng, ok := field()
	if !ok {
		return bad("missing address range", nil)
	}
	lo, hi, ok := strings.Cut(rng, "-")
	if !ok {
		return bad("bad address range", rng)
	}
	var err error
	if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return bad("bad start address", lo)
	}
	if m.End, err = strconv.ParseUint(hi, 16, 64); err != nil {
		return bad("bad end address", hi)
	}
	if m.End < m.Start {
		return bad("end address below start", rng)
	}

	perms, _ := field()
	if !validPerms(perms) {
		return bad("bad permissions", perms)
	}
	m.Perms = perms

	off, _ := field()
	if m.Offset, err = strconv.ParseUint(off, 16, 64); err != nil {
		return bad("bad offset", off)
	}

	dev, _ := field()
	maj, min, ok := strings.Cut(dev, ":")
	if !ok {
		return bad("bad device", dev)
	}
	major, err1 := strconv.ParseUint(maj, 16, 32)
	minor, err2 := strconv.ParseUint(min, 16, 32)
	if err1 != nil || err2 != nil {
		return bad("bad device", dev)
	}
	m.Major, m.Minor = uint32(major), uint32(minor)

	ino, _ := field()
	if m.Inode, err = strconv.ParseUint(ino, 10, 64); err != nil {
		return bad("bad inode", ino)
	}

	path := strings.TrimLeft(s, " ")
	if p, ok := strings.CutSuffix(path, deletedSuffix); ok {
		path, m.Deleted = p, true
	}
	m.Path = path
	return m, nil
}

func validPerms(p string) bool {
	return len(p) == 4 &&
		(p[0] == 'r' || p[0] == '-') &&
		(p[1] == 'w' || p[1] == '-') &&
		(p[2] == 'x' || p[2] == '-') &&
		(p[3] == 'p' || p[3] == 's')
}
