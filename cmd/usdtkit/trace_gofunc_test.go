package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestProgramGoFunction runs examples/go-latency under -c with a program
// of its Go method: parameters by name in a predicate and a string key,
// named results at its RETs (a uretprobe on a Go function), a string
// result in printf and an equality, and entries paired with returns by
// goid. The output is what the example's requests make (see its doc
// comment), and the command exits 0: probing every RET leaves the
// goroutine stacks alone.
func TestProgramGoFunction(t *testing.T) {
	bin := testutil.BuildGo(t, "../../examples/go-latency")
	const jobs = 24
	run := startTrace(t, "trace", "-c", fmt.Sprintf("%s -jobs %d", bin, jobs), "-e",
		`uprobe::"main.(*Server).handle" /args.n > 3/ { @big[args.path] = count(); }
uprobe::"main.(*Server).handle" { @start[goid] = nsecs; }
uretprobe::"main.(*Server).handle" /@start[goid]/ { @pairs[args.status] = count(); delete(@start[goid]); }
uretprobe::"main.(*Server).handle" /args.status == 404/ { printf("%s|\n", args.body); }`)
	code, out, errOut := run.wait(t)
	if code != 0 {
		t.Fatalf("exit %d, want the command's 0; stderr %s", code, errOut)
	}
	paths := []string{"/users", "/orders/42", "/health", "/missing"}
	big := map[string]int{}
	status := map[int]int{}
	var want []string
	for i := range jobs {
		path, n := paths[i%len(paths)], i%6+1
		if n > 3 {
			big[path]++
		}
		if path == "/missing" {
			status[404]++
			want = append(want, "not found|")
		} else {
			status[200]++
		}
	}
	for p, n := range big {
		want = append(want, fmt.Sprintf("@big[%s]: %d", p, n))
	}
	for s, n := range status {
		want = append(want, fmt.Sprintf("@pairs[%d]: %d", s, n))
	}
	var have []string
	for l := range strings.Lines(out) {
		if l = strings.TrimSuffix(l, "\n"); l != "" {
			have = append(have, l)
		}
	}
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Errorf("output (lines sorted)\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}

// TestGoLatencyExamples compiles the .bt files of examples/go-latency
// against the example.
func TestGoLatencyExamples(t *testing.T) {
	bin := testutil.BuildGo(t, "../../examples/go-latency")
	files, err := filepath.Glob("../../examples/go-latency/*.bt")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v, %d files", err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			run := startTrace(t, "trace", "-c", bin+" -jobs 8", f)
			code, out, errOut := run.wait(t)
			if code != 0 || !strings.Contains(out, "@") {
				t.Errorf("exit %d, output %q, stderr %q: want 0 and maps", code, out, errOut)
			}
		})
	}
}
