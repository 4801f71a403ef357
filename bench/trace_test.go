package bench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
)

// semaphore reads a 2-byte USDT semaphore in another process.
type semaphore struct {
	mem  *os.File
	addr int64
}

func (s *semaphore) value(tb testing.TB) uint16 {
	var b [2]byte
	if _, err := s.mem.ReadAt(b[:], s.addr); err != nil {
		tb.Fatalf("read semaphore: %v", err)
	}
	return binary.NativeEndian.Uint16(b[:])
}

// waitFor polls until the semaphore is (or is not) raised; it fails the
// benchmark after 10 s.
func (s *semaphore) waitFor(tb testing.TB, raised bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for (s.value(tb) != 0) != raised {
		if time.Now().After(deadline) {
			tb.Fatalf("semaphore raised=%v not reached in 10 s", !raised)
		}
	}
}

// BenchmarkStartToAttached times, per tool and in rotation, how long it
// takes from starting the tracer to the moment the traced probe is live in
// the target: the moment the kernel raises python:line's semaphore in a
// running python3.11, read from /proc/PID/mem. Tools: bareattach (the least
// a cilium/ebpf program does: one empty program, one uprobe_multi link),
// usdtkit trace -p, and bpftrace -p.
func BenchmarkStartToAttached(b *testing.B) {
	testutil.RequireBPF(b)
	testutil.DefaultSIGINTForChildren()
	testutil.RequireTracefs(b)
	py := exec.Command(testutil.RequireFile(b, testutil.Python311), "-c", "import sys; sys.stdin.read()")
	stdin, err := py.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := py.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); py.Process.Kill(); py.Wait() })
	pid := strconv.Itoa(py.Process.Pid)

	sel, _ := sdt.ParseSelector("python:line")
	probes, err := sdt.List(&sdt.ListOptions{Paths: []string{testutil.Python311}, Selectors: []sdt.Selector{sel}})
	if err != nil || len(probes) != 1 {
		b.Fatalf("python:line: %v, %d probes", err, len(probes))
	}
	loc := probes[0].Locations[0]
	mem, err := os.Open("/proc/" + pid + "/mem")
	if err != nil {
		b.Fatal(err)
	}
	defer mem.Close()
	// python3.11 is a non-PIE executable: its addresses are its run-time ones.
	sem := &semaphore{mem: mem, addr: int64(loc.Semaphore)}
	if sem.value(b) != 0 {
		b.Fatal("python:line's semaphore is raised before any tracer runs")
	}

	tools := []tool{
		{"bare", []string{buildCmd(b, "bench/bareattach"), testutil.Python311,
			strconv.FormatUint(loc.Offset, 10), strconv.FormatUint(loc.SemaphoreOffset, 10), pid}},
		{"usdtkit", []string{usdtkitBinary(b), "trace", "-p", pid, "usdt:" + testutil.Python311 + ":python:line"}},
		{"bpftrace", []string{testutil.RequireTool(b, "bpftrace"), "-p", pid, "-e", "usdt:" + testutil.Python311 + ":python:line {}"}},
	}
	total := make([]time.Duration, len(tools))
	for b.Loop() {
		for i, tl := range tools {
			cmd := exec.Command(tl.argv[0], tl.argv[1:]...)
			cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
			start := time.Now()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			sem.waitFor(b, true)
			total[i] += time.Since(start)
			stop(cmd)
			sem.waitFor(b, false)
		}
	}
	reportSideBySide(b, tools, total, "usdtkit")
}

// stop interrupts a tracer as Ctrl-C would and waits for it; one that is
// still busy attaching when the signal comes (bpftrace installs its handler
// only then, and a job started with SIGINT ignored inherits that) is killed
// after 5 s.
func stop(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// reportSideBySide reports each tool's mean time in ms and its ratio to
// the reference tool's.
func reportSideBySide(b *testing.B, tools []tool, total []time.Duration, ref string) {
	var refTotal time.Duration
	for i, tl := range tools {
		if tl.name == ref {
			refTotal = total[i]
		}
	}
	for i, tl := range tools {
		b.ReportMetric(float64(total[i].Microseconds())/1000/float64(b.N), tl.name+"-ms")
		if tl.name != ref && refTotal > 0 {
			b.ReportMetric(float64(total[i])/float64(refTotal), tl.name+"/"+ref)
		}
	}
}

// manySites writes and builds a C program with n USDT sites of one probe.
func manySites(tb testing.TB, n int) string {
	tb.Helper()
	gcc := testutil.RequireTool(tb, "gcc")
	var src strings.Builder
	src.WriteString("#include <sys/sdt.h>\nvolatile int x;\nint main(void) {\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&src, "\tSTAP_PROBE1(bench, site, x + %d);\n", i)
	}
	src.WriteString("\treturn 0;\n}\n")
	dir := tb.TempDir()
	c := filepath.Join(dir, "sites.c")
	if err := os.WriteFile(c, []byte(src.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, "sites")
	if out, err := exec.Command(gcc, "-O0", "-o", bin, c).CombinedOutput(); err != nil {
		tb.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkAttachDetach1000 starts a trace of 1000 sites of one probe
// (@ = count(), compiled once) and closes it, through package trace: one
// uprobe_multi link (/multi), and classic links (/classic, on 10 sites
// because each costs ~100 ms to close here; its metric ms/1000sites
// extrapolates).
func BenchmarkAttachDetach1000(b *testing.B) {
	testutil.RequireBPF(b)
	for _, v := range []struct {
		name    string
		sites   int
		classic bool
	}{{"multi", 1000, false}, {"classic", 10, true}} {
		b.Run(v.name, func(b *testing.B) {
			bin := manySites(b, v.sites)
			prog, err := trace.Compile("count", "usdt:"+bin+":bench:site { @ = count(); }", nil)
			if err != nil {
				b.Fatal(err)
			}
			if prog.Sites() != v.sites {
				b.Fatalf("%d sites, want %d", prog.Sites(), v.sites)
			}
			opts := &trace.Options{Classic: v.classic, Stdout: io.Discard}
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				t, err := trace.Start(prog, opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := t.Close(); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N)*1000/float64(v.sites), "ms/1000sites")
		})
	}
}

var reLoop = regexp.MustCompile(`^loop (\d+)$`)
var reLost = regexp.MustCompile(`(\d+) events, (\d+) lost\.`)

// BenchmarkEventDelivery drives tracee.c's "bench" probe (2 integer
// arguments, 16 bytes) in a loop of hits and reports the cost per hit,
// measured by the tracee's own clock, with no tracer, with usdtkit printing
// every event as JSON, with usdtkit counting in the kernel, and with
// bpftrace printing (printf) and counting (count()) — side by side in one
// run, with usdtkit's cost as a ratio to bpftrace's for the same job.
// usdtkit's lost events are reported too (usdtkit-lost-events, which must
// be 0).
func BenchmarkEventDelivery(b *testing.B) {
	testutil.RequireBPF(b)
	testutil.RequireTracefs(b)
	testutil.DefaultSIGINTForChildren()
	// bpftrace refuses tracee.c's "wide" probe (and the whole binary).
	bin := testutil.BuildTracee(b, "-O2", "-DTRACEE_NO_WIDE")
	tc := testutil.StartTracee(b, bin)
	pid := strconv.Itoa(tc.PID())
	bt := testutil.RequireTool(b, "bpftrace")
	uk := usdtkitBinary(b)
	const hits = 20000
	// Each tracer says when it is attached: usdtkit with -v on stderr
	// ("Tracing ..."), bpftrace from BEGIN, which runs once every probe is attached.
	begin := `BEGIN { printf("ready\n"); } `
	tools := []struct {
		tool
		ready string
	}{
		{tool{"none", nil}, ""},
		{tool{"usdtkit-json", []string{uk, "trace", "-q", "-v", "-p", pid, "-o", "json", "usdt::tracee:bench"}}, "Tracing "},
		{tool{"usdtkit-count", []string{uk, "trace", "-q", "-v", "-p", pid, "--count", "usdt::tracee:bench"}}, "Tracing "},
		{tool{"bpftrace-printf", []string{bt, "-p", pid, "-e", begin + "usdt:" + bin + `:tracee:bench { printf("%d %d\n", arg0, arg1); }`}}, "ready"},
		{tool{"bpftrace-count", []string{bt, "-p", pid, "-e", begin + "usdt:" + bin + ":tracee:bench { @ = count(); }"}}, "ready"},
	}
	total := make([]time.Duration, len(tools))
	var lost uint64
	for b.Loop() {
		for i, tl := range tools {
			var cmd *exec.Cmd
			var lines chan string
			if tl.argv != nil {
				cmd = exec.Command(tl.argv[0], tl.argv[1:]...)
				out, err := cmd.StdoutPipe()
				if err != nil {
					b.Fatal(err)
				}
				errOut, err := cmd.StderrPipe()
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				lines = make(chan string, 1024)
				go scanLines(lines, out, errOut)
				if !waitLine(lines, tl.ready) {
					b.Fatalf("%s did not attach", tl.name)
				}
			}
			m := reLoop.FindStringSubmatch(tc.Do(b, "loop "+strconv.Itoa(hits))[0])
			ns, _ := strconv.ParseInt(m[1], 10, 64)
			total[i] += time.Duration(ns)
			if cmd != nil {
				stop(cmd)
				for l := range lines {
					if m := reLost.FindStringSubmatch(l); m != nil {
						n, _ := strconv.ParseUint(m[2], 10, 64)
						lost += n
					}
				}
			}
		}
	}
	for i, tl := range tools {
		b.ReportMetric(float64(total[i].Nanoseconds())/float64(b.N*hits), tl.name+"-ns/hit")
	}
	// tools: none, usdtkit-json, usdtkit-count, bpftrace-printf, bpftrace-count.
	b.ReportMetric(float64(total[1])/float64(total[3]), "usdtkit-json/bpftrace-printf")
	b.ReportMetric(float64(total[2])/float64(total[4]), "usdtkit-count/bpftrace-count")
	b.ReportMetric(float64(lost), "usdtkit-lost-events")
}

// scanLines sends the lines of every reader to c, which it closes when all
// are at EOF. Lines past c's buffer are dropped while nobody reads
// (bpftrace's printf output).
func scanLines(c chan<- string, readers ...io.Reader) {
	var wg sync.WaitGroup
	for _, r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				select {
				case c <- sc.Text():
				default:
				}
			}
		}()
	}
	wg.Wait()
	close(c)
}

// waitLine reads lines until one starts with prefix; false at EOF or after
// 10 s.
func waitLine(lines <-chan string, prefix string) bool {
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return false
			}
			if strings.HasPrefix(l, prefix) {
				return true
			}
		case <-timeout:
			return false
		}
	}
}
