package gen

import (
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// Options are the options of Files; nil means defaults.
type Options struct {
	// Package is the Go file's package name. Default: the provider's name.
	Package string
	// Machine is the ELF machine of the shared object, elf.EM_X86_64 or
	// elf.EM_AARCH64. Default: the machine this program runs on.
	Machine elf.Machine
	// Static asks for static probes instead (Static): Go files
	// and assembly stubs for amd64 and arm64, no shared object or header.
	Static bool
	// Site is the kind of the shared object's x86-64 probe sites, as
	// dynsdt.BuildOptions.Site: SiteAuto, the default, is the kind that suits
	// every kernel (SiteNop). No effect with Static (static stubs are
	// SiteNop's; postlink sets their kind) or for elf.EM_AARCH64 (one
	// kind).
	Site dynsdt.Site
}

// File is a file's base name and contents.
type File struct {
	Name string
	Data []byte
}

// Files returns what usdtkit gen writes for p: the shared object
// (dynsdt.Build with opts.Site; named dynsdt.SOName(p.Name),
// "myapp.so"), its C header ("myapp.h", Header) and the Go file
// ("myapp.go", Go), in that order. With opts.Static, it returns Static's
// files instead. Errors wrap dynsdt.ErrSpec for a spec dynsdt.Build or Go
// rejects, dynsdt.ErrUnsupportedMachine for another machine and
// dynsdt.ErrSite for an opts.Site that is no kind (also with Static).
func Files(p *dynsdt.ProviderSpec, opts *Options) ([]File, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Package == "" {
		o.Package = p.Name
	}
	if o.Site > dynsdt.SiteNop10 {
		return nil, fmt.Errorf("field Site: %v: %w", o.Site, dynsdt.ErrSite)
	}
	if o.Static {
		return Static(p, o.Package)
	}
	if o.Machine == elf.EM_NONE {
		o.Machine = dynsdt.HostMachine
	}
	obj, err := dynsdt.Build(p, o.Machine, &dynsdt.BuildOptions{Site: o.Site})
	if err != nil {
		return nil, err
	}
	src, err := Go(p, o.Package)
	if err != nil {
		return nil, fmt.Errorf("generate Go: %w", err)
	}
	return []File{
		{dynsdt.SOName(p.Name), obj.Bytes},
		{p.Name + ".h", Header(p)},
		{p.Name + ".go", src},
	}, nil
}

// ErrNotRegularFile is wrapped by WriteFiles' error when a file it is to
// replace is a symbolic link, a directory or another non-regular file.
var ErrNotRegularFile = errors.New("not a regular file")

// WriteFiles writes files into dir, creating dir (mode 0755 before the
// umask) if it is missing, and returns their paths. It never writes through
// what dir holds: each file is written to a new temporary file created in
// dir with O_EXCL|O_NOFOLLOW (mode 0644 before the umask) and renamed over
// its name, so a symbolic link or hard link planted in dir is replaced, not
// followed. A name that already is a symbolic link or not a regular file is
// refused with an error wrapping ErrNotRegularFile, before anything is
// written. Files written before an error stay.
func WriteFiles(dir string, files []File) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dirfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dirfd)
	for _, f := range files {
		if f.Name == "" || f.Name != filepath.Base(f.Name) || f.Name == "." || f.Name == ".." {
			return nil, fmt.Errorf("write %q: not a file name", f.Name)
		}
		var st unix.Stat_t
		err := unix.Fstatat(dirfd, f.Name, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case errors.Is(err, unix.ENOENT):
		case err != nil:
			return nil, &os.PathError{Op: "stat", Path: filepath.Join(dir, f.Name), Err: err}
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			return nil, fmt.Errorf("%s: %w (remove it first)", filepath.Join(dir, f.Name), ErrNotRegularFile)
		}
	}
	paths := make([]string, 0, len(files))
	for _, f := range files {
		if err := replaceFile(dirfd, f.Name, f.Data); err != nil {
			// A *PathError: the CLI then says which file it could not
			// write (permission denied), not that tracing needs root.
			return paths, &os.PathError{Op: "write", Path: filepath.Join(dir, f.Name), Err: err}
		}
		paths = append(paths, filepath.Join(dir, f.Name))
	}
	return paths, nil
}

// replaceFile writes data to a new file in dirfd and renames it to name.
func replaceFile(dirfd int, name string, data []byte) error {
	var fd int
	var tmp string
	for range 8 {
		var r [8]byte
		if _, err := rand.Read(r[:]); err != nil {
			return err
		}
		tmp = "." + name + "." + hex.EncodeToString(r[:]) + ".tmp"
		var err error
		fd, err = unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if errors.Is(err, unix.EEXIST) {
			fd = -1
			continue
		}
		if err != nil {
			return fmt.Errorf("create temporary file: %w", err)
		}
		break
	}
	if fd < 0 {
		return fmt.Errorf("create temporary file: %w", unix.EEXIST)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err := f.Write(data)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	if pe := (*os.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err // WriteFiles names the file
	}
	if err == nil {
		// rename(2) replaces the entry name, whatever it is, and never
		// follows it; a directory (which WriteFiles refused) makes it fail.
		err = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return err
	}
	return nil
}
