package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// proc is what one scan learnt about one process.
type proc struct {
	pid  int
	comm string
	exe  procfs.FileID
	// objects are the paths of the files the process maps executable,
	// and sig identifies that set (device:inode of each, sorted): it
	// changes when the process maps or unmaps an object.
	objects []string
	sig     string
}

// listPIDs returns the PIDs under /proc, without this process.
func listPIDs() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	pids := make([]int, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 || pid == self {
			continue
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// readProc reads a process's comm and executable; ok is false for a
// kernel thread or a process gone.
func readProc(pid int) (p proc, ok bool) {
	p.pid = pid
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return p, false
	}
	p.comm = strings.TrimSuffix(string(b), "\n")
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return p, false
	}
	st, sok := fi.Sys().(*syscall.Stat_t)
	if !sok {
		return p, false
	}
	p.exe = procfs.FileID{Dev: st.Dev, Inode: st.Ino}
	return p, true
}

// readObjects fills p.objects and p.sig from /proc/PID/maps.
func readObjects(p *proc) error {
	objs, err := procfs.Objects(p.pid)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(objs))
	p.objects = p.objects[:0]
	for _, o := range objs {
		p.objects = append(p.objects, o.Path)
		ids = append(ids, strconv.FormatUint(uint64(o.Major)<<32|uint64(o.Minor), 16)+":"+strconv.FormatUint(o.Inode, 16))
	}
	slices.Sort(ids)
	p.sig = strings.Join(ids, ",")
	return nil
}

// selector is a Target ready to match: Binary's identity read once per
// scan.
type selector struct {
	t     Target
	exe   procfs.FileID
	exeOK bool
	// pidns is the inode of the PID namespace PIDNamespace or
	// PIDNamespaceOf names; 0: none (that PID is gone).
	pidns uint64
}

func newSelector(t Target) selector {
	s := selector{t: t}
	switch {
	case t.Binary != "":
		s.exe, s.exeOK = statID(t.Binary)
	case t.PIDNamespace != 0:
		s.pidns = t.PIDNamespace
	case t.PIDNamespaceOf != 0:
		s.pidns, _ = pidNamespace(t.PIDNamespaceOf)
	}
	return s
}

// pidNamespace returns the inode number of the PID namespace of process
// pid: the file /proc/PID/ns/pid is.
func pidNamespace(pid int) (uint64, bool) {
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Ino, true
}

// statID returns the identity of the file at path.
func statID(path string) (procfs.FileID, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return procfs.FileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return procfs.FileID{}, false
	}
	return procfs.FileID{Dev: st.Dev, Inode: st.Ino}, true
}

// inCgroup reports whether a line of /proc/PID/cgroup
// ("ID:CONTROLLERS:PATH") names cgroup or a cgroup below it.
func inCgroup(pid int, cgroup string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	want := strings.TrimSuffix(cgroup, "/")
	for _, line := range strings.Split(string(b), "\n") {
		_, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		_, path, ok := strings.Cut(rest, ":")
		if ok && (path == want || strings.HasPrefix(path, want+"/")) {
			return true
		}
	}
	return false
}

// needsObjects reports whether matching needs the process's objects.
func (s *selector) needsObjects() bool { return s.t.Object != "" || s.t.Provider != "" }

// match reports whether s selects p (p.objects read when needsObjects).
func (s *selector) match(p *proc) bool {
	switch {
	case s.t.Binary != "":
		if s.exeOK && p.exe == s.exe {
			return true
		}
		// The path inside the process's root (a container's); a process
		// of the host's root was compared above.
		id, ok := statID("/proc/" + strconv.Itoa(p.pid) + "/root" + filepath.Clean("/"+s.t.Binary))
		return ok && id == p.exe
	case s.t.Cgroup != "":
		return inCgroup(p.pid, s.t.Cgroup)
	case s.t.PIDNamespace != 0 || s.t.PIDNamespaceOf != 0:
		ns, ok := pidNamespace(p.pid)
		return ok && s.pidns != 0 && ns == s.pidns
	case s.t.Comm != "":
		return p.comm == s.t.Comm
	case s.t.Object != "":
		return slices.Contains(p.objects, s.t.Object)
	case s.t.Provider != "":
		for _, o := range p.objects {
			if isProvider(o, s.t.Provider) {
				return true
			}
		}
	}
	return false
}

// isProvider reports whether the object at path (as maps shows it) is a
// dynsdt provider named name: "/memfd:NAME.so", ".../NAME-PID-HEX.so"
// (package dynsdt's names), or ".../NAME.so".
func isProvider(path, name string) bool {
	base := filepath.Base(strings.TrimPrefix(path, "/memfd:"))
	rest, ok := strings.CutPrefix(base, name)
	if !ok {
		return false
	}
	if rest == ".so" {
		return true
	}
	rest, ok = strings.CutPrefix(rest, "-")
	if !ok || !strings.HasSuffix(rest, ".so") {
		return false
	}
	pid, _, ok := strings.Cut(strings.TrimSuffix(rest, ".so"), "-")
	_, err := strconv.Atoi(pid)
	return ok && err == nil
}
