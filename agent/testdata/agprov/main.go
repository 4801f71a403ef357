// agprov: the dynsdt provider of the agent's tests. "agprov N" prints
// "started", waits for a line on stdin, loads provider agprov (probe hit,
// one int64, in a memfd), waits until a tracer enables the probe, prints
// "ready", waits for a line (the tracer has finished attaching: see
// agtarget.c), fires it N times with 0..N-1, prints "fired" and exits
// when stdin closes.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/usdtkit/usdtkit/dynsdt"
)

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	in := bufio.NewReader(os.Stdin)
	fmt.Println("started")
	if _, err := in.ReadString('\n'); err != nil {
		os.Exit(1)
	}
	p, err := dynsdt.Load(&dynsdt.ProviderSpec{Name: "agprov", Probes: []dynsdt.ProbeSpec{
		{Name: "hit", Args: []dynsdt.ArgType{dynsdt.Int64}}}}, &dynsdt.Options{Memfd: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hit := p.Probe("hit")
	for !hit.Enabled() {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		os.Exit(1)
	}
	for i := range n {
		hit.Fire(uint64(i))
	}
	fmt.Println("fired")
	io.Copy(io.Discard, in)
	p.Close()
}
