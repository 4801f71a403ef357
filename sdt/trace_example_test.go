package sdt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/usdtkit/usdtkit/sdt"
)

// Trace python3.11's gc__start probe in every process that runs it, until
// Ctrl-C, and print the generation of each collection. Needs root.
func ExampleTrace() {
	sel, err := sdt.ParseSelector("usdt:/usr/bin/python3.11:python:gc__start")
	if err != nil {
		panic(err)
	}
	probes, err := sdt.List(&sdt.ListOptions{Selectors: []sdt.Selector{sel}})
	if err != nil {
		panic(err)
	}
	t, err := sdt.Trace(&sdt.TraceOptions{Probes: probes})
	if err != nil {
		panic(err)
	}
	defer t.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var ev sdt.Event
	for {
		if err := t.Read(ctx, &ev); errors.Is(err, context.Canceled) {
			break
		} else if err != nil {
			panic(err)
		}
		fmt.Printf("pid %d: %s generation %d\n", ev.PID, t.ProbeName(ev.Probe), int64(ev.Args[0]))
	}
	t.Detach()
	t.Drain(func(ev *sdt.Event) error {
		fmt.Printf("pid %d: %s generation %d\n", ev.PID, t.ProbeName(ev.Probe), int64(ev.Args[0]))
		return nil
	})
	lost, _, _ := t.Lost()
	fmt.Println(lost, "events lost")
}
