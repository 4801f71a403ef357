package gen

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
)

// enabledCaller prints its probe's _ENABLED() for each line it reads.
const enabledCaller = `#include <stdio.h>
#include "hdr.h"
int main(void) {
	char line[16];
	puts("ready");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		int on = HDR_PING_ENABLED();
		if (on)
			HDR_PING(1);
		printf("%d\n", on ? 1 : 0);
		fflush(stdout);
	}
	return 0;
}
`

// TestHeaderEnabledSeesTracer links a C program against a generated .so
// the way the header says to, and checks that _ENABLED() turns true while
// a tracer is attached. A plain extern declaration of the semaphore gives
// the executable a copy relocation: it would read its own copy while the
// kernel counts in the .so's.
func TestHeaderEnabledSeesTracer(t *testing.T) {
	testutil.RequireBPF(t)
	gcc := testutil.RequireTool(t, "gcc")
	spec := &dynsdt.ProviderSpec{Name: "hdr", Probes: []dynsdt.ProbeSpec{{Name: "ping", Args: []dynsdt.ArgType{dynsdt.Int32}}}}
	dir := t.TempDir()
	files, err := Files(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "caller.c"), []byte(enabledCaller), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{{"-O2"}, {"-O2", "-no-pie"}, {"-O2", "-fPIE", "-pie"}} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "caller")
			args := append(append([]string{}, flags...), "-o", bin, "caller.c", dynsdt.SOName("hdr"), "-Wl,-rpath,"+dir)
			cmd := exec.Command(gcc, args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("gcc: %v\n%s", err, out)
			}
			c := testutil.StartCmd(t, exec.Command(bin))
			c.Line(t)
			ask := func() string {
				c.Send(t, "?")
				return c.Line(t)
			}
			if have := ask(); have != "0" {
				t.Fatalf("before attach: ENABLED() = %s, want 0", have)
			}
			probes, err := sdt.List(&sdt.ListOptions{PID: c.PID(), Selectors: []sdt.Selector{{Provider: "hdr"}}})
			if err != nil || len(probes) != 1 {
				t.Fatalf("list: %v, %d probes", err, len(probes))
			}
			prog, err := trace.Compile("count", "usdt::hdr:* { @ = count(); }", &trace.CompileOptions{PID: c.PID()})
			if err != nil {
				t.Fatal(err)
			}
			tr, err := trace.Start(prog, &trace.Options{PID: c.PID(), Stdout: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if have := ask(); have != "1" {
				t.Errorf("attached: ENABLED() = %s, want 1", have)
			}
			tr.Close()
			if have := ask(); have != "0" {
				t.Errorf("after detach: ENABLED() = %s, want 0", have)
			}
		})
	}
}
