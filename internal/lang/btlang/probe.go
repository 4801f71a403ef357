package btlang

import (
	"fmt"
	"strconv"
	"strings"
)

// ProbeKind is the kind of a probe.
type ProbeKind uint8

const (
	ProbeBegin ProbeKind = iota + 1
	ProbeEnd
	ProbeUSDT
	ProbeUprobe
	ProbeUretprobe
	ProbeInterval
	// ProbeProfile samples every CPU at a rate (profile:hz:N) or period
	// (profile:s:N, ms, us): the interrupted task, user or kernel mode.
	ProbeProfile
)

var probeKindNames = [...]string{"", "BEGIN", "END", "usdt", "uprobe", "uretprobe", "interval", "profile"}

// String returns the kind as written in a canonical probe: "usdt", "BEGIN"…
func (k ProbeKind) String() string {
	if int(k) < len(probeKindNames) {
		return probeKindNames[k]
	}
	return "ProbeKind(" + strconv.Itoa(int(k)) + ")"
}

// Probe is one probe of a block, its parts unquoted.
//
//	usdt:PATH:PROVIDER:NAME  usdt:PATH:NAME  usdt::PROVIDER:NAME (U:)
//	uprobe:PATH:FUNC[+OFFSET] (u:)  uretprobe:PATH:FUNC (ur:)
//	BEGIN  END  begin  end
//	interval:s:N  interval:ms:N  interval:us:N  interval:hz:N (i:)
//	profile:hz:N  profile:s:N  profile:ms:N  profile:us:N (p:)
//	interval:DURATION  profile:DURATION (100ms, 1s: Unit "us")
//
// PATH is as written: an absolute or relative path, or a short library name
// ("libc") that the back end resolves; empty only for usdt, where the back
// end finds the probe in the traced processes (-p, -c). Provider and Name
// (the function for uprobes) may hold the globs *, ? and [...].
type Probe struct {
	At       Pos
	Kind     ProbeKind
	Path     string
	Provider string // usdt; empty: any provider
	Name     string // usdt probe name or uprobe function
	Offset   uint64 // uprobe FUNC+OFFSET
	Unit     string // interval, profile: "hz", "s", "ms" or "us"
	Period   uint64 // interval, profile: how many units (hz: times a second)
	// Lower: BEGIN or END written begin or end, bpftrace's spelling
	// since 0.23, which String keeps.
	Lower bool
}

// Pos returns where the probe starts.
func (p *Probe) Pos() Pos { return p.At }

// Wildcard reports whether the probe's provider or name holds a glob.
func (p *Probe) Wildcard() bool {
	return strings.ContainsAny(p.Provider, "*?[") || strings.ContainsAny(p.Name, "*?[")
}

// String returns the probe in canonical form, quoting parts that need it, so
// that it parses back to an equal Probe.
func (p *Probe) String() string {
	switch p.Kind {
	case ProbeBegin, ProbeEnd:
		if p.Lower {
			return strings.ToLower(p.Kind.String())
		}
		return p.Kind.String()
	case ProbeInterval, ProbeProfile:
		return p.Kind.String() + ":" + p.Unit + ":" + strconv.FormatUint(p.Period, 10)
	case ProbeUSDT:
		s := "usdt:" + quotePart(p.Path, false) + ":"
		if p.Provider != "" {
			s += quotePart(p.Provider, false) + ":"
		}
		return s + quotePart(p.Name, false)
	}
	s := p.Kind.String() + ":" + quotePart(p.Path, false) + ":" + quotePart(p.Name, true)
	if p.Offset != 0 {
		s += "+" + strconv.FormatUint(p.Offset, 10)
	}
	return s
}

// FullName returns the probe as bpftrace's probe builtin names it: its
// kind and parts, unquoted, a usdt probe's provider always
// ("usdt:/bin/app:prov:name", "uprobe:/lib/libc.so.6:malloc+4").
func (p *Probe) FullName() string {
	switch p.Kind {
	case ProbeUSDT:
		return "usdt:" + p.Path + ":" + p.Provider + ":" + p.Name
	case ProbeUprobe, ProbeUretprobe:
		s := p.Kind.String() + ":" + p.Path + ":" + p.Name
		if p.Offset != 0 {
			s += "+" + strconv.FormatUint(p.Offset, 10)
		}
		return s
	}
	return p.String()
}

// Printable returns an error when String cannot write p so that it parses
// back to p: a part holding a '"' or a newline, which a quoted part
// cannot hold (quotes have no escapes).
func (p *Probe) Printable() error {
	for _, part := range []string{p.Path, p.Provider, p.Name} {
		if i := strings.IndexAny(part, "\"\n"); i >= 0 {
			return fmt.Errorf("a probe part with %q cannot be written in a program", part[i])
		}
	}
	return nil
}

// QuoteGlob returns s, a literal name, as a Provider or Name that matches
// it only: the glob characters * ? [ ] and \ escaped with a "\".
func QuoteGlob(s string) string {
	if !strings.ContainsAny(s, globChars) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(globChars, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// globChars are the characters QuoteGlob escapes: path.Match's.
const globChars = `*?[]\`

// LookupProbeKind returns the kind a probe type's name or alias ("usdt",
// "U", "uprobe", "ur"…) stands for.
func LookupProbeKind(name string) (ProbeKind, bool) {
	k, ok := probeAliases[name]
	return k, ok
}

// quotePart quotes s when it holds characters a bare probe part cannot, or,
// for function names, a "+" (a bare trailing +N is an offset) or a leading
// digit (a bare number is an address).
func quotePart(s string, isFunc bool) string {
	if isFunc && s != "" && isDigit(s[0]) {
		return `"` + s + `"`
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isProbeChar(c) || c == ':' || c == '$' || isFunc && c == '+' {
			return `"` + s + `"`
		}
	}
	return s
}

// probeAliases maps bpftrace's probe type names and aliases to kinds.
var probeAliases = map[string]ProbeKind{
	"BEGIN": ProbeBegin, "END": ProbeEnd, "begin": ProbeBegin, "end": ProbeEnd,
	"usdt": ProbeUSDT, "U": ProbeUSDT,
	"uprobe": ProbeUprobe, "u": ProbeUprobe,
	"uretprobe": ProbeUretprobe, "ur": ProbeUretprobe,
	"interval": ProbeInterval, "i": ProbeInterval,
	"profile": ProbeProfile, "p": ProbeProfile,
}

// kernelProbes are bpftrace probe types usdtkit does not offer.
var kernelProbes = map[string]string{
	"kprobe": "kprobe", "k": "kprobe", "kretprobe": "kretprobe", "kr": "kretprobe",
	"tracepoint": "tracepoint", "t": "tracepoint", "rawtracepoint": "rawtracepoint", "rt": "rawtracepoint",
	"kfunc": "kfunc", "f": "kfunc", "kretfunc": "kretfunc", "fr": "kretfunc",
	"software": "software", "s": "software", "hardware": "hardware", "h": "hardware",
	"watchpoint": "watchpoint", "w": "watchpoint",
	"asyncwatchpoint": "asyncwatchpoint", "aw": "asyncwatchpoint", "iter": "iter", "it": "iter",
}

// parseRate reads an interval's or a profile probe's UNIT:N.
func (p *Probe) parseRate(at Pos, args []probePart) *Error {
	typ := p.Kind.String()
	if len(args) == 1 {
		// interval:100ms, profile:1us: bpftrace 0.21's duration, whose
		// bare number is nanoseconds, kept as whole microseconds.
		ns, msg := parseInteger(args[0].val)
		if msg != "" {
			return errorf(at, "the rate of the %s probe: %s", typ, msg)
		}
		if ns < 1000 {
			return errorf(at, "the rate of the %s probe is %d nanoseconds; the least is 1000 or 1us", typ, ns)
		}
		p.Unit, p.Period = "us", ns/1000
		return nil
	}
	if len(args) != 2 {
		return errorf(at, "%s probes are written %s:UNIT:N (UNIT one of hz, s, ms or us) or %s:DURATION (100ms)", typ, typ, typ)
	}
	p.Unit = args[0].val
	switch p.Unit {
	case "hz", "s", "ms", "us":
	default:
		return errorf(at, "%s unit %q is not supported; use hz, s, ms or us", typ, p.Unit)
	}
	n, msg := parseInteger(args[1].val)
	if msg != "" || n == 0 || n > 1<<32-1 {
		return errorf(at, "the rate of the %s probe, %q, must be an integer from 1 to %d", typ, args[1].val, uint64(1<<32-1))
	}
	p.Period = n
	return nil
}

// probePart is one ":"-separated part of a probe spec with its quotes
// removed; plusAt is the offset in val of the last unquoted "+", or -1.
type probePart struct {
	val    string
	quoted bool
	plusAt int
}

func splitProbe(raw string) []probePart {
	var parts []probePart
	cur := probePart{plusAt: -1}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"':
			end := strings.IndexByte(raw[i+1:], '"')
			if end < 0 {
				end = len(raw) - i - 1 // the lexer rejects this; be safe
			}
			b.WriteString(raw[i+1 : i+1+end])
			cur.quoted = true
			i += end + 1
		case c == ':':
			cur.val = b.String()
			parts = append(parts, cur)
			cur = probePart{plusAt: -1}
			b.Reset()
		default:
			if c == '+' {
				cur.plusAt = b.Len()
			}
			b.WriteByte(c)
		}
	}
	cur.val = b.String()
	return append(parts, cur)
}

// parseProbe turns a probe token into a Probe.
func parseProbe(t token) (*Probe, *Error) {
	parts := splitProbe(t.text)
	p := &Probe{At: t.pos}
	typ := parts[0].val
	kind, ok := probeAliases[typ]
	if !ok || parts[0].quoted {
		if k, ok := kernelProbes[typ]; ok {
			return nil, errorf(t.pos, "%s probes are not supported: usdtkit traces user space (usdt, uprobe, uretprobe, BEGIN, END, interval, profile)", k)
		}
		return nil, errorf(t.pos, "unknown probe type %q", typ)
	}
	p.Kind = kind
	p.Lower = typ == "begin" || typ == "end"
	args := parts[1:]
	switch kind {
	case ProbeBegin, ProbeEnd:
		if len(args) != 0 {
			return nil, errorf(t.pos, "%s takes no arguments", typ)
		}
	case ProbeInterval, ProbeProfile:
		if err := p.parseRate(t.pos, args); err != nil {
			return nil, err
		}
	case ProbeUSDT:
		switch len(args) {
		case 2:
			p.Path, p.Name = args[0].val, args[1].val
		case 3:
			p.Path, p.Provider, p.Name = args[0].val, args[1].val, args[2].val
		default:
			return nil, errorf(t.pos, "usdt probes are written usdt:PATH:PROVIDER:NAME or usdt:PATH:NAME")
		}
		if p.Name == "" {
			return nil, errorf(t.pos, "the usdt probe has no name")
		}
	case ProbeUprobe, ProbeUretprobe:
		if len(args) == 3 {
			return nil, errorf(t.pos, "%s with a language part (%s:PATH:LANG:FUNC) is not supported", typ, typ)
		}
		if len(args) != 2 {
			return nil, errorf(t.pos, "%s probes are written %s:PATH:FUNC", typ, typ)
		}
		// An empty path (uprobe::FUNC) means the traced process's
		// objects, as for usdt::; the back end refuses it without one.
		p.Path = args[0].val
		fn := args[1]
		if fn.plusAt >= 0 {
			off, err := strconv.ParseUint(fn.val[fn.plusAt+1:], 0, 64)
			if err != nil {
				return nil, errorf(t.pos, "function offset %q is not an integer", fn.val[fn.plusAt+1:])
			}
			if kind == ProbeUretprobe {
				return nil, errorf(t.pos, "a uretprobe cannot have an offset")
			}
			p.Offset = off
			fn.val = fn.val[:fn.plusAt]
		}
		p.Name = fn.val
		if p.Name == "" {
			return nil, errorf(t.pos, "the %s has no function name", typ)
		}
		if !fn.quoted && isDigit(p.Name[0]) {
			return nil, errorf(t.pos, "%s at an address (%s) is not supported; give a function name", typ, p.Name)
		}
	}
	return p, nil
}
