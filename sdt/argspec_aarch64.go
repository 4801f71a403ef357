package sdt

import (
	"strconv"
	"strings"
)

// arm64 operands are printed by GCC's aarch64_print_operand and
// aarch64_print_address_internal: registers by their x/v names, immediates
// without "#", memory as "[base]", "[base, imm]", "[base, index]" or
// "[base, index, lsl n]". "#" is accepted before immediates for hand-written
// or clang-built notes. See the forms in argspec.go.

// parseOperandAArch64 fills the operand fields of a from op.
func parseOperandAArch64(a *Arg, op string) *operandError {
	switch c := op[0]; {
	case c == '[':
		return parseMemAArch64(a, op)
	case c == '#' || c == '-' || isDigit(c):
		v, oe := parseImmAArch64(op)
		if oe != nil {
			return oe
		}
		a.Kind, a.Value = ArgConst, v
		return nil
	}
	name := strings.ToLower(op)
	if _, ok := lookupAArch64(name); !ok {
		return invalid("unknown register " + strconv.Quote(op))
	}
	a.Kind, a.Reg = ArgReg, name
	return nil
}

func parseImmAArch64(s string) (int64, *operandError) {
	lit := strings.TrimPrefix(s, "#")
	if strings.HasPrefix(lit, ":") {
		return 0, unsupported("relocation operator in " + strconv.Quote(s))
	}
	v, ok := parseInt(lit)
	if !ok {
		return 0, invalid("malformed immediate " + strconv.Quote(s))
	}
	return v, nil
}

func parseMemAArch64(a *Arg, op string) *operandError {
	if strings.HasSuffix(op, "]!") {
		return unsupported("pre-index writeback in " + strconv.Quote(op))
	}
	if !strings.HasSuffix(op, "]") || strings.Count(op, "[") != 1 || strings.Count(op, "]") != 1 {
		return invalid("malformed memory operand " + strconv.Quote(op))
	}
	parts := strings.Split(op[1:len(op)-1], ",")
	if len(parts) > 3 {
		return invalid("too many parts in " + strconv.Quote(op))
	}
	for i := range parts {
		parts[i] = strings.ToLower(strings.Trim(parts[i], " \t"))
	}

	base := parts[0]
	r, ok := lookupAArch64(base)
	if !ok {
		return invalid("unknown register " + strconv.Quote(base))
	}
	if r.Width != 8 || r.Name == "xzr" || strings.HasPrefix(r.Name, "v") {
		return invalid("base register " + base + " cannot address memory")
	}

	var off int64
	var index string
	scale := 0
	if len(parts) >= 2 {
		p := parts[1]
		if p == "" {
			return invalid("empty offset in " + strconv.Quote(op))
		}
		if c := p[0]; c == '#' || c == '-' || c == ':' || isDigit(c) {
			if len(parts) == 3 {
				return invalid("immediate offset with a shift in " + strconv.Quote(op))
			}
			v, oe := parseImmAArch64(p)
			if oe != nil {
				return oe
			}
			off = v
		} else {
			ir, ok := lookupAArch64(p)
			switch {
			case !ok:
				return invalid("unknown register " + strconv.Quote(p))
			case ir.Width == 4 && !strings.HasPrefix(ir.Name, "v"):
				return unsupported("32-bit index register " + p + " (needs sxtw/uxtw extension)")
			case ir.Width != 8 || ir.Name == "sp" || ir.Name == "xzr" || strings.HasPrefix(ir.Name, "v"):
				return invalid("index register " + p + " cannot address memory")
			}
			index, scale = p, 1
		}
	}
	if len(parts) == 3 {
		s, oe := parseShiftAArch64(parts[2])
		if oe != nil {
			return oe
		}
		scale = s
	}

	a.Kind = ArgMem
	a.Reg, a.Offset = base, off
	a.Index, a.Scale = index, scale
	return nil
}

// parseShiftAArch64 parses the "lsl n" of a register-offset address and
// returns the scale 1<<n.
func parseShiftAArch64(s string) (int, *operandError) {
	op, amount, _ := strings.Cut(s, " ")
	switch op {
	case "lsl":
	case "sxtw", "uxtw", "sxtx", "uxtx":
		return 0, unsupported("index extension " + strconv.Quote(s))
	default:
		return 0, invalid("malformed shift " + strconv.Quote(s))
	}
	amount = strings.TrimPrefix(strings.Trim(amount, " \t"), "#")
	switch amount {
	case "0", "1", "2", "3":
		return 1 << (amount[0] - '0'), nil
	}
	return 0, invalid("shift " + strconv.Quote(s) + " is not lsl 0..3")
}

// formatOperandAArch64 writes the operand of a parsed arm64 Arg.
func formatOperandAArch64(b *strings.Builder, a Arg) {
	switch a.Kind {
	case ArgReg:
		b.WriteString(a.Reg)
	case ArgConst:
		b.WriteString(a.constString())
	case ArgMem:
		b.WriteString("[" + a.Reg)
		switch {
		case a.Index != "":
			b.WriteString(", " + a.Index)
			if a.Scale > 1 {
				shift := 0
				for 1<<shift < a.Scale {
					shift++
				}
				b.WriteString(", lsl " + strconv.Itoa(shift))
			}
		case a.Offset != 0:
			b.WriteString(", " + strconv.FormatInt(a.Offset, 10))
		}
		b.WriteByte(']')
	}
}

// lookupAArch64 resolves an arm64 register name (lower case).
func lookupAArch64(name string) (Register, bool) {
	switch name {
	case "sp":
		return Register{Name: "sp", Width: 8}, true
	case "wsp":
		return Register{Name: "sp", Width: 4}, true
	case "xzr":
		// Reads as zero; sys/sdt.h's "nor" constraint prints a zero as the
		// constant 0, but hand-written notes may name it.
		return Register{Name: "xzr", Width: 8}, true
	case "wzr":
		return Register{Name: "xzr", Width: 4}, true
	case "":
		return Register{}, false
	}
	var width, max int
	vector := false
	switch name[0] {
	case 'x':
		width, max = 8, 30
	case 'w':
		width, max = 4, 30
	case 'v', 'q':
		width, max, vector = 16, 31, true
	case 'd':
		width, max, vector = 8, 31, true
	case 's':
		width, max, vector = 4, 31, true
	case 'h':
		width, max, vector = 2, 31, true
	case 'b':
		width, max, vector = 1, 31, true
	default:
		return Register{}, false
	}
	n, ok := parseRegNum(name[1:], max)
	if !ok {
		return Register{}, false
	}
	prefix := "x"
	if vector {
		prefix = "v"
	}
	return Register{Name: prefix + strconv.Itoa(n), Width: width}, true
}
