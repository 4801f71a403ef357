package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/trace"
)

// eventWriter prints events as text lines or JSON objects.
type eventWriter struct {
	w    *bufio.Writer
	json bool
	// wallOffset turns the kernel's CLOCK_MONOTONIC times into wall time.
	wallOffset int64
	buf        []byte
	lastFlush  time.Time
}

func newEventWriter(w io.Writer, output string) *eventWriter {
	ew := &eventWriter{w: bufio.NewWriterSize(w, 64<<10), json: output == "json"}
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

// writeEvent prints one event of trace.CompileEvents: a line of the
// time, process, thread, comm, probe and arguments, or a JSON object.
func (ew *eventWriter) writeEvent(ev *trace.Event) error {
	// Functions are named as their selectors: uprobe:FUNC.
	name := ev.Name
	if kind, _, _ := strings.Cut(ev.FullName, ":"); kind != "usdt" {
		name = kind + ":" + name
	}
	shown, comm := escape.Name(name), escape.Name(ev.Comm)
	if ev.Go {
		ew.buf = ew.appendGo(ew.buf[:0], ev, shown, comm)
		return ew.emit()
	}
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

func (ew *eventWriter) flush() error { return ew.w.Flush() }
