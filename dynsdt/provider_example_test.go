package dynsdt_test

import (
	"fmt"
	"runtime"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// ExampleLoad gives this process a provider with one probe and fires it
// the way generated code does: arguments are computed only while a tracer
// is attached (usdtkit trace -p PID 'myapp:request__start').
func ExampleLoad() {
	p, err := dynsdt.Load(&dynsdt.ProviderSpec{Name: "myapp", Probes: []dynsdt.ProbeSpec{
		{Name: "request__start", Args: []dynsdt.ArgType{dynsdt.String, dynsdt.Int32}},
	}}, &dynsdt.Options{Memfd: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	start := p.Probe("request__start")
	path, n := "/index.html", int32(3)
	if start.Enabled() {
		s := dynsdt.CString(path)
		start.Fire(dynsdt.BytesPtr(s), uint64(n))
		runtime.KeepAlive(s)
	}
	fmt.Println(p.Path())
	fmt.Println("traced:", start.Enabled())
	// Output:
	// /memfd:myapp.so (deleted)
	// traced: false
}

func ExampleParseProbeSpec() {
	pr, err := dynsdt.ParseProbeSpec("request__start:string,int64")
	fmt.Println(pr.Name, pr.Args, err)
	// Output: request__start [string int64] <nil>
}
