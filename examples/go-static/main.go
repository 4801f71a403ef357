// Command go-static is an HTTP server with static USDT probes, generated
// by usdtkit gen --static from server.d. Built with go build -toolexec
// 'usdtkit toolexec', its executable carries the notes, so tracers attach
// by path. See README.md.
//
// It prints "listening on http://ADDR pid PID" and serves until SIGINT or
// SIGTERM. With -requests N it sends N requests to itself, after a tracer
// enabled a probe when -wait-trace is set.
package main

//go:generate go run ../../cmd/usdtkit gen --static -o probes --package probes server.d

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/usdtkit/usdtkit/examples/go-static/probes"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	requests := flag.Int("requests", 0, "send this many requests to the server itself, then keep serving")
	waitTrace := flag.Bool("wait-trace", false, "send the requests of -requests only once a tracer has enabled a probe")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *requests, *waitTrace); err != nil {
		fmt.Fprintln(os.Stderr, "go-static:", err)
		os.Exit(1)
	}
}

var nextID atomic.Int64

// traced fires the probes around every request.
func traced(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := nextID.Add(1)
		start := time.Now()
		probes.RequestStart(r.URL.Path, id)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		probes.RequestDone(r.URL.Path, id, int32(sw.status), time.Since(start).Nanoseconds())
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

func run(ctx context.Context, addr string, requests int, waitTrace bool) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello/{name}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s\n", r.PathValue("name"))
	})
	srv := &http.Server{Handler: traced(mux), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Printf("listening on http://%s pid %d\n", ln.Addr(), os.Getpid())
	if requests > 0 {
		go func() {
			for waitTrace && !probes.RequestStartEnabled() && !probes.RequestDoneEnabled() {
				time.Sleep(10 * time.Millisecond)
			}
			paths := []string{"/hello/gopher", "/missing"}
			for i := range requests {
				resp, err := http.Get("http://" + ln.Addr().String() + paths[i%len(paths)])
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			fmt.Println("requests done")
		}()
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
