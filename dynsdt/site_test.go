package dynsdt

import (
	"debug/elf"
	"errors"
	"testing"
)

// TestResolveSite: a kind asked for wins over USDTKIT_SITE, which wins
// over ChooseSite's; a bad value is ErrSite.
func TestResolveSite(t *testing.T) {
	for _, c := range []struct {
		site Site
		env  string
		want Site
		err  bool
	}{
		{SiteAuto, "", ChooseSite(kernelRelease()), false},
		{SiteAuto, "auto", ChooseSite(kernelRelease()), false},
		{SiteAuto, "nop5", SiteNop5, false},
		{SiteAuto, " nop10\n", SiteNop10, false},
		{SiteNop, "nop5", SiteNop, false},
		{SiteNop10, "", SiteNop10, false},
		{SiteAuto, "int3", 0, true},
		{SiteNop10 + 1, "", 0, true},
	} {
		t.Setenv(SiteEnv, c.env)
		have, err := ResolveSite(c.site)
		if c.err {
			if !errors.Is(err, ErrSite) {
				t.Errorf("%v with %s=%q: %v, %v; want ErrSite", c.site, SiteEnv, c.env, have, err)
			}
			continue
		}
		if err != nil || have != c.want {
			t.Errorf("%v with %s=%q: %v, %v; want %v", c.site, SiteEnv, c.env, have, err, c.want)
		}
	}
}

// TestLoadSiteEnv: Load takes USDTKIT_SITE for SiteAuto, and fails on a
// bad value.
func TestLoadSiteEnv(t *testing.T) {
	if hostMachine == 0 {
		t.Skip("no dynsdt on this architecture")
	}
	spec := &ProviderSpec{Name: "kenv", Probes: []ProbeSpec{{Name: "a"}}}
	t.Setenv(SiteEnv, "nop10")
	p, err := Load(spec, &Options{Memfd: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if want := map[bool]Site{true: SiteNop10, false: SiteNop}[hostMachine == elf.EM_X86_64]; p.Site() != want {
		t.Errorf("site %v, want %v", p.Site(), want)
	}
	t.Setenv(SiteEnv, "nop7")
	if _, err := Load(spec, &Options{Memfd: true}); !errors.Is(err, ErrSite) {
		t.Errorf("%s=nop7: %v, want ErrSite", SiteEnv, err)
	}
}
