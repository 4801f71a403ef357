//go:build amd64 || arm64

package dynsdt

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"unsafe"
)

// numRegArgs is the number of integer argument registers of the host's C
// calling convention: rdi..r9 on amd64, x0..x7 on arm64.
var numRegArgs = map[string]int{"amd64": 6, "arm64": 8}[runtime.GOARCH]

// TestFireABI calls argsStub, which stores its 12 C arguments (registers,
// then stack slots) at the address in its first: the trampoline must put n
// values where a C function and the notes' arg specs expect them, and zero
// in the registers it does not fill (and in the stack slots, once it
// writes any).
func TestFireABI(t *testing.T) {
	for variant, call := range fireVariants() {
		for n := 1; n <= MaxArgs+1; n++ {
			t.Run(fmt.Sprint(variant, "/", n), func(t *testing.T) {
				var out [MaxArgs]uint64
				args := make([]uint64, n)
				args[0] = uint64(uintptr(unsafe.Pointer(&out)))
				for i := 1; i < n; i++ {
					args[i] = 0x0101010101010101*uint64(i) ^ 1<<63
				}
				call(&Probe{stub: argsStubAddr()}, &args[0], n)
				runtime.KeepAlive(&out)

				want := make([]uint64, MaxArgs)
				copy(want, args)
				have := out[:]
				if n <= numRegArgs {
					// The stack slots are not written.
					have, want = have[:numRegArgs], want[:numRegArgs]
				}
				if !slices.Equal(have, want) {
					t.Errorf("arguments:\nhave %#x\nwant %#x", have, want)
				}
			})
		}
	}
}

// TestFireAlignment calls spStub, which stores its SP at entry: at a C
// function's entry SP+8 (amd64, after the pushed return address) or SP
// (arm64) is a multiple of 16.
func TestFireAlignment(t *testing.T) {
	want := map[string]uintptr{"amd64": 8, "arm64": 0}[runtime.GOARCH]
	for variant, call := range fireVariants() {
		var sp uintptr
		arg := uint64(uintptr(unsafe.Pointer(&sp)))
		call(&Probe{stub: spStubAddr()}, &arg, 1)
		if sp%16 != want {
			t.Errorf("%s: SP at the stub %#x, want ≡ %d mod 16", variant, sp, want)
		}
	}
}

// TestFireMethod checks Probe.Fire's own part: the variadic slice reaches
// the trampoline when the site has changed (a tracer is attached), nothing
// is called while it holds its original bytes, and a nil Probe does nothing.
func TestFireMethod(t *testing.T) {
	var out [MaxArgs]uint64
	site := uint32(0xcc) // an int3 where the original word was 0
	pr := &Probe{stub: argsStubAddr(), site: &site}
	pr.Fire(uint64(uintptr(unsafe.Pointer(&out))), 2, 3)
	runtime.KeepAlive(&out)
	if out[1] != 2 || out[2] != 3 {
		t.Errorf("have %d %d, want 2 3", out[1], out[2])
	}
	site = 0 // untraced again
	pr.Fire(uint64(uintptr(unsafe.Pointer(&out))), 4, 5)
	runtime.KeepAlive(&out)
	if out[1] != 2 || out[2] != 3 {
		t.Errorf("untraced Fire called the stub: have %d %d", out[1], out[2])
	}
	var nilProbe *Probe
	nilProbe.Fire(1, 2, 3)
	if nilProbe.Enabled() {
		t.Error("nil probe enabled")
	}
}
