package ldso

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// RunPath returns the directories the dynamic loader searches for the
// libraries of the executable or library at path because the file names
// them: its DT_RUNPATH or, without one, its DT_RPATH entries, in order,
// with $ORIGIN (and ${ORIGIN}) replaced by the directory of the file
// after symbolic links (as the loader does for the file it maps).
// Entries naming $LIB or $PLATFORM, which depend on the loader's build,
// and relative entries are left out. A file without them gives nil.
//
// The file is read with debug/elf, which is not hardened: a panic in it
// becomes an error.
func RunPath(path string) (dirs []string, err error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", real)
	}
	defer func() {
		if p := recover(); p != nil {
			dirs, err = nil, fmt.Errorf("%s: debug/elf panicked: %v", real, p)
		}
	}()
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", real, err)
	}
	// DynString reads .dynamic and .dynstr whole: bound them by the file.
	for _, name := range []string{".dynamic", ".dynstr"} {
		if s := ef.Section(name); s != nil && s.Type != elf.SHT_NOBITS && s.Size > uint64(st.Size()) {
			return nil, fmt.Errorf("%s: section %s larger than the file", real, name)
		}
	}
	entries, err := ef.DynString(elf.DT_RUNPATH)
	if err == nil && len(entries) == 0 {
		entries, err = ef.DynString(elf.DT_RPATH)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", real, err)
	}
	origin := filepath.Dir(real)
	for _, e := range entries {
		for _, d := range strings.Split(e, ":") {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin)
			if d == "" || !filepath.IsAbs(d) || strings.Contains(d, "$") {
				continue
			}
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	return dirs, nil
}
