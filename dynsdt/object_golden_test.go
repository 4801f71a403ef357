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
// nop (only the stubs' bytes in .text moved), then when the probes'
// bare-name symbols went (every symbol starts with the provider's). A change that moves any byte fails here; if it is meant,
// record the new sums after checking the object with the other tests.
func TestBuildGolden(t *testing.T) {
	for _, c := range []struct {
		n    int
		m    elf.Machine
		want string
	}{
		{1, elf.EM_X86_64, "df2988e59a146ae0b38fe6f8e08fd754050cc825955b7ba5e24a56d14fc0ab96"},
		{100, elf.EM_X86_64, "e67ce8c18321b1d15a1c859fd8ec51c336d6604b3406171b48dc09c75533e352"},
		{1000, elf.EM_X86_64, "7c14b81b0acb7aae410e51e7bed8b82945802df2e3443db3a00bd7efc7d520bc"},
		{1, elf.EM_AARCH64, "c496109e512fc6758de32d8a5a52adb13a441762991d89926103b01d140d0bdb"},
		{100, elf.EM_AARCH64, "32fd979d4dc5938f1676114337eddad8352a9bb144d9f4837dcddfe83aa1bb3b"},
		{1000, elf.EM_AARCH64, "79782942f3896b94c3b46b2bf2b264ead8dc6bb3ce543a20eaaeaab0a644ecac"},
	} {
		obj, err := dynsdt.Build(goldenSpec(c.n), c.m, nil)
		if err != nil {
			t.Fatalf("%d probes, %v: %v", c.n, c.m, err)
		}
		sum := sha256.Sum256(obj.Bytes)
		if have := hex.EncodeToString(sum[:]); have != c.want {
			t.Errorf("%d probes, %v: sha256 %s, want %s", c.n, c.m, have, c.want)
		}
	}
}
