package gen

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// writeD returns a .d file declaring provs, for round trips through ParseD.
func writeD(provs []dynsdt.ProviderSpec) string {
	var b strings.Builder
	for _, p := range provs {
		b.WriteString("provider " + p.Name + " {\n")
		for _, pr := range p.Probes {
			var args []string
			for _, a := range pr.Args {
				args = append(args, argC[a])
			}
			b.WriteString("\tprobe " + pr.Name + "(" + strings.Join(args, ", ") + ");\n")
		}
		b.WriteString("};\n")
	}
	return b.String()
}

func FuzzParseD(f *testing.F) {
	files, err := filepath.Glob("testdata/dfile/*.d")
	if err != nil || len(files) == 0 {
		f.Fatalf("no testdata/dfile/*.d: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, tt := range dErrors {
		f.Add([]byte(tt.src))
	}

	f.Fuzz(func(t *testing.T, src []byte) {
		provs, err := ParseD(strings.NewReader(string(src)), "fuzz.d")
		if (err == nil) != (provs != nil) {
			t.Fatalf("have %d providers (nil %v) and error %v", len(provs), provs == nil, err)
		}
		if err != nil {
			var perr *ParseError
			if !errors.As(err, &perr) || perr.Line < 1 || perr.Col < 1 {
				t.Fatalf("have error %#v, want a *ParseError with a position", err)
			}
			return
		}
		for i := range provs {
			if err := provs[i].Validate(); err != nil {
				t.Fatalf("accepted an invalid spec: %v", err)
			}
			// Generating from whatever parsed must not panic.
			Header(&provs[i])
			if src, err := Go(&provs[i], "p"); err != nil && !errors.Is(err, dynsdt.ErrSpec) {
				t.Fatalf("Go: %v\n%s", err, src)
			}
		}
		again, err := ParseD(strings.NewReader(writeD(provs)), "again.d")
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, writeD(provs))
		}
		if !reflect.DeepEqual(again, provs) {
			t.Fatalf("round trip: have %+v, want %+v", again, provs)
		}
	})
}
