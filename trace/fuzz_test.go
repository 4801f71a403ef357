package trace_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/trace"
)

// FuzzCompile compiles programs, seeded from testdata/*.bt: no panic,
// and an error exactly when there is no program.
func FuzzCompile(f *testing.F) {
	files, err := filepath.Glob("testdata/*.bt")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata/*.bt: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, src string) {
		prog, err := trace.Compile("f.bt", src, nil)
		if (err == nil) != (prog != nil) {
			t.Fatalf("Compile = %v, %v", prog, err)
		}
	})
}
