package procfs_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

func ExampleParseMaps() {
	const maps = `55d0c8a00000-55d0c8a02000 r--p 00000000 fe:00 247026    /usr/bin/cat
55d0c8a02000-55d0c8a07000 r-xp 00002000 fe:00 247026    /usr/bin/cat
7f0000000000-7f0000001000 r-xp 00000000 00:01 2048      /memfd:jit (deleted)
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0         [vdso]
`
	ms, err := procfs.ParseMaps(strings.NewReader(maps))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range ms {
		fmt.Printf("%#x %s exec=%v file=%v deleted=%v %s\n", m.Start, m.Perms, m.Exec(), m.FileBacked(), m.Deleted, m.Path)
	}
	// Output:
	// 0x55d0c8a00000 r--p exec=false file=true deleted=false /usr/bin/cat
	// 0x55d0c8a02000 r-xp exec=true file=true deleted=false /usr/bin/cat
	// 0x7f0000000000 r-xp exec=true file=true deleted=true /memfd:jit
	// 0x7ffd00000000 r-xp exec=true file=false deleted=false [vdso]
}

// Read the start of every object this process has mapped executable, each
// through the one file Open returns.
func ExampleOpen() {
	objs, err := procfs.Objects(os.Getpid())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		f, err := procfs.Open(o)
		if err != nil {
			fmt.Println("skip", o.Path+":", err)
			continue
		}
		magic := make([]byte, 4)
		_, err = f.ReadAt(magic, 0)
		fmt.Printf("%s via %s (%s): %q %v\n", o.Path, f.Name(), procfs.FDPath(f), magic, err)
		f.Close()
	}
}
