package btrun

import (
	"fmt"
	"strings"

	"github.com/usdtkit/usdtkit/internal/lang/btgen"
)

// RefusedError lists the sites of a program's probes the kernel refused
// to probe (see attach.AttachSites). Start returns it when the kernel
// took none of the program's sites, and gives it to Options.Warn when it
// took some.
type RefusedError struct {
	// Sites are the refused sites, in the order of the blocks and of
	// their sites.
	Sites []RefusedSite
	// Attached is how many sites were attached.
	Attached int
}

// RefusedSite is a site the kernel refused.
type RefusedSite struct {
	// Probe is the probe's full name (btgen.Site.Probe), Func the
	// function's name without its symbol version (btgen.Site.Func),
	// either empty when unknown.
	Probe, Func string
	// Object is the file, as users know it, and Offset the site's file
	// offset in it.
	Object string
	Offset uint64
	// Err is the kernel's reason.
	Err error
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	if e.Attached == 0 {
		fmt.Fprintf(&b, "the kernel refused every site of the program's probes (%d): ", len(e.Sites))
	} else {
		fmt.Fprintf(&b, "skipped %d %s the kernel refused (%d attached): ", len(e.Sites), plural(len(e.Sites), "site"), e.Attached)
	}
	for i, s := range e.Sites {
		if i > 0 {
			b.WriteString("; ")
		}
		switch {
		case s.Func != "":
			b.WriteString(s.Func)
		case s.Probe != "":
			b.WriteString(s.Probe)
		default:
			fmt.Fprintf(&b, "offset %#x", s.Offset)
		}
		fmt.Fprintf(&b, " in %s: %v", s.Object, s.Err)
	}
	return b.String()
}

// siteObject is s's object as users know it.
func siteObject(s *btgen.Site) string {
	if s.Object != "" {
		return s.Object
	}
	return s.Path
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
