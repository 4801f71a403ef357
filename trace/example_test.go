package trace_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/usdtkit/usdtkit/trace"
)

// Compile a program against a running process, then trace it until ctx
// ends or the process exits: the maps print as bpftrace prints them.
func ExampleCompile() {
	pid := 1234 // a process with CPython's USDT probes
	prog, err := trace.Compile("-e", `usdt::python:function__entry { @[str(arg1)] = count(); }`,
		&trace.CompileOptions{PID: pid})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	t, err := trace.Start(prog, &trace.Options{PID: pid})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer t.Close()
	if err := t.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// Errors in a program carry their position.
func ExampleCompileError() {
	_, err := trace.Compile("count.bt", "BEGIN {\n\t@x = count(;\n}", nil)
	var ce *trace.CompileError
	if errors.As(err, &ce) {
		fmt.Println(ce.File, ce.Line, ce.Col)
	}
	fmt.Println(err)
	// Output:
	// count.bt 2 13
	// count.bt:2:13: expected an expression, found ";"
}

// Receive an event at every hit of two probes from Go: CPython's
// function__entry with its file and function names read as strings,
// only for functions named "handle", and libc's malloc with its size.
// The program runs a command from its first instruction and ends when
// the command exits.
func ExampleCompileEvents() {
	cmd := exec.Command("/usr/bin/python3", "app.py")
	prog, err := trace.CompileEvents([]trace.EventProbe{
		{Probe: "usdt::python:function__entry", Strings: []int{0, 1}, Filter: `str(arg1) == "handle"`},
		{Probe: "uprobe:libc:malloc", Args: 1},
	}, &trace.CompileOptions{Executable: cmd.Path})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	t, err := trace.Start(prog, &trace.Options{Command: cmd, OnEvent: func(ev *trace.Event) error {
		fmt.Println(ev.PID, ev.Name, ev.Args)
		return nil
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer t.Close()
	if err := t.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if state, _ := t.CommandState(); state != nil {
		fmt.Println("exit status", state.ExitCode())
	}
}

// Trace several processes at once: a map keyed by pid counts each one's
// hits; Run ends when every one of them has exited.
func ExampleOptions_pids() {
	pids := []int{1234, 5678}
	prog, err := trace.Compile("-e", `usdt::python:function__entry { @[pid] = count(); }`,
		&trace.CompileOptions{PIDs: pids})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	t, err := trace.Start(prog, &trace.Options{PIDs: pids})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer t.Close()
	if err := t.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// Receive the calls and returns of a Go method with its values by name:
// the parameters (and the field hits behind the receiver) at the entry,
// only for calls with n > 3, the results at every RET, each event with
// its goroutine id.
func ExampleCompileEvents_goFunction() {
	pid := 1234 // a Go program with DWARF
	prog, err := trace.CompileEvents([]trace.EventProbe{
		{Probe: `uprobe::"main.(*Server).handle"`, Filter: "args.n > 3", Fields: []string{"s.hits"}},
		{Probe: `uretprobe::"main.(*Server).handle"`},
	}, &trace.CompileOptions{PID: pid})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	t, err := trace.Start(prog, &trace.Options{PID: pid, OnEvent: func(ev *trace.Event) error {
		fmt.Print(ev.Name, " goroutine ", ev.GoID)
		for _, v := range ev.Args {
			fmt.Printf(" %s (%s) = %s", v.Name, v.Type, v)
		}
		fmt.Println()
		return nil
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer t.Close()
	if err := t.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
