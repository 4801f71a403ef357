package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// weirdSource defines a function whose symbol is "we", an invalid UTF-8
// byte, "ird" and an ESC, and calls it once per line read.
const weirdSource = `#include <stdio.h>
__attribute__((noinline)) int weird(int x) __asm__("\"we\x80ird\x1b\"");
__attribute__((noinline)) int weird(int x) { return x + 1; }
int main(void) {
	char l[8];
	printf("READY\n");
	fflush(stdout);
	while (fgets(l, sizeof l, stdin)) {
		printf("%d\nDONE\n", weird(1));
		fflush(stdout);
	}
	return 0;
}
`

// TestNamesEscaped checks that a name with an invalid UTF-8 byte and a
// control character is printed escaped, the same in text and JSON, that
// the printed name selects the function again, and that a trace of it
// prints the escaped name and no raw control character.
func TestNamesEscaped(t *testing.T) {
	gcc := testutil.RequireTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "weird.c")
	if err := os.WriteFile(src, []byte(weirdSource), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "weird")
	if out, err := exec.Command(gcc, "-O0", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	const escaped = `we\x80ird\x1b`
	list := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"list"}, args...), &out, &errb); code != 0 {
			t.Fatalf("list %q: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	if have, want := list("uprobe:"+bin+":we*"), bin+" "+escaped+"\n"; have != want {
		t.Errorf("list text %q, want %q", have, want)
	}
	var sym struct{ Name string }
	if err := json.Unmarshal([]byte(list("-o", "json", "uprobe:"+bin+":we*")), &sym); err != nil || sym.Name != escaped {
		t.Errorf("list JSON name %q (%v), want %q", sym.Name, err, escaped)
	}
	// The name as printed selects the function.
	if have, want := list("uprobe:"+bin+":"+sym.Name), bin+" "+escaped+"\n"; have != want {
		t.Errorf("list by the printed name %q, want %q", have, want)
	}

	testutil.RequireBPF(t)
	target := testutil.StartCmd(t, exec.Command(bin))
	target.Expect(t, "READY")
	for _, output := range []string{"text", "json"} {
		t.Run(output, func(t *testing.T) {
			tr := startTrace(t, "trace", "-p", strconv.Itoa(target.PID()), "-o", output, "uprobe:"+bin+":"+escaped)
			target.Send(t, "go")
			target.Until(t, "DONE")
			tr.stop()
			code, out, errs := tr.wait(t)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if strings.ContainsAny(out, "\x1b\x80") {
				t.Errorf("output has raw control or invalid bytes: %q", out)
			}
			want := "uprobe:" + escaped
			if output == "json" {
				evs := parseEvents(t, out)
				if len(evs) != 1 || evs[0].Probe != want {
					t.Errorf("events %+v, want one of probe %q", evs, want)
				}
			} else if n := strings.Count(out, " "+want+" "); n != 1 {
				t.Errorf("text output %q has %q %d times, want once", out, want, n)
			}
		})
	}
}
