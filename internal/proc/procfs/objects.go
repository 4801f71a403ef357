package procfs

import "strings"

// memfdPrefix starts the path of every memfd_create(2) file in maps; the
// kernel names them "memfd:NAME" on an internal mount and, since they have
// no directory entry, always adds " (deleted)".
const memfdPrefix = "/memfd:"

// Object is one file mapped executable by a process: an executable, a
// shared library, a JIT's memfd. It is plain data and holds no fd.
type Object struct {
	PID int
	// Path is the pathname in maps without " (deleted)", as seen from
	// inside the process's mount namespace, e.g.
	// "/usr/lib/x86_64-linux-gnu/libc.so.6" or "/memfd:jit". The process
	// controls this name: it is never opened as is (see Open).
	Path         string
	Major, Minor uint32 // device, as in maps
	Inode        uint64
	Deleted      bool // the file was unlinked (always true for memfd)
	Memfd        bool // the file was created by memfd_create(2)
	// Mappings are all mappings of this file (any permissions), in
	// address order.
	Mappings []Mapping
}

// Objects lists every file that process pid has mapped executable at least
// once, deduplicated by device and inode, in the order of each file's first
// mapping. Pseudo mappings ([vdso], [vsyscall]) and anonymous memory are
// skipped. Kernel threads and zombies have no mappings and give no objects
// and no error.
//
// A missing process gives an error wrapping ErrNoProcess; missing
// permission gives one wrapping os.ErrPermission.
func Objects(pid int) ([]Object, error) {
	maps, err := ReadMaps(pid)
	if err != nil {
		return nil, err
	}
	return group(pid, maps), nil
}

type fileID struct {
	major, minor uint32
	inode        uint64
}

// group collects the file-backed mappings of maps into objects, keeping
// those with an executable mapping.
func group(pid int, maps []Mapping) []Object {
	index := make(map[fileID]int)
	var objs []Object
	var exec []bool
	for _, m := range maps {
		if !m.FileBacked() {
			continue
		}
		id := fileID{m.Major, m.Minor, m.Inode}
		i, ok := index[id]
		if !ok {
			i = len(objs)
			index[id] = i
			objs = append(objs, Object{
				PID:     pid,
				Path:    m.Path,
				Major:   m.Major,
				Minor:   m.Minor,
				Inode:   m.Inode,
				Deleted: m.Deleted,
				Memfd:   m.Deleted && strings.HasPrefix(m.Path, memfdPrefix),
			})
			exec = append(exec, false)
		}
		objs[i].Mappings = append(objs[i].Mappings, m)
		exec[i] = exec[i] || m.Exec()
	}

	out := objs[:0]
	for i, o := range objs {
		if !exec[i] {
			continue
		}
		out = append(out, o)
	}
	return out
}
