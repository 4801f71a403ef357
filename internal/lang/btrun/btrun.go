package btrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/bpf/attach"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/btprint"
	"github.com/usdtkit/usdtkit/internal/lang/layout"
	"github.com/usdtkit/usdtkit/internal/lang/printf"
	"github.com/usdtkit/usdtkit/internal/stacks/symbolize"
)

// DefaultPollInterval is how often Run looks at the ring buffer and the
// traced process when nothing wakes it.
const DefaultPollInterval = 50 * time.Millisecond

// Options tune Start. The zero value traces every process and prints
// bpftrace's text to os.Stdout.
type Options struct {
	// PIDs restrict the probes to these processes; Run also ends when
	// all of them have exited. A site with its own Site.PID is attached
	// for that process only; the others once per PID. Empty: every
	// process.
	PIDs []int
	// OnEvent receives each event record (btgen.RecEvent, the whole
	// record, valid only during the call); an error ends Run, which
	// returns it. Nil: a program with events is refused by Start.
	OnEvent func(rec []byte) error
	// Out receives printf lines, print() output and the maps at exit,
	// through a buffer Run flushes whenever the ring buffer is empty and
	// before it returns; nil means os.Stdout.
	Out io.Writer
	// Output is text or JSON lines, as bpftrace's -f.
	Output btprint.Output
	// Classic forces classic uprobe links even where uprobe_multi exists.
	Classic bool
	// PollInterval; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// Warn, when not nil, is called once by Start with a *RefusedError
	// when the kernel refused some sites of the program's probes (and
	// took others: when it took none, Start returns the error); and, by
	// Start or Run, once per object of a traced process through which
	// the walk of stack keys with call frame information steps by frame
	// pointer instead: an object whose CFI has no table
	// (unwind.ErrTableTooLarge, damage), or for which the tables have no
	// room (an error wrapping unwind.ErrTablesFull). See cfitables.go.
	Warn func(error)
	// CPID is the PID of the command the caller started for the
	// program, what cpid reads; a program that reads it (Program.CPID)
	// is refused without one.
	CPID int
	// PrintMaps, when not nil, is read by Run between records: each
	// value received (a SIGUSR1 the caller relays) prints every map to
	// Out as bpftrace does on SIGUSR1, and the trace goes on.
	PrintMaps <-chan os.Signal
	// Attached, when not 0, is the count Run prints first, in
	// bpftrace's line "Attaching N probes..." (btprint.AppendAttached).
	Attached int
	// Stderr receives the errors of cat() (a file it cannot read) as
	// bpftrace prints them; nil means os.Stderr.
	Stderr io.Writer
	// CatBytesMax is the most bytes cat() prints of a file, as
	// bpftrace's BPFTRACE_CAT_BYTES_MAX; 0 means the program's
	// cat_bytes_max config, or else DefaultCatBytesMax.
	CatBytesMax int
}

// DefaultCatBytesMax is the most bytes cat() prints of a file by
// default, as in bpftrace.
const DefaultCatBytesMax = 10240

// Runner is a loaded and attached program.
type Runner struct {
	prog  *btgen.Program
	opts  Options
	coll  *ebpf.Collection
	links []link.Link
	// stubLinks attach BEGIN, END and interval blocks to fire: they
	// stay after links close, for END.
	stubLinks []link.Link
	// exited says exit() ran: the records after its own are dropped
	// until the probes are detached, as bpftrace drops them.
	exited bool
	rd     *ringbuf.Reader
	// pidfds of Options.PIDs; -1 once seen exited.
	pidfds []int
	buf    []byte
	// w buffers Options.Out: Run flushes it whenever the ring is empty
	// (before it waits) and before it returns, not once per record.
	w    *bufio.Writer
	rec  ringbuf.Record
	args []printf.Arg
	// warm is closed when Start's warm-up (Warm) has ended.
	warm <-chan struct{}
	// closeWaits counts Run's reads while the links close that returned
	// no record (one: the Flush after the last link), for tests.
	closeWaits int
	// stacks symbolizes ustack keys and arguments (stacks.go).
	stacks stacks
	// user are the maps counted in user space by index in prog.Maps
	// (nil: not one, or empty), userDropped the hits of new keys they
	// had no room for, keyBuf a key being built (keymaps.go).
	user        []*userMap
	userDropped uint64
	keyBuf      []byte
	// users caches the names of user ids (username).
	users map[uint64]string
	// boot is when the machine booted, in CLOCK_REALTIME, to print
	// strftime() values; zero until the first is printed.
	boot time.Time
}

// Start loads prog and attaches it. Errors wrap ebpf.ErrNotSupported when
// the kernel lacks what the program needs, and os.ErrPermission without
// the privileges.
func Start(prog *btgen.Program, opts *Options) (_ *Runner, err error) {
	r := &Runner{prog: prog, warm: Warm()}
	if opts != nil {
		r.opts = *opts
	}
	if len(prog.Events) > 0 && r.opts.OnEvent == nil {
		return nil, fmt.Errorf("the program sends events: Options.OnEvent is nil")
	}
	if prog.CPID && r.opts.CPID <= 0 {
		return nil, fmt.Errorf("the program reads cpid, the PID of a command it starts: give it one (-c)")
	}
	if r.opts.Out == nil {
		r.opts.Out = os.Stdout
	}
	if r.opts.PollInterval <= 0 {
		r.opts.PollInterval = DefaultPollInterval
	}
	r.w = bufio.NewWriterSize(r.opts.Out, 64<<10)
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	multi := !r.opts.Classic && features.HaveBPFLinkUprobeMulti() == nil
	spec := prog.Spec.Copy()
	if !multi {
		for _, p := range spec.Programs {
			p.AttachType = ebpf.AttachNone
		}
	}
	// The traced processes' mappings, and the tables of a walk with
	// CFI, before the program loads: its first hit finds them.
	if err := r.rememberTargets(spec); err != nil {
		return nil, err
	}
	r.coll, err = loadCollection(spec, onlyPID(prog, r.opts.PIDs), r.stacks.tableMaps(spec))
	if err != nil {
		return nil, fmt.Errorf("load program: %w", err)
	}
	if prog.CPID {
		if err := r.coll.Maps[btgen.MapStart].Put(uint32(1), uint64(r.opts.CPID)); err != nil {
			return nil, fmt.Errorf("write cpid: %w", err)
		}
	}
	// What needs no link is done before the first one, which waits for
	// the rest of the warm-up's grace period.
	r.rd, err = ringbuf.NewReader(r.coll.Maps[btgen.MapEvents])
	if err != nil {
		return nil, fmt.Errorf("ring buffer reader: %w", err)
	}
	for _, pid := range r.opts.PIDs {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			return nil, fmt.Errorf("process %d: %w", pid, err)
		}
		r.pidfds = append(r.pidfds, fd)
	}
	if err := r.fillProfilePIDs(); err != nil {
		return nil, err
	}
	// The sites of probes the kernel refuses, and how many it took.
	rerr, attached := &RefusedError{}, 0
	// The kernel runs the consumers of one uprobe newest first
	// (consumer_add puts each at the head of the list): blocks are
	// attached last to first so that several on one site run in the
	// program's order, as bpftrace 0.17 attaches them (attach_reverse).
	refusedBy := make([]map[int]error, len(prog.Blocks))
	for i := len(prog.Blocks) - 1; i >= 0; i-- {
		b := &prog.Blocks[i]
		if b.Kind == btlang.ProbeProfile {
			if err := r.attachProfile(r.coll.Programs[b.Prog], b); err != nil {
				return nil, err
			}
			continue
		}
		sites, pids := b.Sites, r.opts.PIDs
		if b.Kind != 0 {
			stub, err := stubSite()
			if err != nil {
				return nil, err
			}
			// Classic links filter by thread, not process: take every
			// caller; the token tells this runner's calls apart.
			sites, pids = []btgen.Site{stub}, []int{os.Getpid()}
			if !multi {
				pids = nil
			}
		}
		n0 := len(r.links)
		refused, n, err := r.attach(r.coll.Programs[b.Prog], sites, multi, pids)
		if err != nil {
			return nil, err
		}
		if b.Kind != 0 {
			r.stubLinks = append(r.stubLinks, r.links[n0:]...)
			r.links = r.links[:n0]
			continue
		}
		attached += n
		refusedBy[i] = refused
	}
	for i := range prog.Blocks {
		sites := prog.Blocks[i].Sites
		for j := range sites {
			if why, ok := refusedBy[i][j]; ok {
				s := &sites[j]
				rerr.Sites = append(rerr.Sites, RefusedSite{Probe: s.Probe, Func: symtab.PlainName(s.Func), Object: siteObject(s), Offset: s.Offset, Err: why})
			}
		}
	}
	if len(rerr.Sites) > 0 {
		rerr.Attached = attached
		if attached == 0 {
			return nil, rerr
		}
		if r.opts.Warn != nil {
			r.opts.Warn(rerr)
		}
	}
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		return nil, fmt.Errorf("clock: %w", err)
	}
	if err := r.coll.Maps[btgen.MapStart].Put(uint32(0), uint64(now.Nano())); err != nil {
		return nil, fmt.Errorf("write start time: %w", err)
	}
	return r, nil
}

// attach attaches prog to sites: per file, kind (entry or return) and
// process, one multi link, or classic links (attach.AttachSites). A
// site with a Site.PID is attached for it, the others for each of pids
// (every process if none). It returns the indexes in sites of the sites
// the kernel refused for every process, with the kernel's reason, and
// how many sites it attached.
func (r *Runner) attach(prog *ebpf.Program, sites []btgen.Site, multi bool, pids []int) (refused map[int]error, attached int, err error) {
	type group struct {
		obj    attach.Object
		pid    int
		anyRef bool
	}
	var groups []*group
	for i, s := range sites {
		for _, pid := range sitePIDs(&s, pids) {
			var g *group
			for _, h := range groups {
				if h.obj.Path == s.Path && h.obj.Return == s.Return && h.pid == pid {
					g = h
				}
			}
			if g == nil {
				g = &group{obj: attach.Object{Path: s.Path, Name: s.Object, Return: s.Return}, pid: pid}
				groups = append(groups, g)
			}
			g.obj.Offsets = append(g.obj.Offsets, s.Offset)
			g.obj.Cookies = append(g.obj.Cookies, uint64(i))
			g.obj.RefCtrOffsets = append(g.obj.RefCtrOffsets, s.RefCtrOffset)
			g.anyRef = g.anyRef || s.RefCtrOffset != 0
		}
	}
	// ok has the sites attached for some process.
	ok := make(map[int]bool)
	for _, g := range groups {
		if !g.anyRef {
			g.obj.RefCtrOffsets = nil
		}
		links, ref, err := attach.AttachSites(prog, &g.obj, g.pid, multi)
		if err != nil {
			return nil, 0, err
		}
		r.links = append(r.links, links...)
		next := 0
		for j, c := range g.obj.Cookies {
			if next < len(ref) && ref[next].Index == j {
				if refused == nil {
					refused = make(map[int]error)
				}
				refused[int(c)] = ref[next].Err
				next++
				continue
			}
			ok[int(c)] = true
		}
	}
	for i := range ok {
		delete(refused, i)
	}
	return refused, len(ok), nil
}

// errStop ends the read loop after exit().
var errStop = errors.New("exit")

// Run reads and handles records until exit(), the traced process's exit
// or ctx's end, then detaches, handles what remains in the ring and prints
// the maps and the loss counts. It returns the first error writing to
// Options.Out or reading the kernel's maps.
func (r *Runner) Run(ctx context.Context) (err error) {
	defer func() {
		if ferr := r.w.Flush(); err == nil {
			err = ferr
		}
	}()
	// The stub's programs run synchronously within fire, so their
	// records (an exit() among them) are in the ring when it returns:
	// handle them before anything fires again.
	if r.opts.Attached > 0 {
		r.buf = btprint.AppendAttached(r.buf[:0], r.opts.Attached, r.opts.Output)
		if _, err := r.w.Write(r.buf); err != nil {
			return err
		}
	}
	r.fireAll(btlang.ProbeBegin)
	stop, err := r.drain()
	if err != nil {
		return err
	}
	next := make([]time.Time, len(r.prog.Blocks))
	for i, b := range r.prog.Blocks {
		if b.Kind == btlang.ProbeInterval {
			next[i] = time.Now().Add(b.Period)
		}
	}
	// The traced process is polled when the ring is empty and at least
	// every PollInterval, not once per record.
	checked := time.Now()
	for !stop && ctx.Err() == nil {
		select {
		case <-r.opts.PrintMaps:
			if err := r.printMaps(); err != nil {
				return err
			}
		default:
		}
		now := time.Now()
		idle := r.rd.AvailableBytes() == 0
		if idle || now.Sub(checked) >= r.opts.PollInterval {
			r.stacks.refreshTargets(r.opts.PIDs)
			r.stacks.serveWanted(now)
			if r.targetGone() {
				break
			}
			checked = now
		}
		if idle {
			if err := r.w.Flush(); err != nil {
				return err
			}
		}
		deadline := now.Add(r.opts.PollInterval)
		for i, b := range r.prog.Blocks {
			if b.Kind != btlang.ProbeInterval || stop {
				continue
			}
			if !now.Before(next[i]) {
				fire(b.Token)
				next[i] = next[i].Add(b.Period)
				if next[i].Before(now) {
					next[i] = now.Add(b.Period)
				}
				if stop, err = r.drain(); err != nil {
					return err
				}
			}
			if next[i].Before(deadline) {
				deadline = next[i]
			}
		}
		if stop {
			break
		}
		r.rd.SetDeadline(deadline)
		err := r.rd.ReadInto(&r.rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read ring buffer: %w", err)
		}
		if err := r.handle(r.rec.RawSample); errors.Is(err, errStop) {
			stop = true
		} else if err != nil {
			return err
		}
	}
	// As bpftrace: the probes detach, then END runs. The ring is read
	// while the links close (each waits for an SRCU grace period): a
	// probe that keeps firing would fill it meanwhile. After exit() its
	// records are dropped (handle); after an interrupt or the traced
	// process's exit they are printed.
	// The read blocks until Flush, once every link is closed: with a
	// deadline, cilium's poller rounds the wait down to whole
	// milliseconds, so short deadlines spin the CPU for the whole detach.
	// Flush comes before detached closes, so never after Close.
	detached := make(chan struct{})
	go func() {
		r.detach()
		r.rd.Flush()
		close(detached)
	}()
	r.rd.SetDeadline(time.Time{})
	for {
		// ringbuf.ErrFlushed comes after the records in the ring at
		// Flush.
		r.closeWaits++
		if err := r.rd.ReadInto(&r.rec); err != nil {
			<-detached
			break
		}
		r.closeWaits--
		if err := r.handle(r.rec.RawSample); err != nil && !errors.Is(err, errStop) {
			<-detached
			return err
		}
	}
	// END's records; an exit() in END drops the records after its own.
	r.exited = false
	r.fireAll(btlang.ProbeEnd)
	for {
		r.rd.SetDeadline(time.Now())
		if err := r.rd.ReadInto(&r.rec); err != nil {
			break
		}
		if err := r.handle(r.rec.RawSample); err != nil && !errors.Is(err, errStop) {
			return err
		}
	}
	maps, err := r.Maps()
	if err != nil {
		return err
	}
	var out []byte
	if !r.prog.Settings.NoExitMaps && (len(maps) > 0 || len(r.prog.Events) == 0) {
		// A program of events only prints nothing at exit but losses;
		// config = { print_maps_on_exit = false } nothing either.
		out = btprint.AppendExit(out, maps, r.opts.Output)
	}
	events, updates, nested, err := r.lost()
	if err != nil {
		return err
	}
	if nested > 0 {
		out = fmt.Appendf(out, "usdtkit: %d hits skipped (a probe fired while a preempted one ran on the same CPU)\n", nested)
	}
	if events > 0 {
		out = btprint.AppendLost(out, events, r.opts.Output)
	}
	if updates > 0 {
		out = fmt.Appendf(out, "usdtkit: %d map updates failed (a map was full)\n", updates)
	}
	if n := r.stacks.unnamedJIT(); n > 0 {
		out = fmt.Appendf(out, "usdtkit: %d stack frames in JIT code are unnamed: no perf map (/tmp/perf-PID.map) or jitdump names their addresses (for Java, start it with -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit or run jcmd PID Compiler.perfmap)\n", n)
	}
	_, err = r.w.Write(out)
	return err
}

// printMaps writes every map as bpftrace does on SIGUSR1: as at exit,
// without the two newlines before them.
func (r *Runner) printMaps() error {
	maps, err := r.Maps()
	if err != nil {
		return err
	}
	r.buf = btprint.AppendMaps(r.buf[:0], maps, r.opts.Output)
	_, err = r.w.Write(r.buf)
	return err
}

// drain handles the records in the ring without waiting; stop reports an
// exit() among them (the records after it stay in the ring).
func (r *Runner) drain() (stop bool, err error) {
	for {
		r.rd.SetDeadline(time.Now())
		err := r.rd.ReadInto(&r.rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read ring buffer: %w", err)
		}
		if err := r.handle(r.rec.RawSample); errors.Is(err, errStop) {
			return true, nil
		} else if err != nil {
			return false, err
		}
	}
}

// fireAll runs the blocks of a kind (BEGIN, END) in block order.
func (r *Runner) fireAll(kind btlang.ProbeKind) {
	for _, b := range r.prog.Blocks {
		if b.Kind == kind {
			fire(b.Token)
		}
	}
}

// sitePIDs returns the processes site s is attached for: its own, or
// each of pids, or every process (0).
func sitePIDs(s *btgen.Site, pids []int) []int {
	if s.PID != 0 {
		return []int{s.PID}
	}
	if len(pids) == 0 {
		return []int{0}
	}
	return pids
}

// targetGone reports whether every traced process has exited.
func (r *Runner) targetGone() bool {
	if len(r.pidfds) == 0 {
		return false
	}
	gone := true
	for i, fd := range r.pidfds {
		if fd < 0 {
			continue
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			unix.Close(fd)
			r.pidfds[i] = -1
			r.stacks.removeTables(r.opts.PIDs[i])
			continue
		}
		gone = false
	}
	return gone
}

// handle acts on one record.
func (r *Runner) handle(rec []byte) error {
	if len(rec) < 8 {
		return fmt.Errorf("record of %d bytes", len(rec))
	}
	kind := binary.NativeEndian.Uint32(rec)
	id := int(binary.NativeEndian.Uint32(rec[4:]))
	if r.exited && kind != btgen.RecKey && kind != btgen.RecStackPID {
		// Dropped as bpftrace drops them; the records that name a
		// map key's stack are still needed to print the maps.
		return nil
	}
	switch kind {
	case btgen.RecPrintf:
		if id >= len(r.prog.Printfs) {
			return fmt.Errorf("printf record %d of %d", id, len(r.prog.Printfs))
		}
		p := &r.prog.Printfs[id]
		if len(rec) < p.Size {
			return fmt.Errorf("printf record of %d bytes, want %d", len(rec), p.Size)
		}
		args := r.args[:0]
		for range p.Args {
			args = append(args, printf.Arg{})
		}
		r.args = args
		var stacks [][]symbolize.Frame
		for i, a := range p.Args {
			switch {
			case a.String:
				args[i].Str = cString(rec[a.Off : a.Off+a.Size])
			case a.Probe:
				args[i].Str = r.probeName(binary.NativeEndian.Uint64(rec[a.Off:]))
			case a.Usym:
				args[i].Str = r.usymName(rec[a.Off:])
			case a.Buf:
				args[i].Bytes = bufBytes(rec[a.Off : a.Off+a.Size])
			case a.Time:
				args[i].Str = r.timestamp(rec[a.Off : a.Off+a.Size])
			case a.Inet:
				args[i].Str = inetString(rec[a.Off : a.Off+a.Size])
			case a.Username:
				args[i].Str = r.username(binary.NativeEndian.Uint64(rec[a.Off:]))
			case a.C != nil:
				args[i].Str = string(rec[a.Off : a.Off+a.Size])
			case a.Stack != nil:
				var frames []symbolize.Frame
				args[i].Str, frames = r.printfStack(&a, rec)
				stacks = append(stacks, frames)
			default:
				args[i].Int = int64(binary.NativeEndian.Uint64(rec[a.Off:]))
			}
		}
		if p.Action != btgen.ActionPrintf {
			return r.action(p, args)
		}
		if p.Value {
			v := btprint.Value{Kind: btprint.ValueString, Str: args[0].Str}
			if a := p.Args[0]; a.Tuple != nil {
				v = r.decodeTuple(*a.Tuple, rec[a.Off:a.Off+a.Size])
			} else if a.C != nil {
				v = btprint.Value{Kind: btprint.ValueC, C: a.C, Raw: []byte(args[0].Str)}
			} else if !a.String && !a.Probe && !a.Usym && !a.Username && !a.Time && !a.Buf && !a.Inet && a.Stack == nil {
				v = btprint.Value{Kind: btprint.ValueInt, Int: args[0].Int, Signed: p.ValueSigned}
			}
			r.buf = btprint.AppendValue(r.buf[:0], v, r.opts.Output)
		} else {
			r.buf = btprint.AppendPrintf(r.buf[:0], p.Format, args, r.opts.Output)
		}
		if r.opts.Output == btprint.OutputJSON && len(stacks) > 0 {
			r.buf = appendPrintfStacks(r.buf, stacks)
		}
		_, err := r.w.Write(r.buf)
		return err
	case btgen.RecEvent:
		return r.opts.OnEvent(rec)
	case btgen.RecKey:
		return r.keyHit(id, rec)
	case btgen.RecStackPID:
		if len(rec) >= 16 {
			r.stacks.refresh(int(binary.NativeEndian.Uint64(rec[8:])))
		}
		return nil
	case btgen.RecExit:
		r.exited = true
		return errStop
	case btgen.RecTime:
		if id >= len(r.prog.Times) {
			return fmt.Errorf("time record %d of %d", id, len(r.prog.Times))
		}
		r.buf = btprint.AppendTime(r.buf[:0], r.prog.Times[id], time.Now(), r.opts.Output)
		_, err := r.w.Write(r.buf)
		return err
	case btgen.RecPrint:
		if id >= len(r.prog.Prints) {
			return fmt.Errorf("print record %d of %d", id, len(r.prog.Prints))
		}
		p := r.prog.Prints[id]
		if p.Map >= len(r.prog.Maps) {
			return fmt.Errorf("print record of map %d of %d", p.Map, len(r.prog.Maps))
		}
		m, err := r.readMapAt(p.Map)
		if err != nil {
			return err
		}
		r.buf = btprint.AppendMap(r.buf[:0], m, r.opts.Output, &btprint.PrintOptions{Top: p.Top, Div: p.Div})
		_, err = r.w.Write(r.buf)
		return err
	case btgen.RecClear, btgen.RecZero:
		if id >= len(r.prog.Maps) {
			return fmt.Errorf("map record %d of %d", id, len(r.prog.Maps))
		}
		mi := &r.prog.Maps[id]
		if mi.User {
			r.clearUserMap(id, kind == btgen.RecZero)
			return nil
		}
		return r.clearMap(mi, kind == btgen.RecZero)
	}
	return fmt.Errorf("record of unknown kind %d", kind)
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// clearMap deletes every key of mi, or with zero sets every value to zeros.
func (r *Runner) clearMap(mi *btgen.MapInfo, zero bool) error {
	if err := r.clearSlots(mi, zero); err != nil {
		return err
	}
	m := r.coll.Maps[mi.BPF]
	var keys [][]byte
	if err := r.eachEntry(mi, func(k []byte, _ [][]byte) error {
		keys = append(keys, append([]byte(nil), k...))
		return nil
	}); err != nil {
		return err
	}
	if mi.Array {
		return r.clearArray(mi, keys, zero)
	}
	for _, k := range keys {
		var err error
		switch {
		case !zero:
			err = m.Delete(k)
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				err = nil
			}
		case mi.PerCPU:
			vals := make([][]byte, ebpf.MustPossibleCPU())
			for i := range vals {
				vals[i] = make([]byte, mi.ValueSize)
			}
			err = m.Put(k, vals)
		default:
			err = m.Put(k, make([]byte, mi.ValueSize))
		}
		if err != nil {
			return fmt.Errorf("clear %s: %w", mi.Map.Name, err)
		}
	}
	return nil
}

// clearArray clears an array map's slots (zeros, set flags too) or, with
// zero, zeros their values and keeps which slots were written.
func (r *Runner) clearArray(mi *btgen.MapInfo, keys [][]byte, zero bool) error {
	m := r.coll.Maps[mi.BPF]
	for _, k := range keys {
		var err error
		if mi.PerCPU {
			var vals [][]byte
			if err := m.Lookup(k, &vals); err != nil {
				return fmt.Errorf("clear %s: %w", mi.Map.Name, err)
			}
			for _, v := range vals {
				clearValue(mi, v, zero)
			}
			err = m.Put(k, vals)
		} else {
			var v []byte
			if err := m.Lookup(k, &v); err != nil {
				return fmt.Errorf("clear %s: %w", mi.Map.Name, err)
			}
			clearValue(mi, v, zero)
			err = m.Put(k, v)
		}
		if err != nil {
			return fmt.Errorf("clear %s: %w", mi.Map.Name, err)
		}
	}
	return nil
}

// clearValue zeros an array slot's value, and its set flag unless zero.
func clearValue(mi *btgen.MapInfo, v []byte, zero bool) {
	n := len(v)
	if zero {
		n = min(n, mi.SetOff)
	}
	clear(v[:n])
}

// eachEntry calls fn with each key of mi's BPF map and its value: one per
// CPU for a per-CPU map, else one. k and vals are reused between calls;
// fn copies what it keeps.
func (r *Runner) eachEntry(mi *btgen.MapInfo, fn func(k []byte, vals [][]byte) error) error {
	it := r.coll.Maps[mi.BPF].Iterate()
	var k, v []byte
	var pv [][]byte
	one := make([][]byte, 1)
	for {
		var vals [][]byte
		if mi.PerCPU {
			if !it.Next(&k, &pv) {
				break
			}
			vals = pv
		} else {
			if !it.Next(&k, &v) {
				break
			}
			one[0] = v
			vals = one
		}
		if err := fn(k, vals); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read %s: %w", mi.Map.Name, err)
	}
	return nil
}

// isSet reports whether an array slot's value (one CPU's) was written.
func isSet(mi *btgen.MapInfo, v []byte) bool {
	return len(v) >= mi.SetOff+8 && binary.NativeEndian.Uint64(v[mi.SetOff:]) != 0
}

// Maps reads every map of the program into btprint's model, values summed
// over CPUs.
func (r *Runner) Maps() ([]*btprint.Map, error) {
	var maps []*btprint.Map
	for i := range r.prog.Maps {
		m, err := r.readMapAt(i)
		if err != nil {
			return nil, err
		}
		maps = append(maps, m)
	}
	return maps, nil
}

var aggs = map[btlang.AggKind]btprint.Agg{
	btlang.AggCount: btprint.AggCount, btlang.AggSum: btprint.AggSum,
	btlang.AggMin: btprint.AggMin, btlang.AggMax: btprint.AggMax,
	btlang.AggAvg: btprint.AggAvg, btlang.AggStats: btprint.AggStats,
	btlang.AggHist: btprint.AggHist, btlang.AggLhist: btprint.AggLhist,
}

// readMapAt reads map i of the program.
func (r *Runner) readMapAt(i int) (*btprint.Map, error) {
	return r.readMap(&r.prog.Maps[i], i)
}

func (r *Runner) readMap(mi *btgen.MapInfo, idx int) (*btprint.Map, error) {
	bm := mi.Map
	m := &btprint.Map{Name: bm.Name, Keys: mi.Keys}
	switch {
	case mi.ValueC != nil:
		m.Agg, m.Value = btprint.AggValue, mi.ValueC
	case bm.Agg == btlang.AggNone && (bm.Value.Kind == btlang.KindString || mi.ValueName || mi.ValueBuf || mi.ValueTime || mi.ValueUsym):
		m.Agg = btprint.AggString
	case bm.Agg == btlang.AggNone && bm.Value.Kind == btlang.KindTuple:
		m.Agg = btprint.AggTuple
	case bm.Agg == btlang.AggNone:
		m.Agg, m.Signed = btprint.AggInt, bm.Value.Signed
	default:
		m.Agg = aggs[bm.Agg]
		m.Signed = bm.AggArg.Signed
		m.Lhist = layout.LinearRange{Min: bm.LhistMin, Max: bm.LhistMax, Step: bm.LhistStep}
	}
	if mi.User {
		r.readUserMap(idx, m)
		mergeStackKeys(mi, m)
		return m, nil
	}
	if err := r.eachEntry(mi, func(k []byte, pv [][]byte) error {
		v := pv[0]
		key := k
		if mi.Array {
			written := false
			if mi.PerCPU {
				for _, c := range pv {
					written = written || isSet(mi, c)
				}
			} else {
				written = isSet(mi, v)
			}
			if !written || len(k) < 4 {
				return nil
			}
			// The u32 slot is the probe's id: decode it as an 8-byte key.
			key = binary.NativeEndian.AppendUint64(nil, uint64(binary.NativeEndian.Uint32(k)))
		}
		e := btprint.MapEntry{Key: r.decodeKey(mi, key)}
		if !mi.PerCPU {
			if mi.ValueName && len(v) >= 8 {
				e.Str = r.probeName(binary.NativeEndian.Uint64(v))
			} else if mi.ValueBuf {
				e.Str = printf.FormatBuffer(bufBytes(v), 0)
			} else if mi.ValueTime {
				e.Str = r.timestamp(v)
			} else if mi.ValueUsym && len(v) >= 16 {
				e.Str = r.usymName(v)
			} else if m.Agg == btprint.AggTuple {
				e.Tuple = r.decodeTuple(bm.Value, v)
				e.Str = string(btprint.AppendValue(nil, e.Tuple, btprint.OutputText))
				e.Str = e.Str[:len(e.Str)-1]
			} else if m.Agg == btprint.AggString {
				e.Str = cString(v)
			} else if m.Agg == btprint.AggValue {
				e.Raw = bytes.Clone(v[:min(len(v), mi.ValueC.Size)])
			} else {
				e.Value = binary.NativeEndian.Uint64(v)
			}
			m.Entries = append(m.Entries, e)
			return nil
		}
		set := false
		for _, c := range pv {
			if len(c) < mi.ValueSize {
				return fmt.Errorf("read %s: per-CPU value of %d bytes", bm.Name, len(c))
			}
			u := func(i int) uint64 { return binary.NativeEndian.Uint64(c[8*i:]) }
			switch m.Agg {
			case btprint.AggCount, btprint.AggSum:
				e.Value += u(0)
			case btprint.AggMin, btprint.AggMax:
				if u(1) == 0 {
					continue
				}
				x := int64(u(0))
				if !set || m.Agg == btprint.AggMin && x < int64(e.Value) || m.Agg == btprint.AggMax && x > int64(e.Value) {
					e.Value = uint64(x)
				}
				set = true
			case btprint.AggAvg, btprint.AggStats:
				e.Count += int64(u(0))
				e.Total += int64(u(1))
			case btprint.AggHist, btprint.AggLhist:
				if e.Buckets == nil {
					e.Buckets = make([]uint64, mi.Buckets)
				}
				for b := range mi.Buckets {
					e.Buckets[b] += u(b)
				}
			}
		}
		// A min or max no CPU has set was zeroed (zero()): it prints 0,
		// as in bpftrace.
		m.Entries = append(m.Entries, e)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := r.slotEntries(mi, m); err != nil {
		return nil, err
	}
	mergeStackKeys(mi, m)
	if len(mi.Keys) == 0 && m.Agg == btprint.AggCount && len(m.Entries) == 0 {
		// bpftrace 0.17 prints a count() without keys as 0 when never
		// written, cleared or deleted (no other kind of map).
		m.Entries = append(m.Entries, btprint.MapEntry{})
	}
	return m, nil
}

// probeName returns the name of probe id.
func (r *Runner) probeName(id uint64) string {
	if id < uint64(len(r.prog.Probes)) {
		return r.prog.Probes[id]
	}
	return fmt.Sprintf("probe%d", id)
}

func (r *Runner) decodeKey(mi *btgen.MapInfo, k []byte) []btprint.Key {
	if len(mi.Keys) == 0 {
		return nil
	}
	keys := make([]btprint.Key, len(mi.Keys))
	for i, f := range mi.Keys {
		off := mi.KeyOffs[i]
		switch {
		case i < len(mi.KeyStacks) && mi.KeyStacks[i] != nil:
			if off+btgen.StackKeySize <= len(k) {
				id, t := r.keyStack(mi.KeyStacks[i], k[off:])
				keys[i] = btprint.Key{Int: id, Str: t.text}
			}
		case mi.KeyProbe[i]:
			if off+8 <= len(k) {
				keys[i].Str = r.probeName(binary.NativeEndian.Uint64(k[off:]))
			}
		case i < len(mi.KeyUsym) && mi.KeyUsym[i]:
			if off+16 <= len(k) {
				keys[i].Str = r.usymName(k[off:])
			}
		case i < len(mi.KeyBuf) && mi.KeyBuf[i]:
			if off+f.Size <= len(k) {
				keys[i].Str = printf.FormatBuffer(bufBytes(k[off:off+f.Size]), 0)
			}
		case i < len(mi.KeyTime) && mi.KeyTime[i]:
			if off+btgen.TimestampSize <= len(k) {
				keys[i].Str = r.timestamp(k[off : off+btgen.TimestampSize])
			}
		case f.Kind == layout.KeyInt:
			if off+8 <= len(k) {
				keys[i].Int = int64(binary.NativeEndian.Uint64(k[off:]))
			}
		case f.Kind == layout.KeyString:
			if off+f.Size <= len(k) {
				keys[i].Str = cString(k[off : off+f.Size])
			}
		case f.Kind == layout.KeyValue:
			if off+f.Size <= len(k) {
				keys[i].Str = string(btprint.AppendCKey(nil, f.Value, k[off:off+f.Size]))
			}
		}
	}
	return keys
}

// Lost returns how many records the ring buffer refused and how many map
// updates failed (full maps), summed over CPUs. Run also reports hits
// skipped by preemption (btgen.LostNested).
func (r *Runner) Lost() (events, updates uint64, err error) {
	events, updates, _, err = r.lost()
	return events, updates, err
}

// lost returns Lost's counts and the hits skipped while another program
// used their CPU's scratch value.
func (r *Runner) lost() (events, updates, nested uint64, err error) {
	m := r.coll.Maps[btgen.MapLost]
	for i, dst := range []*uint64{&events, &updates, &nested} {
		var vals []uint64
		if err := m.Lookup(uint32(i), &vals); err != nil {
			return 0, 0, 0, fmt.Errorf("read lost counts: %w", err)
		}
		for _, v := range vals {
			*dst += v
		}
	}
	// Hits of maps counted in user space that had no room.
	updates += r.userDropped
	return events, updates, nested, nil
}

// detach closes the links concurrently: closing a uprobe link waits for
// an SRCU grace period (uprobe_unregister_sync), tens of milliseconds
// each, which overlap when closed together.
func (r *Runner) detach() {
	closeLinks(r.links)
	r.links = nil
}

func closeLinks(links []link.Link) {
	var wg sync.WaitGroup
	for _, l := range links {
		wg.Go(func() { l.Close() })
	}
	wg.Wait()
}

// Close detaches and releases everything, and waits for Start's warm-up
// (Warm) to end; a second call returns nil.
func (r *Runner) Close() error {
	closeLinks(append(r.links, r.stubLinks...))
	r.links, r.stubLinks = nil, nil
	r.stacks.close()
	if r.rd != nil {
		r.rd.Close()
		r.rd = nil
	}
	if r.coll != nil {
		r.coll.Close()
		r.coll = nil
	}
	for _, fd := range r.pidfds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	r.pidfds = nil
	if r.warm != nil {
		<-r.warm
	}
	return nil
}
