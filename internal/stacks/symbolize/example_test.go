package symbolize_test

import (
	"fmt"

	"github.com/usdtkit/usdtkit/internal/stacks/symbolize"
)

// ExampleFormat prints frames as bpftrace prints printf("%s", ustack):
// a known function, a function inlined into it, an unknown function of a
// known object, and an address in no mapping.
func ExampleFormat() {
	frames := []symbolize.Frame{
		{Addr: 0x401136, Object: "/usr/bin/app", Offset: 0x1136, Symbol: "twice", File: "/src/app.c", Line: 14, Inlined: true},
		{Addr: 0x401136, Object: "/usr/bin/app", Offset: 0x1136, Symbol: "outer", SymOffset: 6, File: "/src/app.c", Line: 18},
		{Addr: 0x7f0000001234, Object: "/usr/lib/libfoo.so (deleted)", Offset: 0x1234},
		{Addr: 0x10},
	}
	fmt.Print(symbolize.Format(frames, 8))
	fmt.Print(symbolize.FormatPerf(frames[1:3]))
	// Output:
	//         twice+0
	//         outer+6
	//         [libfoo.so+0x1234]
	//         0x10
	//
	// 	401136 outer+6 (/usr/bin/app)
	// 	7f0000001234 [libfoo.so+0x1234] (/usr/lib/libfoo.so (deleted))
}
