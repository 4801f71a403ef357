package procfs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseMaps(t *testing.T) {
	tests := []struct {
		name string
		have string
		want []Mapping
	}{
		{
			name: "empty",
			have: "",
		},
		{
			name: "file",
			have: "7f3c5e628000-7f3c5e7ba000 r-xp 00028000 fe:00 265342                     /usr/lib/x86_64-linux-gnu/libc.so.6\n",
			want: []Mapping{{Start: 0x7f3c5e628000, End: 0x7f3c5e7ba000, Offset: 0x28000, Perms: "r-xp",
				Major: 0xfe, Minor: 0, Inode: 265342, Path: "/usr/lib/x86_64-linux-gnu/libc.so.6"}},
		},
		{
			name: "no final newline",
			have: "00400000-00401000 r--s 00000000 08:02 7 /a",
			want: []Mapping{{Start: 0x400000, End: 0x401000, Perms: "r--s", Major: 8, Minor: 2, Inode: 7, Path: "/a"}},
		},
		{
			name: "spaces in path",
			have: "00400000-00401000 r-xp 00000000 fd:01 1234            /opt/my app/with  two spaces \n",
			want: []Mapping{{Start: 0x400000, End: 0x401000, Perms: "r-xp", Major: 0xfd, Minor: 1, Inode: 1234,
				Path: "/opt/my app/with  two spaces "}},
		},
		{
			name: "deleted",
			have: "7f0000001000-7f0000002000 r-xp 00001000 fd:01 99       /tmp/gone.so (deleted)\n",
			want: []Mapping{{Start: 0x7f0000001000, End: 0x7f0000002000, Offset: 0x1000, Perms: "r-xp",
				Major: 0xfd, Minor: 1, Inode: 99, Path: "/tmp/gone.so", Deleted: true}},
		},
		{
			name: "memfd",
			have: "7f0000000000-7f0000001000 r-xp 00000000 00:01 2048     /memfd:jit code (deleted)\n",
			want: []Mapping{{Start: 0x7f0000000000, End: 0x7f0000001000, Perms: "r-xp", Minor: 1, Inode: 2048,
				Path: "/memfd:jit code", Deleted: true}},
		},
		{
			name: "anonymous with trailing space",
			have: "7f66818bd000-7f6681981000 rw-p 00000000 00:00 0 \n",
			want: []Mapping{{Start: 0x7f66818bd000, End: 0x7f6681981000, Perms: "rw-p"}},
		},
		{
			name: "anonymous without trailing space",
			have: "7f66818bd000-7f6681981000 rw-p 00000000 00:00 0\n",
			want: []Mapping{{Start: 0x7f66818bd000, End: 0x7f6681981000, Perms: "rw-p"}},
		},
		{
			name: "pseudo",
			have: "7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0          [vdso]\n" +
				"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0   [vsyscall]\n",
			want: []Mapping{
				{Start: 0x7ffd00000000, End: 0x7ffd00002000, Perms: "r-xp", Path: "[vdso]"},
				{Start: 0xffffffffff600000, End: 0xffffffffff601000, Perms: "--xp", Path: "[vsyscall]"},
			},
		},
		{
			name: "large device numbers",
			have: "1000-2000 r-xp 00000000 103:fffff 1 /x\n",
			want: []Mapping{{Start: 0x1000, End: 0x2000, Perms: "r-xp", Major: 0x103, Minor: 0xfffff, Inode: 1, Path: "/x"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := ParseMaps(strings.NewReader(tt.have))
			if err != nil {
				t.Fatalf("ParseMaps: %v", err)
			}
			if !reflect.DeepEqual(have, tt.want) {
				t.Errorf("have %+v\nwant %+v", have, tt.want)
			}
		})
	}
}

func TestParseMapsMalformed(t *testing.T) {
	good := "00400000-00401000 r-xp 00000000 fd:01 1 /a\n"
	tests := []struct {
		name string
		have string
		line int
	}{
		{"empty line", good + "\n" + good, 2},
		{"no dash", "00400000 r-xp 00000000 fd:01 1 /a\n", 1},
		{"bad start", good + "0040000g-00401000 r-xp 00000000 fd:01 1 /a\n", 2},
		{"bad end", "00400000- r-xp 00000000 fd:01 1 /a\n", 1},
		{"end below start", "00401000-00400000 r-xp 00000000 fd:01 1 /a\n", 1},
		{"short perms", "00400000-00401000 r-x 00000000 fd:01 1 /a\n", 1},
		{"bad perms", "00400000-00401000 rwzp 00000000 fd:01 1 /a\n", 1},
		{"bad offset", "00400000-00401000 r-xp zz fd:01 1 /a\n", 1},
		{"no colon", "00400000-00401000 r-xp 00000000 fd01 1 /a\n", 1},
		{"bad minor", "00400000-00401000 r-xp 00000000 fd:x 1 /a\n", 1},
		{"bad inode", "00400000-00401000 r-xp 00000000 fd:01 0x1 /a\n", 1},
		{"negative inode", "00400000-00401000 r-xp 00000000 fd:01 -1 /a\n", 1},
		{"truncated", good + "00400000-00401000 r-xp", 2},
		{"double space", "00400000-00401000  r-xp 00000000 fd:01 1 /a\n", 1},
		{"too long", good + "1-2 r-xp 0 0:0 1 /" + strings.Repeat("a", maxLine) + "\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := ParseMaps(strings.NewReader(tt.have))
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("have error %v, want *FormatError", err)
			}
			if fe.Line != tt.line {
				t.Errorf("have line %d, want %d (%v)", fe.Line, tt.line, err)
			}
			if have != nil {
				t.Errorf("have %d mappings with an error, want none", len(have))
			}
		})
	}
}

// TestParseMapsTestdata parses every real and crafted maps file in
// testdata and checks invariants that hold for any kernel output.
func TestParseMapsTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/maps/*.maps")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/maps/*.maps: %v", err)
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			maps, err := ParseMaps(strings.NewReader(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			if have, want := len(maps), strings.Count(string(b), "\n"); have != want {
				t.Errorf("have %d mappings, want %d (one per line)", have, want)
			}
			for i, m := range maps {
				if i > 0 && m.Start < maps[i-1].End {
					t.Errorf("mapping %d starts at %#x, inside the previous one", i, m.Start)
				}
				if m.FileBacked() != strings.HasPrefix(m.Path, "/") {
					t.Errorf("mapping %d: FileBacked %v for path %q", i, m.FileBacked(), m.Path)
				}
			}
		})
	}
}

func TestMappingPerms(t *testing.T) {
	tests := []struct {
		perms            string
		read, write, exe bool
	}{
		{"r-xp", true, false, true},
		{"rw-p", true, true, false},
		{"---p", false, false, false},
		{"--xs", false, false, true},
		{"", false, false, false},
	}
	for _, tt := range tests {
		m := Mapping{Perms: tt.perms}
		if m.Read() != tt.read || m.Write() != tt.write || m.Exec() != tt.exe {
			t.Errorf("%q: have r=%v w=%v x=%v, want r=%v w=%v x=%v", tt.perms,
				m.Read(), m.Write(), m.Exec(), tt.read, tt.write, tt.exe)
		}
	}
}
