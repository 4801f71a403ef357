package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// MaxArgs is the most arguments an event carries (arg0…arg11): the most a
// probe site has.
const MaxArgs = argread.MaxArgs

// DefaultStrLen is the bytes read per string argument (NUL included)
// when EventProbe.StrLen is 0; MaxStrLen is the most.
const (
	DefaultStrLen = 64
	MaxStrLen     = 4096
)

// EventProbe asks CompileEvents for an Event at every hit of the probes
// Probe names that passes Filter.
type EventProbe struct {
	// Probe names probes as a program does: usdt:PATH:PROVIDER:NAME,
	// usdt:PATH:NAME, uprobe:PATH:FUNC, uprobe:PATH:FUNC+OFFSET or
	// uretprobe:PATH:FUNC. Parts may be globs; PATH may be a library's
	// short name; an empty PATH means every object of CompileOptions.PIDs
	// (or the Executable). Several probes may be separated by commas.
	// Required; no newline, braces or semicolon.
	Probe string
	// Filter is a predicate in the language, as between the slashes of a
	// probe block: arg0 > 3 && str(arg1) == "GET". It is evaluated in the
	// kernel; a hit for which it is 0 sends nothing. "" keeps every hit.
	Filter string
	// Args is the most arguments an event carries, arg0 first; 0 means
	// every argument the site has (at most MaxArgs). A USDT site has the
	// arguments its note says, a function the six of the C ABI's integer
	// argument registers, a return site one: the return value as arg0.
	Args int
	// Strings are the arguments read as NUL-terminated strings (their
	// values are user-space addresses), at most StrLen bytes with the NUL.
	Strings []int
	// StrLen is 0 for DefaultStrLen, else from 2 to MaxStrLen.
	StrLen int
	// Fields are paths through pointer parameters of Go functions
	// ("s.hits", "s.next.hits": PARAM.FIELD[.FIELD...]) that events
	// carry after the parameters, read at the entry of the functions
	// whose parameter PARAM points to a struct. Integer, bool and
	// pointer fields, through at most 5 pointers; a parameter passed on
	// the stack has none. Filter reads them as args.s.hits.
	Fields []string
}

// Event is one hit of a probe of an EventProbe, as Options.OnEvent
// receives it. It describes itself: printing it needs no tracer.
type Event struct {
	// Probe is the index of the EventProbe in CompileEvents' list.
	Probe int
	// Name is the probe's name: "provider:name" for a USDT probe, the
	// function's name (with +OFFSET) for a function. Path is the object
	// it is in, as its probe names it. FullName is the name the probe
	// builtin gives: "usdt:PATH:PROVIDER:NAME", "uprobe:PATH:FUNC".
	Name, Path, FullName string
	// Time is when the probe fired: CLOCK_MONOTONIC nanoseconds
	// (bpf_ktime_get_ns).
	Time uint64
	// PID is the process (thread group) ID, TID the thread ID, CPU the
	// CPU the probe fired on.
	PID, TID, CPU int
	// Comm is the thread's name (at most 15 bytes).
	Comm string
	// Args are the arguments the site has, at most EventProbe.Args. For
	// a Go function (Go), they are its values by name instead: its
	// parameters at its entry, or its results at a RET (Results), in
	// order, then the paths of EventProbe.Fields it has.
	Args []Value
	// Go says the probe is a Go function's, whose Args have Name, Type
	// and Go set; GoID is then the goroutine's id (runtime.g's goid; 0
	// when the binary does not say where it is), and Results says the
	// event is a return's.
	Go      bool
	Results bool
	GoID    uint64
}

// Value is one argument of an Event.
type Value struct {
	// Raw is the value's 64 bits: sign-extended from the argument's size
	// when Signed, else zero-extended. For a string argument it is the
	// string's address.
	Raw uint64
	// Signed says the probe's argument is signed (its note's spec, as
	// "-4@%eax"; a Go value's integer type); native functions'
	// arguments are unsigned.
	Signed bool
	// IsString says the argument was read as a string (EventProbe.Strings):
	// Str holds it, cut at StrLen-1 bytes.
	IsString bool
	Str      string
	// Fault says the argument could not be read (Raw is 0) or, for a
	// string argument, the string could not be (Str is "").
	Fault bool

	// Name and Type are, in an event of a Go function (Event.Go), the
	// parameter's, result's or field path's name ("n", "s.hits") and
	// its Go type as DWARF names it ("int", "*main.Server").
	Name, Type string
	// Go is a Go function's value decoded: int64 (signed integers),
	// uint64 (unsigned ones), bool, string (a Go string's bytes, NULs
	// included, at most StrLen-2 of them; IsString and Str say it
	// too), GoPointer, GoSlice, GoInterface; nil for a nil interface
	// or a value not read (Unread says why). Raw is its first word.
	Go any
	// Truncated says a Go string or slice is longer than what was read.
	Truncated bool
	// Unread says why a Go value is not read, or not whole: a fault
	// reading user memory, or a value a uprobe cannot read.
	Unread string
}

// Int returns the value as a signed integer.
func (v Value) Int() int64 { return int64(v.Raw) }

// Uint returns the value as an unsigned integer.
func (v Value) Uint() uint64 { return v.Raw }

// String returns the value as usdtkit prints it: "<fault>", the string
// quoted as Go quotes it, or the integer in decimal, signed when Signed.
//
// A Go function's value (Name set) prints as Go would, with "..." after
// a truncated string or slice, "<unread: why>" when not read: 42, true,
// "text", [3][5 -6 7] (a slice's length and first elements),
// (*errors.errorString)0xc000010250 (an interface), 0xc000012345.
func (v Value) String() string {
	if v.Name != "" {
		return v.goString()
	}
	switch {
	case v.Fault:
		return "<fault>"
	case v.IsString:
		return strconv.Quote(v.Str)
	case v.Signed:
		return strconv.FormatInt(v.Int(), 10)
	}
	return strconv.FormatUint(v.Raw, 10)
}

// Clone returns a copy of ev that does not share its Args, to keep after
// Options.OnEvent returns.
func (ev *Event) Clone() *Event {
	c := *ev
	c.Args = append([]Value(nil), ev.Args...)
	return &c
}

// CompileEvents compiles a program that sends an Event at every hit of
// each EventProbe's probes that passes its filter: what usdtkit trace
// prints one line per hit for. Start it with an Options.OnEvent.
//
// Errors are Compile's; a CompileError in a probe or a filter has the
// File "probes[i].Probe" or "probes[i].Filter" (i the index in probes),
// Line 1 and Col the byte in that field.
func CompileEvents(probes []EventProbe, opts *CompileOptions) (*Program, error) {
	if len(probes) == 0 {
		return nil, fmt.Errorf("compile events: no probes")
	}
	var src strings.Builder
	events := make([]*btgen.Event, len(probes))
	fields := make([][]string, len(probes))
	for i, p := range probes {
		if strings.TrimSpace(p.Probe) == "" {
			return nil, fmt.Errorf("compile events: probes[%d].Probe is empty", i)
		}
		if strings.ContainsAny(p.Probe, "\n{};") {
			return nil, fmt.Errorf("compile events: probes[%d].Probe %q: a probe name has no newline, brace or semicolon", i, p.Probe)
		}
		if strings.Contains(p.Filter, "\n") {
			return nil, fmt.Errorf("compile events: probes[%d].Filter has a newline", i)
		}
		if p.Args < 0 || p.Args > MaxArgs {
			return nil, fmt.Errorf("compile events: probes[%d].Args is %d, want 0 to %d", i, p.Args, MaxArgs)
		}
		if p.StrLen != 0 && (p.StrLen < 2 || p.StrLen > MaxStrLen) {
			return nil, fmt.Errorf("compile events: probes[%d].StrLen is %d, want 0 or 2 to %d", i, p.StrLen, MaxStrLen)
		}
		for _, f := range p.Fields {
			if !isName(f) || !strings.Contains(f, ".") {
				return nil, fmt.Errorf("compile events: probes[%d].Fields has %q, not PARAM.FIELD[.FIELD...]", i, f)
			}
		}
		fields[i] = p.Fields
		e := &btgen.Event{Args: p.Args, StrLen: p.StrLen}
		for _, a := range p.Strings {
			if a < 0 || a >= MaxArgs || p.Args > 0 && a >= p.Args {
				return nil, fmt.Errorf("compile events: probes[%d].Strings has arg%d, beyond the arguments events carry", i, a)
			}
			e.Strings |= 1 << a
		}
		events[i] = e
		// One line per probe, so that errors map back to their field.
		src.WriteString(p.Probe)
		if p.Filter != "" {
			src.WriteString(" /(" + p.Filter + ")/")
		}
		src.WriteString(" {}\n")
	}
	prog, err := compile(&compilation{name: eventsFile, src: src.String(), opts: opts, events: events, fields: fields, extraCheck: func(p *btlang.Program) error {
		return checkEvents(p, probes)
	}})
	if err != nil {
		return nil, eventErrors(err, probes)
	}
	return prog, nil
}

// The limits are argread's, which the BPF side enforces.
var (
	_ [MaxArgs - argread.MaxArgs]struct{}
	_ [argread.MaxArgs - MaxArgs]struct{}
	_ [DefaultStrLen - argread.DefaultStrLen]struct{}
	_ [argread.DefaultStrLen - DefaultStrLen]struct{}
	_ [MaxStrLen - argread.MaxStrLen]struct{}
	_ [argread.MaxStrLen - MaxStrLen]struct{}
)

// eventsFile is the file name of the program CompileEvents writes.
const eventsFile = "\x00events"

// checkEvents checks that the program CompileEvents wrote has the blocks
// it means: one per probe, each on its line, with its filter, no body.
func checkEvents(p *btlang.Program, probes []EventProbe) error {
	if len(p.Blocks) != len(probes) {
		return fmt.Errorf("compile events: %d probe blocks for %d probes (a name or filter that is not one)", len(p.Blocks), len(probes))
	}
	for i, b := range p.Blocks {
		if b.At.Line != i+1 || len(b.Body) != 0 || (b.Pred != nil) != (probes[i].Filter != "") {
			return fmt.Errorf("compile events: probes[%d] is not one probe and one filter", i)
		}
	}
	return nil
}

// eventErrors puts the errors in the program CompileEvents wrote back in
// the fields of probes.
func eventErrors(err error, probes []EventProbe) error {
	var list CompileErrors
	if !errors.As(err, &list) {
		return err
	}
	for _, e := range list {
		if e.File != eventsFile {
			continue
		}
		i := e.Line - 1
		if i < 0 || i >= len(probes) {
			e.File = "probes"
			continue
		}
		e.Line = 1
		if start := len(probes[i].Probe) + len(" /("); e.Col > start && probes[i].Filter != "" {
			e.File = fmt.Sprintf("probes[%d].Filter", i)
			e.Col -= start
			e.Col = min(e.Col, len(probes[i].Filter)+1)
		} else {
			e.File = fmt.Sprintf("probes[%d].Probe", i)
			e.Col = min(e.Col, len(probes[i].Probe)+1)
		}
	}
	return err
}

// probeName is a probe's names as an Event gives them; goFn says the
// probe is a Go function's (at its entry or return).
type probeName struct {
	name, path string
	goFn       bool
}

// eventDecoder turns event records into Events.
type eventDecoder struct {
	prog *Program
	// names are by index in btgen.Program.Probes.
	names []probeName
	full  []string
	// block is the EventProbe index of each event id.
	block []int
	// layouts are the layouts of Go functions' events, by index in
	// btgen.Program.Probes (nil for others).
	layouts []*goLayout
	ev      Event
	fn      func(*Event) error
	// raw and strs are a Go function's event's slots.
	raw  []uint64
	strs []string
}

func newEventDecoder(p *Program, fn func(*Event) error) *eventDecoder {
	d := &eventDecoder{prog: p, fn: fn, full: p.gen.Probes}
	for _, full := range p.gen.Probes {
		d.names = append(d.names, p.names[full])
		d.layouts = append(d.layouts, p.goLayouts[full])
	}
	for _, e := range p.gen.Events {
		d.block = append(d.block, e.Block)
	}
	return d
}

// record decodes an event record and calls fn with it.
func (d *eventDecoder) record(rec []byte) error {
	if err := d.decode(rec, &d.ev); err != nil {
		return err
	}
	return d.fn(&d.ev)
}

func (d *eventDecoder) decode(rec []byte, ev *Event) error {
	ne := binary.NativeEndian
	if len(rec) < btgen.EvArgsOff {
		return fmt.Errorf("event record of %d bytes", len(rec))
	}
	id := int(ne.Uint32(rec[4:]))
	if id >= len(d.prog.gen.Events) {
		return fmt.Errorf("event record %d of %d", id, len(d.prog.gen.Events))
	}
	info := &d.prog.gen.Events[id]
	if len(rec) != info.Size {
		return fmt.Errorf("event record of %d bytes, want %d", len(rec), info.Size)
	}
	nargs := int(rec[btgen.EvNArgsOff])
	if nargs > info.ArgCap {
		return fmt.Errorf("event record of %d arguments, want at most %d", nargs, info.ArgCap)
	}
	probe := int(ne.Uint32(rec[btgen.EvProbeOff:]))
	if probe >= len(d.names) {
		return fmt.Errorf("event record of probe %d of %d", probe, len(d.names))
	}
	signed := ne.Uint16(rec[btgen.EvSignedOff:])
	faults := ne.Uint16(rec[btgen.EvFaultsOff:])
	ev.Probe = d.block[id]
	ev.Name, ev.Path, ev.FullName = d.names[probe].name, d.names[probe].path, d.full[probe]
	ev.Time = ne.Uint64(rec[btgen.EvTimeOff:])
	ev.TID = int(ne.Uint32(rec[btgen.EvTIDOff:]))
	ev.PID = int(ne.Uint32(rec[btgen.EvPIDOff:]))
	ev.CPU = int(ne.Uint32(rec[btgen.EvCPUOff:]))
	setString(&ev.Comm, cBytes(rec[btgen.EvCommOff:btgen.EvCommOff+btgen.EvCommLen]))
	bytes := ne.Uint16(rec[btgen.EvBytesOff:])
	if gl := d.layouts[probe]; gl != nil {
		d.decodeGo(rec, info, nargs, faults, bytes)
		gl.decode(ev, d.raw, d.strs, faults)
		return nil
	}
	ev.Go, ev.Results, ev.GoID = false, false, 0
	if cap(ev.Args) < nargs {
		ev.Args = make([]Value, nargs)
	}
	ev.Args = ev.Args[:nargs]
	for i := range ev.Args {
		v := &ev.Args[i]
		v.Raw = ne.Uint64(rec[btgen.EvArgsOff+8*i:])
		v.Signed = signed&(1<<i) != 0
		v.Fault = faults&(1<<i) != 0
		// A slot of Go bytes at other sites is an integer here.
		v.IsString = (info.Strings&^info.Bytes)&(1<<i) != 0
		if v.IsString {
			off := info.StrOffs[i]
			setString(&v.Str, cBytes(rec[off:off+info.StrLen]))
		} else {
			v.Str = ""
		}
		v.Name, v.Type, v.Go, v.Truncated, v.Unread = "", "", nil, false, ""
	}
	return nil
}

// decodeGo reads the slots of a Go function's event into d.raw and
// d.strs: the bytes of a slot of bytes as many as the next slot says, at
// most StrLen-2.
func (d *eventDecoder) decodeGo(rec []byte, info *btgen.EventInfo, nargs int, faults, bytes uint16) {
	ne := binary.NativeEndian
	d.raw = d.raw[:0]
	for i := range nargs {
		d.raw = append(d.raw, ne.Uint64(rec[btgen.EvArgsOff+8*i:]))
	}
	if cap(d.strs) < nargs {
		d.strs = make([]string, nargs)
	}
	d.strs = d.strs[:nargs]
	for i := range nargs {
		var b []byte
		if info.Strings&(1<<i) != 0 && faults&(1<<i) == 0 {
			off := info.StrOffs[i]
			if bytes&(1<<i) != 0 && i+1 < nargs {
				n := min(d.raw[i+1], uint64(info.StrLen-2))
				b = rec[off : off+int(n)]
			} else {
				b = cBytes(rec[off : off+info.StrLen])
			}
		}
		setString(&d.strs[i], b)
	}
}

// cBytes returns b up to its first NUL.
func cBytes(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// setString sets *s to b, allocating only when the text differs.
func setString(s *string, b []byte) {
	if *s != string(b) {
		*s = string(b)
	}
}
