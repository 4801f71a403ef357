package dynsdt_test

import (
	"bytes"
	"debug/elf"
	"fmt"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/elfnotes"
)

// Build a provider's shared object and read its notes back, as readelf -n
// shows them.
func ExampleBuild() {
	obj, err := dynsdt.Build(&dynsdt.ProviderSpec{Name: "myapp", Probes: []dynsdt.ProbeSpec{
		{Name: "request__start", Args: []dynsdt.ArgType{dynsdt.String, dynsdt.Int32}},
		{Name: "request__done", Args: []dynsdt.ArgType{dynsdt.Uint64}},
	}}, elf.EM_X86_64, nil)
	if err != nil {
		panic(err)
	}
	f, err := elfnotes.NewFile(bytes.NewReader(obj.Bytes))
	if err != nil {
		panic(err)
	}
	notes, err := f.SDTProbes()
	if err != nil {
		panic(err)
	}
	for _, n := range notes {
		fmt.Printf("%s:%s at %#x, semaphore %#x, args %q\n", n.Provider, n.Name, n.Addr, n.SemaphoreAddr, n.Args)
	}
	for _, s := range obj.Segments {
		fmt.Printf("segment at %#x, %d bytes, prot %d\n", s.Vaddr, s.Memsz, s.Prot)
	}
	// Output:
	// myapp:request__start at 0x1004, semaphore 0x2070, args "8@%rdi -4@%esi"
	// myapp:request__done at 0x1014, semaphore 0x2072, args "8@%rdi"
	// segment at 0x0, 627 bytes, prot 1
	// segment at 0x1000, 32 bytes, prot 5
	// segment at 0x2000, 116 bytes, prot 3
}
