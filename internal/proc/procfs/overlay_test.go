package procfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestOpenOverlay maps a file from an overlayfs mount, as a process in a
// container does: maps may show the underlying file's device and inode
// while the overlay shows its own. Open must still open the file.
func TestOpenOverlay(t *testing.T) {
	testutil.RequireRoot(t)
	img := elfImage(t)
	base := t.TempDir()
	lower, upper, work, merged := filepath.Join(base, "lower"), filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "merged")
	for _, d := range []string{lower, upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(lower, "obj.so"), img, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Fatalf("mount overlay: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(merged, 0); err != nil {
			t.Error(err)
		}
	})
	path := filepath.Join(merged, "obj.so")
	mapPath(t, path, len(img), unix.PROT_READ|unix.PROT_EXEC)

	objs, err := Objects(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	o := objectByPath(t, objs, path)
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("maps %d:%d inode %d; stat %d:%d inode %d", o.Major, o.Minor, o.Inode, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	t.Logf("opened %s", route(t, o))
	checkOpen(t, o, img)
}
