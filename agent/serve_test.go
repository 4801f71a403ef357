package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// bulkCollector exports n series with long label values, and says on
// collects each time it is asked.
type bulkCollector struct {
	desc     *prometheus.Desc
	n        int
	pad      string
	collects chan struct{}
}

func newBulkCollector(n, labelSize int) *bulkCollector {
	return &bulkCollector{
		pad:      strings.Repeat("x", labelSize),
		desc:     prometheus.NewDesc("usdtkit_test_bulk", "test series", []string{"key"}, nil),
		n:        n,
		collects: make(chan struct{}, 100),
	}
}

func (c *bulkCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *bulkCollector) Collect(ch chan<- prometheus.Metric) {
	c.collects <- struct{}{}
	for i := range c.n {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(i), c.pad+strconv.Itoa(i))
	}
}

// acceptSignal signals on accepted each connection ln accepts.
type acceptSignal struct {
	net.Listener
	accepted chan struct{}
}

func (l *acceptSignal) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted <- struct{}{}
	}
	return c, err
}

// startServer serves h within l on a loopback port and returns its
// address and the server; both end in t.Cleanup. connState, when not
// nil, is the server's ConnState, set before it serves (setting it later
// races with the server).
func startServer(t *testing.T, h http.Handler, l HTTPLimits, accepted chan struct{}, connState func(net.Conn, http.ConnState)) (string, *http.Server) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv, lim := newServer(h, &acceptSignal{ln, accepted}, l)
	srv.ConnState = connState
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lim) }()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return addr, srv
}

// serverSockets counts this process's descriptors of TCP sockets whose
// local port is port: the listener and the connections it accepted.
func serverSockets(t *testing.T, port int) int {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 {
				continue
			}
			_, hexPort, _ := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && int(p) == port {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && inodes[target] {
			n++
		}
	}
	return n
}

// rssKiB is this process's resident set size.
func rssKiB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func scrape(t *testing.T, addr string) int {
	t.Helper()
	c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return resp.StatusCode
}

// TestServeIdleConnections opens idleConns connections that send
// nothing: the server holds at most MaxConnections of them (the others
// wait in the kernel's backlog, holding none of its descriptors), and
// serves again once they are gone.
func TestServeIdleConnections(t *testing.T) {
	const idleConns = 5000
	l := HTTPLimits{MaxConnections: 64, ReadTimeout: time.Minute}.withDefaults()
	accepted := make(chan struct{}, idleConns+10)
	addr, _ := startServer(t, metricsHandler(newBulkCollector(10, 10), l), l, accepted, nil)
	_, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	rss0 := rssKiB(t)

	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	var wg sync.WaitGroup
	// Past the backlog the kernel drops the SYN and the dial waits for
	// its retry: a goroutine whose dial fails stops there.
	d := net.Dialer{Timeout: 500 * time.Millisecond}
	for range 50 {
		wg.Go(func() {
			for range idleConns / 50 {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(conns) < l.MaxConnections {
		t.Fatalf("have %d connections open, want at least %d", len(conns), l.MaxConnections)
	}
	for range l.MaxConnections {
		<-accepted
	}
	if have, want := serverSockets(t, port), l.MaxConnections+1; have != want {
		t.Errorf("have %d server sockets with %d connections open, want %d (MaxConnections and the listener)", have, len(conns), want)
	}
	select {
	case <-accepted:
		t.Errorf("accepted connection %d past MaxConnections %d", l.MaxConnections+1, l.MaxConnections)
	default:
	}
	t.Logf("%d idle connections open: RSS %d KiB, was %d KiB", len(conns), rssKiB(t), rss0)

	for _, c := range conns {
		c.Close()
	}
	conns = nil
	if have := scrape(t, addr); have != http.StatusOK {
		t.Errorf("scrape after the idle connections closed: have status %d, want 200", have)
	}
}

// TestServeStalledScrapers sends scrapes that never read their
// response: at most MaxRequestsInFlight are gathered (each holds its
// series), the others answered 503, and WriteTimeout frees the stalled.
func TestServeStalledScrapers(t *testing.T) {
	const stalled = 20
	l := HTTPLimits{MaxRequestsInFlight: 4, WriteTimeout: 10 * time.Second, IdleTimeout: time.Hour}.withDefaults()
	bulk := newBulkCollector(2000, 2000)
	closed := make(chan struct{}, 100)
	addr, _ := startServer(t, metricsHandler(bulk, l), l, make(chan struct{}, 1000), func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	})

	if have := scrape(t, addr); have != http.StatusOK {
		t.Fatalf("first scrape: have status %d, want 200", have)
	}
	<-bulk.collects
	<-closed
	rss0 := rssKiB(t)

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		// A small receive buffer: the server's writes block at once.
		return rc.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}
	var conns []net.Conn
	for range stalled {
		c, err := d.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	for _, c := range conns {
		if _, err := fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: agent\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	status := map[string]int{}
	for _, c := range conns {
		line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		status[strings.TrimSpace(line)]++
	}
	rss := rssKiB(t)
	want := map[string]int{"HTTP/1.1 200 OK": l.MaxRequestsInFlight, "HTTP/1.1 503 Service Unavailable": stalled - l.MaxRequestsInFlight}
	if fmt.Sprint(status) != fmt.Sprint(want) {
		t.Errorf("have statuses %v, want %v", status, want)
	}
	if have := len(bulk.collects); have != l.MaxRequestsInFlight {
		t.Errorf("have %d collections for %d stalled scrapes, want %d (MaxRequestsInFlight)", have, stalled, l.MaxRequestsInFlight)
	}
	t.Logf("%d stalled scrapers: RSS %d KiB, was %d KiB", stalled, rss, rss0)

	// The stalled ones end at WriteTimeout, and their places with them.
	for range l.MaxRequestsInFlight {
		<-closed
	}
	if have := scrape(t, addr); have != http.StatusOK {
		t.Errorf("scrape after the stalled ones: have status %d, want 200", have)
	}
}
