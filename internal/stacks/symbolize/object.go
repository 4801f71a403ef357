package symbolize

import (
	"cmp"
	"debug/elf"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/ianlancetaylor/demangle"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
)

// funcSym is one function of an object's table.
type funcSym struct {
	value, size uint64
	name        string // demangled where it was mangled
}

// objectSyms is what symbolization needs of one object file; immutable
// once built, shared by every process that maps the file.
type objectSyms struct {
	funcs []funcSym        // sorted by value; one per value
	loads elfnotes.LoadMap // to turn file offsets into the addresses of funcs
	go_   *symtab.GoLines
	// debug says where a separate debug file came from, "" without one.
	debug string
}

// lookup returns the function containing vaddr. A symbol without a size
// contains everything up to the next symbol.
func (o *objectSyms) lookup(vaddr uint64) (*funcSym, bool) {
	i, _ := slices.BinarySearchFunc(o.funcs, vaddr, func(s funcSym, a uint64) int {
		if s.value <= a {
			return -1
		}
		return 1
	})
	// Symbols may nest (a local alias inside a larger function): look
	// back a little for one that contains vaddr.
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		s := &o.funcs[j]
		if s.size == 0 && j == i-1 || vaddr-s.value < s.size {
			return s, true
		}
	}
	return nil, false
}

// maxDemangle bounds the names given to the demangler.
const maxDemangle = 1 << 14

func demangleName(name string) string {
	if len(name) > maxDemangle || !(strings.HasPrefix(name, "_Z") || strings.HasPrefix(name, "_R")) {
		return name
	}
	d, err := demangle.ToString(name)
	if err != nil {
		return name
	}
	return d
}

// bindRank orders the names of one address: global before weak before
// local; then the larger size, then the shorter name ("malloc" before
// "__libc_malloc", a dynsdt probe's name before its "_fire" alias).
func bindRank(b elf.SymBind) int {
	switch b {
	case elf.STB_GLOBAL:
		return 0
	case elf.STB_WEAK:
		return 1
	}
	return 2
}

// readObject builds the table of the object open as f, named path inside
// root; its separate debug file is looked for in dirs when its .symtab is
// stripped. Damage in the file leaves what is sound: an object whose
// tables cannot be read at all gets an empty table, and its frames are
// shown as object+offset.
func readObject(f *os.File, path string, root *os.File, dirs []string) (*objectSyms, error) {
	ef, err := elfnotes.NewFile(f)
	if err != nil {
		return nil, err
	}
	o := &objectSyms{loads: ef.LoadMap()}
	if symtab.IsGo(ef) {
		if g, err := symtab.ReadGoLines(ef); err == nil {
			o.go_ = g
		}
	}
	var debug *elfnotes.File
	if !hasSymtab(ef) {
		d, err := symtab.OpenDebugFile(ef, path, &symtab.DebugOptions{Root: root, Dirs: dirs})
		if err == nil {
			defer d.Close()
			debug = d.File
			o.debug = d.Path
		}
	}
	syms, _, err := symtab.ReadPartialDebug(ef, debug)
	if err != nil && !errors.Is(err, symtab.ErrNoSymbols) {
		return nil, err
	}
	type cand struct {
		funcSym
		rank int
	}
	cands := make([]cand, 0, len(syms))
	for i := range syms {
		s := &syms[i]
		if s.Type != elf.STT_FUNC && s.Type != elf.STT_GNU_IFUNC {
			continue
		}
		cands = append(cands, cand{funcSym{value: s.Value, size: s.Size, name: s.Name}, bindRank(s.Bind)})
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.value, b.value), cmp.Compare(a.rank, b.rank),
			cmp.Compare(b.size, a.size), cmp.Compare(len(a.name), len(b.name)), strings.Compare(a.name, b.name))
	})
	o.funcs = make([]funcSym, 0, len(cands))
	for _, c := range cands {
		if n := len(o.funcs); n > 0 && o.funcs[n-1].value == c.value {
			continue
		}
		c.name = demangleName(c.name)
		o.funcs = append(o.funcs, c.funcSym)
	}
	return o, nil
}

// readDWARF reads the DWARF of the object open as f, named path inside
// root, or of its separate debug file, looked for in dirs; nil when
// neither has any, or it cannot be read (frames then have no inlined
// calls and C frames no file:line; nothing else changes).
func readDWARF(f *os.File, path string, root *os.File, dirs []string) *dwarfLines {
	ef, err := elfnotes.NewFile(f)
	if err != nil {
		return nil
	}
	if hasDWARF(ef) {
		d, _ := loadDWARF(f)
		return d
	}
	dbg, err := symtab.OpenDebugFile(ef, path, &symtab.DebugOptions{Root: root, Dirs: dirs})
	if err != nil {
		return nil
	}
	defer dbg.Close()
	if !hasDWARF(dbg.File) {
		return nil
	}
	d, _ := loadDWARF(dbg.ReaderAt())
	return d
}

// hasSection reports whether f has a section of that name with contents.
func hasSection(f *elfnotes.File, name string) bool {
	s := f.Section(name)
	return s != nil && s.Type != elf.SHT_NOBITS
}

func hasDWARF(f *elfnotes.File) bool {
	return hasSection(f, ".debug_info") || hasSection(f, ".zdebug_info")
}

func hasSymtab(f *elfnotes.File) bool {
	for _, s := range f.Sections {
		if s.Type == elf.SHT_SYMTAB {
			return true
		}
	}
	return false
}

// A Cache holds the symbol tables of object files, keyed by the file's
// identity (device, inode, size and modification time), so that every
// process mapping one library reads it once. It is safe for concurrent
// use; the zero value is an empty cache. A table remembers the separate
// debug file found for the first process that needed it: Symbolizers of
// processes with different roots or DebugDirs should not share a Cache
// when their debug files differ.
type Cache struct {
	mu   sync.Mutex
	objs map[cacheKey]*cacheEntry
}

type cacheKey struct {
	dev, ino uint64
	size     int64
	mtime    unix.Timespec
}

type cacheEntry struct {
	once sync.Once
	syms *objectSyms
	err  error
	// dwarf is read on first use, by the first Symbolizer that uses
	// DWARF: one that does not (Options.NoDWARF) never reads it.
	dwarfOnce sync.Once
	dwarf     *dwarfLines
}

// dwarfLines returns the DWARF of the entry's object, open as f, read on
// first use (see readDWARF); nil without.
func (e *cacheEntry) dwarfLines(f *os.File, path string, root *os.File, dirs []string) *dwarfLines {
	e.dwarfOnce.Do(func() { e.dwarf = readDWARF(f, path, root, dirs) })
	return e.dwarf
}

// get returns the entry of f, its table read once per identity.
func (c *Cache) get(f *os.File, path string, root *os.File, dirs []string) (*cacheEntry, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	k := cacheKey{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim}
	c.mu.Lock()
	if c.objs == nil {
		c.objs = make(map[cacheKey]*cacheEntry)
	}
	e := c.objs[k]
	if e == nil {
		e = &cacheEntry{}
		c.objs[k] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.syms, e.err = readObject(f, path, root, dirs) })
	return e, e.err
}
