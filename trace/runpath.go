package trace

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/usdtkit/usdtkit/internal/elf/ldso"
)

// maxRunPathSubdirs bounds the subdirectories of one run path directory
// commandLibs looks in.
const maxRunPathSubdirs = 64

// commandLibs resolves the library short names of the probes of a
// command started stopped (usdtkit trace -c), whose libraries are not
// mapped yet, as files: searching the directories the command's
// executable names (DT_RUNPATH or DT_RPATH, $ORIGIN expanded), then
// ld.so.cache and the standard directories, then the subdirectories of
// the executable's run path, where libraries loaded with dlopen by a path
// of their own live (the JDK's lib/server/libjvm.so). Sites in the file
// are attached for the command's PID, by inode: they fire once it maps
// the file. The zero value is ready; its results are cached.
type commandLibs struct {
	// exe is the command's executable; warn, when not nil, is told why
	// its run path could not be read.
	exe     string
	warn    func(error)
	runPath []string
	found   map[string]string // "" for none
}

// path returns the file name resolves to for the command. ok is false
// without a command, for a name that is a path, a glob or an existing
// file, and for one nothing matches (the usual lookup then reports it).
func (c *commandLibs) path(name string) (path string, ok bool) {
	if c.exe == "" || name == "" || strings.ContainsAny(name, "/*?[\\") {
		return "", false
	}
	if _, err := os.Stat(name); err == nil {
		return "", false
	}
	if p, seen := c.found[name]; seen {
		return p, p != ""
	}
	if c.found == nil {
		c.found = make(map[string]string)
		dirs, err := ldso.RunPath(c.exe)
		if err != nil && c.warn != nil {
			c.warn(err)
		}
		c.runPath = dirs
	}
	p, err := ldso.Find(name, &ldso.FindOptions{RunPath: c.runPath})
	if errors.Is(err, ldso.ErrNotFound) {
		p, err = ldso.Find(name, &ldso.FindOptions{RunPath: subdirs(c.runPath)})
	}
	if err != nil {
		p = ""
	}
	c.found[name] = p
	return p, p != ""
}

// subdirs returns the directories directly in each of dirs, in order,
// each directory's sorted by name.
func subdirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		var sub []string
		for _, e := range ents {
			if e.IsDir() {
				sub = append(sub, filepath.Join(d, e.Name()))
			}
		}
		slices.Sort(sub)
		out = append(out, sub[:min(len(sub), maxRunPathSubdirs)]...)
	}
	return out
}
