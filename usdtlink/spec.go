package usdtlink

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/bpf/usdtargs"
	"github.com/usdtkit/usdtkit/sdt"
)

// MaxArgs is the number of argument specs a libbpf usdt_spec holds
// (BPF_USDT_MAX_ARG_CNT in usdt.bpf.h). A location with more arguments is
// refused.
const MaxArgs = 12

// ErrUnsupported is wrapped by the *sdt.ArgError of an argument that
// libbpf's spec layout (or the Layout at hand) cannot express, and of one
// that BPF cannot read at all (a %xmm register, a 16-byte value).
var ErrUnsupported = errors.New("not expressible in libbpf's usdt_spec")

// Layout is a version of libbpf's struct __bpf_usdt_spec, the value type of
// the __bpf_usdt_specs map that <bpf/usdt.bpf.h> declares. The object the
// program was compiled from decides which one it reads; [LayoutOf] tells
// them apart by the map's value size.
type Layout uint8

const (
	// LayoutBase is the layout of libbpf 0.8 to 1.6: 16-byte argument
	// specs (val_off, arg_type, reg_off, arg_signed, arg_bitshift), 12 of
	// them, then usdt_cookie and arg_cnt: 208 bytes. It has no index
	// register, so SIB operands are refused. Debian 12's libbpf-dev 1.1
	// installs this one.
	LayoutBase Layout = 1
	// LayoutSIB is the layout of libbpf 1.7+: arg_type shrinks to an
	// 8-bit field followed by idx_reg_off (12 bits) and scale_bitshift
	// (4 bits), which makes each argument spec 24 bytes and the spec 304
	// (C bit-field packing moves reg_off to offset 14), and adds the
	// BPF_USDT_ARG_SIB type.
	LayoutSIB Layout = 2
)

// Sizes of struct __bpf_usdt_spec in each layout.
const (
	specSizeBase = 208
	specSizeSIB  = 304
)

func (l Layout) String() string {
	switch l {
	case LayoutBase:
		return "libbpf<1.7"
	case LayoutSIB:
		return "libbpf>=1.7"
	}
	return fmt.Sprintf("Layout(%d)", uint8(l))
}

// LayoutOf returns the layout whose struct __bpf_usdt_spec is valueSize
// bytes: the ValueSize of the program's __bpf_usdt_specs map.
func LayoutOf(valueSize uint32) (Layout, error) {
	switch valueSize {
	case specSizeBase:
		return LayoutBase, nil
	case specSizeSIB:
		return LayoutSIB, nil
	}
	return 0, fmt.Errorf("__bpf_usdt_specs value size %d is neither libbpf's %d nor %d bytes", valueSize, specSizeBase, specSizeSIB)
}

// Size is the size in bytes of struct __bpf_usdt_spec in layout l, 0 for an
// unknown layout.
func (l Layout) Size() int {
	switch l {
	case LayoutBase:
		return specSizeBase
	case LayoutSIB:
		return specSizeSIB
	}
	return 0
}

func (l Layout) argSize() int {
	if l == LayoutSIB {
		return 24
	}
	return 16
}

// ArgType is enum __bpf_usdt_arg_type.
type ArgType uint8

const (
	// ArgConst: the value is ValOff.
	ArgConst ArgType = iota
	// ArgReg: the value is the 8 bytes at RegOff in pt_regs.
	ArgReg
	// ArgRegDeref: the value is the 8 bytes of user memory at the
	// register at RegOff plus ValOff.
	ArgRegDeref
	// ArgSIB: the value is the 8 bytes of user memory at the register at
	// RegOff, plus the register at IdxRegOff shifted left by ScaleShift,
	// plus ValOff. LayoutSIB only.
	ArgSIB
)

func (t ArgType) String() string {
	switch t {
	case ArgConst:
		return "const"
	case ArgReg:
		return "reg"
	case ArgRegDeref:
		return "reg_deref"
	case ArgSIB:
		return "sib"
	}
	return fmt.Sprintf("ArgType(%d)", uint8(t))
}

// ArgSpec is one struct __bpf_usdt_arg_spec. After the read, the BPF side
// shifts the 8 bytes left by BitShift and back right (arithmetic when
// Signed), which keeps the low 64-BitShift bits.
type ArgSpec struct {
	Type       ArgType
	ValOff     uint64
	RegOff     int16
	IdxRegOff  uint16
	ScaleShift uint8
	Signed     bool
	BitShift   uint8
}

// Spec is one struct __bpf_usdt_spec: the argument specs of one probe
// location and the user's cookie (bpf_usdt_cookie).
type Spec struct {
	Args   []ArgSpec
	Cookie uint64
}

// EncodeArg converts a parsed argument of the location at virtual address
// site into layout l. symbol resolves the data symbols of %rip-relative
// and absolute operands in the location's object (nil: such operands are
// refused).
//
// Mapping: a constant is ArgConst; a register is ArgReg at its pt_regs
// offset, and a high-byte alias (%ah, %bh, %ch, %dh) reads from one byte
// further, so that the alias is the low byte BitShift keeps; base+offset
// is ArgRegDeref; base+index*scale+offset is ArgSIB (LayoutSIB only). A
// symbol operand becomes a read relative to the instruction pointer, which
// holds the site's run-time address when a uprobe program runs: ValOff is
// symbol + displacement - site (as in sdt.Arg.Fetch), so it is right at any
// load address. libbpf itself refuses %ah and symbol operands.
//
// Refused, with an *sdt.ArgError wrapping ErrUnsupported: sizes other than
// 1, 2, 4, 8 (0, the size-less old format, reads 8), registers pt_regs
// lacks (%xmm, v0), an index register in LayoutBase, a numeric absolute
// address (no register to add it to), 32-bit base or index registers
// (addr32 forms), arm64 xzr as an address register. An argument that did
// not parse returns its own Err.
func EncodeArg(a sdt.Arg, site uint64, symbol func(string) (uint64, error), l Layout) (ArgSpec, error) {
	if a.Err != nil {
		return ArgSpec{}, a.Err
	}
	if l != LayoutBase && l != LayoutSIB {
		return ArgSpec{}, fmt.Errorf("unknown layout %v", l)
	}
	fail := func(format string, args ...any) (ArgSpec, error) {
		return ArgSpec{}, &sdt.ArgError{Index: -1, Spec: a.Spec, Reason: fmt.Sprintf(format, args...), Err: ErrUnsupported}
	}
	for _, name := range []string{a.Reg, a.Index} {
		if r, ok := sdt.LookupRegister(a.Machine, name); ok && a.Kind == sdt.ArgMem && r.Name == "xzr" {
			return fail("xzr as an address register")
		}
		if r, ok := sdt.LookupRegister(a.Machine, name); ok && a.Kind == sdt.ArgMem && r.Width != 8 && r.Name != "rip" {
			return fail("%d-byte address register %s", r.Width, name)
		}
	}
	f, err := usdtargs.Fetch(a, site, symbol)
	if err != nil {
		var ae *sdt.ArgError
		if errors.As(err, &ae) && errors.Is(err, argread.ErrUnsupported) {
			return fail("%s", ae.Reason)
		}
		return ArgSpec{}, err
	}
	size := int(f.Size)
	if size == 0 {
		size = 8
	}
	s := ArgSpec{Signed: f.Signed, BitShift: uint8(64 - 8*size)}
	switch f.Kind {
	case argread.FetchConst:
		s.Type, s.ValOff = ArgConst, uint64(f.Value)
	case argread.FetchReg:
		s.Type, s.RegOff = ArgReg, f.Reg.Off
		switch f.Reg.Shift {
		case 0:
		case 8:
			// %ah: the 8 bytes from one byte into the slot start with
			// the alias; pt_regs continues after %rax, %rbx, %rcx and
			// %rdx, so the read stays inside it.
			s.RegOff++
		default:
			return fail("register %s at bit %d", a.Reg, f.Reg.Shift)
		}
	case argread.FetchMem:
		if f.Derefs != 0 {
			return fail("pointer chain")
		}
		s.Type, s.ValOff = ArgRegDeref, uint64(f.Offset)
		switch {
		case f.IPRel:
			off, err := argread.PtRegs(a.Machine, ipName(a.Machine))
			if err != nil {
				return fail("instruction pointer: %v", err)
			}
			s.RegOff = off
		case f.HasBase:
			s.RegOff = f.Reg.Off
		default:
			return fail("absolute address %#x without a register or symbol", uint64(f.Offset))
		}
		if f.HasIndex {
			if l != LayoutSIB {
				return fail("index register %s: the object's usdt.bpf.h predates libbpf 1.7's BPF_USDT_ARG_SIB", a.Index)
			}
			shift, ok := scaleShift(f.Scale)
			if !ok {
				return fail("scale %d", f.Scale)
			}
			if f.Index.Off < 0 || f.Index.Off >= 1<<12 {
				return fail("index register offset %d", f.Index.Off)
			}
			s.Type, s.IdxRegOff, s.ScaleShift = ArgSIB, uint16(f.Index.Off), shift
		}
	default:
		return fail("argument kind %v", f.Kind)
	}
	return s, nil
}

func ipName(m elf.Machine) string {
	if m == elf.EM_AARCH64 {
		return "pc"
	}
	return "rip"
}

func scaleShift(scale uint8) (uint8, bool) {
	switch scale {
	case 0, 1:
		return 0, true
	case 2:
		return 1, true
	case 4:
		return 2, true
	case 8:
		return 3, true
	}
	return 0, false
}

// EncodeSpec converts the arguments of one location (sdt.Location.Args, at
// virtual address site) and the user's cookie into a Spec for layout l.
// The error is the first argument's *sdt.ArgError, with Index set, or one
// for more than MaxArgs arguments.
func EncodeSpec(args []sdt.Arg, site uint64, symbol func(string) (uint64, error), cookie uint64, l Layout) (Spec, error) {
	if len(args) > MaxArgs {
		return Spec{}, fmt.Errorf("%d arguments, libbpf's usdt_spec holds %d: %w", len(args), MaxArgs, ErrUnsupported)
	}
	s := Spec{Cookie: cookie, Args: make([]ArgSpec, len(args))}
	for i, a := range args {
		as, err := EncodeArg(a, site, symbol, l)
		if err != nil {
			var ae *sdt.ArgError
			if errors.As(err, &ae) {
				c := *ae
				c.Index = i
				err = &c
			}
			return Spec{}, err
		}
		s.Args[i] = as
	}
	return s, nil
}

// MarshalLayout returns s as the bytes of struct __bpf_usdt_spec in layout
// l, in the host's byte order (the map is the host's), ready for
// ebpf.Map.Update.
func (s *Spec) MarshalLayout(l Layout) ([]byte, error) {
	if len(s.Args) > MaxArgs {
		return nil, fmt.Errorf("%d arguments, libbpf's usdt_spec holds %d: %w", len(s.Args), MaxArgs, ErrUnsupported)
	}
	if l.Size() == 0 {
		return nil, fmt.Errorf("unknown layout %v", l)
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, fmt.Errorf("usdt_spec on a big-endian host: %w", ErrUnsupported)
	}
	le := binary.LittleEndian
	b := make([]byte, l.Size())
	as := l.argSize()
	for i, a := range s.Args {
		p := b[i*as:]
		le.PutUint64(p, a.ValOff)
		switch l {
		case LayoutBase:
			if a.Type == ArgSIB {
				return nil, fmt.Errorf("argument %d: %v in %v: %w", i, a.Type, l, ErrUnsupported)
			}
			le.PutUint32(p[8:], uint32(a.Type))
			le.PutUint16(p[12:], uint16(a.RegOff))
			p[14] = boolByte(a.Signed)
			p[15] = a.BitShift
		case LayoutSIB:
			if a.IdxRegOff >= 1<<12 || a.ScaleShift >= 1<<4 {
				return nil, fmt.Errorf("argument %d: index offset %d, scale shift %d: %w", i, a.IdxRegOff, a.ScaleShift, ErrUnsupported)
			}
			// arg_type:8 at byte 8; idx_reg_off:12 and
			// scale_bitshift:4 share the u16 at byte 10; the u8
			// __reserved:8 is byte 12; reg_off at 14.
			p[8] = byte(a.Type)
			le.PutUint16(p[10:], a.IdxRegOff|uint16(a.ScaleShift)<<12)
			le.PutUint16(p[14:], uint16(a.RegOff))
			p[16] = boolByte(a.Signed)
			p[17] = a.BitShift
		}
	}
	le.PutUint64(b[MaxArgs*as:], s.Cookie)
	le.PutUint16(b[MaxArgs*as+8:], uint16(len(s.Args)))
	return b, nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
