package symtab

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// ErrNoDebugFile says that no separate debug file of an object was found.
var ErrNoDebugFile = errors.New("no separate debug file")

// DefaultDebugDir is the global debug directory of GDB and of Debian's,
// Fedora's and Ubuntu's -dbg/-dbgsym/-debuginfo packages.
const DefaultDebugDir = "/usr/lib/debug"

// Limits on what the debug-file lookup reads from untrusted files.
const (
	// maxDebuglink bounds the size of a .gnu_debuglink section: a file
	// name (at most NAME_MAX bytes), padding and the CRC.
	maxDebuglink = 4096
	// maxBuildID bounds a build ID; real ones are 16 (MD5/UUID) or 20
	// (SHA-1) bytes.
	maxBuildID = 64
	// maxDebugFileCRC bounds the size of a file whose CRC is computed.
	maxDebugFileCRC = 4 << 30
)

// DebugOptions says where [OpenDebugFile] looks.
type DebugOptions struct {
	// Root is a directory (an O_PATH descriptor from procfs.OpenRoot) in
	// which every name is resolved, without leaving it: for a process's
	// object, that process's root. nil means the host's "/".
	Root *os.File
	// Dirs are the global debug directories, each an absolute path inside
	// Root. Empty means [DefaultDebugDir].
	Dirs []string
}

// A DebugFile is an open separate debug file.
type DebugFile struct {
	*elfnotes.File
	// Path is the name it was found under, inside the root.
	Path string
	// By says how it was found: "build-id" or "debuglink".
	By string
	os *os.File
}

// ReaderAt returns the open file, for readers of its other sections
// (DWARF); it is valid until Close.
func (d *DebugFile) ReaderAt() io.ReaderAt { return d.os }

// Close closes the file; calling it again returns nil.
func (d *DebugFile) Close() error {
	if d.os == nil {
		return nil
	}
	f := d.os
	d.os = nil
	return f.Close()
}

// BuildID returns the descriptor of f's NT_GNU_BUILD_ID note, or nil when
// it has none (or one longer than 64 bytes, which no linker writes).
func BuildID(f *elfnotes.File) []byte {
	notes, _, err := f.ReadNotes()
	if err != nil {
		return nil
	}
	for _, n := range notes {
		if n.Owner == elfnotes.OwnerGNU && n.Type == elfnotes.NTGNUBuildID && len(n.Desc) > 0 && len(n.Desc) <= maxBuildID {
			return n.Desc
		}
	}
	return nil
}

// ParseDebuglink decodes the contents of a .gnu_debuglink section: a
// NUL-terminated file name without a directory, padding to a multiple of
// 4 bytes, and the CRC-32 (IEEE, as zlib's crc32) of the debug file in
// the file's byte order. Malformed contents give an *elfnotes.FormatError
// whose Off is relative to the section's start.
func ParseDebuglink(data []byte, order binary.ByteOrder) (name string, crc uint32, err error) {
	if len(data) > maxDebuglink {
		return "", 0, newFormatError(0, "debuglink section larger than the limit", len(data))
	}
	n := bytes.IndexByte(data, 0)
	if n < 0 {
		return "", 0, newFormatError(0, "debuglink name not NUL-terminated", nil)
	}
	if n == 0 {
		return "", 0, newFormatError(0, "empty debuglink name", nil)
	}
	name = string(data[:n])
	if name == "." || name == ".." || bytes.IndexByte(data[:n], '/') >= 0 {
		return "", 0, newFormatError(0, "debuglink name is not a plain file name", name)
	}
	at := (n + 1 + 3) &^ 3
	if at+4 > len(data) {
		return "", 0, newFormatError(uint64(n), "debuglink CRC missing", nil)
	}
	return name, order.Uint32(data[at:]), nil
}

// Debuglink returns the name and CRC of f's .gnu_debuglink section. A file
// without one gives an error wrapping ErrNoDebugFile.
func Debuglink(f *elfnotes.File) (name string, crc uint32, err error) {
	s := f.Section(".gnu_debuglink")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return "", 0, fmt.Errorf("no .gnu_debuglink: %w", ErrNoDebugFile)
	}
	if s.Size > maxDebuglink {
		return "", 0, newFormatError(s.Offset, "debuglink section larger than the limit", s.Size)
	}
	data, err := s.Data()
	if err != nil {
		return "", 0, err
	}
	name, crc, err = ParseDebuglink(data, f.ByteOrder)
	var fe *elfnotes.FormatError
	if errors.As(err, &fe) {
		fe.Off += int64(s.Offset)
	}
	return name, crc, err
}

// OpenDebugFile finds and opens the separate debug file of f, an object
// whose path (as its process names it, inside opts.Root) is objPath. It
// looks, as GDB does, first by build ID at DIR/.build-id/xx/rest.debug for
// each debug directory DIR, accepting a file whose own build ID is the
// same; then by the .gnu_debuglink name at the object's directory, its
// .debug subdirectory and DIR followed by the object's directory,
// accepting a file whose CRC-32 is the one recorded. A candidate that is
// not a regular file or not ELF is passed over.
//
// It returns an error wrapping ErrNoDebugFile when nothing is found, and
// a *elfnotes.FormatError when f's .gnu_debuglink is malformed. The
// caller closes the DebugFile.
func OpenDebugFile(f *elfnotes.File, objPath string, opts *DebugOptions) (*DebugFile, error) {
	if opts == nil {
		opts = &DebugOptions{}
	}
	root := opts.Root
	if root == nil {
		r, err := procfs.OpenRoot(0)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		root = r
	}
	dirs := opts.Dirs
	if len(dirs) == 0 {
		dirs = []string{DefaultDebugDir}
	}
	if id := BuildID(f); len(id) >= 2 {
		h := hex.EncodeToString(id)
		for _, dir := range dirs {
			name := path.Join(dir, ".build-id", h[:2], h[2:]+".debug")
			d, ok := tryDebugFile(root, name, func(df *elfnotes.File) bool {
				return bytes.Equal(BuildID(df), id)
			}, nil)
			if ok {
				d.By = "build-id"
				return d, nil
			}
		}
	}
	link, crc, err := Debuglink(f)
	if err != nil {
		return nil, err
	}
	objDir := path.Dir(objPath)
	cands := []string{path.Join(objDir, link), path.Join(objDir, ".debug", link)}
	for _, dir := range dirs {
		cands = append(cands, path.Join(dir, objDir, link))
	}
	for _, name := range cands {
		d, ok := tryDebugFile(root, name, nil, func(r *os.File) bool {
			c, err := fileCRC(r)
			return err == nil && c == crc
		})
		if ok {
			d.By = "debuglink"
			return d, nil
		}
	}
	return nil, fmt.Errorf("build ID and debuglink %q: %w", link, ErrNoDebugFile)
}

// tryDebugFile opens name inside root and keeps it when it is an ELF file
// that is not the object and passes the checks.
func tryDebugFile(root *os.File, name string, checkELF func(*elfnotes.File) bool, checkFile func(*os.File) bool) (*DebugFile, bool) {
	r, err := procfs.OpenInRoot(root, name)
	if err != nil {
		return nil, false
	}
	if checkFile != nil && !checkFile(r) {
		r.Close()
		return nil, false
	}
	ef, err := elfnotes.NewFile(r)
	if err != nil || (checkELF != nil && !checkELF(ef)) {
		r.Close()
		return nil, false
	}
	return &DebugFile{File: ef, Path: name, os: r}, true
}

// fileCRC returns the CRC-32 (IEEE) of r's contents.
func fileCRC(r *os.File) (uint32, error) {
	st, err := r.Stat()
	if err != nil {
		return 0, err
	}
	if st.Size() > maxDebugFileCRC {
		return 0, fmt.Errorf("%s: larger than %d bytes", r.Name(), int64(maxDebugFileCRC))
	}
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, st.Size())); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}
