package dynsdt

import (
	"context"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/trace"
)

// TestTracer is a trace of events (trace.CompileEvents) running in the
// background, for this package's tests: its events, cloned, come on
// Events, or go to the onEvent given to StartTestTracer.
type TestTracer struct {
	T      *trace.Tracer
	Events chan *trace.Event
	cancel context.CancelFunc
	done   chan error
}

// StartTestTracer compiles probes for pid's objects, starts and runs the
// trace; Stop ends it, the test's end closes it.
func StartTestTracer(tb testing.TB, probes []trace.EventProbe, pid int, onEvent func(*trace.Event)) *TestTracer {
	tb.Helper()
	prog, err := trace.CompileEvents(probes, &trace.CompileOptions{PID: pid})
	if err != nil {
		tb.Fatal(err)
	}
	tt := &TestTracer{Events: make(chan *trace.Event, 1<<16), done: make(chan error, 1)}
	if onEvent == nil {
		onEvent = func(ev *trace.Event) { tt.Events <- ev.Clone() }
	}
	tt.T, err = trace.Start(prog, &trace.Options{PID: pid, OnEvent: func(ev *trace.Event) error { onEvent(ev); return nil }})
	if err != nil {
		tb.Fatal(err)
	}
	var ctx context.Context
	ctx, tt.cancel = context.WithCancel(context.Background())
	go func() { tt.done <- tt.T.Run(ctx) }()
	tb.Cleanup(func() { tt.Stop(); tt.T.Close() })
	return tt
}

// Next returns the next event, failing the test if none comes in 10 s.
func (tt *TestTracer) Next(tb testing.TB) *trace.Event {
	tb.Helper()
	select {
	case ev := <-tt.Events:
		return ev
	case <-time.After(10 * time.Second):
		tb.Fatal("no event in 10s")
		return nil
	}
}

// Stop ends Run, which detaches and hands over what the kernel still
// held, and returns Run's error; a second call returns nil.
func (tt *TestTracer) Stop() error {
	if tt.cancel == nil {
		return nil
	}
	tt.cancel()
	tt.cancel = nil
	return <-tt.done
}

// hasFault reports whether an argument of ev could not be read.
func hasFault(ev *trace.Event) bool {
	for _, v := range ev.Args {
		if v.Fault {
			return true
		}
	}
	return false
}

// raw returns ev's arguments' 64 bits.
func raw(ev *trace.Event) []uint64 {
	r := make([]uint64, len(ev.Args))
	for i, v := range ev.Args {
		r[i] = v.Raw
	}
	return r
}
