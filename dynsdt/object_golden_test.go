package dynsdt_test

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// goldenSpec is a fixed provider of n probes whose names grow in length
// and whose argument lists cycle through every argument type and every
// count from 0 to MaxArgs.
func goldenSpec(n int) *dynsdt.ProviderSpec {
	types := []dynsdt.ArgType{dynsdt.Int8, dynsdt.Int16, dynsdt.Int32, dynsdt.Int64, dynsdt.Uint8, dynsdt.Uint16,
		dynsdt.Uint32, dynsdt.Uint64, dynsdt.Bool, dynsdt.Pointer, dynsdt.String, dynsdt.Bytes}
	p := &dynsdt.ProviderSpec{Name: "golden"}
	for i := range n {
		ps := dynsdt.ProbeSpec{Name: fmt.Sprintf("p%0*d", 1+i%17, i)}
		for j := range i % (dynsdt.MaxArgs + 1) {
			ps.Args = append(ps.Args, types[(i+j)%len(types)])
		}
		p.Probes = append(p.Probes, ps)
	}
	return p
}

// TestBuildGolden pins Build's output bytes: the SHA-256 of the objects
// built for fixed specs, recorded from the builder before it was tuned for
// speed, then again when each stub got the copy of its first word before
// it (the only bytes that moved: .text, and the stub addresses in .dynsym
// and the notes), then when Build's default x86-64 site became the 1-byte
// nop (only the stubs' bytes in .text moved). A change that moves any byte fails here; if it is meant,
// record the new sums after checking the object with the other tests.
func TestBuildGolden(t *testing.T) {
	for _, c := range []struct {
		n    int
		m    elf.Machine
		want string
	}{
		{1, elf.EM_X86_64, "f87748b671f9fb21b60df704f453183cdf77de3cf65ffdfee51eef7d776fc9c5"},
		{100, elf.EM_X86_64, "4a06e4df3e6b2f45a47b6a530c1b25cc7a51dbf383ed8a49c8529256f3181f32"},
		{1000, elf.EM_X86_64, "f8028c585b8dfd21267297f6d6557a6e83a4c29d953a9e904e3285f4ecacd920"},
		{1, elf.EM_AARCH64, "34497d081c936da58b9c534b800adf4b1cb51748a7089c1fee71b290b8574244"},
		{100, elf.EM_AARCH64, "1488424788c9ee914401ea06d3fa5f086c8f576fd5eecb69319fc9cbbe85d47d"},
		{1000, elf.EM_AARCH64, "b9d67adf0fe702bb0fbb68530d82d7692eaa99673c886664759531b07653af47"},
	} {
		obj, err := dynsdt.Build(goldenSpec(c.n), c.m)
		if err != nil {
			t.Fatalf("%d probes, %v: %v", c.n, c.m, err)
		}
		sum := sha256.Sum256(obj.Bytes)
		if have := hex.EncodeToString(sum[:]); have != c.want {
			t.Errorf("%d probes, %v: sha256 %s, want %s", c.n, c.m, have, c.want)
		}
	}
}
