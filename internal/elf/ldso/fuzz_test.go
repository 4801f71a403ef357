package ldso

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func FuzzParseCache(f *testing.F) {
	files, err := filepath.Glob("testdata/*.cache")
	if err != nil || len(files) == 0 {
		f.Fatalf("no testdata/*.cache: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, format := range []cacheFormat{formatNew, formatOld, formatCompat, formatNewBigEndian} {
		f.Add(buildCache(format, builtEntries))
	}

	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := ParseCache(b)
		if (err == nil) != (entries != nil) {
			t.Fatalf("have %d entries (nil %v) and error %v", len(entries), entries == nil, err)
		}
		if err != nil {
			return
		}
		// Whatever was accepted writes and reads back unchanged.
		for _, format := range []cacheFormat{formatNew, formatCompat} {
			again, err := ParseCache(buildCache(format, entries))
			if err != nil {
				t.Fatalf("re-parse %v: %v", format, err)
			}
			if !reflect.DeepEqual(again, entries) {
				t.Fatalf("%v round trip: have %+v, want %+v", format, again, entries)
			}
		}
	})
}
