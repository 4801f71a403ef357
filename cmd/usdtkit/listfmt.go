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

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/sdt"
)

// probeJSON is one line of `list -o json`: one probe location (one note).
// The keys and their order are a documented interface (README).
type probeJSON struct {
	Path            string  `json:"path"`
	PID             int     `json:"pid,omitempty"`
	Provider        string  `json:"provider"`
	Name            string  `json:"name"`
	Address         string  `json:"address"`
	FileOffset      *string `json:"file_offset"`
	Semaphore       *string `json:"semaphore"`
	SemaphoreOffset *string `json:"semaphore_offset"`
	Args            []any   `json:"args"`
}

type argJSON struct {
	Spec   string  `json:"spec"`
	Size   int     `json:"size"`
	Signed bool    `json:"signed"`
	Float  bool    `json:"float"`
	Kind   string  `json:"kind"`
	Reg    *string `json:"reg"`
	Offset int64   `json:"offset"`
	Index  *string `json:"index_reg"`
	Scale  *int    `json:"scale"`
	Symbol *string `json:"symbol"`
	Value  any     `json:"value"`
}

type argErrorJSON struct {
	Spec  string `json:"spec"`
	Error string `json:"error"`
}

func hex(v uint64) *string {
	s := fmt.Sprintf("%#x", v)
	return &s
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func newArgJSON(a *sdt.Arg) any {
	if a.Err != nil {
		return argErrorJSON{Spec: a.Spec, Error: a.Err.Error()}
	}
	j := argJSON{Spec: a.Spec, Size: a.Size, Signed: a.Signed, Float: a.Float, Kind: a.Kind.String()}
	switch a.Kind {
	case sdt.ArgReg:
		j.Reg = strOrNil(a.Reg)
	case sdt.ArgMem:
		j.Reg = strOrNil(a.Reg)
		j.Offset = a.Offset
		j.Symbol = strOrNil(a.Symbol)
		if a.Index != "" {
			j.Index = strOrNil(a.Index)
			scale := a.Scale
			j.Scale = &scale
		}
	case sdt.ArgConst:
		if a.Signed {
			j.Value = a.Value
		} else {
			j.Value = uint64(a.Value)
		}
	}
	return j
}

// writeProbesJSON prints one line per location, object by object in note
// order.
func writeProbesJSON(w io.Writer, probes []sdt.Probe) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, obj := range byObject(probes) {
		for _, r := range obj {
			if err := enc.Encode(newProbeJSON(r.p, r.l)); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

type locRef struct {
	p *sdt.Probe
	l *sdt.Location
}

// byObject splits probes (in object order) into the locations of each
// object, sorted by note.
func byObject(probes []sdt.Probe) [][]locRef {
	var objs [][]locRef
	for i := range probes {
		p := &probes[i]
		if i == 0 || p.Path != probes[i-1].Path || p.PID != probes[i-1].PID {
			objs = append(objs, nil)
		}
		for j := range p.Locations {
			objs[len(objs)-1] = append(objs[len(objs)-1], locRef{p, &p.Locations[j]})
		}
	}
	for _, refs := range objs {
		slices.SortFunc(refs, func(a, b locRef) int { return cmp.Compare(a.l.Note, b.l.Note) })
	}
	return objs
}

func newProbeJSON(p *sdt.Probe, l *sdt.Location) probeJSON {
	pj := probeJSON{
		Path:     escape.Name(p.Path),
		PID:      p.PID,
		Provider: escape.Name(p.Provider),
		Name:     escape.Name(p.Name),
		Address:  *hex(l.Address),
		Args:     make([]any, 0, len(l.Args)),
	}
	if l.OffsetErr == nil {
		pj.FileOffset = hex(l.Offset)
	}
	if l.Semaphore != 0 {
		pj.Semaphore = hex(l.Semaphore)
		if l.SemaphoreErr == nil {
			pj.SemaphoreOffset = hex(l.SemaphoreOffset)
		}
	}
	for k := range l.Args {
		pj.Args = append(pj.Args, newArgJSON(&l.Args[k]))
	}
	return pj
}

// writeProbesText prints one line per probe, like tplist; verbose adds every
// location with its semaphore and parsed arguments. It appends to one buffer
// with strconv rather than fmt: listing libjvm's 531 notes is a race with
// readelf, and fmt was a third of the time.
func writeProbesText(w io.Writer, probes []sdt.Probe, verbose bool) error {
	b := make([]byte, 0, 64<<10)
	for i := range probes {
		p := &probes[i]
		b = append(append(append(append(append(b, escape.Name(p.Path)...), ' '), escape.Name(p.Provider)...), ':'), escape.Name(p.Name)...)
		b = append(b, '\n')
		if verbose {
			b = appendLocations(b, p)
		}
		if len(b) > 60<<10 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}

func appendLocations(b []byte, p *sdt.Probe) []byte {
	for j := range p.Locations {
		l := &p.Locations[j]
		b = append(b, "  location #"...)
		b = strconv.AppendInt(b, int64(j+1), 10)
		b = appendHex(append(b, ' '), l.Address)
		if l.OffsetErr == nil {
			b = append(appendHex(append(b, " (file offset "...), l.Offset), ')')
		} else {
			b = append(append(append(b, " ("...), l.OffsetErr.Error()...), ')')
		}
		if l.Semaphore != 0 {
			b = appendHex(append(b, ", semaphore "...), l.Semaphore)
			if l.SemaphoreErr == nil {
				b = append(appendHex(append(b, " (file offset "...), l.SemaphoreOffset), ')')
			}
		}
		b = append(b, '\n')
		for k := range l.Args {
			a := &l.Args[k]
			b = strconv.AppendInt(append(b, "    arg"...), int64(k), 10)
			b = append(append(b, ' '), a.Spec...)
			for n := len(a.Spec); n < 16; n++ {
				b = append(b, ' ')
			}
			b = append(append(append(b, ' '), describeArg(a)...), '\n')
		}
	}
	return b
}

func appendHex(b []byte, v uint64) []byte {
	return strconv.AppendUint(append(b, "0x"...), v, 16)
}

// describeArg says in words what a tracer reads for an argument.
func describeArg(a *sdt.Arg) string {
	if a.Err != nil {
		return "error: " + a.Err.Error()
	}
	bits := strconv.Itoa(a.Size * 8)
	typ := "u" + bits
	switch {
	case a.Float:
		typ = "f" + bits
	case a.Signed:
		typ = "s" + bits
	}
	switch a.Kind {
	case sdt.ArgReg:
		return typ + " register " + a.Reg
	case sdt.ArgConst:
		if a.Signed {
			return typ + " constant " + strconv.FormatInt(a.Value, 10)
		}
		return typ + " constant " + strconv.FormatUint(uint64(a.Value), 10)
	case sdt.ArgMem:
		var terms []string
		if a.Reg != "" {
			terms = append(terms, a.Reg)
		}
		if a.Symbol != "" {
			terms = append(terms, a.Symbol)
		}
		if a.Index != "" {
			terms = append(terms, a.Index+"*"+strconv.Itoa(a.Scale))
		}
		addr := strings.Join(terms, " + ")
		switch {
		case a.Offset < 0:
			addr += " - " + string(appendHex(nil, uint64(-a.Offset)))
		case a.Offset > 0 || addr == "":
			if addr != "" {
				addr += " + "
			}
			addr += string(appendHex(nil, uint64(a.Offset)))
		}
		return typ + " memory [" + addr + "]"
	}
	return typ
}
