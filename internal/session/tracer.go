package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
)

// Tracer is a Session together with what its probe ids mean: the names
// events print and the signedness of their arguments. sdttrace.Tracer (USDT
// probes) and functrace.Tracer (functions) embed it; its methods are theirs.
//
// A Tracer is safe for concurrent use, except that only one goroutine may
// Read or Run at a time; Close interrupts them.
type Tracer struct {
	*Session
	// Names[id] is the probe's name: "provider:name", "uprobe:malloc".
	Names []string
	// SignedArgs[id] has bit i set when argument i of probe id is signed.
	SignedArgs []uint16
	// PID is the traced process, 0 for all: Run ends when it exits.
	PID int
}

// ProbeName returns the name of an Event's Probe id.
func (t *Tracer) ProbeName(id uint32) string {
	if int(id) < len(t.Names) {
		return t.Names[id]
	}
	return fmt.Sprintf("probe#%d", id)
}

// Signed reports whether argument arg of probe id is signed, so that its
// 64-bit value in an Event prints as a signed number.
func (t *Tracer) Signed(id uint32, arg int) bool {
	return int(id) < len(t.SignedArgs) && arg < 16 && t.SignedArgs[id]&(1<<arg) != 0
}

// Lookup finds a probe id by its full name, or by the part after its first
// colon when only one probe has that part ("query__start" for
// "app:query__start", "malloc" for "uprobe:malloc").
func (t *Tracer) Lookup(s string) (uint32, bool) {
	found, n := uint32(0), 0
	for id, name := range t.Names {
		if name == s {
			return uint32(id), true
		}
		if _, short, _ := strings.Cut(name, ":"); short == s {
			found, n = uint32(id), n+1
		}
	}
	return found, n == 1
}

// Run reads events (ModeEvents) and calls fn for each until ctx is done or
// the traced process exits, then detaches and calls fn for every event
// still in the ring buffer, so that nothing delivered is lost. In the
// aggregating modes it waits and detaches. Aggregations and Lost can be read
// after it returns.
func (t *Tracer) Run(ctx context.Context, fn func(*bpfgen.Event) error) error {
	return t.Session.Run(ctx, t.PID, fn)
}
