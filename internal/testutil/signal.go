package testutil

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

var sigintOnce sync.Once

// DefaultSIGINTForChildren makes the processes this test starts receive
// SIGINT with its default action even when the test binary was started with
// SIGINT ignored (as a background job of a non-interactive shell is): an
// ignored signal stays ignored across exec, a handled one is reset to its
// default. Peer tools such as bpftrace flush their output only on SIGINT.
//
// It installs a handler in this process that, at the first SIGINT, puts the
// signal back as it was and raises it again, so the test binary itself
// reacts to Ctrl-C as before.
func DefaultSIGINTForChildren() {
	sigintOnce.Do(func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt)
		go func() {
			<-c
			signal.Reset(os.Interrupt)
			syscall.Kill(os.Getpid(), syscall.SIGINT)
		}()
	})
}
