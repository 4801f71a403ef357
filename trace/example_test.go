package trace_test

import (
	"context"
	"errors"
	"fmt"
	"os"

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
