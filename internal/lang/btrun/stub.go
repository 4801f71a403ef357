package btrun

import (
	"fmt"
	"os"

	"github.com/cilium/ebpf"

	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// stubSite returns the site of fire in this process's executable: the
// file offset of its entry, found in /proc/self/maps.
func stubSite() (btgen.Site, error) {
	addr := uint64(fireAddr())
	if addr == 0 {
		return btgen.Site{}, fmt.Errorf("BEGIN, END and interval probes on this architecture: %w", ebpf.ErrNotSupported)
	}
	maps, err := procfs.ReadMaps(os.Getpid())
	if err != nil {
		return btgen.Site{}, err
	}
	for _, m := range maps {
		if addr >= m.Start && addr < m.End && m.FileBacked() {
			return btgen.Site{Path: "/proc/self/exe", Offset: addr - m.Start + m.Offset}, nil
		}
	}
	return btgen.Site{}, fmt.Errorf("the BEGIN/END stub at %#x is in no file mapping", addr)
}
