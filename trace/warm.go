package trace

import "github.com/usdtkit/usdtkit/internal/lang/btrun"

// Warm starts, in the background, the kernel's one-off cost of a first
// uprobe registration, so that a Start soon after waits for less of it,
// and returns a channel closed when that background work has ended (its
// files closed).
//
// The kernel waits for an RCU grace period, several milliseconds and more
// under load, when a uprobe is registered and none was for about a grace
// period before. Start begins that wait itself, but only once the program
// is compiled; a caller that will Start calls Warm before Compile (and
// before its other preparations), so that the wait runs while it
// compiles. Warm helps a Start that follows within about one grace period
// of the background work's end; a later Start warms again.
//
// Warm returns at once and is safe for concurrent use: a call while one
// runs joins it. It changes nothing else (it registers and removes a
// uprobe of an empty program on this process's own code): without the
// privileges or the kernel's support it does nothing.
func Warm() <-chan struct{} { return btrun.Warm() }
