package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
)

// server is a running go-server started by startServer.
type server struct {
	cmd   *exec.Cmd
	url   string // http://127.0.0.1:PORT
	pid   int
	probe string // the probes' file
}

// startServer builds the server, starts it on a free loopback port with
// args and waits for its ready line. The process is killed at cleanup if
// the test has not stopped it.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "go-server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the ready line: %v", err)
	}
	s := &server{cmd: cmd}
	var host string
	if _, err := fmt.Sscanf(line, "listening on http://%s pid %d probes %s", &host, &s.pid, &s.probe); err != nil {
		t.Fatalf("ready line %q: %v", line, err)
	}
	if s.pid != cmd.Process.Pid {
		t.Fatalf("ready line: have pid %d, want %d", s.pid, cmd.Process.Pid)
	}
	s.url = "http://" + host
	return s
}

// tracer is a trace of the server's probes running in the background:
// its events come on events.
type tracer struct {
	t      *trace.Tracer
	events chan *trace.Event
	cancel context.CancelFunc
	done   chan error
}

// Close ends the trace and checks that it lost no event.
func (tr *tracer) Close(t *testing.T) {
	t.Helper()
	if tr.t == nil {
		return
	}
	tr.cancel()
	if err := <-tr.done; err != nil {
		t.Errorf("run: %v", err)
	}
	if lost, _, err := tr.t.Lost(); err != nil || lost != 0 {
		t.Errorf("lost %d events (%v)", lost, err)
	}
	tr.t.Close()
	tr.t = nil
}

// trace lists the server's probes by PID and attaches to them.
func (s *server) trace(t *testing.T) *tracer {
	t.Helper()
	sel, err := sdt.ParseSelector("server:*")
	if err != nil {
		t.Fatal(err)
	}
	probes, err := sdt.List(&sdt.ListOptions{PID: s.pid, Selectors: []sdt.Selector{sel}})
	if err != nil {
		t.Fatalf("listing pid %d: %v", s.pid, err)
	}
	var names []string
	for _, p := range probes {
		names = append(names, p.Provider+":"+p.Name)
		if len(p.Locations) != 1 {
			t.Errorf("%s: have %d locations, want 1", p.Name, len(p.Locations))
		}
	}
	slices.Sort(names)
	if want := []string{"server:request__done", "server:request__start"}; !slices.Equal(names, want) {
		t.Fatalf("probes of pid %d: have %q, want %q", s.pid, names, want)
	}
	// Both probes take the path as argument 0.
	prog, err := trace.CompileEvents([]trace.EventProbe{{Probe: "usdt::server:*", Strings: []int{0}}}, &trace.CompileOptions{PID: s.pid})
	if err != nil {
		t.Fatal(err)
	}
	tr := &tracer{events: make(chan *trace.Event, 1024), done: make(chan error, 1)}
	tr.t, err = trace.Start(prog, &trace.Options{PID: s.pid, OnEvent: func(ev *trace.Event) error {
		tr.events <- ev.Clone()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	var ctx context.Context
	ctx, tr.cancel = context.WithCancel(context.Background())
	go func() { tr.done <- tr.t.Run(ctx) }()
	t.Cleanup(func() { tr.Close(t) })
	return tr
}

// get requests path and checks the response status.
func (s *server) get(t *testing.T, path string, status int) {
	t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != status {
		t.Errorf("GET %s: have status %d, want %d", path, resp.StatusCode, status)
	}
}

// stop sends SIGTERM, expects a clean exit and checks that the probes'
// file is gone.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(s.probe); err != nil {
		t.Errorf("probes' file while running: %v", err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("server after SIGTERM: %v", err)
	}
	if _, err := os.Stat(s.probe); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("probes' file %s after exit: have %v, want it gone", s.probe, err)
	}
}

// request is what the probes say about one request.
type request struct {
	path   string
	id     int64
	status int
}

// events reads n events and formats them as "start PATH ID" and
// "done PATH ID STATUS", checking that nanos is positive.
func events(t *testing.T, tr *tracer, n int) []string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	var have []string
	for len(have) < n {
		var ev *trace.Event
		select {
		case ev = <-tr.events:
		case <-timeout:
			t.Fatalf("after %d of %d events %q: no more in 10s", len(have), n, have)
		}
		switch ev.Name {
		case "server:request__start":
			have = append(have, fmt.Sprintf("start %s %d", ev.Args[0].Str, ev.Args[1].Int()))
		case "server:request__done":
			have = append(have, fmt.Sprintf("done %s %d %d", ev.Args[0].Str, ev.Args[1].Int(), int32(ev.Args[2].Raw)))
			if nanos := ev.Args[3].Int(); nanos <= 0 {
				t.Errorf("%s: have nanos %d, want > 0", ev.Name, nanos)
			}
		default:
			t.Fatalf("event of unknown probe %q", ev.Name)
		}
	}
	return have
}

func want(reqs []request) []string {
	var w []string
	for _, r := range reqs {
		w = append(w, fmt.Sprintf("start %s %d", r.path, r.id), fmt.Sprintf("done %s %d %d", r.path, r.id, r.status))
	}
	return w
}

// TestTrace starts the server, traces it by PID and checks the events of
// requests the test makes, one at a time.
func TestTrace(t *testing.T) {
	testutil.RequireBPF(t)
	s := startServer(t)
	tr := s.trace(t)
	reqs := []request{
		{"/hello/gopher", 1, 200},
		{"/missing", 2, 404},
		{"/", 3, 200},
		{"/hello/" + strings.Repeat("x", 40), 4, 200},
	}
	for _, r := range reqs {
		s.get(t, r.path, r.status)
	}
	if have, want := events(t, tr, 2*len(reqs)), want(reqs); !slices.Equal(have, want) {
		t.Errorf("events:\nhave %q\nwant %q", have, want)
	}
	tr.Close(t)
	s.stop(t)
}

// TestSelfRequests checks -requests with -wait-trace: the server sends its
// requests once the tracer has attached, and nothing is missed.
func TestSelfRequests(t *testing.T) {
	testutil.RequireBPF(t)
	s := startServer(t, "-requests", "4", "-interval", "0", "-wait-trace")
	tr := s.trace(t)
	reqs := []request{{"/", 1, 200}, {"/hello/gopher", 2, 200}, {"/missing", 3, 404}, {"/", 4, 200}}
	if have, want := events(t, tr, 2*len(reqs)), want(reqs); !slices.Equal(have, want) {
		t.Errorf("events:\nhave %q\nwant %q", have, want)
	}
	// The server keeps serving after its own requests.
	s.get(t, "/hello/again", 200)
	if have, want := events(t, tr, 2), want([]request{{"/hello/again", 5, 200}}); !slices.Equal(have, want) {
		t.Errorf("events:\nhave %q\nwant %q", have, want)
	}
	tr.Close(t)
	s.stop(t)
}

// TestLoopback checks which listening addresses -requests accepts.
func TestLoopback(t *testing.T) {
	tests := []struct {
		name, addr, want string
		err              bool
	}{
		{"ipv4 loopback", "127.0.0.1:8080", "127.0.0.1:8080", false},
		{"other loopback", "127.0.0.2:80", "127.0.0.2:80", false},
		{"ipv6 loopback", "[::1]:8080", "[::1]:8080", false},
		{"ipv4 any", "0.0.0.0:8080", "127.0.0.1:8080", false},
		{"ipv6 any", "[::]:8080", "[::1]:8080", false},
		{"public", "192.0.2.1:8080", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, err := net.ResolveTCPAddr("tcp", tt.addr)
			if err != nil {
				t.Fatal(err)
			}
			have, err := loopback(addr)
			if (err != nil) != tt.err || have != tt.want {
				t.Errorf("loopback(%s): have %q, %v; want %q, error %v", tt.addr, have, err, tt.want, tt.err)
			}
		})
	}
}

func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }
