package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/eventfmt"
	"github.com/usdtkit/usdtkit/internal/functrace"
	"github.com/usdtkit/usdtkit/trace"
)

// eventWriter prints events as text lines or JSON objects.
type eventWriter struct {
	w       *bufio.Writer
	t       tracer
	json    bool
	formats map[string]*eventfmt.Format
	// wallOffset turns the kernel's CLOCK_MONOTONIC times into wall time.
	wallOffset int64
	buf        []byte
	lastFlush  time.Time
	// gt decodes Go functions' events, when tracing functions.
	gt *functrace.Tracer
	ge functrace.GoEvent
}

func newEventWriter(w io.Writer, t tracer, output string, formats map[string]*eventfmt.Format) *eventWriter {
	ew := &eventWriter{w: bufio.NewWriterSize(w, 64<<10), t: t, json: output == "json", formats: formats}
	ew.gt, _ = t.(*functrace.Tracer)
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil {
		ew.wallOffset = time.Now().UnixNano() - ts.Nano()
	}
	return ew
}

// eventJSON is one line of `trace -o json`.
type eventJSON struct {
	TS     uint64 `json:"ts"`
	PID    uint32 `json:"pid"`
	TID    uint32 `json:"tid"`
	CPU    uint32 `json:"cpu"`
	Comm   string `json:"comm"`
	Probe  string `json:"probe"`
	Args   []any  `json:"args"`
	Faults []int  `json:"faults,omitempty"`
}

func (ew *eventWriter) write(ev *functrace.Event) error {
	name := ew.t.ProbeName(ev.Probe)
	// Names and comms are any bytes: print them escaped (package escape),
	// as selectors read them.
	shown, comm := escape.Name(name), escape.Name(ev.Comm)
	if ew.gt != nil && ew.gt.DecodeGo(ev, &ew.ge) {
		ew.buf = ew.appendGo(ew.buf[:0], ev, name, shown, comm)
	} else if ew.json {
		j := eventJSON{TS: ev.Time, PID: ev.PID, TID: ev.TID, CPU: ev.CPU, Comm: comm, Probe: shown, Args: make([]any, len(ev.Args))}
		for i, v := range ev.Args {
			switch {
			case ev.StringArgs&(1<<i) != 0:
				j.Args[i] = ev.Strings[i]
			case ew.t.Signed(ev.Probe, i):
				j.Args[i] = int64(v)
			default:
				j.Args[i] = v
			}
			if ev.Faults&(1<<i) != 0 {
				j.Faults = append(j.Faults, i)
			}
		}
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		ew.buf = append(append(ew.buf[:0], b...), '\n')
	} else {
		b := time.Unix(0, int64(ev.Time)+ew.wallOffset).AppendFormat(ew.buf[:0], "15:04:05.000000")
		b = fmt.Appendf(b, " %-7d %-7d %-16s %s", ev.PID, ev.TID, comm, shown)
		if f := ew.format(name); f != nil {
			b = f.Append(append(b, ' '), ev)
		} else {
			for i, v := range ev.Args {
				b = strconv.AppendInt(append(b, " arg"...), int64(i), 10)
				b = append(b, '=')
				switch {
				case ev.Faults&(1<<i) != 0:
					b = append(b, "<fault>"...)
				case ev.StringArgs&(1<<i) != 0:
					b = strconv.AppendQuote(b, ev.Strings[i])
				case ew.t.Signed(ev.Probe, i):
					b = strconv.AppendInt(b, int64(v), 10)
				default:
					b = strconv.AppendUint(b, v, 10)
				}
			}
		}
		if len(b) == 0 || b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		ew.buf = b
	}
	return ew.emit()
}

// writeEvent prints one event of trace.CompileEvents: as write prints
// sdt's events, byte for byte.
func (ew *eventWriter) writeEvent(ev *trace.Event) error {
	// Functions are named as their selectors: uprobe:FUNC.
	name := ev.Name
	if kind, _, _ := strings.Cut(ev.FullName, ":"); kind != "usdt" {
		name = kind + ":" + name
	}
	shown, comm := escape.Name(name), escape.Name(ev.Comm)
	if ew.json {
		j := eventJSON{TS: ev.Time, PID: uint32(ev.PID), TID: uint32(ev.TID), CPU: uint32(ev.CPU), Comm: comm, Probe: shown, Args: make([]any, len(ev.Args))}
		for i, v := range ev.Args {
			switch {
			case v.IsString:
				j.Args[i] = v.Str
			case v.Signed:
				j.Args[i] = v.Int()
			default:
				j.Args[i] = v.Uint()
			}
			if v.Fault {
				j.Faults = append(j.Faults, i)
			}
		}
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		ew.buf = append(append(ew.buf[:0], b...), '\n')
		return ew.emit()
	}
	b := time.Unix(0, int64(ev.Time)+ew.wallOffset).AppendFormat(ew.buf[:0], "15:04:05.000000")
	b = fmt.Appendf(b, " %-7d %-7d %-16s %s", ev.PID, ev.TID, comm, shown)
	for i, v := range ev.Args {
		b = strconv.AppendInt(append(b, " arg"...), int64(i), 10)
		b = append(b, '=')
		switch {
		case v.Fault:
			b = append(b, "<fault>"...)
		case v.IsString:
			b = strconv.AppendQuote(b, v.Str)
		case v.Signed:
			b = strconv.AppendInt(b, v.Int(), 10)
		default:
			b = strconv.AppendUint(b, v.Uint(), 10)
		}
	}
	ew.buf = append(b, '\n')
	return ew.emit()
}

// emit writes ew.buf, flushing when the stream pauses.
func (ew *eventWriter) emit() error {
	if _, err := ew.w.Write(ew.buf); err != nil {
		return err
	}
	// Flush when the stream pauses, so a reader sees events promptly, but
	// not once per event when they come fast.
	if now := time.Now(); now.Sub(ew.lastFlush) > 100*time.Millisecond {
		ew.lastFlush = now
		return ew.w.Flush()
	}
	return nil
}

func (ew *eventWriter) format(probe string) *eventfmt.Format {
	if f := ew.formats[probe]; f != nil {
		return f
	}
	return ew.formats[""]
}

func (ew *eventWriter) flush() error { return ew.w.Flush() }

// writeAggregates prints what ModeCount, ModeHist and ModeLatency of Go
// functions gathered (the flags' programs print bpftrace's maps).
func writeAggregates(w io.Writer, t tracer, mode functrace.Mode, output string) error {
	bw := bufio.NewWriter(w)
	switch mode {
	case functrace.ModeCount:
		counts, err := t.Counts()
		if err != nil {
			return err
		}
		slices.SortStableFunc(counts, func(a, b functrace.CountEntry) int { return cmp.Compare(b.Count, a.Count) })
		for _, c := range counts {
			if output == "json" {
				b, err := json.Marshal(struct {
					Probe string `json:"probe"`
					PID   uint32 `json:"pid,omitempty"`
					Comm  string `json:"comm,omitempty"`
					Count uint64 `json:"count"`
				}{escape.Name(t.ProbeName(c.Probe)), c.PID, escape.Name(c.Comm), c.Count})
				if err != nil {
					return err
				}
				bw.Write(append(b, '\n'))
				continue
			}
			key := escape.Name(t.ProbeName(c.Probe))
			if c.PID != 0 {
				key += ", " + strconv.FormatUint(uint64(c.PID), 10)
			}
			if c.Comm != "" {
				key += ", " + escape.Name(c.Comm)
			}
			fmt.Fprintf(bw, "@[%s]: %d\n", key, c.Count)
		}
	case functrace.ModeHist, functrace.ModeLatency:
		hists, err := t.Hist()
		if err != nil {
			return err
		}
		ids := make([]uint32, 0, len(hists))
		for id := range hists {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			name := escape.Name(t.ProbeName(id))
			title := "@[" + name + "]"
			if mode == functrace.ModeLatency {
				title = "@latency_ns[" + name + "]"
			}
			if output == "json" {
				b, err := json.Marshal(struct {
					Probe   string   `json:"probe"`
					Latency bool     `json:"latency_ns,omitempty"`
					Buckets []uint64 `json:"log2_buckets"`
				}{name, mode == functrace.ModeLatency, hists[id]})
				if err != nil {
					return err
				}
				bw.Write(append(b, '\n'))
				continue
			}
			bw.Write(eventfmt.AppendHist(nil, title, hists[id]))
		}
	}
	return bw.Flush()
}
