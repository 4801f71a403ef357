package elfnotes

import (
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/ fixtures and fuzz seeds")

// committedFixtures are the generated files kept in testdata/. Regenerate
// them with
//
//	go test -run TestGenerateFixtures -update ./elfnotes
var committedFixtures = []struct {
	file string
	opts fixtureOpts
}{
	{"sdt-elf64le.elf", fixtureOpts{class: elf.ELFCLASS64, data: elf.ELFDATA2LSB, baseSection: true}},
	{"sdt-elf32be-nosh.elf", fixtureOpts{class: elf.ELFCLASS32, data: elf.ELFDATA2MSB, noSectionHeaders: true}},
}

// fuzzSeeds are hostile inputs written to testdata/fuzz/FuzzNewFile.
func fuzzSeeds(tb testing.TB) map[string][]byte {
	good := buildFixture(tb, fixtureOpts{class: elf.ELFCLASS64, data: elf.ELFDATA2LSB, baseSection: true})
	return map[string][]byte{
		"ident-only":  good[:16],
		"shnum-huge":  put(good, 60, 2, 0xfffe),
		"xnum":        put(good, 60, 2, 0),
		"phoff-wraps": put(good, 32, 8, ^uint64(0)-100),
	}
}

func TestGenerateFixtures(t *testing.T) {
	for _, c := range committedFixtures {
		path := filepath.Join("testdata", c.file)
		want := buildFixture(t, c.opts)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (regenerate with -update)", err)
		}
		if !bytes.Equal(have, want) {
			t.Errorf("%s is stale; regenerate with -update", path)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		secs := []string{".note.gnu.build-id", ".note.stapsdt", ".note.stapsdt", ".note.stapsdt"}
		if c.opts.noSectionHeaders {
			secs = []string{"", "", "", ""}
		}
		checkFixture(t, f, c.opts.class, c.opts.data, c.opts.baseSection, len(fixtureProbes), secs)
	}
	if *update {
		dir := filepath.Join("testdata", "fuzz", "FuzzNewFile")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range fuzzSeeds(t) {
			writeCorpus(t, filepath.Join(dir, name), fmt.Sprintf("[]byte(%s)", strconv.Quote(string(data))))
		}
		dir = filepath.Join("testdata", "fuzz", "FuzzParseStapsdt")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, c := range classes {
			desc := fixtureProbes[0].AppendDesc(nil, c.class, byteOrder(c.data))
			writeCorpus(t, filepath.Join(dir, c.name), fmt.Sprintf("[]byte(%s)\nbool(%v)\nbool(%v)",
				strconv.Quote(string(desc)), c.class == elf.ELFCLASS64, c.data == elf.ELFDATA2MSB))
		}
	}
}

func writeCorpus(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("go test fuzz v1\n"+body+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
