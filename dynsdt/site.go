package dynsdt

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Site is the kind of instruction at a probe site on x86-64: what a uprobe
// there costs depends on it and on the kernel (see "Probe sites" in
// docs/probes.md). arm64 has one kind, its 4-byte nop, whatever the
// Site.
type Site uint8

const (
	// SiteAuto lets Load choose for the running kernel (ChooseSite), after
	// the USDTKIT_SITE environment variable. Build, whose object may run
	// on any kernel, writes the kind ChooseSite picks for every kernel
	// (SiteNop), without looking at the running one.
	SiteAuto Site = iota
	// SiteNop is the 1-byte nop 90, trapped (int3) at every hit; the
	// stub returns with "pop %r11; jmp *%r11", not ret.
	SiteNop
	// SiteNop5 is the 5-byte nop 0f 1f 44 00 00, which Linux 6.18
	// optimizes into a call to its uprobe trampoline after the first hit;
	// older kernels trap it as they trap SiteNop. Its stub returns by
	// "pop %r11; jmp *%r11" too, for those traps.
	SiteNop5
	// SiteNop10 is the 10-byte nop 66 2e 0f 1f 84 00 00 00 00 00, the
	// form that replaces the nop5 in the kernel's uprobe optimization
	// after 6.18 ("lea -0x80(%rsp),%rsp; call" keeps the red zone). Linux
	// 6.18 and older refuse a uprobe on it (its cs prefix): attaching to a
	// process that has it mapped fails (EOPNOTSUPP), and processes that
	// map it later never fire.
	SiteNop10
)

// ErrSite is wrapped by the errors for a Site that is none of the kinds,
// or a name (ParseSite, USDTKIT_SITE) that names none.
var ErrSite = errors.New("not a site kind (auto, nop, nop5, nop10)")

// SiteEnv is the environment variable that overrides Load's SiteAuto:
// auto, nop, nop5 or nop10.
const SiteEnv = "USDTKIT_SITE"

var siteNames = [...]string{SiteAuto: "auto", SiteNop: "nop", SiteNop5: "nop5", SiteNop10: "nop10"}

// String returns "auto", "nop", "nop5" or "nop10".
func (s Site) String() string {
	if int(s) < len(siteNames) {
		return siteNames[s]
	}
	return "Site(" + strconv.Itoa(int(s)) + ")"
}

// ParseSite returns the Site named s (as String spells it). Errors wrap
// ErrSite.
func ParseSite(s string) (Site, error) {
	for i, n := range siteNames {
		if s == n {
			return Site(i), nil
		}
	}
	return 0, fmt.Errorf("site %q: %w", s, ErrSite)
}

// ChooseSite returns the site kind that suits a kernel of release (as
// uname -r prints it) on x86-64:
//
//   - SiteNop everywhere a kernel can probe a nop, Linux 6.18 included.
//     A trapped 1-byte nop in a stub that leaves without ret costs what
//     sys/sdt.h's trapped nop in the caller's body costs. The 6.18
//     trampoline of an optimized nop5 costs more than that trap
//     (docs/benchmarks.md).
//   - SiteNop10 is never chosen: no released kernel optimizes it, and
//     6.18 and older do not probe it at all. Force it where one does.
//
// The release is an argument so that the rule is testable; Load passes the
// running kernel's.
func ChooseSite(release string) Site {
	_ = release // every release gets SiteNop today; see the doc above.
	return SiteNop
}

// siteAnyKernel is the kind Build writes for SiteAuto: what ChooseSite
// returns for every kernel release so far (TestSiteAnyKernel holds the two
// together). Build does not look at the running kernel: its object runs
// wherever it is copied to.
const siteAnyKernel = SiteNop

// ResolveSite returns the kind that s stands for on this machine: s
// itself unless it is SiteAuto, then the one the USDTKIT_SITE environment
// variable names, then ChooseSite's for the running kernel. Load and
// postlink resolve their SiteAuto with it. Errors wrap ErrSite.
func ResolveSite(s Site) (Site, error) {
	if s != SiteAuto {
		if s > SiteNop10 {
			return 0, fmt.Errorf("%v: %w", s, ErrSite)
		}
		return s, nil
	}
	if v := os.Getenv(SiteEnv); v != "" {
		env, err := ParseSite(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", SiteEnv, err)
		}
		if env != SiteAuto {
			return env, nil
		}
	}
	return ChooseSite(kernelRelease()), nil
}

// kernelRelease returns uname -r, or "" if uname fails.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
