// Command go-server is an HTTP server with USDT probes: request__start and
// request__done of provider "server", declared in server.d and generated
// into package probes by usdtkit gen. See README.md for tracing it.
//
// It loads the probes at start, prints one line
//
//	listening on http://ADDR pid PID probes PATH
//
// once it accepts connections (PATH is the file /proc/PID/maps shows for the
// probes), and on SIGINT or SIGTERM shuts down and removes the probes' file.
// With -requests N it sends N requests to itself over loopback, then keeps
// serving; with -wait-trace it sends them only once a tracer has enabled
// both probes.
package main

//go:generate go run ../../cmd/usdtkit gen -o probes --package probes server.d

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/usdtkit/usdtkit/examples/go-server/probes"
)

// selfPaths are the paths -requests cycles through: two answered with 200,
// one with 404.
var selfPaths = [...]string{"/", "/hello/gopher", "/missing"}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	requests := flag.Int("requests", 0, "send this many requests to the server itself (over loopback), then keep serving")
	interval := flag.Duration("interval", 100*time.Millisecond, "pause between the requests of -requests")
	waitTrace := flag.Bool("wait-trace", false, "send the requests of -requests only once a tracer has enabled the probes")
	flag.Parse()
	if flag.NArg() > 0 || *requests < 0 || *interval < 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *requests, *interval, *waitTrace); err != nil {
		fmt.Fprintln(os.Stderr, "go-server:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string, requests int, interval time.Duration, waitTrace bool) (err error) {
	if err := probes.Load(nil); err != nil {
		return fmt.Errorf("load probes: %w", err)
	}
	defer func() {
		if cerr := probes.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close probes: %w", cerr)
		}
	}()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: traced(newMux()), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	// Once ln exists, connections queue in the kernel: the server is
	// reachable from here on, so this is the ready line.
	fmt.Printf("listening on http://%s pid %d probes %s\n", ln.Addr(), os.Getpid(), probes.Path())

	clientCtx, stopClient := context.WithCancel(ctx)
	defer stopClient()
	var wg sync.WaitGroup
	clientErr := make(chan error, 1)
	if requests > 0 {
		target, err := loopback(ln.Addr())
		if err != nil {
			srv.Close()
			return err
		}
		wg.Go(func() { clientErr <- selfRequests(clientCtx, target, requests, interval, waitTrace) })
	}

	select {
	case err = <-served:
	case err = <-clientErr:
		if err == nil {
			// Done sending: keep serving until a signal.
			select {
			case err = <-served:
			case <-ctx.Done():
			}
		}
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil && err == nil {
		err = serr
	}
	stopClient()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

func newMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "usdtkit go-server example: try /hello/NAME\n")
	})
	mux.HandleFunc("GET /hello/{name}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s\n", r.PathValue("name"))
	})
	return mux
}

// traced wraps h so that every request fires request__start and
// request__done with the server's request id, counted from 1.
func traced(h http.Handler) http.Handler {
	var lastID atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := lastID.Add(1)
		start := time.Now()
		// The probe functions copy the path for the tracer only while it
		// has enabled the probe; otherwise each is a load and a compare.
		probes.RequestStart(r.URL.Path, id)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		// Fired before ServeHTTP returns, hence before net/http sends the
		// buffered response: a client that has the response can count on
		// the event having been written.
		probes.RequestDone(r.URL.Path, id, int32(rec.status), time.Since(start).Nanoseconds())
	})
}

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// loopback returns the address to reach a listener on addr from this host
// over loopback: addr itself if its IP is a loopback address, 127.0.0.1 or
// ::1 with its port if it listens on every address. Other addresses are an
// error: -requests must not send traffic off the host.
func loopback(addr net.Addr) (string, error) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "", fmt.Errorf("-requests: listener address %s is not TCP", addr)
	}
	ip := tcp.IP
	switch {
	case ip.IsLoopback():
	case ip.IsUnspecified() && ip.To4() != nil:
		ip = net.IPv4(127, 0, 0, 1)
	case ip.IsUnspecified():
		ip = net.IPv6loopback
	default:
		return "", fmt.Errorf("-requests needs a loopback or unspecified -addr, not %s", addr)
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port)), nil
}

// selfRequests sends n GET requests to hostport, interval apart, cycling
// through selfPaths. With waitTrace it first waits until a tracer has
// enabled both probes, checking every 10 ms.
func selfRequests(ctx context.Context, hostport string, n int, interval time.Duration, waitTrace bool) error {
	if waitTrace {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for !probes.RequestStartEnabled() || !probes.RequestDoneEnabled() {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	for i := range n {
		if i > 0 && interval > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(interval):
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hostport+selfPaths[i%len(selfPaths)], nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return nil
}
