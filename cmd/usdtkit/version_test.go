package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	tests := []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"module version", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"revision", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "b26113a"}, {Key: "vcs.modified", Value: "false"}}}, "b26113a"},
		{"modified", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "b26113a"}, {Key: "vcs.modified", Value: "true"}}}, "b26113a+modified"},
		{"nothing", debug.BuildInfo{}, "(devel)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if have := versionOf(&tt.info); have != tt.want {
				t.Errorf("versionOf = %q, want %q", have, tt.want)
			}
		})
	}
}

// TestVersionFlag checks that usdtkit --version prints one line with the
// version and exits 0.
func TestVersionFlag(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--version"}, &out, &errb)
	if want := "usdtkit " + version() + "\n"; code != 0 || out.String() != want || errb.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0, %q", code, out.String(), errb.String(), want)
	}
}

// TestTraceHelpProbes: trace --help names every kind of probe a program
// may use.
func TestTraceHelpProbes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"trace", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"usdt:PATH:PROVIDER:NAME", "uprobe:PATH:FUNC", "uretprobe:PATH:FUNC", "BEGIN", "END", "interval:s:N", "profile:hz:N", "profile:s|ms|us:N"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("trace --help names no %s", want)
		}
	}
}
