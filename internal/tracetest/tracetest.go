// Package tracetest runs a trace of events in the background for tests.
// The events, cloned, come on a channel or go to a callback; the trace
// ends with the test.
//
// It is apart from internal/testutil, which trace's own tests import.
package tracetest

import (
	"context"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/trace"
)

// Tracer is a trace of events running in the background: its events,
// cloned, come on Events, or go to the onEvent given to Start.
type Tracer struct {
	// T is the running trace, for Lost.
	T *trace.Tracer
	// Events receives every event when Start was given no onEvent.
	Events chan *trace.Event
	// Warnings are what Compile said the program cannot read as written
	// (CompileOptions.Warn): USDT arguments BPF cannot read, notes
	// skipped.
	Warnings []error
	cancel   context.CancelFunc
	done     chan error
}

// Start compiles probes for process pid's objects, starts the trace for
// pid and runs it; Stop ends it, Close (or the test's end) closes it.
// onEvent, when not nil, receives each event on Run's goroutine instead
// of Events (the event is reused after it returns).
func Start(tb testing.TB, probes []trace.EventProbe, pid int, onEvent func(*trace.Event)) *Tracer {
	tb.Helper()
	tt := &Tracer{Events: make(chan *trace.Event, 1<<16), done: make(chan error, 1)}
	prog, err := trace.CompileEvents(probes, &trace.CompileOptions{PID: pid, Warn: func(err error) { tt.Warnings = append(tt.Warnings, err) }})
	if err != nil {
		tb.Fatal(err)
	}
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
	tb.Cleanup(func() { tt.Close() })
	return tt
}

// Next returns the next event on Events, failing the test if none comes
// in 20 s.
func (tt *Tracer) Next(tb testing.TB) *trace.Event {
	tb.Helper()
	select {
	case ev := <-tt.Events:
		return ev
	case <-time.After(20 * time.Second):
		tb.Fatal("no event in 20s")
		return nil
	}
}

// Stop ends Run, which detaches and hands over what the kernel still
// held, and returns Run's error; a second call returns nil.
func (tt *Tracer) Stop() error {
	if tt.cancel == nil {
		return nil
	}
	tt.cancel()
	tt.cancel = nil
	return <-tt.done
}

// Close stops the trace and releases it, returning the first error; a
// second call returns nil.
func (tt *Tracer) Close() error {
	err := tt.Stop()
	if cerr := tt.T.Close(); err == nil {
		err = cerr
	}
	return err
}

// HasFault reports whether an argument of ev could not be read.
func HasFault(ev *trace.Event) bool {
	for _, v := range ev.Args {
		if v.Fault {
			return true
		}
	}
	return false
}

// Raw returns ev's arguments' 64 bits.
func Raw(ev *trace.Event) []uint64 {
	r := make([]uint64, len(ev.Args))
	for i, v := range ev.Args {
		r[i] = v.Raw
	}
	return r
}
