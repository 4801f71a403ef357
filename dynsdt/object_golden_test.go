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
// speed. A change that moves any byte fails here; if it is meant, record
// the new sums after checking the object with the other tests.
func TestBuildGolden(t *testing.T) {
	for _, c := range []struct {
		n    int
		m    elf.Machine
		want string
	}{
		{1, elf.EM_X86_64, "b1bc9ba79b8727ea8ffbda1c65197e8c36f6d57dd9d7b6ee3b79926fc88bded5"},
		{100, elf.EM_X86_64, "de1138b503fdefca38f31b6af04b56e97f80914ddc1d228fd32054c6d300f684"},
		{1000, elf.EM_X86_64, "9efee9e3287c14bbfc1d51e22e1fc7055a38787e907bafa1e109968a8ce90cd9"},
		{1, elf.EM_AARCH64, "74d3ec8100f48d4bef56aa62dae3eed9bfdf54604614006c536c5f075cca9ace"},
		{100, elf.EM_AARCH64, "a81749cba031e95db21733167b88449d88930b254c6fcd5cbaa61e30280a0dd8"},
		{1000, elf.EM_AARCH64, "bdc73c46480139540c6d35d0690db50f613bf3d37c7ae58e6639036eb3b235c9"},
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
