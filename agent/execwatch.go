package agent

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// The process events connector (linux/cn_proc.h, linux/connector.h):
// subscribing to it delivers a message at every exec on the machine.
const (
	cnIdxProc         = 1 // CN_IDX_PROC
	cnValProc         = 1 // CN_VAL_PROC
	procCnMcastListen = 1 // PROC_CN_MCAST_LISTEN
	procEventExec     = 2 // PROC_EVENT_EXEC
	// cnMsgSize is struct cn_msg: idx, val, seq, ack (u32 each), len and
	// flags (u16 each).
	cnMsgSize = 20
)

// watchExecs subscribes to the kernel's exec events (needs
// CAP_NET_ADMIN, in the initial network namespace) and calls exec with
// the process's PID at each one from its own goroutine, until ctx is
// done; wait waits for that goroutine.
func watchExecs(ctx context.Context, exec func(pid int)) (wait func(), err error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil, fmt.Errorf("process events: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("process events: bind: %w", err)
	}
	// Receives time out so that the goroutine sees ctx end.
	tv := unix.NsecToTimeval((200 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("process events: %w", err)
	}
	msg := make([]byte, unix.NLMSG_HDRLEN+cnMsgSize+4)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))       // nlmsg_len
	ne.PutUint16(msg[4:], unix.NLMSG_DONE)        // nlmsg_type
	ne.PutUint32(msg[12:], uint32(unix.Getpid())) // nlmsg_pid
	cn := msg[unix.NLMSG_HDRLEN:]
	ne.PutUint32(cn[0:], cnIdxProc)
	ne.PutUint32(cn[4:], cnValProc)
	ne.PutUint16(cn[16:], 4) // len of the payload
	ne.PutUint32(cn[cnMsgSize:], procCnMcastListen)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("process events: subscribe: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer unix.Close(fd)
		buf := make([]byte, 4096)
		for ctx.Err() == nil {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				continue // timeout, EINTR, or ENOBUFS (events lost: the scan catches up)
			}
			if pid, ok := execPID(buf[:n]); ok {
				exec(pid)
			}
		}
	}()
	return func() { <-done }, nil
}

// execPID returns the process (thread group) ID of the first exec event
// of a datagram of the connector; its messages are checked for length
// before they are read.
func execPID(b []byte) (int, bool) {
	ne := binary.NativeEndian
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(ne.Uint32(b))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return 0, false
		}
		body := b[unix.NLMSG_HDRLEN:l]
		// cn_msg, then struct proc_event: what, cpu (u32 each),
		// timestamp_ns (u64), then exec's process_pid and process_tgid.
		if ev := body[min(len(body), cnMsgSize):]; len(ev) >= 24 && ne.Uint32(body[0:]) == cnIdxProc &&
			ne.Uint32(ev) == procEventExec {
			return int(int32(ne.Uint32(ev[20:]))), true
		}
		next := (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if next >= len(b) {
			return 0, false
		}
		b = b[next:]
	}
	return 0, false
}
