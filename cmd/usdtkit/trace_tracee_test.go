package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// bpftraceScript prints the probes of tracee.c as tracee.c prints them,
// up to arg5 (bpftrace 0.17 reads no further). BEGIN runs once every probe
// is attached (bcc raises the semaphores before attaching, so they say
// nothing), and a hit of "bench" ends it.
const bpftraceScript = `
BEGIN { printf("ready\n"); }
usdt:%[1]s:tracee:ints   { printf("ints %%lld %%lld %%lld %%lld %%lld %%lld\n", arg0, arg1, arg2, arg3, arg4, arg5); @n = count(); }
usdt:%[1]s:tracee:stack  { printf("stack %%lld %%lld %%lld\n", arg0, arg1, arg2); }
usdt:%[1]s:tracee:consts { printf("consts %%lld %%lld %%lld %%lld\n", arg0, arg1, arg2, arg3); }
usdt:%[1]s:tracee:str    { printf("str %%s %%lld\n", str(arg0), arg1); }
usdt:%[1]s:tracee:global { printf("global %%lld %%lld %%lld\n", arg0, arg1, arg2); }
usdt:%[1]s:tracee:inl    { printf("inl %%lld %%lld\n", arg0, arg1); }
usdt:%[1]s:tracee:bench  { exit(); }
`

// TestTraceTracee traces tracee.c, built at -O0, -O2 and -O2 -no-pie, by
// PID: every event's arguments must equal what the tracee printed for that
// hit, in the same order.
func TestTraceTracee(t *testing.T) {
	for _, flags := range [][]string{{"-O0"}, {"-O2"}, {"-O2", "-fno-pie", "-no-pie"}} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			tc := testutil.StartTracee(t, testutil.BuildTracee(t, flags...))
			want, have := traceRun3(t, tc)
			if !slices.Equal(have, want) {
				t.Errorf("events differ from what the tracee printed:\nhave %q\nwant %q", have, want)
			}
		})
	}
}

// TestTraceMatchesBpftrace traces tracee.c's probes with usdtkit and with
// bpftrace, one after the other on the same process: each must report what
// the tracee printed for the hits it saw (bpftrace as far as it reads: arg0
// to arg5, signed). tracee.c's "wide" probe is left out: bcc's parser, which
// bpftrace uses, rejects its "1@%bh" and with it the whole binary.
//
// The two run one after the other: attached together, bpftrace once did not
// exit after SIGINT and sat in state D until this test process ended (not
// reproduced outside the test; see the issue note).
func TestTraceMatchesBpftrace(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O2", "-DTRACEE_NO_WIDE")
	tc := testutil.StartTracee(t, bin)

	bt := startBpftrace(t, tc, bin)
	printed := tc.Do(t, "run 3")
	peer := bt.stop(t, tc)
	var wantPeer []string
	for _, line := range printed {
		f := strings.Fields(line)
		if f[0] == "str" {
			wantPeer = append(wantPeer, line)
			continue
		}
		for i := 1; i < len(f); i++ {
			if u, err := strconv.ParseUint(f[i], 10, 64); err == nil {
				f[i] = strconv.FormatInt(int64(u), 10)
			}
		}
		wantPeer = append(wantPeer, strings.Join(f[:min(len(f), 7)], " "))
	}
	if !slices.Equal(peer, wantPeer) {
		t.Errorf("bpftrace disagrees with the tracee:\nbpftrace %q\nwant     %q", peer, wantPeer)
	}

	want, have := traceRun3(t, tc)
	if !slices.Equal(have, want) {
		t.Errorf("usdtkit's events differ from what the tracee printed:\nhave %q\nwant %q", have, want)
	}
}

// traceRun3 traces the tracee with usdtkit while it runs "run 3" and quits,
// and returns what the tracee printed and the events as tracee.c prints
// them.
func traceRun3(t *testing.T, tc *testutil.Tracee) (want, have []string) {
	t.Helper()
	tr := startTrace(t, "trace", "-p", strconv.Itoa(tc.PID()), "-o", "json", "--str", "tracee:str=0", "usdt::tracee:*")
	want = tc.Do(t, "run 3")
	tc.Quit(t)
	code, out, errs := tr.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(errs, "warning") || !strings.Contains(errs, fmt.Sprintf("%d events, 0 lost.", len(want))) {
		t.Errorf("stderr %q, want no warnings and %d events, 0 lost", errs, len(want))
	}
	return want, eventTexts(t, out)
}

// eventTexts turns JSON events into tracee.c's "NAME V0 V1 ..." lines.
func eventTexts(t *testing.T, out string) []string {
	t.Helper()
	var lines []string
	for _, l := range nonEmptyLines(out) {
		dec := json.NewDecoder(strings.NewReader(l))
		dec.UseNumber()
		var ev struct {
			Probe string `json:"probe"`
			Args  []any  `json:"args"`
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("line %.200q: %v", l, err)
		}
		words := []string{strings.TrimPrefix(ev.Probe, "tracee:")}
		for _, a := range ev.Args {
			words = append(words, fmt.Sprint(a))
		}
		lines = append(lines, strings.Join(words, " "))
	}
	return lines
}

type bpftraceRun struct {
	cmd  *exec.Cmd
	out  *bufio.Scanner
	done chan []string
}

// startBpftrace runs bpftrace on the tracee and returns once every probe is
// attached.
func startBpftrace(t *testing.T, tc *testutil.Tracee, bin string) *bpftraceRun {
	t.Helper()
	testutil.RequireTracefs(t)
	testutil.DefaultSIGINTForChildren()
	cmd := exec.Command(testutil.RequireTool(t, "bpftrace"), "-p", strconv.Itoa(tc.PID()), "-e", fmt.Sprintf(bpftraceScript, bin))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("bpftrace stderr: %s", stderr.String())
		}
	})
	bt := &bpftraceRun{cmd: cmd, out: bufio.NewScanner(stdout), done: make(chan []string, 1)}
	for bt.out.Scan() && bt.out.Text() != "ready" {
	}
	if bt.out.Text() != "ready" {
		t.Fatalf("bpftrace did not start: %v", bt.out.Err())
	}
	go func() {
		var lines []string
		for bt.out.Scan() {
			if l := strings.TrimSpace(bt.out.Text()); l != "" && !strings.HasPrefix(l, "Attaching") && !strings.HasPrefix(l, "@n") {
				lines = append(lines, l)
			}
		}
		bt.done <- lines
	}()
	return bt
}

// stop ends bpftrace through its script — one hit of tracee.c's "bench"
// probe calls exit() — rather than by a signal: started by a test process,
// bpftrace 0.17 caught SIGINT here and then never exited. It returns the
// lines bpftrace printed, less its @n map.
func (bt *bpftraceRun) stop(t *testing.T, tc *testutil.Tracee) []string {
	t.Helper()
	tc.Do(t, "loop 1")
	select {
	case lines := <-bt.done:
		bt.cmd.Wait()
		return lines
	case <-time.After(20 * time.Second):
		bt.cmd.Process.Kill()
		t.Fatal("bpftrace did not exit within 20 s of its exit()")
		return nil
	}
}
