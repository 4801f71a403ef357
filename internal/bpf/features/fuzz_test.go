package features

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// FuzzParsePMUType checks that any content of a PMU type attribute gives a
// value or an error, never a panic, and that values round-trip.
func FuzzParsePMUType(f *testing.F) {
	seeds, err := filepath.Glob("testdata/sysfs/*/" + pmuTypePath)
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/sysfs (%v)", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, err := parsePMUType(b)
		if err != nil {
			if typ != 0 {
				t.Errorf("error %v with type %d", err, typ)
			}
			return
		}
		again, err := parsePMUType([]byte(strconv.FormatUint(uint64(typ), 10) + "\n"))
		if err != nil || again != typ {
			t.Errorf("round trip of %d: have %d, %v", typ, again, err)
		}
	})
}
