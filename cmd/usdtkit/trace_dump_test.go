package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestTraceDump: --dump prints one stage on stdout and traces nothing;
// an unknown stage is refused before anything is compiled.
func TestTraceDump(t *testing.T) {
	for stage, want := range map[string]string{
		"ast":   "\t@[comm] = count()\n",
		"types": "@[string[16]]: count()\n",
		"bpf":   "program block0 Kprobe TraceUprobeMulti\n",
	} {
		out := usdtkit(t, "trace", "--dump", stage, "-e", "uprobe:libc:malloc { @[comm] = count() }")
		if !strings.Contains(out, want) {
			t.Errorf("--dump %s: no %q in\n%s", stage, want, out)
		}
	}
	// The flags are programs too.
	if out := usdtkit(t, "trace", "--dump", "ast", "--count", "uprobe:libc:malloc"); !strings.Contains(out, "count()") {
		t.Errorf("--dump ast --count: %q, want the program the flags make", out)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"trace", "--dump", "tokens", "-e", "BEGIN { exit(); }"}, &out, &errb); code == 0 || !strings.Contains(errb.String(), `--dump "tokens": want one of [ast types bpf]`) {
		t.Errorf("--dump tokens: exit %d, stderr %q", code, errb.String())
	}
}
