// Package launch starts a command stopped before its first instruction,
// so a tracer can attach before it runs. Start forks with PTRACE_TRACEME;
// Resume detaches and lets it run.
//
// Start locks the calling goroutine to its thread until Resume or Kill:
// call them from the same goroutine. End sends SIGTERM, then SIGKILL
// after a grace time. ExitCode gives a shell-style status, which usdtkit
// trace -c exits with.
package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Process is a started command.
type Process struct {
	Cmd     *exec.Cmd
	locked  bool
	resumed bool
	// done is closed when the waiter Resume starts has reaped the command.
	done chan struct{}
}

// Start starts cmd (stdin, stdout and stderr as the caller set them)
// stopped before its first instruction. The caller must Resume or Kill it,
// from the same goroutine, then Wait.
func Start(cmd *exec.Cmd) (*Process, error) {
	runtime.LockOSThread()
	p := &Process{Cmd: cmd, locked: true}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	// Killed with us, so an interrupted tracer leaves no stopped child.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		p.unlock()
		return nil, err
	}
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(cmd.Process.Pid, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			p.Kill()
			return nil, fmt.Errorf("wait for %s to stop at exec: %w", cmd.Path, err)
		}
		break
	}
	if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP {
		p.unlock()
		return nil, fmt.Errorf("%s did not stop at exec (status %#x)", cmd.Path, uint32(ws))
	}
	return p, nil
}

// PID is the command's process ID.
func (p *Process) PID() int { return p.Cmd.Process.Pid }

// Resume lets the command run. From then on the Process reaps the command
// itself: call End (or Kill), never Cmd.Wait.
func (p *Process) Resume() error {
	if p.resumed {
		return nil
	}
	p.resumed = true
	defer p.unlock()
	err := unix.PtraceDetach(p.PID())
	// Reap the command whatever happened, so End and Kill never wait for
	// nothing; End and Kill wait for this goroutine.
	p.done = make(chan struct{})
	go func() {
		p.Cmd.Wait()
		close(p.done)
	}()
	if err != nil {
		return fmt.Errorf("resume %d: %w", p.PID(), err)
	}
	return nil
}

// Kill kills the command and reaps it. Safe to call after End.
func (p *Process) Kill() {
	defer p.unlock()
	if p.resumed {
		p.Cmd.Process.Kill()
		<-p.done
		return
	}
	p.resumed = true
	p.Cmd.Process.Kill()
	p.Cmd.Wait()
}

// End ends a resumed command politely and returns how it ended: if it is
// still running it gets SIGTERM, so that it can clean up (a dynsdt
// provider removes its files), then SIGKILL once grace has passed. ended
// reports whether End had to signal it; false means it had exited by
// itself. state is nil if the command was never resumed (it is killed).
func (p *Process) End(grace time.Duration) (state *os.ProcessState, ended bool) {
	if !p.resumed {
		p.Kill()
		return p.Cmd.ProcessState, true
	}
	select {
	case <-p.done:
		return p.Cmd.ProcessState, false
	default:
	}
	// A command that has just exited is a zombie the waiter has not reaped
	// yet: do not count it as ended by us.
	if exited(p.PID()) {
		<-p.done
		return p.Cmd.ProcessState, false
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.Cmd.Process.Kill()
		<-p.done
	}
	return p.Cmd.ProcessState, true
}

// exited reports whether process pid has exited (a zombie, or gone): its
// pidfd polls readable then (pidfd_open(2)).
func exited(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 1
	}
}

// ExitCode returns a finished command's status as a shell reports it: its
// exit code, or 128 plus the signal that killed it. A nil state gives 0.
func ExitCode(state *os.ProcessState) int {
	if state == nil {
		return 0
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return state.ExitCode()
}

func (p *Process) unlock() {
	if p.locked {
		p.locked = false
		runtime.UnlockOSThread()
	}
}

// WaitExit returns nil when process pid exits (or is already gone), or
// ctx.Err() when ctx is done first. It watches a pidfd (Linux 5.3+), so it
// works for processes that are not our children.
func WaitExit(ctx context.Context, pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	f := os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", pid))
	defer f.Close()
	done := make(chan error, 1)
	go func() {
		// A pidfd polls readable when the process exits.
		for {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 100)
			if err == unix.EINTR || (err == nil && n == 0 && ctx.Err() == nil) {
				continue
			}
			done <- err
			return
		}
	}()
	select {
	case err := <-done:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	case <-ctx.Done():
		<-done
		return ctx.Err()
	}
}
