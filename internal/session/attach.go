package session

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// AttachObject attaches prog to every site of obj as Start does: one
// uprobe_multi link when multi is true, else one classic uprobe link per
// site (uretprobes when obj.Return). On failure it closes the links it made
// and returns the error; on success the caller owns the links.
func AttachObject(prog *ebpf.Program, obj *Object, pid int, multi bool) ([]link.Link, error) {
	s := &Session{multi: multi}
	if err := s.attach(prog, obj, pid); err != nil {
		s.Detach()
		return nil, err
	}
	return s.links, nil
}
