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

// heapWords returns MaxArgs words the stubs under test may write through an
// address passed as an integer. They are pinned on the heap: a variable on
// the goroutine's stack moves when the stack is grown or shrunk (at any
// call with a stack check, such as the allocation of an escaping argument
// after the integer was taken), and the stub would then write to the old
// stack. Pinned until the test ends.
func heapWords(t *testing.T) *[MaxArgs]uint64 {
	out := new([MaxArgs]uint64)
	var pin runtime.Pinner
	pin.Pin(out)
	t.Cleanup(pin.Unpin)
	return out
}

// addressOf returns out's address as a stub argument.
func addressOf(out *[MaxArgs]uint64) uint64 {
	return uint64(uintptr(unsafe.Pointer(out)))
}

// TestFireABI calls argsStub, which stores its 12 C arguments (registers,
// then stack slots) at the address in its first: the trampoline must put n
// values where a C function and the notes' arg specs expect them, and zero
// in the registers it does not fill (and in the stack slots, once it
// writes any).
func TestFireABI(t *testing.T) {
	for variant, call := range fireVariants() {
		for n := 1; n <= MaxArgs+1; n++ {
			t.Run(fmt.Sprint(variant, "/", n), func(t *testing.T) {
				out := heapWords(t)
				args := make([]uint64, n)
				args[0] = addressOf(out)
				for i := 1; i < n; i++ {
					args[i] = 0x0101010101010101*uint64(i) ^ 1<<63
				}
				call(&Probe{stub: argsStubAddr()}, &args[0], n)

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
		out := heapWords(t)
		arg := addressOf(out)
		call(&Probe{stub: spStubAddr()}, &arg, 1)
		if sp := out[0]; sp%16 != uint64(want) {
			t.Errorf("%s: SP at the stub %#x, want ≡ %d mod 16", variant, sp, want)
		}
	}
}

// TestFireMethod checks Probe.Fire's own part: the variadic slice reaches
// the trampoline when the site has changed (a tracer is attached), nothing
// is called while it holds its original bytes, and a nil Probe does nothing.
func TestFireMethod(t *testing.T) {
	out := heapWords(t)
	site := uint32(0xcc) // an int3 where the original word was 0
	pr := &Probe{stub: argsStubAddr(), site: &site}
	pr.Fire(addressOf(out), 2, 3)
	if out[1] != 2 || out[2] != 3 {
		t.Errorf("have %d %d, want 2 3", out[1], out[2])
	}
	site = 0 // untraced again
	pr.Fire(addressOf(out), 4, 5)
	if out[1] != 2 || out[2] != 3 {
		t.Errorf("untraced Fire called the stub: have %d %d", out[1], out[2])
	}
	var nilProbe *Probe
	nilProbe.Fire(1, 2, 3)
	if nilProbe.Enabled() {
		t.Error("nil probe enabled")
	}
}

// TestFireAfterStackMove takes a buffer's address, then grows the
// goroutine's stack (which copies it elsewhere) before the stub writes
// through the address: the write must land in the buffer. Memory on the
// stack would be left behind by the copy, as TestFireAlignment's was when a
// fresh goroutine's small stack grew at an allocation.
func TestFireAfterStackMove(t *testing.T) {
	for variant, call := range fireVariants() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			out := heapWords(t)
			arg := addressOf(out)
			growStack(256) // at least 256 frames of 128 bytes: past the start size
			call(&Probe{stub: spStubAddr()}, &arg, 1)
			if out[0] == 0 {
				t.Errorf("%s: the stub's write did not reach the buffer", variant)
			}
		}()
		<-done
	}
}

// growStack recurses n times with a frame of at least 128 bytes.
//
//go:noinline
func growStack(n int) byte {
	var pad [128]byte
	pad[n%128] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return growStack(n-1) + pad[(n+1)%128]
}
