package trace_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// TestRun runs a BEGIN program that ends itself, in text and JSON; the
// expectations are what bpftrace 0.17 prints for it (without its
// attached_probes line).
func TestRun(t *testing.T) {
	testutil.RequireBPF(t)
	src := `BEGIN { printf("hi %d %s\n", 1 + 2, "x"); @x = 5; @h[1, "a"] = count(); exit(); } END { printf("end\n"); }`
	prog, err := trace.Compile("t.bt", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		output trace.Output
		want   string
	}{
		{"text", trace.OutputText, "hi 3 x\nend\n\n\n@h[1, a]: 1\n@x: 5\n"},
		{"json", trace.OutputJSON, `{"type": "printf", "data": "hi 3 x\n"}
{"type": "printf", "data": "end\n"}


{"type": "map", "data": {"@h": {"1,a": 1}}}
{"type": "map", "data": {"@x": 5}}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tr, err := trace.Start(prog, &trace.Options{Output: tt.output, Stdout: &out})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			if err := tr.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("have\n%s\nwant\n%s", out.String(), tt.want)
			}
			if err := tr.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := tr.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}
