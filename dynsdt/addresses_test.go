package dynsdt

import (
	"errors"
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestAddresses checks what Probe.Addresses hands native callers: the
// stub (the probe site, holding orig untraced), and the semaphore, as
// Enabled and the tracers' reference counter use them; after Close the
// site still reads orig.
func TestAddresses(t *testing.T) {
	spec := &ProviderSpec{Name: "addrs", Probes: []ProbeSpec{{Name: "a", Args: []ArgType{Int32}}, {Name: "b"}}}
	p, err := Load(spec, &Options{Memfd: true})
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, ps := range spec.Probes {
		pr := p.Probe(ps.Name)
		stub, orig, sem := pr.Addresses()
		if stub != pr.stub || stub != uintptr(unsafe.Pointer(pr.site)) || orig != pr.orig || sem != uintptr(unsafe.Pointer(pr.sem)) {
			t.Errorf("%s: Addresses() = %#x, %#x, %#x; probe has stub %#x, site %p, orig %#x, semaphore %p",
				ps.Name, stub, orig, sem, pr.stub, pr.site, pr.orig, pr.sem)
		}
		if have := atomic.LoadUint32(pr.site); have != orig {
			t.Errorf("%s: site holds %#x, want %#x", ps.Name, have, orig)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	pr := p.Probe("a")
	if _, orig, _ := pr.Addresses(); atomic.LoadUint32(pr.site) != orig {
		have := atomic.LoadUint32(pr.site)
		t.Errorf("after Close: site holds %#x, want %#x", have, orig)
	}
}
