package argread

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// ErrUnsupported is wrapped by errors for what the generator cannot read:
// a register that pt_regs does not hold (x86 %xmm, arm64 v registers), an
// argument wider than 8 bytes, a symbol operand without a symbol resolver, a
// machine other than x86-64 and arm64. It is about the argument, not the
// kernel: kernel limits wrap ebpf.ErrNotSupported.
var ErrUnsupported = errors.New("unsupported argument")

// MaxArgs is the most arguments a probe site has (sys/sdt.h's).
const MaxArgs = elfnotes.MaxArgs

// MaxDerefs is the most pointers one Fetch follows (Fetch.Derefs): enough
// for a field three structs away (a.b.c.d), each hop costing one
// bpf_probe_read_user.
const MaxDerefs = 4

// Limits the generators of programs that read arguments share (btgen,
// usdtlink).
const (
	// DefaultStrLen is the default bytes read per string, the NUL
	// included.
	DefaultStrLen = 64
	// MaxStrLen is the most bytes read per string.
	MaxStrLen = 4096
	// DefaultRingSize is the default ring buffer size: 4 MiB, about
	// 52000 events of two integer arguments (72-byte records).
	DefaultRingSize = 4 << 20
	// MaxRingSize is the largest ring buffer.
	MaxRingSize = 1 << 30
	// DefaultMaxEntries is the default bound of a hash map.
	DefaultMaxEntries = 10240
	// MaxSites bounds the sites of one program: a dispatch tree over
	// them (about 3 instructions per site) must fit 16-bit jump offsets.
	MaxSites = 10000
)

// Indexes in the per-CPU "lost" array of the generated programs.
const (
	LostEvents  = 0 // records the ring buffer refused
	LostUpdates = 1 // aggregation map updates that failed
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

// ConfigError reports a Fetch field that EmitFetch cannot use.
type ConfigError struct {
	// Field names the field: "Fetch.Size", "Fetch.Reg.Off", "Machine".
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

// settings are what checking and emitting a Fetch need of the machine.
type settings struct {
	ipOff    int16
	regsSize int
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
