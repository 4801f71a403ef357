package libstapsdt

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// cBuilder runs testdata/build.c, the C object writer (c/sdtelf.c) behind a
// pipe, so that one process serves every comparison of a test.
type cBuilder struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startCBuilder(t testing.TB) *cBuilder {
	t.Helper()
	testutil.RequireTool(t, "gcc")
	bin := filepath.Join(t.TempDir(), "build")
	if out, err := exec.Command("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-Ic", "-o", bin,
		"testdata/build.c", "c/sdtelf.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	b := &cBuilder{cmd: exec.Command(bin)}
	var err error
	if b.in, err = b.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := b.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	b.out = bufio.NewReader(stdout)
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.in.Close()
		if err := b.cmd.Wait(); err != nil {
			t.Errorf("C builder: %v", err)
		}
	})
	return b
}

// cTypes are libstapsdt's ArgType_t values of dynsdt's argument types:
// the size in bytes, negative when signed.
var cTypes = map[dynsdt.ArgType]int32{
	dynsdt.Int8: -1, dynsdt.Int16: -2, dynsdt.Int32: -4, dynsdt.Int64: -8,
	dynsdt.Uint8: 1, dynsdt.Uint16: 2, dynsdt.Uint32: 4, dynsdt.Uint64: 8,
	dynsdt.Bool: 1, dynsdt.Pointer: 8, dynsdt.String: 8, dynsdt.Bytes: 8,
}

// cResult is what the C writer made of a spec: an object, or an error
// of kind code (sdtelf.h's sdt_build_error).
type cResult struct {
	code int
	msg  string
	obj  dynsdt.Object
}

func (b *cBuilder) build(t testing.TB, spec *dynsdt.ProviderSpec, m elf.Machine, site dynsdt.Site) cResult {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	le := binary.LittleEndian
	var req []byte
	str := func(s string) { req = append(le.AppendUint32(req, uint32(len(s))), s...) }
	req = le.AppendUint32(req, uint32(m))
	req = le.AppendUint32(req, uint32(site))
	str(spec.Name)
	req = le.AppendUint32(req, uint32(len(spec.Probes)))
	for _, p := range spec.Probes {
		str(p.Name)
		req = le.AppendUint32(req, uint32(len(p.Args)))
		for _, a := range p.Args {
			req = le.AppendUint32(req, uint32(cTypes[a]))
		}
	}
	if _, err := b.in.Write(req); err != nil {
		t.Fatalf("C builder: %v", err)
	}
	var err error
	u32 := func() uint32 {
		var v [4]byte
		if _, e := io.ReadFull(b.out, v[:]); e != nil && err == nil {
			err = e
		}
		return le.Uint32(v[:])
	}
	u64 := func() uint64 { return uint64(u32()) | uint64(u32())<<32 }
	bytesN := func(n uint32) []byte {
		p := make([]byte, n)
		if _, e := io.ReadFull(b.out, p); e != nil && err == nil {
			err = e
		}
		return p
	}
	var r cResult
	if r.code = int(u32()); r.code != 0 {
		r.msg = string(bytesN(u32()))
	} else {
		r.obj.Machine = m
		r.obj.Bytes = bytesN(u32())
		r.obj.Site = dynsdt.Site(u32())
		for range spec.Probes {
			r.obj.Stubs = append(r.obj.Stubs, u64())
			r.obj.Semaphores = append(r.obj.Semaphores, u64())
		}
		for range 3 {
			s := dynsdt.Segment{Off: u64(), Vaddr: u64(), Filesz: u64(), Memsz: u64(), Align: u64()}
			s.Prot = int(u32())
			r.obj.Segments = append(r.obj.Segments, s)
		}
	}
	if err != nil {
		t.Fatalf("C builder: %v", err)
	}
	return r
}

// The C writer's error kinds (sdtelf.h).
const (
	cBuildSpec    = 1
	cBuildMachine = 2
	cBuildSite    = 3
)

// compareBuild builds spec with both writers and reports any difference:
// the same bytes, stubs, semaphores and segments, or errors of the same
// kind.
func compareBuild(t testing.TB, b *cBuilder, spec *dynsdt.ProviderSpec, m elf.Machine, site dynsdt.Site) {
	t.Helper()
	want, werr := dynsdt.Build(spec, m, &dynsdt.BuildOptions{Site: site})
	have := b.build(t, spec, m, site)
	if werr != nil {
		code := cBuildSpec
		switch {
		case errors.Is(werr, dynsdt.ErrSite):
			code = cBuildSite
		case errors.Is(werr, dynsdt.ErrUnsupportedMachine):
			code = cBuildMachine
		case !errors.Is(werr, dynsdt.ErrSpec):
			t.Fatalf("dynsdt: %v", werr)
		}
		if have.code != code {
			t.Errorf("%s: dynsdt refuses (%v), C gives kind %d (%s), want %d", describe(spec), werr, have.code, have.msg, code)
		}
		return
	}
	if have.code != 0 {
		t.Fatalf("%s: dynsdt builds it, C refuses: %s", describe(spec), have.msg)
	}
	h := have.obj
	if !bytes.Equal(h.Bytes, want.Bytes) {
		at := 0
		for at < len(h.Bytes) && at < len(want.Bytes) && h.Bytes[at] == want.Bytes[at] {
			at++
		}
		t.Fatalf("%s (%v, %v): C writes %d bytes, dynsdt %d; first difference at %#x", describe(spec), m, site,
			len(h.Bytes), len(want.Bytes), at)
	}
	if h.Site != want.Site || fmt.Sprint(h.Stubs, h.Semaphores, h.Segments) != fmt.Sprint(want.Stubs, want.Semaphores, want.Segments) {
		t.Errorf("%s: C's site %v, stubs %v, semaphores %v, segments %v; dynsdt's %v, %v, %v, %v", describe(spec),
			h.Site, h.Stubs, h.Semaphores, h.Segments, want.Site, want.Stubs, want.Semaphores, want.Segments)
	}
}

func describe(spec *dynsdt.ProviderSpec) string {
	s := fmt.Sprintf("provider %q with %d probes", spec.Name, len(spec.Probes))
	if len(spec.Probes) > 0 && len(spec.Probes) < 4 {
		s += fmt.Sprintf(" %v", spec.Probes)
	}
	return s
}

var intTypes = []dynsdt.ArgType{dynsdt.Int8, dynsdt.Int16, dynsdt.Int32, dynsdt.Int64,
	dynsdt.Uint8, dynsdt.Uint16, dynsdt.Uint32, dynsdt.Uint64}

// randomSpec returns a valid provider of n probes with random names (some
// sharing their argument types with the probe before, as dynsdt's notes
// then do) and 0 to 12 arguments of every type.
func randomSpec(r *rand.Rand, n int) *dynsdt.ProviderSpec {
	name := func(i int) string {
		const first = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
		const rest = first + "0123456789"
		var sb strings.Builder
		sb.WriteByte(first[r.IntN(len(first))])
		for range r.IntN(40) {
			sb.WriteByte(rest[r.IntN(len(rest))])
		}
		fmt.Fprintf(&sb, "_%d", i) // unique
		return sb.String()
	}
	spec := &dynsdt.ProviderSpec{Name: name(0)}
	for i := range n {
		p := dynsdt.ProbeSpec{Name: name(i)}
		if i > 0 && r.IntN(3) == 0 {
			p.Args = spec.Probes[i-1].Args
		} else {
			for range r.IntN(dynsdt.MaxArgs + 1) {
				p.Args = append(p.Args, intTypes[r.IntN(len(intTypes))])
			}
		}
		spec.Probes = append(spec.Probes, p)
	}
	return spec
}

// TestBuilderMatchesDynsdt checks that the library's C object writer and
// dynsdt's builder write the same bytes for the same provider, on both
// machines and every site kind, for providers of 1 to 3000 probes, and
// refuse the same invalid ones.
func TestBuilderMatchesDynsdt(t *testing.T) {
	b := startCBuilder(t)
	r := rand.New(rand.NewPCG(1, 2))
	machines := []elf.Machine{elf.EM_X86_64, elf.EM_AARCH64}
	sites := []dynsdt.Site{dynsdt.SiteAuto, dynsdt.SiteNop, dynsdt.SiteNop5, dynsdt.SiteNop10}
	for _, n := range []int{1, 2, 3, 7, 64, 255, 256, 1000, 3000} {
		for _, m := range machines {
			for _, s := range sites {
				compareBuild(t, b, randomSpec(r, n), m, s)
			}
		}
	}
	// Every argument position and type, alone.
	for _, typ := range intTypes {
		spec := &dynsdt.ProviderSpec{Name: "p"}
		for k := 0; k <= dynsdt.MaxArgs; k++ {
			spec.Probes = append(spec.Probes, dynsdt.ProbeSpec{Name: fmt.Sprintf("a%d", k), Args: make([]dynsdt.ArgType, k)})
			for j := range k {
				spec.Probes[k].Args[j] = typ
			}
		}
		for _, m := range machines {
			compareBuild(t, b, spec, m, dynsdt.SiteAuto)
		}
	}
	ok := dynsdt.ProbeSpec{Name: "ok", Args: []dynsdt.ArgType{dynsdt.Int32}}
	for _, spec := range []*dynsdt.ProviderSpec{
		{Name: "p"},
		{Name: "", Probes: []dynsdt.ProbeSpec{ok}},
		{Name: "1p", Probes: []dynsdt.ProbeSpec{ok}},
		{Name: "p-q", Probes: []dynsdt.ProbeSpec{ok}},
		{Name: "pé", Probes: []dynsdt.ProbeSpec{ok}},
		{Name: "p", Probes: []dynsdt.ProbeSpec{ok, {Name: ""}}},
		{Name: "p", Probes: []dynsdt.ProbeSpec{ok, {Name: "a b"}}},
		{Name: "p", Probes: []dynsdt.ProbeSpec{ok, ok}},
		{Name: "p", Probes: []dynsdt.ProbeSpec{{Name: "b"}, ok, {Name: "a"}, ok}},
		{Name: "p", Probes: []dynsdt.ProbeSpec{{Name: "many", Args: make([]dynsdt.ArgType, 13)}}},
	} {
		for i := range spec.Probes {
			for j := range spec.Probes[i].Args {
				if spec.Probes[i].Args[j] == dynsdt.ArgInvalid {
					spec.Probes[i].Args[j] = dynsdt.Uint8
				}
			}
		}
		compareBuild(t, b, spec, elf.EM_X86_64, dynsdt.SiteAuto)
	}
	spec := randomSpec(r, 3)
	compareBuild(t, b, spec, elf.EM_386, dynsdt.SiteAuto)
	compareBuild(t, b, spec, elf.EM_X86_64, dynsdt.SiteNop10+1)
}

// FuzzBuilderMatchesDynsdt compares the two writers on providers made of
// arbitrary names (without NUL, which a C string cannot hold) and
// argument lists.
func FuzzBuilderMatchesDynsdt(f *testing.F) {
	f.Add("p", "a\x00b\x00c", []byte{0, 1, 2, 3, 4, 5, 6, 7}, false, uint8(0))
	f.Add("myapp", "request__start\x00request__done", []byte{3, 3, 7}, true, uint8(2))
	f.Add("x", "x\x00x", []byte{}, false, uint8(3))
	f.Add("_", "é\x001\x00a-b", []byte{12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12}, true, uint8(1))
	b := startCBuilder(f)
	f.Fuzz(func(t *testing.T, provider, probes string, args []byte, arm bool, site uint8) {
		if strings.IndexByte(provider, 0) >= 0 {
			return
		}
		spec := &dynsdt.ProviderSpec{Name: provider}
		for i, name := range strings.Split(probes, "\x00") {
			p := dynsdt.ProbeSpec{Name: name}
			if i < len(args) {
				// The low nibble is the count, the rest picks the types.
				for j := range int(args[i] & 15) {
					p.Args = append(p.Args, intTypes[(int(args[i]>>4)+j*5)%len(intTypes)])
				}
			}
			spec.Probes = append(spec.Probes, p)
		}
		m := elf.EM_X86_64
		if arm {
			m = elf.EM_AARCH64
		}
		compareBuild(t, b, spec, m, dynsdt.Site(site%5))
	})
}
