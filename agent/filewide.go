package agent

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/trace"
)

// fileTracer is a program started file-wide on the executable a binary
// target names: its uprobes reach every process that maps the file from
// its exec on, before the agent hears of the process.
type fileTracer struct {
	path          string
	id            procfs.FileID
	t             *trace.Tracer
	sites, probes int
	cancel        context.CancelFunc
	done          chan struct{}
	// read guards t against Close while Collect reads it.
	read tracerRead
}

// fileWideSource reports whether src may be traced file-wide for a
// binary target: every probe is a usdt probe, uprobe or uretprobe with an
// empty path, so that it means the executable alone and reaches no
// process the target does not select (an explicit path would reach
// every process that maps that file; a profile probe samples every
// process; BEGIN, END and interval blocks run once per process started);
// no map is keyed by pid or tid (file-wide, the keys of the processes
// gone would stay in the kernel's map and fill it, where a process's own
// map leaves with it and its keys are bounded by the series limit); and
// no stack or user symbol is read (they are named with the process's
// mappings).
func fileWideSource(src string) bool {
	prog, err := btlang.Parse("source", []byte(src))
	if err != nil {
		return false
	}
	ok := true
	perProcess := func(n btlang.Node) bool {
		switch n := n.(type) {
		case *btlang.Builtin:
			ok = ok && !slices.Contains([]string{"ustack", "usym", "uaddr"}, n.Name)
		case *btlang.Call:
			ok = ok && !slices.Contains([]string{"ustack", "usym", "uaddr"}, n.Name)
		case *btlang.MapRef:
			for _, k := range n.Keys {
				btlang.Inspect(k, func(n btlang.Node) bool {
					if b, isB := n.(*btlang.Builtin); isB && (b.Name == "pid" || b.Name == "tid") {
						ok = false
					}
					return ok
				})
			}
		}
		return ok
	}
	for _, b := range prog.Blocks {
		for _, pr := range b.Probes {
			switch pr.Kind {
			case btlang.ProbeUSDT, btlang.ProbeUprobe, btlang.ProbeUretprobe:
				if pr.Path != "" {
					return false
				}
			default:
				return false
			}
		}
		btlang.Inspect(b, perProcess)
	}
	return ok
}

// startFiles starts p's program file-wide on each file its binary
// targets name (sels, read for this scan) that it is not running on: one
// that was replaced (another inode) is started on again. A file against
// which the program does not compile (a probe is in a library) is not
// tried again: its processes are traced one by one, from their attach.
func (a *Agent) startFiles(p *program, sels []selector) {
	if !p.fileWide {
		return
	}
	for i := range sels {
		s := &sels[i]
		if s.t.Binary == "" || !s.exeOK {
			continue
		}
		a.mu.Lock()
		running := p.fileTracer(s.exe) != nil
		a.mu.Unlock()
		if running || p.fileFailed[s.exe] {
			continue
		}
		prog, err := trace.Compile(p.cfg.Name, p.cfg.Source, compileOptions(&trace.CompileOptions{Executable: s.t.Binary}))
		var t *trace.Tracer
		if err == nil {
			t, err = trace.Start(prog, &trace.Options{Stdout: io.Discard, Classic: a.opts.Classic})
		}
		if err != nil {
			p.fileFailed[s.exe] = true
			if !noMatch(err) {
				a.mu.Lock()
				a.stats.attachErrors++
				a.mu.Unlock()
			}
			a.warnOnce(p.cfg.Name+"\x00"+err.Error(), fmt.Errorf("program %s, binary %s: %w (its processes are traced one by one, from their attach)", p.cfg.Name, s.t.Binary, err))
			continue
		}
		ft := &fileTracer{path: s.t.Binary, id: s.exe, t: t, sites: prog.Sites(), probes: prog.Probes(), done: make(chan struct{})}
		var ctx context.Context
		ctx, ft.cancel = context.WithCancel(context.Background())
		a.mu.Lock()
		p.files = append(p.files, ft)
		a.mu.Unlock()
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			if err := t.Run(ctx); err != nil {
				a.warn(fmt.Errorf("program %s, binary %s: %w", p.cfg.Name, ft.path, err))
			}
			close(ft.done)
		}()
	}
}

// fileTracer returns p's running file tracer of the file id, or nil;
// a.mu is held.
func (p *program) fileTracer(id procfs.FileID) *fileTracer {
	for _, ft := range p.files {
		if ft.id == id && ft.t != nil {
			return ft
		}
	}
	return nil
}

// stopFiles ends p's file tracers whose Run returned (all with every)
// and folds their maps into p's. They stay in p.files, their maps read
// by Collect, until folded.
func (a *Agent) stopFiles(p *program, every bool) {
	a.mu.Lock()
	var stop []*fileTracer
	for _, ft := range p.files {
		select {
		case <-ft.done:
			stop = append(stop, ft)
		default:
			if every {
				stop = append(stop, ft)
			}
		}
	}
	a.mu.Unlock()
	if len(stop) == 0 {
		return
	}
	for _, ft := range stop {
		ft.cancel()
	}
	for _, ft := range stop {
		<-ft.done
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ft := range stop {
		if maps, err := ft.t.Maps(); err != nil {
			a.warn(fmt.Errorf("program %s, binary %s: %w", p.cfg.Name, ft.path, err))
		} else {
			for i := range maps {
				p.fold(&maps[i])
			}
		}
		if lost, updates, err := ft.t.Lost(); err == nil {
			a.stats.lost += lost
			a.stats.updateFails += updates
		}
		ft.read.close(ft.t)
		ft.t = nil
	}
	keep := p.files[:0]
	for _, ft := range p.files {
		if ft.t != nil {
			keep = append(keep, ft)
		}
	}
	p.files = keep
}
