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
// and the notes). A change that moves any byte fails here; if it is meant,
// record the new sums after checking the object with the other tests.
func TestBuildGolden(t *testing.T) {
	for _, c := range []struct {
		n    int
		m    elf.Machine
		want string
	}{
		{1, elf.EM_X86_64, "3e6e84bcb67a14f8212ece5d0445b8add2ac7cce697314b0a6c1d9988ab96db1"},
		{100, elf.EM_X86_64, "aaf583269203895dd8dfb48277bd08b2f8152ce2d17c913eef32afe153a565e0"},
		{1000, elf.EM_X86_64, "89ea4159292359bfd291162923b98b6eab20122ae06271cf80e6167ecd9e0e92"},
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
