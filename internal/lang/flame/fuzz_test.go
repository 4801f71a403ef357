package flame_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/usdtkit/usdtkit/internal/lang/flame"
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

// FuzzHTMLData checks that no frame name, root or title can leave the
// page's data element: the data holds no '<', parses as JSON and gives the
// names back, and the page has exactly two script elements' ends. Seeds
// are the frame names of testdata/*.folded and markup.
func FuzzHTMLData(f *testing.F) {
	seeds, err := filepath.Glob("testdata/*.folded")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no testdata/*.folded seeds (%v)", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range bytes.FieldsFunc(b, func(r rune) bool { return r == ';' || r == '\n' }) {
			f.Add(string(name))
		}
	}
	f.Add(`</script><script>alert(1)</script>`)
	f.Add("<!--<script>")
	f.Add("\u2028\"'&<>")
	f.Fuzz(func(t *testing.T, name string) {
		samples := []flame.Sample{{Root: name, Count: 1, Frames: []flame.Frame{{Symbol: name, Object: "/x/" + name}}}}
		var b bytes.Buffer
		if err := flame.WriteHTML(&b, samples, &flame.Options{Title: name, Unit: name}); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		if n := strings.Count(strings.ToLower(page), "</script"); n != 2 {
			t.Fatalf("%d </script in the page, want 2", n)
		}
		_, rest, ok := strings.Cut(page, `<script type="application/json" id="flame-data">`)
		data, _, ok2 := strings.Cut(rest, "</script>")
		if !ok || !ok2 {
			t.Fatal("no data element")
		}
		if strings.ContainsAny(data, "<>&\u2028\u2029") {
			t.Fatalf("unescaped <, >, & or a line separator in the data: %q", data)
		}
		var d struct {
			Title string
			Names []string
		}
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			t.Fatalf("data: %v", err)
		}
		if utf8.ValidString(name) && name != "" && d.Title != name {
			t.Fatalf("title %q, want %q", d.Title, name)
		}
	})
}
