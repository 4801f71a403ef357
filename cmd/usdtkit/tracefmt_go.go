package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

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
