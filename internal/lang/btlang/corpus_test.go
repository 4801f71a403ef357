package btlang

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// entry is one program of a testdata corpus.
type entry struct {
	name    string
	src     string
	want    string // invalid.txt: the expected error, "LINE:COL: message"
	usdtkit bool   // bpftrace cannot check it with -d
	rejects bool   // invalid.txt: bpftrace rejects it too
}

var headerRE = regexp.MustCompile(`(?m)^-- (.+?) --\n`)

// readCorpus reads testdata/<file>: "-- NAME [flags] --" lines start
// entries; an entry of invalid.txt begins with "want: LINE:COL: message".
func readCorpus(t testing.TB, file string) []entry {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	idx := headerRE.FindAllSubmatchIndex(data, -1)
	var entries []entry
	for i, m := range idx {
		end := len(data)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		head := string(data[m[2]:m[3]])
		e := entry{src: string(data[m[1]:end])}
		e.name, _, _ = strings.Cut(head, " ")
		e.usdtkit = strings.Contains(head, "[usdtkit]")
		e.rejects = strings.Contains(head, "[rejects]")
		if rest, ok := strings.CutPrefix(e.src, "want: "); ok {
			e.want, e.src, _ = strings.Cut(rest, "\n")
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		t.Fatalf("testdata/%s holds no entries", file)
	}
	return entries
}

// fakeProbes stands for the back end: "./goapp:main.handle" is a Go
// function with arguments n and name, "./tracee:prov:twelve" a USDT probe
// with 12 arguments, "./tracee:prov:two" one with 2; everything else is
// unknown.
type fakeProbes struct{}

func (fakeProbes) Args(p *Probe) (ProbeArgs, error) {
	switch {
	case p.Path == "./goapp" && p.Name == "main.handle":
		return ProbeArgs{Count: 2, Named: []NamedArg{{Name: "n", Type: int64T}, {Name: "name", Type: uint64T}}}, nil
	case p.Path == "./goapp" && p.Name == "main.other":
		return ProbeArgs{Count: 1, Named: []NamedArg{{Name: "n", Type: uint64T}}}, nil
	case p.Path == "./gofn" && p.Kind == ProbeUprobe:
		return ProbeArgs{GoID: true, Named: []NamedArg{{Name: "path", Type: StringType(64)},
			{Name: "p", Err: "args.p is main.Point, a struct passed by value, which programs cannot read"}},
			Refuse: map[string]string{"arg": "arg0…arg11 mean nothing in Go functions; use args.NAME"}}, nil
	case p.Path == "./gofn" && p.Kind == ProbeUretprobe:
		return ProbeArgs{GoID: true, Named: []NamedArg{{Name: "r0", Type: int64T}},
			Refuse: map[string]string{"arg": "arg0…arg11 mean nothing in Go functions; use args.NAME"}}, nil
	case p.Path == "./tracee" && p.Name == "twelve":
		return ProbeArgs{Count: 12}, nil
	case p.Path == "./tracee" && p.Name == "two":
		return ProbeArgs{Count: 2}, nil
	case p.Path == "./missing":
		return ProbeArgs{}, errors.New("no such file")
	}
	return ProbeArgs{Count: -1}, nil
}

// stripPos zeroes every Pos in the tree, so that trees parsed from
// differently laid out sources compare equal. Types may refer to
// themselves (struct Node { struct Node *next; }): each pointer is
// visited once.
func stripPos(v reflect.Value) { stripPosSeen(v, map[uintptr]bool{}) }

func stripPosSeen(v reflect.Value, seen map[uintptr]bool) {
	stripPos := func(v reflect.Value) { stripPosSeen(v, seen) }
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Pointer {
			if seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
		}
		stripPos(v.Elem())
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			stripPos(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[Pos]() {
			if v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			stripPos(v.Field(i))
		}
	}
}

// roundTrip checks that prog prints to a program that parses to an equal
// tree, and that printing is then stable.
func roundTrip(t testing.TB, prog *Program) { roundTripWith(t, prog, nil) }

// roundTripWith is roundTrip for a program parsed with opts.
func roundTripWith(t testing.TB, prog *Program, opts *ParseOptions) {
	t.Helper()
	text := prog.String()
	again, err := ParseWith("printed", []byte(text), opts)
	if err != nil {
		t.Fatalf("printed program does not parse: %v\n%s", err, text)
	}
	if text2 := again.String(); text2 != text {
		t.Fatalf("printing is not stable:\nfirst:\n%s\nsecond:\n%s", text, text2)
	}
	stripPos(reflect.ValueOf(prog))
	stripPos(reflect.ValueOf(again))
	// A definition's source text is layout, as positions are.
	for _, p := range []*Program{prog, again} {
		for _, d := range p.Types {
			d.Src = ""
		}
	}
	if !reflect.DeepEqual(prog, again) {
		t.Fatalf("printed program parses to a different tree:\n%s", text)
	}
}

func TestCorpusValid(t *testing.T) {
	entries := readCorpus(t, "valid.txt")
	if len(entries) < 60 {
		t.Errorf("valid corpus has %d programs, want at least 60", len(entries))
	}
	for _, e := range entries {
		t.Run(e.name, func(t *testing.T) {
			prog, err := Parse("stdin", []byte(e.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if err := Check(prog, &CheckOptions{Probes: fakeProbes{}}); err != nil {
				t.Fatalf("Check: %v", err)
			}
			fresh, err := Parse("stdin", []byte(e.src))
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, fresh)
		})
	}
}

// TestCorpusBpftrace cross-checks the corpora with bpftrace itself: every
// valid program not marked [usdtkit] passes "bpftrace -d" (parse, semantic
// analysis and code generation, without attaching), parses to the tree
// bpftrace prints and gives its maps the value types bpftrace gives them;
// every invalid one marked [rejects] fails it.
func TestCorpusBpftrace(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "bpftrace")
	pathRE := regexp.MustCompile(`(?:usdt|U|uprobe|uretprobe):(/[^:]+):`)
	run := func(t *testing.T, e entry) (string, error) {
		for _, m := range pathRE.FindAllStringSubmatch(e.src, -1) {
			testutil.RequireFile(t, m[1])
		}
		out, err := testutil.RunBpftrace(t, "-d", "-e", e.src)
		return string(out), err
	}
	for _, e := range readCorpus(t, "valid.txt") {
		if e.usdtkit {
			continue
		}
		t.Run("valid/"+e.name, func(t *testing.T) {
			out, err := run(t, e)
			if err != nil {
				t.Fatalf("bpftrace rejects a program of the valid corpus: %v", err)
			}
			want, ok := parserDump(out)
			if !ok {
				t.Fatalf("no AST in bpftrace -d output:\n%s", out)
			}
			prog, err := Parse("stdin", []byte(e.src))
			if err != nil {
				t.Fatal(err)
			}
			if have := bpftraceDump(prog); have != want {
				t.Errorf("tree differs from bpftrace's\nhave:\n%s\nwant (bpftrace -d):\n%s", have, want)
			}
			if err := Check(prog, nil); err != nil {
				t.Fatal(err)
			}
			if have, want := bpftraceMaps(prog), semanticMaps(out); !reflect.DeepEqual(have, want) {
				t.Errorf("map value types differ from bpftrace's\nhave %v\nwant %v", have, want)
			}
		})
	}
	for _, e := range readCorpus(t, "invalid.txt") {
		if !e.rejects {
			continue
		}
		t.Run("invalid/"+e.name, func(t *testing.T) {
			if _, err := run(t, e); err == nil {
				t.Errorf("bpftrace accepts a program marked [rejects]")
			}
		})
	}
}

func TestCorpusInvalid(t *testing.T) {
	entries := readCorpus(t, "invalid.txt")
	if len(entries) < 40 {
		t.Errorf("invalid corpus has %d programs, want at least 40", len(entries))
	}
	for _, e := range entries {
		t.Run(e.name, func(t *testing.T) {
			if e.want == "" {
				t.Fatal("entry has no want: line")
			}
			err := compile(e.src)
			if err == nil {
				t.Fatalf("compiled without error, want %q", e.want)
			}
			var first *Error
			if !errors.As(err, &first) {
				t.Fatalf("error %v (%T) holds no *Error", err, err)
			}
			have := fmt.Sprintf("%d:%d: %s", first.Pos.Line, first.Pos.Col, first.Msg)
			if have != e.want {
				t.Errorf("first error\nhave %s\nwant %s", have, e.want)
			}
			if first.Pos.File != "stdin" {
				t.Errorf("error file is %q, want stdin", first.Pos.File)
			}
		})
	}
}

func compile(src string) error {
	prog, err := Parse("stdin", []byte(src))
	if err != nil {
		return err
	}
	return Check(prog, &CheckOptions{Probes: fakeProbes{}})
}

func FuzzParse(f *testing.F) {
	for _, file := range []string{"valid.txt", "invalid.txt"} {
		for _, e := range readCorpus(f, file) {
			f.Add(e.src)
		}
	}
	// bpftrace 0.2x's syntax.
	for _, src := range []string{
		`config = { max_strlen = 8; stack_mode = perf; x = "a b" } begin { let $x: int8 = 1; let $y; $y = 5ms; }`,
		`begin/1/ { let $a = 1; if (1) { let $b = $a; } } interval:100ms { exit(); } end { }`,
	} {
		f.Add(src)
	}
	// Positional parameters: a number, text, a negative hex number, "".
	params := &ParseOptions{Params: []string{"7", "x y", "-0x10", ""}}
	f.Fuzz(func(t *testing.T, src string) {
		if prog, err := ParseWith("fuzz", []byte(src), params); err == nil {
			roundTripWith(t, prog, params)
		}
		prog, err := Parse("fuzz", []byte(src))
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) != 1 || prog != nil {
				t.Fatalf("Parse error %v: want one *Error and no program", err)
			}
			return
		}
		roundTrip(t, prog)
		// Check must not panic either; its result is not a property.
		if err := Check(prog, &CheckOptions{Probes: fakeProbes{}}); err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("Check error %v (%T): want an ErrorList", err, err)
			}
		}
	})
}
