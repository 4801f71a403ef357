package bpfgen

import (
	"debug/elf"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
)

// ErrUnsupported is wrapped by errors for what the generator cannot read:
// a register that pt_regs does not hold (x86 %xmm, arm64 v registers), an
// argument wider than 8 bytes, a symbol operand without a symbol resolver, a
// machine other than x86-64 and arm64. It is about the argument, not the
// kernel: kernel limits wrap ebpf.ErrNotSupported.
var ErrUnsupported = errors.New("unsupported argument")

// MaxArgs is the number of argument slots in an event; sys/sdt.h macros take
// at most 12 arguments (STAP_PROBE12).
const MaxArgs = 12

// MaxDerefs is the most pointers one Fetch follows (Fetch.Derefs): enough
// for a field three structs away (a.b.c.d), each hop costing one
// bpf_probe_read_user.
const MaxDerefs = 4

// Limits of Config fields.
const (
	// DefaultStrLen is the default Config.StrLen.
	DefaultStrLen = 64
	// MaxStrLen is the largest Config.StrLen.
	MaxStrLen = 4096
	// DefaultRingSize is the default Config.RingSize: 4 MiB, about 52000
	// events of two integer arguments (72-byte records).
	DefaultRingSize = 4 << 20
	// MaxRingSize is the largest Config.RingSize.
	MaxRingSize = 1 << 30
	// DefaultMaxEntries is the default Config.MaxEntries.
	DefaultMaxEntries = 10240
	// MaxSites bounds len(Config.Sites): the dispatch tree (about 3
	// instructions per site) must fit 16-bit jump offsets.
	MaxSites = 10000
	// maxRecord bounds the event record, the bytes one hit reserves in
	// the ring buffer.
	maxRecord = 32 << 10
	// ringHeader is the header the kernel puts before each ring buffer
	// record: BPF_RINGBUF_HDR_SZ in include/uapi/linux/bpf.h.
	ringHeader = 8
)

// FetchKind says where a Fetch finds the argument.
type FetchKind uint8

const (
	// FetchConst: the argument is the constant Value.
	FetchConst FetchKind = iota + 1
	// FetchReg: the argument is in register Reg.
	FetchReg
	// FetchMem: the argument is Size bytes of user memory at
	// base + index*Scale + Offset, after following Derefs pointers.
	FetchMem
)

func (k FetchKind) String() string {
	switch k {
	case FetchConst:
		return "const"
	case FetchReg:
		return "reg"
	case FetchMem:
		return "mem"
	}
	return "FetchKind(" + strconv.Itoa(int(k)) + ")"
}

// Fetch says how the program reads one argument at one probe site. It is
// plain data, safe to copy and compare with ==.
type Fetch struct {
	Kind FetchKind
	// Size is the number of bytes reported: 1, 2, 4 or 8; 0 (sdt's
	// "unknown") is read as 8.
	Size uint8
	// Signed sign-extends the Size-byte value to 64 bits, else it is
	// zero-extended.
	Signed bool
	// Reg is, for FetchReg, the register; for FetchMem the base register
	// when HasBase.
	Reg     Reg
	HasBase bool
	// Index, when HasIndex, is added to the address multiplied by Scale
	// (1, 2, 4 or 8).
	Index    Reg
	HasIndex bool
	Scale    uint8
	// Offset is the FetchMem displacement.
	Offset int64
	// IPRel makes the FetchMem base the probe's instruction pointer (the
	// context's ip/pc, which holds the probe site address when the program
	// runs). The caller folds symbol + displacement - site address into
	// Offset, so the address is right in every process whatever the load
	// address. Exclusive with HasBase.
	IPRel bool
	// Value is, for FetchConst, the 64-bit pattern reported.
	Value int64
	// Derefs is, for FetchMem, the number of pointers followed from the
	// address above, at most MaxDerefs: an 8-byte pointer p is read
	// there and the next address is p + Path[0]; while hops remain the
	// pointer there is read and Path[k] added again. The last address
	// holds the Size bytes reported. So s.next.count with s in a register
	// is Offset = offsetof(next), Derefs = 1, Path[0] = offsetof(count).
	// A NULL pointer or a failed read on the way reports 0 with the
	// argument's fault bit set. 0 reads at the address itself, as before.
	Derefs uint8
	// Path holds the field offsets of the Derefs hops; entries past
	// Derefs must be 0, so that equal chains compare equal.
	Path [MaxDerefs]int32
}

// size returns the number of bytes read: Size, or 8 when it is 0.
func (f *Fetch) size() int {
	if f.Size == 0 {
		return 8
	}
	return int(f.Size)
}

// Site is one attach point of a session: a probe location. The attach
// cookie of a site is its index in Config.Sites.
type Site struct {
	// Probe is the caller's probe id, reported in events and map keys.
	Probe uint32
	// Args are the fetches of the site's arguments, at most MaxArgs.
	Args []Fetch
	// Strings has bit i set to read argument i as a NUL-terminated user
	// string (the argument's value is the address).
	Strings uint16
	// Bytes has bit i set to read argument i as a byte string whose
	// length is argument BytesLen[i] (a Go string or slice: a pointer and
	// a length, not NUL-terminated, NULs allowed). The program copies
	// min(length, StrLen-2) bytes, the length compared unsigned (so a
	// negative one is cut like a huge one), into the argument's string
	// slot after a 2-byte count. Exclusive with Strings per argument.
	// Read only in ModeEvents, like Strings.
	Bytes uint16
	// BytesLen[i] is, for bit i of Bytes, the index of the argument
	// holding the length; other entries are ignored.
	BytesLen [MaxArgs]uint8
}

// Mode says what the program does with the fetched arguments.
type Mode uint8

const (
	// ModeEvents sends one record per hit to the "events" ring buffer.
	ModeEvents Mode = iota
	// ModeCount counts hits by probe (and PID, comm) in "counts": a hash,
	// or a per-CPU array when counting by probe alone.
	ModeCount
	// ModeHist counts hits in the "hist" hash by probe and log2 bucket of
	// argument HistArg.
	ModeHist
	// ModeLatency measures the time from probe LatencyStart to probe
	// LatencyDone on the same thread (or, with LatencyByArg, with the same
	// value of argument LatencyArg in the same process) into a log2
	// histogram ("hist") of nanoseconds.
	ModeLatency
)

func (m Mode) String() string {
	switch m {
	case ModeEvents:
		return "events"
	case ModeCount:
		return "count"
	case ModeHist:
		return "hist"
	case ModeLatency:
		return "latency"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Op is the comparison of a Filter.
type Op uint8

const (
	OpEq Op = iota
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
)

func (o Op) String() string {
	switch o {
	case OpEq:
		return "=="
	case OpNe:
		return "!="
	case OpLt:
		return "<"
	case OpLe:
		return "<="
	case OpGt:
		return ">"
	case OpGe:
		return ">="
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Filter keeps a hit only when argument Arg compares with Value as Op says.
// The comparison is on the fetched 64-bit value, signed when Signed. An
// argument that could not be read compares as 0.
type Filter struct {
	Arg    int
	Op     Op
	Value  int64
	Signed bool
}

// CountKey selects the parts of the ModeCount key beside the probe.
type CountKey uint8

const (
	// CountPID counts per process (thread group id).
	CountPID CountKey = 1 << iota
	// CountComm counts per command name (the thread's comm).
	CountComm
)

// Config describes one program. A Config is plain data; Generate and
// DecodeEvent only read it, so it is safe for concurrent use as long as
// nobody writes to it.
type Config struct {
	// Machine is the ELF machine of the traced objects (and of the
	// kernel): elf.EM_X86_64 or elf.EM_AARCH64.
	Machine elf.Machine
	// Sites: cookie i selects Sites[i]. At least one, at most MaxSites.
	Sites []Site
	// Multi generates a program for a uprobe_multi link (attach type
	// AttachTraceUprobeMulti, kernel 6.6+) instead of classic uprobe links
	// (perf events, cookies need 5.15+).
	Multi bool
	// StrLen is the number of bytes per string argument, the NUL included:
	// longer strings are cut. 0 means DefaultStrLen; at most MaxStrLen, and
	// all string slots together must fit the 32 KiB event record (and the
	// record must fit RingSize).
	StrLen int
	// Filters are ANDed. They are applied after the arguments are fetched,
	// before output or aggregation. Every site must have argument Arg.
	Filters []Filter
	Mode    Mode
	// CountBy adds PID and/or comm to the ModeCount key.
	CountBy CountKey
	// HistArg is the argument of ModeHist; every site must have it.
	HistArg int
	// LatencyStart and LatencyDone are the probe ids of ModeLatency.
	LatencyStart, LatencyDone uint32
	// LatencyByArg pairs the ModeLatency start and done hits by the value
	// of argument LatencyArg and the process (thread group) id instead of
	// the thread id: a goroutine id, which stays with the goroutine when
	// the Go scheduler moves it to another thread. Every site must have
	// argument LatencyArg; a hit whose LatencyArg cannot be read is
	// ignored (it would pair unrelated hits under key 0).
	LatencyByArg bool
	LatencyArg   int
	// RingSize is the size in bytes of the ModeEvents ring buffer: a power
	// of two, at least the page size, at most MaxRingSize. 0 means
	// DefaultRingSize.
	RingSize int
	// MaxEntries bounds the "counts", "hist" and "starts" hashes (not the
	// per-CPU array of counts by probe alone). 0 means DefaultMaxEntries.
	MaxEntries int
}

// ConfigError reports a Config field that Generate cannot use.
type ConfigError struct {
	// Field names the field: "Sites[3].Args[1].Size", "StrLen".
	Field  string
	Reason string
	// Err is a sentinel the error refines (ErrUnsupported), or nil.
	Err error
}

func (e *ConfigError) Error() string {
	s := "config " + e.Field + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the sentinel the error refines, or nil.
func (e *ConfigError) Unwrap() error { return e.Err }

func cfgErr(field, format string, args ...any) *ConfigError {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// settings are a validated Config with defaults filled in.
type settings struct {
	*Config
	strLen     int
	ringSize   int
	maxEntries int
	ipOff      int16
	regsSize   int
	layout     layout
}

func (c *Config) check(pageSize int) (*settings, error) {
	s := &settings{Config: c, strLen: c.StrLen, ringSize: c.RingSize, maxEntries: c.MaxEntries}
	regsSize := PtRegsSize(c.Machine)
	if regsSize == 0 {
		return nil, &ConfigError{Field: "Machine", Reason: c.Machine.String(), Err: ErrUnsupported}
	}
	s.regsSize = regsSize
	s.ipOff, _ = ipReg(c.Machine)
	if len(c.Sites) == 0 {
		return nil, cfgErr("Sites", "no sites")
	}
	if len(c.Sites) > MaxSites {
		return nil, cfgErr("Sites", "%d sites exceed %d", len(c.Sites), MaxSites)
	}
	if s.strLen == 0 {
		s.strLen = DefaultStrLen
	}
	if s.strLen < 2 || s.strLen > MaxStrLen {
		return nil, cfgErr("StrLen", "%d is not in 2..%d", c.StrLen, MaxStrLen)
	}
	if s.ringSize == 0 {
		s.ringSize = DefaultRingSize
	}
	if s.ringSize < pageSize || s.ringSize > MaxRingSize || bits.OnesCount(uint(s.ringSize)) != 1 {
		return nil, cfgErr("RingSize", "%d is not a power of two in %d..%d", c.RingSize, pageSize, MaxRingSize)
	}
	if s.maxEntries == 0 {
		s.maxEntries = DefaultMaxEntries
	}
	if s.maxEntries < 1 || s.maxEntries > 1<<24 {
		return nil, cfgErr("MaxEntries", "%d is not in 1..%d", c.MaxEntries, 1<<24)
	}
	var union uint16
	argCap := 0
	for i := range c.Sites {
		site := &c.Sites[i]
		if err := s.checkSite(i, site); err != nil {
			return nil, err
		}
		union |= site.Strings | site.Bytes
		argCap = max(argCap, len(site.Args))
	}
	if c.Mode != ModeEvents {
		// The record is on the stack and never sent: strings are not
		// read, and any argument may be a filter's or HistArg.
		union, argCap = 0, MaxArgs
	}
	s.layout = newLayout(argCap, union, s.strLen)
	if s.layout.size > maxRecord {
		return nil, cfgErr("StrLen", "%d string slots of %d bytes exceed the %d-byte record", bits.OnesCount16(union), s.strLen, maxRecord)
	}
	if c.Mode == ModeEvents && s.layout.size+ringHeader > s.ringSize {
		return nil, cfgErr("RingSize", "%d bytes do not hold one %d-byte record", s.ringSize, s.layout.size)
	}
	for i, f := range c.Filters {
		if f.Op > OpGe {
			return nil, cfgErr(fmt.Sprintf("Filters[%d].Op", i), "unknown %v", f.Op)
		}
		if err := s.checkArg(fmt.Sprintf("Filters[%d].Arg", i), f.Arg); err != nil {
			return nil, err
		}
	}
	switch c.Mode {
	case ModeEvents:
	case ModeLatency:
		if c.LatencyByArg {
			if err := s.checkArg("LatencyArg", c.LatencyArg); err != nil {
				return nil, err
			}
		}
	case ModeCount:
		if c.CountBy&^(CountPID|CountComm) != 0 {
			return nil, cfgErr("CountBy", "unknown flags %#x", uint8(c.CountBy))
		}
	case ModeHist:
		if err := s.checkArg("HistArg", c.HistArg); err != nil {
			return nil, err
		}
	default:
		return nil, cfgErr("Mode", "unknown %v", c.Mode)
	}
	return s, nil
}

// checkArg checks that every site has argument n.
func (s *settings) checkArg(field string, n int) error {
	if n < 0 || n >= MaxArgs {
		return cfgErr(field, "argument %d is not in 0..%d", n, MaxArgs-1)
	}
	for i := range s.Sites {
		if n >= len(s.Sites[i].Args) {
			return cfgErr(field, "argument %d is past the %d arguments of Sites[%d] (probe %d)", n, len(s.Sites[i].Args), i, s.Sites[i].Probe)
		}
	}
	return nil
}

func (s *settings) checkSite(i int, site *Site) error {
	if len(site.Args) > MaxArgs {
		return cfgErr(fmt.Sprintf("Sites[%d].Args", i), "%d arguments exceed %d", len(site.Args), MaxArgs)
	}
	if site.Strings>>len(site.Args) != 0 {
		return cfgErr(fmt.Sprintf("Sites[%d].Strings", i), "bits %#x name missing arguments", site.Strings)
	}
	if site.Bytes>>len(site.Args) != 0 {
		return cfgErr(fmt.Sprintf("Sites[%d].Bytes", i), "bits %#x name missing arguments", site.Bytes)
	}
	if both := site.Bytes & site.Strings; both != 0 {
		return cfgErr(fmt.Sprintf("Sites[%d].Bytes", i), "bits %#x are also in Strings", both)
	}
	for j := range site.Args {
		if site.Bytes&(1<<j) != 0 && int(site.BytesLen[j]) >= len(site.Args) {
			return cfgErr(fmt.Sprintf("Sites[%d].BytesLen[%d]", i, j), "argument %d is past the site's %d arguments", site.BytesLen[j], len(site.Args))
		}
	}
	for j := range site.Args {
		if err := s.checkFetch(fmt.Sprintf("Sites[%d].Args[%d]", i, j), &site.Args[j]); err != nil {
			return err
		}
	}
	return nil
}

func (s *settings) checkFetch(field string, f *Fetch) error {
	switch f.Size {
	case 0, 1, 2, 4, 8:
	default:
		return &ConfigError{Field: field + ".Size", Reason: strconv.Itoa(int(f.Size)) + " bytes", Err: ErrUnsupported}
	}
	checkReg := func(name string, r Reg) error {
		if r.Off < 0 || int(r.Off)+8 > s.regsSize || r.Off%8 != 0 {
			return cfgErr(field+"."+name+".Off", "%d is not an 8-byte slot of the %d-byte context", r.Off, s.regsSize)
		}
		switch r.Width {
		case 1, 2, 4, 8:
		default:
			return cfgErr(field+"."+name+".Width", "%d is not 1, 2, 4 or 8", r.Width)
		}
		if int(r.Shift)+8*int(r.Width) > 64 || r.Shift%8 != 0 {
			return cfgErr(field+"."+name+".Shift", "%d does not fit a %d-byte alias in 64 bits", r.Shift, r.Width)
		}
		return nil
	}
	if f.Derefs > MaxDerefs {
		return cfgErr(field+".Derefs", "%d exceeds %d", f.Derefs, MaxDerefs)
	}
	if f.Derefs > 0 && f.Kind != FetchMem {
		return cfgErr(field+".Derefs", "%d pointers to follow from a %v argument", f.Derefs, f.Kind)
	}
	for k := int(f.Derefs); k < MaxDerefs; k++ {
		if f.Path[k] != 0 {
			return cfgErr(fmt.Sprintf("%s.Path[%d]", field, k), "%d past Derefs %d", f.Path[k], f.Derefs)
		}
	}
	switch f.Kind {
	case FetchConst:
	case FetchReg:
		return checkReg("Reg", f.Reg)
	case FetchMem:
		if f.IPRel && f.HasBase {
			return cfgErr(field+".IPRel", "both IPRel and HasBase")
		}
		if f.HasBase {
			if err := checkReg("Reg", f.Reg); err != nil {
				return err
			}
		}
		if f.HasIndex {
			if err := checkReg("Index", f.Index); err != nil {
				return err
			}
			switch f.Scale {
			case 1, 2, 4, 8:
			default:
				return cfgErr(field+".Scale", "%d is not 1, 2, 4 or 8", f.Scale)
			}
		}
	default:
		return cfgErr(field+".Kind", "unknown %v", f.Kind)
	}
	return nil
}
