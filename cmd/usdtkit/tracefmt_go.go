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

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/eventfmt"
	"github.com/usdtkit/usdtkit/trace"
)

// appendGo appends a Go function's event as a text line or a JSON
// object:
//
//	{"ts":…,"pid":…,"tid":…,"cpu":…,"comm":"…","probe":"uprobe:main.F","goid":7,
//	 "args":{"path":"/x","n":3}}
//
// with "results" instead of "args" for a return; values that could not be
// read are null, with the reason under "unread"; strings and slices longer
// than what was read are listed under "truncated". shown and comm are the
// escaped probe name and comm that are printed.
func (ew *eventWriter) appendGo(b []byte, ev *trace.Event, shown, comm string) []byte {
	if !ew.json {
		b = time.Unix(0, int64(ev.Time)+ew.wallOffset).AppendFormat(b, "15:04:05.000000")
		b = fmt.Appendf(b, " %-7d %-7d %-16s %s goid=%d", ev.PID, ev.TID, comm, shown, ev.GoID)
		for _, v := range ev.Args {
			b = append(append(append(b, ' '), v.Name...), '=')
			b = append(b, v.String()...)
		}
		return append(b, '\n')
	}
	b = fmt.Appendf(b, `{"ts":%d,"pid":%d,"tid":%d,"cpu":%d,"comm":`, ev.Time, ev.PID, ev.TID, ev.CPU)
	b = appendJSON(b, comm)
	b = appendJSON(append(b, `,"probe":`...), shown)
	b = strconv.AppendUint(append(b, `,"goid":`...), ev.GoID, 10)
	if ev.Results {
		b = append(b, `,"results":{`...)
	} else {
		b = append(b, `,"args":{`...)
	}
	var unread, truncated []int
	for i, v := range ev.Args {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendJSON(b, v.Name), ':')
		b = appendGoJSON(b, &v)
		if v.Unread != "" {
			unread = append(unread, i)
		}
		if v.Truncated {
			truncated = append(truncated, i)
		}
	}
	b = append(b, '}')
	if len(unread) > 0 {
		b = append(b, `,"unread":{`...)
		for k, i := range unread {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(appendJSON(b, ev.Args[i].Name), ':')
			b = appendJSON(b, ev.Args[i].Unread)
		}
		b = append(b, '}')
	}
	if len(truncated) > 0 {
		b = append(b, `,"truncated":[`...)
		for k, i := range truncated {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, ev.Args[i].Name)
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...)
}

func appendJSON(b []byte, v any) []byte {
	j, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, j...)
}

func appendGoJSON(b []byte, v *trace.Value) []byte {
	switch x := v.Go.(type) {
	case nil:
		return append(b, "null"...)
	case trace.GoPointer:
		return appendJSON(b, x.String())
	case trace.GoInterface:
		typ := x.Type.String()
		if x.TypeName != "" {
			typ = x.TypeName
		}
		b = appendJSON(append(b, `{"type":`...), typ)
		b = appendJSON(append(b, `,"data":`...), x.Data.String())
		return append(b, '}')
	case trace.GoSlice:
		b = strconv.AppendUint(append(b, `{"len":`...), x.Len, 10)
		if x.Elems != nil {
			b = append(b, `,"elems":[`...)
			for i, e := range x.Elems {
				if i > 0 {
					b = append(b, ',')
				}
				if p, ok := e.(trace.GoPointer); ok {
					e = p.String()
				}
				b = appendJSON(b, e)
			}
			b = append(b, ']')
		} else {
			b = appendJSON(append(b, `,"data":`...), x.Data)
		}
		return append(b, '}')
	}
	return appendJSON(b, v.Go)
}

// goHistBuckets is the number of log2 buckets -o json has always listed
// for --hist and --latency of Go functions (the 65 of hist() and one
// for unsigned values of 2^63 and more).
const goHistBuckets = 66

// writeGoMaps prints the maps of --count, --hist or --latency of a trace
// of Go functions as the flags have always printed them: a count per
// line, "@[uprobe:main.F, KEY...]: N" or {"probe":…,"pid":…,"count":N},
// most first; a histogram per probe as bpftrace draws one, or
// {"probe":…,"log2_buckets":[…]} ("latency_ns":true for --latency). On
// stderr, how many map updates failed. by are the keys after the probe
// (--by).
func writeGoMaps(w, stderr io.Writer, t *trace.Tracer, prog *trace.Program, output string, by []string) error {
	maps, err := t.Maps()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	for _, m := range maps {
		if m.Name != "@" && m.Name != "@latency_ns" {
			continue
		}
		type line struct {
			key   string
			entry *trace.MapEntry
		}
		var lines []line
		for i := range m.Entries {
			e := &m.Entries[i]
			if len(e.Key) == 0 {
				continue
			}
			keys := []string{escape.Name(goProbeName(prog, e.Key[0].Str))}
			for j, k := range e.Key[1:] {
				if j+1 < len(m.KeyStrings) && m.KeyStrings[j+1] {
					keys = append(keys, escape.Name(k.Str))
				} else {
					keys = append(keys, strconv.FormatInt(k.Int, 10))
				}
			}
			lines = append(lines, line{strings.Join(keys, ", "), e})
		}
		slices.SortStableFunc(lines, func(a, b line) int { return cmp.Compare(a.key, b.key) })
		switch m.Kind {
		case trace.MapCount:
			slices.SortStableFunc(lines, func(a, b line) int { return cmp.Compare(b.entry.Value, a.entry.Value) })
			for _, l := range lines {
				if output != "json" {
					fmt.Fprintf(bw, "@[%s]: %d\n", l.key, l.entry.Value)
					continue
				}
				b := appendJSON(append([]byte(nil), `{"probe":`...), goProbeName(prog, l.entry.Key[0].Str))
				for j, k := range l.entry.Key[1:] {
					name := "key" + strconv.Itoa(j+1)
					if j < len(by) {
						name = by[j]
					}
					b = append(appendJSON(append(b, ','), name), ':')
					if j+1 < len(m.KeyStrings) && m.KeyStrings[j+1] {
						b = appendJSON(b, escape.Name(k.Str))
					} else {
						b = strconv.AppendInt(b, k.Int, 10)
					}
				}
				b = strconv.AppendUint(append(b, `,"count":`...), l.entry.Value, 10)
				bw.Write(append(b, "}\n"...))
			}
		case trace.MapHist:
			latency := m.Name == "@latency_ns"
			for _, l := range lines {
				buckets := l.entry.Buckets
				if len(buckets) < goHistBuckets {
					buckets = append(buckets, make([]uint64, goHistBuckets-len(buckets))...)
				}
				if output == "json" {
					b, err := json.Marshal(struct {
						Probe   string   `json:"probe"`
						Latency bool     `json:"latency_ns,omitempty"`
						Buckets []uint64 `json:"log2_buckets"`
					}{l.key, latency, buckets})
					if err != nil {
						return err
					}
					bw.Write(append(b, '\n'))
					continue
				}
				bw.Write(eventfmt.AppendHist(nil, m.Name+"["+l.key+"]", buckets))
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, failed, err := t.Lost()
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%d aggregation updates failed (map full).\n", failed)
	return nil
}

// goProbeName is a probe as the flags print it: uprobe:FUNC for a
// function, PROVIDER:NAME for a USDT probe.
func goProbeName(prog *trace.Program, full string) string {
	name, _, ok := prog.ProbeName(full)
	if !ok {
		return full
	}
	if kind, _, _ := strings.Cut(full, ":"); kind != "usdt" {
		return kind + ":" + name
	}
	return name
}
