package dynsdt

import (
	"bytes"
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
	if HostMachine == 0 {
		t.Skip("no dynsdt on this architecture")
	}
	spec := &ProviderSpec{Name: "kenv", Probes: []ProbeSpec{{Name: "a"}}}
	t.Setenv(SiteEnv, "nop10")
	p, err := Load(spec, &Options{Memfd: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if want := map[bool]Site{true: SiteNop10, false: SiteNop}[HostMachine == elf.EM_X86_64]; p.Site() != want {
		t.Errorf("site %v, want %v", p.Site(), want)
	}
	t.Setenv(SiteEnv, "nop7")
	if _, err := Load(spec, &Options{Memfd: true}); !errors.Is(err, ErrSite) {
		t.Errorf("%s=nop7: %v, want ErrSite", SiteEnv, err)
	}
}

// TestSiteAnyKernel: the kind Build writes for SiteAuto is the one
// ChooseSite picks for every kernel release, old and new; if ChooseSite
// starts to depend on the release, Build's default needs a new rule.
func TestSiteAnyKernel(t *testing.T) {
	for _, release := range []string{"", "3.10.0-1160.el7.x86_64", "4.19.0", "5.15.0-91-generic", "6.1.0-37-amd64", "6.17.9", "6.18.0", "6.19.0-rc1", "7.0.0", kernelRelease()} {
		if have := ChooseSite(release); have != siteAnyKernel {
			t.Errorf("ChooseSite(%q) = %v, Build's SiteAuto is %v", release, have, siteAnyKernel)
		}
	}
}

// TestBuildSiteAutoIgnoresEnv: Build's SiteAuto does not take
// USDTKIT_SITE (its object runs elsewhere); an explicit Site still wins.
func TestBuildSiteAutoIgnoresEnv(t *testing.T) {
	spec := &ProviderSpec{Name: "kenv", Probes: []ProbeSpec{{Name: "a"}}}
	t.Setenv(SiteEnv, "nop10")
	for _, c := range []struct {
		opts *BuildOptions
		want Site
	}{
		{nil, SiteNop},
		{&BuildOptions{}, SiteNop},
		{&BuildOptions{Site: SiteNop5}, SiteNop5},
	} {
		obj, err := Build(spec, elf.EM_X86_64, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if obj.Site != c.want || !bytes.Equal(obj.Bytes[obj.Stubs[0]:obj.Stubs[0]+uint64(len(stubX86(c.want)))], stubX86(c.want)) {
			t.Errorf("%+v with %s=nop10: site %v, want %v", c.opts, SiteEnv, obj.Site, c.want)
		}
	}
}
