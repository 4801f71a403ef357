package ldso

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// ErrNotFound means no library matched the name.
var ErrNotFound = errors.New("library not found")

// DefaultCache is where glibc's loader reads its cache.
const DefaultCache = "/etc/ld.so.cache"

// FindOptions control Find. The zero value, or nil, searches the host the
// way its dynamic loader would.
type FindOptions struct {
	// RunPath are directories to search, inside Root, in order, before
	// the cache, as the loader searches an object's DT_RUNPATH (see
	// RunPath). Default none.
	RunPath []string
	// Cache is the ld.so.cache file to consult, inside Root. Default
	// DefaultCache. A missing cache is skipped; an unreadable or
	// malformed one is an error.
	Cache string
	// Dirs are the directories to search, inside Root, in order, when the
	// cache has no match. Default: the multiarch directories for Machine
	// (/lib/<triplet>, /usr/lib/<triplet>), then /lib64 and /usr/lib64
	// (64-bit machines), then /lib and /usr/lib.
	Dirs []string
	// Root prefixes every path Find opens, e.g. "/proc/PID/root" to find
	// a library inside a container. Symbolic links are then resolved
	// inside Root, as chroot would. Default "" (the caller's root).
	Root string
	// Machine selects the architecture of the library: cache entries
	// whose flags mark another ABI and files whose ELF header names
	// another machine or class are skipped. Default: the machine of the
	// running program (runtime.GOARCH).
	Machine elf.Machine
}

// maxLinks bounds symbolic link resolution, like the kernel's MAXSYMLINKS.
const maxLinks = 40

// Find returns the path of the shared library called name, searching
// FindOptions.RunPath, the ld.so.cache and then the standard directories
// like the dynamic loader.
//
// name may be
//   - a short name: "c", "libc", "libstdc++", "libpython3.11". "lib" is
//     prepended when missing (as bcc does), and the name itself is tried
//     after that; it matches sonames "lib<x>.so" and "lib<x>.so.<version>";
//   - an unversioned file name "libfoo.so": that exact name first, then as
//     the short name "libfoo";
//   - a soname "libc.so.6": exactly that name;
//   - a path containing "/": returned (under Root) if it is an ELF file of
//     the machine.
//
// Among the matches, an exact name wins, then the highest version, then
// the unversioned development link "lib<x>.so"; cache entries for
// glibc-hwcaps subdirectories come after the baseline ones (we cannot
// tell which the CPU would pick). The cache is searched first, then each
// directory in order. A candidate is returned only if it is a regular ELF
// file of the wanted machine: this skips linker scripts such as
// /usr/lib/x86_64-linux-gnu/libc.so and stale cache entries.
//
// The result is Root joined with the path found. Without Root, symbolic
// links are not resolved: the path is the one in the cache or directory
// (e.g. /lib/x86_64-linux-gnu/libc.so.6). With Root, the links are
// resolved inside Root so the result never points outside it.
//
// Find returns an error wrapping ErrNotFound when nothing matches, or an
// error from reading or parsing the cache (*FormatError). It is safe for
// concurrent use and does not modify opts.
func Find(name string, opts *FindOptions) (string, error) {
	if opts == nil {
		opts = &FindOptions{}
	}
	if name == "" {
		return "", fmt.Errorf("find library: empty name")
	}
	m := opts.Machine
	if m == elf.EM_NONE {
		m = hostMachine(runtime.GOARCH)
	}
	f := finder{root: opts.Root, machine: m, arch: archOf(m)}

	if strings.Contains(name, "/") {
		if p, ok := f.usable(name); ok {
			return p, nil
		}
		return "", fmt.Errorf("library %s: %w", name, ErrNotFound)
	}
	q := newQuery(name)

	for _, dir := range opts.RunPath {
		if p, ok := f.fromDir(q, dir); ok {
			return p, nil
		}
	}
	cache := cmp.Or(opts.Cache, DefaultCache)
	b, err := os.ReadFile(f.root + cache)
	switch {
	case err == nil:
		entries, err := ParseCache(b)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f.root+cache, err)
		}
		if p, ok := f.fromCache(q, entries); ok {
			return p, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}

	dirs := opts.Dirs
	if dirs == nil {
		dirs = f.arch.dirs()
	}
	for _, dir := range dirs {
		if p, ok := f.fromDir(q, dir); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("library %s: %w", name, ErrNotFound)
}

// query is a library name split into what sonames it matches.
type query struct {
	exact string   // soname matched exactly, or ""
	stems []string // "lib<x>": match "lib<x>.so" and "lib<x>.so.*"
}

func newQuery(name string) query {
	switch {
	case strings.HasSuffix(name, ".so"):
		return query{exact: name, stems: []string{strings.TrimSuffix(name, ".so")}}
	case strings.Contains(name, ".so."):
		return query{exact: name}
	case strings.HasPrefix(name, "lib"):
		return query{stems: []string{name}}
	}
	return query{stems: []string{"lib" + name, name}}
}

// match is a soname that matched a query, with what orders it.
type match struct {
	exact   bool
	stem    int    // index in query.stems
	version string // after ".so."; "" for "lib<x>.so"
	hwcap   bool   // a cache entry for a glibc-hwcaps subdirectory
	path    string
}

func (q query) match(soname string) (match, bool) {
	if q.exact != "" && soname == q.exact {
		return match{exact: true}, true
	}
	for i, stem := range q.stems {
		rest, ok := strings.CutPrefix(soname, stem+".so")
		if !ok {
			continue
		}
		if rest == "" {
			return match{stem: i}, true
		}
		if v, ok := strings.CutPrefix(rest, "."); ok && v != "" {
			return match{stem: i, version: v}, true
		}
	}
	return match{}, false
}

// compareMatches orders the better match first.
func compareMatches(a, b match) int {
	if a.exact != b.exact {
		return boolFirst(a.exact)
	}
	if a.hwcap != b.hwcap {
		return boolFirst(!a.hwcap)
	}
	if a.stem != b.stem {
		return cmp.Compare(a.stem, b.stem)
	}
	if (a.version == "") != (b.version == "") {
		return boolFirst(a.version != "")
	}
	return -compareVersions(a.version, b.version)
}

func boolFirst(first bool) int {
	if first {
		return -1
	}
	return 1
}

// compareVersions compares dotted versions field by field, numerically
// where both fields are numbers: "1.10" > "1.9" > "1".
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(as), len(bs)) {
		an, aerr := strconv.ParseUint(as[i], 10, 64)
		bn, berr := strconv.ParseUint(bs[i], 10, 64)
		var c int
		if aerr == nil && berr == nil {
			c = cmp.Compare(an, bn)
		} else {
			c = strings.Compare(as[i], bs[i])
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(as), len(bs))
}

// finder holds one Find call's settings.
type finder struct {
	root    string
	machine elf.Machine
	arch    arch
}

func (f finder) fromCache(q query, entries []Entry) (string, bool) {
	var ms []match
	for _, e := range entries {
		m, ok := q.match(e.Name)
		if !ok || !f.arch.accepts(e.Flags) {
			continue
		}
		m.hwcap = e.HWCap != 0
		m.path = e.Path
		ms = append(ms, m)
	}
	return f.first(ms)
}

func (f finder) fromDir(q query, dir string) (string, bool) {
	ents, err := os.ReadDir(f.root + dir)
	if err != nil {
		// A missing or unreadable directory has no libraries for us,
		// as for the loader.
		return "", false
	}
	var ms []match
	for _, e := range ents {
		if m, ok := q.match(e.Name()); ok {
			m.path = path.Join(dir, e.Name())
			ms = append(ms, m)
		}
	}
	return f.first(ms)
}

// first returns the best of ms that is usable.
func (f finder) first(ms []match) (string, bool) {
	slices.SortStableFunc(ms, compareMatches)
	for _, m := range ms {
		if p, ok := f.usable(m.path); ok {
			return p, true
		}
	}
	return "", false
}

// usable returns the path to open for p (inside the root) if it is a
// regular ELF file of the wanted machine.
func (f finder) usable(p string) (string, bool) {
	full := f.root + p
	if f.root != "" {
		resolved, err := resolveIn(f.root, p)
		if err != nil {
			return "", false
		}
		full = f.root + resolved
	}
	return full, f.isLibrary(full)
}

// elfIdentSize is the part of the ELF header isLibrary reads: e_ident (16
// bytes), e_type (2) and e_machine (2).
const elfIdentSize = 20

// isLibrary reports whether path is a regular file whose ELF header
// matches the machine. It reads the header itself: 20 fixed bytes need no
// debug/elf.
func (f finder) isLibrary(path string) bool {
	file, err := os.Open(path)
	if err != nil {
		return false
	}
	defer file.Close()
	if st, err := file.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	var h [elfIdentSize]byte
	if _, err := io.ReadFull(file, h[:]); err != nil {
		return false
	}
	if string(h[:4]) != elf.ELFMAG {
		return false
	}
	class := elf.Class(h[elf.EI_CLASS])
	var machine elf.Machine
	switch elf.Data(h[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		machine = elf.Machine(uint16(h[18]) | uint16(h[19])<<8)
	case elf.ELFDATA2MSB:
		machine = elf.Machine(uint16(h[18])<<8 | uint16(h[19]))
	default:
		return false
	}
	if f.machine != elf.EM_NONE && machine != f.machine {
		return false
	}
	return f.arch.class == elf.ELFCLASSNONE || class == f.arch.class
}

// resolveIn resolves the symbolic links in the absolute path p as if root
// were "/": absolute link targets and ".." stay inside root. It returns
// the resolved path relative to root (starting with "/"). Components are
// looked up with Lstat, so a link planted by the traced process cannot
// send us outside root; the final open may still race with it changing.
func resolveIn(root, p string) (string, error) {
	var done []string // resolved components
	todo := strings.Split(p, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		cur := "/" + strings.Join(append(done, c), "/")
		st, err := os.Lstat(root + cur)
		if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(root + cur)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			done = done[:0]
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return "/" + strings.Join(done, "/"), nil
}
