package btgen_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from what Generate emits now")

// TestGolden compares the BPF that Generate emits for loadTests and for
// btlang's corpus (on the same made-up sites as the other tests) with the
// listings in testdata/golden: every map and every program, instruction
// for instruction; with the default options, and the programs of both
// that read ustack with StackKeysFP too (stackfp.txt), so that both
// walks of stack keys stay reviewed. A change to codegen shows here as a diff a reviewer can
// read without root; one that should not change the BPF (a refactoring)
// must leave the files as they are. -update rewrites them.
func TestGolden(t *testing.T) {
	sets := []struct {
		file  string
		names []string
		srcs  []string
		keys  btgen.StackKeys
	}{{file: "load.txt"}, {file: "corpus.txt"}, {file: "stackfp.txt", keys: btgen.StackKeysFP}}
	for _, tt := range loadTests {
		sets[0].names = append(sets[0].names, tt.name)
		sets[0].srcs = append(sets[0].srcs, tt.src)
	}
	sets[1].names, sets[1].srcs = corpus(t)
	for _, set := range sets[:2] {
		for i, src := range set.srcs {
			if strings.Contains(src, "ustack") {
				sets[2].names = append(sets[2].names, set.file+": "+set.names[i])
				sets[2].srcs = append(sets[2].srcs, src)
			}
		}
	}
	for _, set := range sets {
		t.Run(set.file, func(t *testing.T) {
			var got bytes.Buffer
			for i, src := range set.srcs {
				fmt.Fprintf(&got, "-- %s\n", set.names[i])
				got.WriteString(listing(t, src, set.keys))
			}
			// The same source twice gives the same BPF.
			if again := listing(t, set.srcs[0], set.keys); !strings.Contains(got.String(), again) {
				t.Errorf("%s: a second Generate differs from the first", set.names[0])
			}
			path := filepath.Join("testdata", "golden", set.file)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run TestGolden -update writes it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("BPF differs from %s in: %s\n(if the change is meant, go test ./internal/lang/btgen -run TestGolden -update, and review the diff)",
					path, strings.Join(differing(got.String(), string(want)), ", "))
			}
		})
	}
}

// listing is what Generate emits for src with stack keys captured as
// keys says, or the error it returns, as text.
func listing(t *testing.T, src string, keys btgen.StackKeys) string {
	t.Helper()
	prog, err := btlang.Compile("golden.bt", []byte(src), &btlang.CheckOptions{Probes: anyArgs{}})
	if err != nil {
		return "compile error: " + err.Error() + "\n"
	}
	_, opts := compile(t, src)
	opts.StackKeys = keys
	out, err := btgen.Generate(prog, opts)
	if err != nil {
		var e *btlang.Error
		if !errors.As(err, &e) {
			t.Fatalf("Generate %q: %v, want a *btlang.Error", src, err)
		}
		return "refused: " + err.Error() + "\n"
	}
	return out.Listing()
}

// differing names the sections ("-- NAME") whose text differs.
func differing(got, want string) []string {
	split := func(s string) map[string]string {
		m := map[string]string{}
		var name string
		for l := range strings.Lines(s) {
			if n, ok := strings.CutPrefix(l, "-- "); ok {
				name = strings.TrimSpace(n)
				continue
			}
			m[name] += l
		}
		return m
	}
	g, w := split(got), split(want)
	var names []string
	for n, v := range g {
		if w[n] != v {
			names = append(names, n)
		}
	}
	for n := range w {
		if _, ok := g[n]; !ok {
			names = append(names, n+" (gone)")
		}
	}
	slices.Sort(names)
	return names
}
