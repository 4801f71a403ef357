package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/usdtkit/usdtkit/internal/functrace"
)

// appendGo appends a Go function's event (decoded in ew.ge) as a text line
// or a JSON object:
//
//	{"ts":…,"pid":…,"tid":…,"cpu":…,"comm":"…","probe":"uprobe:main.F","goid":7,
//	 "args":{"path":"/x","n":3}}
//
// with "results" instead of "args" for a return; values that could not be
// read are null, with the reason under "unread"; strings and slices longer
// than what was read are listed under "truncated".
// name selects the format; shown and comm are the escaped probe name and
// comm that are printed.
func (ew *eventWriter) appendGo(b []byte, ev *functrace.Event, name, shown, comm string) []byte {
	ge := &ew.ge
	if !ew.json {
		b = time.Unix(0, int64(ev.Time)+ew.wallOffset).AppendFormat(b, "15:04:05.000000")
		b = fmt.Appendf(b, " %-7d %-7d %-16s %s goid=%d", ev.PID, ev.TID, comm, shown, ge.GoID)
		if f := ew.format(name); f != nil {
			b = f.AppendNamed(append(b, ' '), ev, ew.lookupGo)
			return append(b, '\n')
		}
		for _, v := range ge.Values {
			b = append(append(append(b, ' '), v.Name...), '=')
			b = appendGoText(b, &v)
		}
		return append(b, '\n')
	}
	b = fmt.Appendf(b, `{"ts":%d,"pid":%d,"tid":%d,"cpu":%d,"comm":`, ev.Time, ev.PID, ev.TID, ev.CPU)
	b = appendJSON(b, comm)
	b = appendJSON(append(b, `,"probe":`...), shown)
	b = strconv.AppendUint(append(b, `,"goid":`...), ge.GoID, 10)
	if ge.Results {
		b = append(b, `,"results":{`...)
	} else {
		b = append(b, `,"args":{`...)
	}
	var unread, truncated []int
	for i, v := range ge.Values {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendJSON(b, v.Name), ':')
		b = appendGoJSON(b, &v)
		if v.Err != "" {
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
			b = append(appendJSON(b, ge.Values[i].Name), ':')
			b = appendJSON(b, ge.Values[i].Err)
		}
		b = append(b, '}')
	}
	if len(truncated) > 0 {
		b = append(b, `,"truncated":[`...)
		for k, i := range truncated {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, ge.Values[i].Name)
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...)
}

// lookupGo finds a value of the current Go event by name, for formats.
func (ew *eventWriter) lookupGo(name string) (any, bool) {
	if name == "goid" {
		return ew.ge.GoID, true
	}
	for _, v := range ew.ge.Values {
		if v.Name == name {
			if sl, ok := v.Value.(functrace.Slice); ok && sl.Elems == nil {
				return sl.Data, true
			}
			return v.Value, v.Err == ""
		}
	}
	return nil, false
}

func appendJSON(b []byte, v any) []byte {
	j, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, j...)
}

func appendGoJSON(b []byte, v *functrace.GoValue) []byte {
	switch x := v.Value.(type) {
	case nil:
		return append(b, "null"...)
	case functrace.Pointer:
		return appendJSON(b, x.String())
	case functrace.Interface:
		typ := x.Type.String()
		if x.TypeName != "" {
			typ = x.TypeName
		}
		b = appendJSON(append(b, `{"type":`...), typ)
		b = appendJSON(append(b, `,"data":`...), x.Data.String())
		return append(b, '}')
	case functrace.Slice:
		b = strconv.AppendUint(append(b, `{"len":`...), x.Len, 10)
		if x.Elems != nil {
			b = append(b, `,"elems":[`...)
			for i, e := range x.Elems {
				if i > 0 {
					b = append(b, ',')
				}
				if p, ok := e.(functrace.Pointer); ok {
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
	return appendJSON(b, v.Value)
}

func appendGoText(b []byte, v *functrace.GoValue) []byte {
	if v.Err != "" && v.Value == nil {
		return append(append(append(b, "<unread: "...), v.Err...), '>')
	}
	switch x := v.Value.(type) {
	case nil:
		b = append(b, "nil"...)
	case string:
		b = strconv.AppendQuote(b, x)
	case functrace.Slice:
		b = append(strconv.AppendUint(append(b, '['), x.Len, 10), ']')
		if x.Elems != nil {
			b = fmt.Appendf(b, "%v", x.Elems)
		} else {
			b = strconv.AppendQuote(b, x.Data)
		}
	case functrace.Interface:
		if x.TypeName != "" {
			b = fmt.Appendf(b, "(%s)%s", x.TypeName, x.Data)
		} else {
			b = fmt.Appendf(b, "(%s,%s)", x.Type, x.Data)
		}
	default:
		b = fmt.Appendf(b, "%v", x)
	}
	if v.Truncated {
		b = append(b, "..."...)
	}
	return b
}
