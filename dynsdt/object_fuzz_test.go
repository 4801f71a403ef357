package dynsdt_test

import (
	"bytes"
	"debug/elf"
	"errors"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/sdt"
)

// fuzzSpec decodes a provider spec: probes named by the comma-separated
// names, each taking from args a count byte (mod MaxArgs+2, so that too
// many arguments occur) and then that many type bytes (mod the number of
// ArgTypes + 1, so that invalid types occur).
func fuzzSpec(provider, names string, args []byte) *dynsdt.ProviderSpec {
	p := &dynsdt.ProviderSpec{Name: provider}
	if names == "" {
		return p
	}
	for _, name := range strings.Split(names, ",") {
		pr := dynsdt.ProbeSpec{Name: name}
		if len(args) > 0 {
			n := int(args[0]) % (dynsdt.MaxArgs + 2)
			args = args[1:]
			for ; n > 0 && len(args) > 0; n-- {
				pr.Args = append(pr.Args, dynsdt.ArgType(args[0]%(byte(dynsdt.Bytes)+2)))
				args = args[1:]
			}
		}
		p.Probes = append(p.Probes, pr)
	}
	return p
}

// FuzzBuild checks that Build either fails with ErrSpec for a spec that is
// invalid, or writes a file whose notes elfnotes and sdt read back as
// built, with every argument spec parsing to the declared size and sign.
func FuzzBuild(f *testing.F) {
	f.Add("myapp", "request__start,request__done", []byte{2, 11, 3, 1, 4}, false)
	f.Add("p", "a", []byte{12, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, true)
	f.Add("p", "a,a", []byte{}, false)
	f.Add("p", "p_a_semaphore,a", []byte{}, false)
	f.Add("9p", "a", []byte{13, 0}, true)
	f.Add("p", "", []byte{}, false)
	f.Fuzz(func(t *testing.T, provider, names string, args []byte, arm bool) {
		m := elf.EM_X86_64
		if arm {
			m = elf.EM_AARCH64
		}
		spec := fuzzSpec(provider, names, args)
		obj, err := dynsdt.Build(spec, m, nil)
		if err != nil {
			if obj != nil {
				t.Fatalf("error %v with an object", err)
			}
			if !errors.Is(err, dynsdt.ErrSpec) {
				t.Fatalf("have %v, want ErrSpec", err)
			}
			if spec.Validate() == nil && len(spec.Probes) > 0 && !clash(spec) {
				t.Fatalf("valid spec %+v: %v", spec, err)
			}
			return
		}
		if _, err := elf.NewFile(bytes.NewReader(obj.Bytes)); err != nil {
			t.Fatalf("debug/elf: %v", err)
		}
		f, err := elfnotes.NewFile(bytes.NewReader(obj.Bytes))
		if err != nil {
			t.Fatal(err)
		}
		probes, err := sdt.ReadProbes(f, "fuzz.so")
		if err != nil {
			t.Fatal(err)
		}
		if len(probes) != len(spec.Probes) {
			t.Fatalf("have %d probes, want %d", len(probes), len(spec.Probes))
		}
		for i, p := range probes {
			want := spec.Probes[i]
			loc := p.Locations[0]
			if p.Provider != spec.Name || p.Name != want.Name || len(p.Locations) != 1 ||
				loc.Address != obj.Stubs[i] || loc.Semaphore != obj.Semaphores[i] || len(loc.Args) != len(want.Args) {
				t.Fatalf("probe %d: have %+v, want %+v", i, p, want)
			}
			for j, a := range loc.Args {
				if a.Err != nil || a.Size != want.Args[j].Size() || a.Signed != want.Args[j].Signed() {
					t.Errorf("probe %s arg %d: have %+v, want %v", want.Name, j, a, want.Args[j])
				}
			}
		}
	})
}

// clash reports whether a probe is named like another's semaphore or fire
// symbol.
func clash(p *dynsdt.ProviderSpec) bool {
	for _, a := range p.Probes {
		for _, b := range p.Probes {
			if a.Name == dynsdt.SemaphoreSymbol(p.Name, b.Name) || a.Name == dynsdt.FireSymbol(p.Name, b.Name) {
				return true
			}
		}
	}
	return false
}
