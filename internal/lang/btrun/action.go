package btrun

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/btprint"
	"github.com/usdtkit/usdtkit/internal/lang/printf"
)

// action runs what a cat() or system() record asks with its formatted
// text, and prints the result as bpftrace does: the file's or the
// command's output as is, or a JSON line of type "cat" or "syscall".
func (r *Runner) action(p *btgen.PrintfInfo, args []printf.Arg) error {
	text := string(p.Format.Append(nil, args))
	var out []byte
	typ := "cat"
	switch p.Action {
	case btgen.ActionCat:
		max := r.opts.CatBytesMax
		if max <= 0 {
			max = r.prog.Settings.CatBytesMax
		}
		if max <= 0 {
			max = DefaultCatBytesMax
		}
		var err error
		if out, err = catFile(text, max); err != nil {
			// bpftrace's message, on stderr, and an empty cat.
			if err := r.w.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(r.stderr(), "ERROR: failed to open file '%s': %s\n", text, strerror(err))
		}
	case btgen.ActionSystem:
		typ = "syscall"
		// bpftrace runs the command with popen(3): /bin/sh -c, its
		// standard error and input those of the tracer, its output
		// printed when it has ended.
		cmd := exec.Command("/bin/sh", "-c", text)
		cmd.Stdin, cmd.Stderr = os.Stdin, r.stderr()
		out, _ = cmd.Output()
	default:
		return fmt.Errorf("printf record of unknown action %d", p.Action)
	}
	r.buf = btprint.AppendMessage(r.buf[:0], typ, out, r.opts.Output)
	_, err := r.w.Write(r.buf)
	return err
}

func (r *Runner) stderr() io.Writer {
	if r.opts.Stderr != nil {
		return r.opts.Stderr
	}
	return os.Stderr
}

// catFile reads at most max bytes of the file at path.
func catFile(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	_, err = io.Copy(&b, io.LimitReader(f, int64(max)))
	return b.Bytes(), err
}

// strerror returns C's strerror text of err's errno ("No such file or
// directory"), which is Go's with a capital.
func strerror(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	s := errno.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// username returns the name of user id uid, as bpftrace's username
// prints it: the first /etc/passwd entry with that id, "" for none.
func (r *Runner) username(uid uint64) string {
	if name, ok := r.users[uid]; ok {
		return name
	}
	name := ""
	if u, err := user.LookupId(strconv.FormatUint(uid, 10)); err == nil {
		name = u.Username
	}
	if r.users == nil {
		r.users = map[uint64]string{}
	}
	r.users[uid] = name
	return name
}

// decodeTuple reads a tuple of type t from b, laid out as
// btgen.TupleLayout says; what b lacks reads as zeros.
func (r *Runner) decodeTuple(t btlang.Type, b []byte) btprint.Value {
	v := btprint.Value{Kind: btprint.ValueTuple}
	offs, _ := btgen.TupleLayout(t)
	for i, et := range t.Elems {
		var e []byte
		if offs[i] < len(b) {
			e = b[offs[i]:]
		}
		switch et.Kind {
		case btlang.KindString:
			v.Elems = append(v.Elems, btprint.Value{Kind: btprint.ValueString, Str: cString(e[:min(len(e), et.Size)])})
		case btlang.KindTuple:
			v.Elems = append(v.Elems, r.decodeTuple(et, e))
		case btlang.KindRecord, btlang.KindArray:
			c := btgen.CValue(et)
			raw := make([]byte, c.Size)
			copy(raw, e)
			v.Elems = append(v.Elems, btprint.Value{Kind: btprint.ValueC, C: c, Raw: raw})
		case btlang.KindTimestamp:
			v.Elems = append(v.Elems, btprint.Value{Kind: btprint.ValueString, Str: r.timestamp(e)})
		default:
			var n int64
			if len(e) >= 8 {
				n = int64(binary.NativeEndian.Uint64(e))
			}
			v.Elems = append(v.Elems, btprint.Value{Kind: btprint.ValueInt, Int: n, Signed: et.Signed})
		}
	}
	return v
}

// bufBytes returns the bytes of a buffer laid out as btgen.BufSize says:
// its length, then its bytes.
func bufBytes(b []byte) []byte {
	if len(b) < 8 {
		return nil
	}
	n := binary.NativeEndian.Uint64(b)
	return b[8 : 8+min(n, uint64(len(b)-8))]
}

// timestamp prints a strftime() value (btgen.TimestampSize bytes: the
// format's id, the nanoseconds since boot) as bpftrace 0.17 does: the
// boot time (CLOCK_REALTIME minus CLOCK_BOOTTIME) plus the nanoseconds,
// in local time, by the format with %f the microseconds (6 digits).
func (r *Runner) timestamp(b []byte) string {
	if len(b) < btgen.TimestampSize {
		return ""
	}
	id := binary.NativeEndian.Uint64(b)
	ns := binary.NativeEndian.Uint64(b[8:])
	if id >= uint64(len(r.prog.Strftimes)) {
		return ""
	}
	if r.boot.IsZero() {
		var real, boot unix.Timespec
		if unix.ClockGettime(unix.CLOCK_REALTIME, &real) != nil || unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot) != nil {
			return "(?)"
		}
		r.boot = time.Unix(0, real.Nano()-boot.Nano())
	}
	t := r.boot.Add(time.Duration(ns))
	// bpftrace adds the boot time's nanoseconds and the value before
	// taking the seconds, then the microseconds of that sum.
	sec := time.Unix(t.Unix(), 0).Local()
	us := fmt.Sprintf("%06d", t.Nanosecond()/1000)
	format := strings.ReplaceAll(r.prog.Strftimes[id], "%f", us)
	return string(btprint.Strftime(nil, format, sec))
}

// inetString prints an ntop() value (btgen.InetSize bytes) as
// inet_ntop(3) does; a family other than AF_INET and AF_INET6 prints "".
func inetString(b []byte) string {
	if len(b) < btgen.InetSize {
		return ""
	}
	switch binary.NativeEndian.Uint64(b) {
	case unix.AF_INET:
		return netip.AddrFrom4([4]byte(b[8:12])).String()
	case unix.AF_INET6:
		return netip.AddrFrom16([16]byte(b[8:24])).String()
	}
	return ""
}
