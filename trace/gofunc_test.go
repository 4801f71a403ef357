package trace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// buildGoTarget builds testdata/gofn for the test.
func buildGoTarget(t *testing.T) string {
	t.Helper()
	return testutil.BuildGo(t, "testdata/gofn")
}

// goCall is one call of main.handle as the target printed it.
type goCall struct {
	path   string
	n      int64
	code   uint64
	ok     bool
	status int64
	msg    string
}

// runGoTarget starts the Go target, compiles and starts src against its
// PID, lets it run and returns what the program printed (JSON lines), the
// calls the target reports and its other output lines.
func runGoTarget(t *testing.T, exe, src string) (records []map[string]any, calls []goCall, srv uint64, many int64) {
	t.Helper()
	cmd := exec.Command(exe)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	t.Cleanup(func() {
		if !done {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	prog, err := trace.Compile("go.bt", src, &trace.CompileOptions{PID: cmd.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tr, err := trace.Start(prog, &trace.Options{PID: cmd.Process.Pid, Output: trace.OutputJSON, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// Attached: let the target make its calls.
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	done = true
	if err != nil {
		t.Fatalf("the target did not survive tracing: %v\n%s", err, stderr.Bytes())
	}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[0] == "srv":
			srv, _ = strconv.ParseUint(f[1], 10, 64)
		case len(f) == 2 && f[0] == "many":
			many, _ = strconv.ParseInt(f[1], 10, 64)
		case len(f) == 5 && f[0] == "call":
			c := goCall{path: f[1], ok: f[4] == "true"}
			// Programs' strings keep 63 bytes and a NUL.
			c.path = c.path[:min(len(c.path), 63)]
			c.n, _ = strconv.ParseInt(f[2], 10, 64)
			c.code, _ = strconv.ParseUint(f[3], 10, 64)
			c.status, c.msg = c.n*10, ("ok:" + f[1])[:min(len(f[1])+3, 63)]
			calls = append(calls, c)
		default:
			t.Fatalf("target printed %q", l)
		}
	}
	if len(calls) != 11 || srv == 0 || many == 0 {
		t.Fatalf("target printed %d calls, srv %d, many %d:\n%s", len(calls), srv, many, stdout.Bytes())
	}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var rec map[string]any
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("output: %v\n%s", err, out.Bytes())
		}
		records = append(records, rec)
	}
	return records, calls, srv, many
}

// maps returns the maps of JSON records by name, and the printf lines.
func maps(records []map[string]any) (map[string]any, []string) {
	ms := map[string]any{}
	var lines []string
	for _, r := range records {
		switch r["type"] {
		case "map", "hist":
			for k, v := range r["data"].(map[string]any) {
				ms[k] = v
			}
		case "printf":
			lines = append(lines, r["data"].(string))
		}
	}
	return ms, lines
}

// jsonEqual compares a decoded JSON value with want, marshalled.
func jsonEqual(t *testing.T, name string, have, want any) {
	t.Helper()
	h, _ := json.Marshal(have)
	w, _ := json.Marshal(want)
	if !bytes.Equal(h, w) {
		t.Errorf("%s = %s, want %s", name, h, w)
	}
}

// TestGoFunctionArgs traces the Go target's main.handle with its
// parameters and results by name: integer, uint8, bool, pointer and
// string parameters in keys, values and predicates, string ==, printf
// %s, RET probes with named results and retval, and parameters on the
// stack; every value is what the target says it passed.
func TestGoFunctionArgs(t *testing.T) {
	testutil.RequireBPF(t)
	exe := buildGoTarget(t)
	src := fmt.Sprintf(`uprobe:%[1]s:main.handle /args.n > 3/ { @big[args.path] = count(); @bigsum[args->path] = sum(args.n); }
uprobe:%[1]s:main.handle { @code[args.code, args.ok] = count(); @min = min(args.n); @srv = max(args.s); }
uprobe:%[1]s:main.handle /args.path == "/b"/ { printf("%%s %%d %%d %%d|\n", args.path, args.n, args.code, args.ok); }
uprobe:%[1]s:main.handle /str(args.path) != "/a" && args.ok/ { @even[str(args.path)] = count(); }
uretprobe:%[1]s:main.handle { @st[args.msg] = sum(args.status); @rv = sum(retval); @rets = count(); }
uprobe:%[1]s:main.handle /args.s->hits >= 0/ { @hits = count(); @maxhits = max(args.s.hits); }
uprobe:%[1]s:main.many { @many = sum(args.a + args.b + args.c + args.d + args.e + args.f + args.g + args.h + args.i + args.j + args.k); @k[args.s] = max(args.k); }
`, exe)
	records, calls, srv, many := runGoTarget(t, exe, src)
	ms, lines := maps(records)

	big, bigsum := map[string]int64{}, map[string]int64{}
	code := map[string]int64{}
	even := map[string]int64{}
	st := map[string]int64{}
	var want []string
	min, rv := int64(0), int64(0)
	for i, c := range calls {
		if c.n > 3 {
			big[c.path]++
			bigsum[c.path] += c.n
		}
		code[fmt.Sprintf("%d,%d", c.code, map[bool]int{true: 1}[c.ok])]++
		if i == 0 || c.n < min {
			min = c.n
		}
		if c.path == "/b" {
			want = append(want, fmt.Sprintf("%s %d %d %d|\n", c.path, c.n, c.code, map[bool]int{true: 1}[c.ok]))
		}
		if c.path != "/a" && c.ok {
			even[c.path]++
		}
		st[c.msg] += c.status
		rv += c.status
	}
	jsonEqual(t, "@big", ms["@big"], big)
	jsonEqual(t, "@bigsum", ms["@bigsum"], bigsum)
	jsonEqual(t, "@code", ms["@code"], code)
	jsonEqual(t, "@min", ms["@min"], min)
	jsonEqual(t, "@srv", ms["@srv"], srv)
	jsonEqual(t, "@even", ms["@even"], even)
	jsonEqual(t, "@st", ms["@st"], st)
	jsonEqual(t, "@rv", ms["@rv"], rv)
	jsonEqual(t, "@rets", ms["@rets"], len(calls))
	jsonEqual(t, "@many", ms["@many"], many-int64(len("on the stack")))
	jsonEqual(t, "@k", ms["@k"], map[string]int{"on the stack": 11})
	// Field s.hits through the pointer: what the calls before counted.
	jsonEqual(t, "@hits", ms["@hits"], len(calls))
	if h, _ := ms["@maxhits"].(float64); h < 0 || h >= float64(len(calls)) {
		t.Errorf("@maxhits = %v, want 0 to %d", ms["@maxhits"], len(calls)-1)
	}
	slices.Sort(lines)
	slices.Sort(want)
	if !slices.Equal(lines, want) {
		t.Errorf("printf lines\n%q\nwant\n%q", lines, want)
	}
}

// TestGoFunctionLatency pairs entries and returns per goroutine (goid)
// while goroutines sleep and move between threads: every call gives one
// histogram entry, no start is left over, and the target survives.
func TestGoFunctionLatency(t *testing.T) {
	testutil.RequireBPF(t)
	exe := buildGoTarget(t)
	src := fmt.Sprintf(`uprobe:%[1]s:main.handle { @start[goid] = nsecs; @goids[goid] = count(); }
uretprobe:%[1]s:main.handle /@start[goid]/ { @ns = hist(nsecs - @start[goid]); @n = count(); delete(@start[goid]); }
`, exe)
	records, calls, _, _ := runGoTarget(t, exe, src)
	ms, _ := maps(records)
	jsonEqual(t, "@n", ms["@n"], len(calls))
	if ids, _ := ms["@goids"].(map[string]any); len(ids) != len(calls) {
		t.Errorf("@goids = %v, want %d goroutines", ms["@goids"], len(calls))
	}
	if s, ok := ms["@start"]; ok && len(s.(map[string]any)) != 0 {
		t.Errorf("@start = %v, want every start deleted", s)
	}
	var n float64
	hist, _ := ms["@ns"].([]any)
	for _, b := range hist {
		n += b.(map[string]any)["count"].(float64)
		if lo, ok := b.(map[string]any)["min"].(float64); ok && lo < 1<<19 {
			t.Errorf("@ns has a bucket from %v ns; each call sleeps 1 ms", lo)
		}
	}
	if int(n) != len(calls) {
		t.Errorf("@ns counts %v calls, want %d: %v", n, len(calls), ms["@ns"])
	}
}

// TestGoFunctionErrors: what a program cannot read of a Go function fails
// to compile at its place with one sentence naming it.
func TestGoFunctionErrors(t *testing.T) {
	exe := buildGoTarget(t)
	noDWARF := testutil.BuildGo(t, "testdata/gofn", "-ldflags=-w")
	tests := []struct {
		name string
		src  string
		line int
		at   string // the error's column is where this is on the line
		msg  string
	}{
		{"arg0", "uprobe:" + exe + ":main.handle { @ = sum(arg0); }", 1, "arg0);", "arg0: arg0…arg11 are C ABI registers, which mean nothing in Go function main.handle; read its parameters by name as args.NAME (it has path, n, code, ok, s)"},
		{"struct by value", "uprobe:" + exe + ":main.unreadable { @ = sum(args.p); }", 1, "args.p", "args.p of main.unreadable has type main.point, a struct passed by value, which programs cannot read; pass a pointer, or integers and strings"},
		{"slice", "uprobe:" + exe + ":main.unreadable { @ = sum(args.items); }", 1, "args.items", "args.items of main.unreadable has type []string, a slice, which programs cannot read; they read integers, bools, pointers and strings"},
		{"interface", "BEGIN { }\nuprobe:" + exe + ":main.unreadable { @[args.err] = count(); }", 2, "args.err", "args.err of main.unreadable has type error, an interface, which programs cannot read; they read integers, bools, pointers and strings"},
		{"retval of a string", "uretprobe:" + exe + ":main.unreadable { @ = sum(retval); }", 1, "retval", "retval: retval is a Go function's first result when it is an integer; that of main.unreadable has type string: read it as args.r0"},
		{"field of a string", "uprobe:" + exe + ":main.handle { @ = sum(args.path.len); }", 1, "args.path", `args.path.len of main.handle: field "path.len": path is a string, not a pointer to a struct`},
		{"no such field", "uprobe:" + exe + ":main.handle { @ = sum(args.s->nope); }", 1, "args.s", `args.s.nope of main.handle: field "s.nope": main.server has no field nope`},
		{"field of no parameter", "uprobe:" + exe + ":main.handle { @ = sum(args.x.y); }", 1, "args.x", "has no argument x.y; it has path, n, code, ok, s"},
		{"parameter at a return", "uretprobe:" + exe + ":main.handle { @ = sum(args.n); }", 1, "args.n", "has no argument n; it has status, msg"},
		{"goid of C", "uprobe:libc:malloc { @[goid] = count(); }", 1, "goid", "goid is the goroutine id of a Go function's probe; uprobe:libc:malloc is not one"},
		{"goid in BEGIN", "BEGIN { @ = goid; }", 1, "goid", "goid is the goroutine id of a Go function's probe; BEGIN is not one"},
		{"no DWARF", "uprobe:" + noDWARF + ":main.handle { @ = sum(args.n); }", 1, "args.n", "has no DWARF (built with -ldflags=-w or stripped), so the names and places of main.handle's parameters are unknown"},
		{"goid without DWARF", "uprobe:" + noDWARF + ":main.handle { @[goid] = count(); }", 1, "goid", "does not say where runtime.g keeps the goroutine id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := trace.Compile("t.bt", tt.src, nil)
			var ce *trace.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile: %v, want a CompileError", err)
			}
			col := 1 + strings.Index(strings.Split(tt.src, "\n")[tt.line-1], tt.at)
			if ce.Line != tt.line || ce.Col != col || !strings.Contains(ce.Msg, tt.msg) {
				t.Errorf("error %v\nwant t.bt:%d:%d: …%s", err, tt.line, col, tt.msg)
			}
		})
	}
	// Assembly functions of the stack-based ABI0 (".abi0" in .symtab)
	// are skipped with a warning: no register holds their goroutine.
	var warnings []string
	_, err := trace.Compile("t.bt", "uprobe:"+exe+":*.abi0 { @ = count(); }", &trace.CompileOptions{Warn: func(err error) { warnings = append(warnings, err.Error()) }})
	var ce *trace.CompileError
	if !errors.As(err, &ce) || !strings.HasSuffix(ce.Msg, "matches nothing") || len(warnings) == 0 ||
		!strings.Contains(warnings[0], "is an assembly function (ABI0): not traced") {
		t.Errorf("*.abi0: %v, warnings %q; want matches nothing and warnings", err, warnings)
	}
	// What a binary without DWARF still provides: counting its calls.
	if _, err := trace.Compile("t.bt", "uprobe:"+noDWARF+":main.handle { @ = count(); }", nil); err != nil {
		t.Errorf("counting calls without DWARF: %v", err)
	}
}
