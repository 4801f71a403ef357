package attach_test

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/attach"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestMain fails the package when the tests leak file descriptors.
func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }

// TestAttachObjectInvalid: an object whose sites do not line up is refused
// before anything is opened or attached.
func TestAttachObjectInvalid(t *testing.T) {
	for _, tt := range []struct {
		name string
		obj  attach.Object
	}{
		{"no sites", attach.Object{Path: "/bin/true"}},
		{"cookies", attach.Object{Path: "/bin/true", Offsets: []uint64{1, 2}, Cookies: []uint64{0}}},
		{"semaphores", attach.Object{Path: "/bin/true", Offsets: []uint64{1}, Cookies: []uint64{0}, RefCtrOffsets: []uint64{1, 2}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, multi := range []bool{false, true} {
				links, err := attach.AttachObject(nil, &tt.obj, 0, multi)
				if err == nil || links != nil {
					t.Errorf("multi %v: links %v, error %v; want an error", multi, links, err)
				}
			}
		})
	}
}
