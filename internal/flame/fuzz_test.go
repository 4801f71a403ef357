package flame_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/internal/flame"
)

// FuzzParseFolded checks that ParseFolded never panics, returns samples
// or a *FormatError but not both, and that its samples written by
// WriteFolded parse back to the same folded text.
func FuzzParseFolded(f *testing.F) {
	seeds, err := filepath.Glob("testdata/*.folded")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no testdata/*.folded seeds (%v)", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := flame.ParseFolded(bytes.NewReader(in))
		if err != nil {
			var fe *flame.FormatError
			if !errors.As(err, &fe) || s != nil {
				t.Fatalf("have %v, %d samples; want a *FormatError and none", err, len(s))
			}
			return
		}
		var out bytes.Buffer
		if err := flame.WriteFolded(&out, s); err != nil {
			t.Fatal(err)
		}
		s2, err := flame.ParseFolded(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("reparse %q: %v", out.Bytes(), err)
		}
		var out2 bytes.Buffer
		if err := flame.WriteFolded(&out2, s2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), out2.Bytes()) {
			t.Fatalf("round trip: have\n%s\nwant\n%s", out2.Bytes(), out.Bytes())
		}
	})
}
