package procfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func FuzzParseMaps(f *testing.F) {
	files, err := filepath.Glob("testdata/maps/*.maps")
	if err != nil || len(files) == 0 {
		f.Fatalf("no testdata/maps/*.maps: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("1-2 r-xp 0 0:0 0\n"))
	f.Add([]byte("2-1 r-xp 0 0:0 0\n"))
	f.Add([]byte("1-2 r-xp 0 1:2 3 /x (deleted)\n\n"))

	f.Fuzz(func(t *testing.T, b []byte) {
		maps, err := ParseMaps(bytes.NewReader(b))
		if err != nil {
			if maps != nil {
				t.Fatalf("error %v with %d mappings", err, len(maps))
			}
			return
		}
		for i, m := range maps {
			if m.End < m.Start || !validPerms(m.Perms) {
				t.Fatalf("mapping %d accepted but invalid: %+v", i, m)
			}
		}
		// Grouping must not fail or panic on whatever was accepted.
		for _, o := range group(1, maps) {
			if len(o.Mappings) == 0 || o.Inode == 0 {
				t.Fatalf("object without mappings or inode: %+v", o)
			}
		}
	})
}
