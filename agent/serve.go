package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/net/netutil"
)

// HTTPLimits bound what the clients of /metrics can take from the agent,
// which runs as root beside them: a client that connects and sends
// nothing, or asks and never reads, must not use up its descriptors or
// pin its memory. Each zero field is its default.
type HTTPLimits struct {
	// MaxConnections is the most connections served at once; more wait
	// in the kernel's listen backlog, holding no descriptor of the
	// agent. Default 64.
	MaxConnections int
	// MaxRequestsInFlight is the most scrapes answered at once; another
	// is answered 503 at once. Each holds one copy of every series
	// until its response is written. Default 4.
	MaxRequestsInFlight int
	// ReadTimeout is the longest a connection may take to send its
	// request. Default 10s.
	ReadTimeout time.Duration
	// WriteTimeout is the longest a response may take to be gathered
	// and written; a scraper that reads slower loses its connection.
	// Default 30s.
	WriteTimeout time.Duration
	// IdleTimeout is the longest a kept-alive connection waits for its
	// next request. Default 60s.
	IdleTimeout time.Duration
}

// withDefaults returns l with every zero field set to its default.
func (l HTTPLimits) withDefaults() HTTPLimits {
	if l.MaxConnections <= 0 {
		l.MaxConnections = 64
	}
	if l.MaxRequestsInFlight <= 0 {
		l.MaxRequestsInFlight = 4
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = 10 * time.Second
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = 30 * time.Second
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 60 * time.Second
	}
	return l
}

// Handler returns the HTTP handler of /metrics: the agent's metrics in
// Prometheus' text or protobuf format, as the scraper asks, at most
// Options.HTTP.MaxRequestsInFlight at once.
func (a *Agent) Handler() http.Handler {
	return metricsHandler(a, a.opts.HTTP.withDefaults())
}

// metricsHandler serves c's metrics within l.
func metricsHandler(c prometheus.Collector, l HTTPLimits) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: l.MaxRequestsInFlight,
		// A gathering slower than the write deadline would only write
		// into a closed connection.
		Timeout: l.WriteTimeout,
	})
}

// newServer returns the server of h on /metrics within l, and ln limited
// to l.MaxConnections.
func newServer(h http.Handler, ln net.Listener, l HTTPLimits) (*http.Server, net.Listener) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: l.ReadTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		// Any local client can make the server log (a TLS handshake
		// gone wrong): a library does not print, and such a log
		// would be theirs to fill.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	return srv, netutil.LimitListener(ln, l.MaxConnections)
}

// Serve runs the agent (Run) and serves /metrics on ln until ctx is done,
// within Options.HTTP and as Options.WebConfigFile says, and pushes the metrics over OTLP if the config
// says (PushOTLP); it closes ln. It returns nil, or the first error of
// Run or the HTTP server.
func (a *Agent) Serve(ctx context.Context, ln net.Listener) error {
	if a.otlp != nil {
		stop, err := a.PushOTLP(a.otlp)
		if err != nil {
			ln.Close()
			return err
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stop(ctx)
		}()
	}
	srv, ln := newServer(a.Handler(), ln, a.opts.HTTP.withDefaults())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- serveWeb(srv, ln, a.opts.WebConfigFile, a.warn) }()
	runErr := a.Run(ctx)
	cancel()
	shutdown, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	srv.Shutdown(shutdown)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return runErr
}

// serveWeb serves srv on ln with the web config at path (none if
// empty); the toolkit's warnings and errors go to warn.
func serveWeb(srv *http.Server, ln net.Listener, path string, warn func(error)) error {
	logger := slog.New(warnHandler{warn: warn})
	return web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &path}, logger)
}

// warnHandler passes the records of level Warn and above to warn, as
// one error each: library code does not print.
type warnHandler struct {
	warn  func(error)
	attrs []slog.Attr
}

func (h warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h warnHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("web: ")
	b.WriteString(r.Message)
	attr := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		attr(a)
	}
	r.Attrs(attr)
	h.warn(errors.New(b.String()))
	return nil
}

func (h warnHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return warnHandler{warn: h.warn, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h warnHandler) WithGroup(string) slog.Handler { return h }

// Listen returns the listener of addr: a Unix socket for "unix:PATH"
// (a stale socket file at PATH is replaced; the socket is made mode
// 0660, for its group to scrape), else a TCP address ("127.0.0.1:9435").
func Listen(addr string) (net.Listener, error) {
	path, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		return net.Listen("tcp", addr)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == os.ModeSocket {
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	// Made 0660 from the start, not after: no moment where any local
	// user may connect.
	old := syscall.Umask(0o117)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	return ln, nil
}
