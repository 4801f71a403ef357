package main

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestTraceGoDeferredResults traces the RETs of functions whose named
// results a deferred closure assigns (Go's DWARF lists such a result
// twice) and checks that each result is printed once, with the value the
// program returned.
func TestTraceGoDeferredResults(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildGo(t, "testdata/godefer")
	g := startGoTarget(t, bin)
	pid := strconv.Itoa(g.PID())
	tr := startTrace(t, "trace", "-p", pid, "-o", "json", "uretprobe::main.Deferred", "uretprobe::main.Tail")
	calls := g.calls(t)
	g.Stdin().Close()
	code, stdout, stderr := tr.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(calls) != 3 || len(lines) != len(calls) {
		t.Fatalf("%d events for %d calls (want 3):\n%s\n%s", len(lines), len(calls), stdout, stderr)
	}
	for i, line := range lines {
		if dup := duplicateKey(line); dup != "" {
			t.Errorf("event %d: key %q twice in %s", i, dup, line)
		}
		have, want := decodeJSON(t, line), decodeJSON(t, calls[i])
		if have["probe"] != "uretprobe:"+want["func"].(string) {
			t.Errorf("event %d: probe %v, want the return of %v", i, have["probe"], want["func"])
			continue
		}
		hr, _ := have["results"].(map[string]any)
		for name, w := range want["results"].(map[string]any) {
			if h := normalize(hr[name], false); !reflect.DeepEqual(h, w) {
				t.Errorf("event %d %v: result %s = %v, want %v (event %s)", i, want["func"], name, h, w, line)
			}
		}
		if len(hr) != len(want["results"].(map[string]any)) {
			t.Errorf("event %d: results %v, want %v", i, hr, want["results"])
		}
	}
}

// duplicateKey returns a key that some object of the JSON text s has twice,
// or "".
func duplicateKey(s string) string {
	d := json.NewDecoder(strings.NewReader(s))
	// Each open object's keys; an array is nil. inKey says whether the
	// next string token of an object is a key.
	var stack []map[string]bool
	var inKey []bool
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return ""
		}
		if n := len(stack); n > 0 && stack[n-1] != nil && inKey[n-1] {
			if k, ok := tok.(string); ok {
				if stack[n-1][k] {
					return k
				}
				stack[n-1][k] = true
				inKey[n-1] = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack, inKey = append(stack, map[string]bool{}), append(inKey, true)
			continue
		case json.Delim('['):
			stack, inKey = append(stack, nil), append(inKey, false)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack, inKey = stack[:len(stack)-1], inKey[:len(inKey)-1]
		}
		// A value ended: the next token of an object is a key.
		if n := len(stack); n > 0 && stack[n-1] != nil {
			inKey[n-1] = true
		}
	}
}
