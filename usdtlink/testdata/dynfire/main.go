// Command dynfire loads a dynsdt provider "byo" whose probe "twelve" has 12
// arguments of every dynsdt type, in a file in directory os.Args[1], prints
// the file's path, and fires the probe once for each "fire" line on stdin
// with the values of want (see libbpf_test.go), then prints "done".
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"

	"github.com/usdtkit/usdtkit/dynsdt"
)

func main() {
	spec := &dynsdt.ProviderSpec{Name: "byo", Probes: []dynsdt.ProbeSpec{{
		Name: "twelve",
		Args: []dynsdt.ArgType{
			dynsdt.Int8, dynsdt.Uint8, dynsdt.Int16, dynsdt.Uint16,
			dynsdt.Int32, dynsdt.Uint32, dynsdt.Int64, dynsdt.Uint64,
			dynsdt.Bool, dynsdt.Pointer, dynsdt.String, dynsdt.Int8,
		},
	}}}
	p, err := dynsdt.Load(spec, &dynsdt.Options{Dir: os.Args[1]})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer p.Close()
	fmt.Println(p.Path())
	pr := p.Probe("twelve")
	hello := dynsdt.CString("hello")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() != "fire" {
			continue
		}
		m3, m1000, m100000, m40 := int64(-3), int64(-1000), int64(-100000), int64(-1)<<40
		pr.Fire(uint64(m3), 250, uint64(m1000), 65000, uint64(m100000), 4000000000, uint64(m40), 1<<63+5,
			1, 0x1234, dynsdt.BytesPtr(hello), 0x80)
		runtime.KeepAlive(hello)
		fmt.Println("done")
	}
}
