package sdt

import (
	"strconv"
	"strings"
)

// x86-64 operands are GCC/GAS AT&T syntax; see the forms in argspec.go.
// Blanks are insignificant inside an AT&T operand, so they are dropped first.

// parseOperandX86 fills the operand fields of a from op.
func parseOperandX86(a *Arg, op string) *operandError {
	if strings.ContainsAny(op, " \t") {
		op = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, op)
	}
	if i := strings.IndexByte(op, ':'); i >= 0 {
		seg := op[:i]
		if _, ok := segmentX86(seg); ok {
			return unsupported("segment override " + strconv.Quote(seg+":") + " (thread-local storage)")
		}
		return invalid("unexpected \":\" in operand " + strconv.Quote(op))
	}

	switch op[0] {
	case '%':
		name := strings.ToLower(op[1:])
		if _, ok := lookupX86(name); !ok {
			return invalid("unknown register " + strconv.Quote(op[1:]))
		}
		a.Kind, a.Reg = ArgReg, name
		return nil
	case '$':
		lit := op[1:]
		v, ok := parseInt(lit)
		if !ok {
			if lit != "" && isSymbolStart(lit[0]) {
				return unsupported("symbolic constant " + strconv.Quote(op))
			}
			return invalid("malformed constant " + strconv.Quote(op))
		}
		a.Kind, a.Value = ArgConst, v
		return nil
	}
	return parseMemX86(a, op)
}

// parseMemX86 parses "disp(base,index,scale)" and its shorter forms, and the
// bare "disp" of an absolute address.
func parseMemX86(a *Arg, op string) *operandError {
	disp, inner := op, ""
	paren := strings.IndexByte(op, '(')
	if paren >= 0 {
		if !strings.HasSuffix(op, ")") || strings.IndexByte(op[paren+1:], '(') >= 0 {
			return invalid("malformed memory operand " + strconv.Quote(op))
		}
		disp, inner = op[:paren], op[paren+1:len(op)-1]
	} else if strings.ContainsAny(op, ")%,") {
		return invalid("malformed memory operand " + strconv.Quote(op))
	}

	sym, off, oe := parseDispX86(disp)
	if oe != nil {
		return oe
	}
	if paren < 0 && disp == "" {
		return invalid("empty operand")
	}

	var base, index string
	scale := 0
	if paren >= 0 {
		parts := strings.Split(inner, ",")
		if len(parts) > 3 {
			return invalid("too many parts in " + strconv.Quote("("+inner+")"))
		}
		if parts[0] == "" && len(parts) == 1 {
			return invalid("empty register in " + strconv.Quote(op))
		}
		if parts[0] != "" {
			r, oe := memRegX86(parts[0], "base")
			if oe != nil {
				return oe
			}
			base = r
		}
		if len(parts) >= 2 {
			r, oe := memRegX86(parts[1], "index")
			if oe != nil {
				return oe
			}
			if r == "rsp" || r == "esp" || r == "rip" || r == "eip" {
				return invalid("%" + r + " cannot be an index register")
			}
			index, scale = r, 1
		}
		if len(parts) == 3 {
			switch parts[2] {
			case "1", "2", "4", "8":
				scale = int(parts[2][0] - '0')
			default:
				return invalid("scale " + strconv.Quote(parts[2]) + " is not 1, 2, 4 or 8")
			}
		}
		if base == "rip" && index != "" {
			return invalid("%rip-relative operand with an index register")
		}
	}

	a.Kind = ArgMem
	a.Reg, a.Offset, a.Symbol = base, off, sym
	a.Index, a.Scale = index, scale
	return nil
}

// memRegX86 checks a "%reg" used to address memory: only 64- and 32-bit
// general registers (the latter with an address-size prefix) and %rip.
func memRegX86(s, role string) (string, *operandError) {
	if !strings.HasPrefix(s, "%") {
		return "", invalid("malformed " + role + " register " + strconv.Quote(s))
	}
	name := strings.ToLower(s[1:])
	r, ok := lookupX86(name)
	if !ok {
		return "", invalid("unknown register " + strconv.Quote(s[1:]))
	}
	if (r.Width != 8 && r.Width != 4) || strings.HasPrefix(r.Name, "xmm") {
		return "", invalid(role + " register %" + name + " cannot address memory")
	}
	return name, nil
}

// parseDispX86 parses a displacement: numbers and at most one symbol joined
// by "+" and "-", in any order ("24+gs", "gs+24", "gs-8", "-0x10", "sym").
// Numbers add up with 64-bit wraparound, as in the assembler.
func parseDispX86(s string) (sym string, off int64, oe *operandError) {
	if s == "" {
		return "", 0, nil
	}
	i := 0
	first := true
	for i < len(s) {
		neg := false
		switch {
		case s[i] == '-':
			neg = true
			i++
		case s[i] == '+' && !first:
			i++
		case !first:
			return "", 0, invalid("malformed displacement " + strconv.Quote(s))
		}
		first = false
		j := i
		if j < len(s) && isSymbolStart(s[j]) {
			for j < len(s) && (isSymbolChar(s[j]) || s[j] == '@') {
				j++
			}
			name := s[i:j]
			switch {
			case strings.IndexByte(name, '@') >= 0:
				return "", 0, unsupported("relocation operator in " + strconv.Quote(name))
			case neg:
				return "", 0, invalid("negated symbol in " + strconv.Quote(s))
			case sym != "":
				return "", 0, invalid("two symbols in " + strconv.Quote(s))
			}
			sym = name
		} else {
			for j < len(s) && s[j] != '+' && s[j] != '-' {
				j++
			}
			v, ok := parseUint(s[i:j])
			if !ok {
				return "", 0, invalid("malformed displacement " + strconv.Quote(s))
			}
			if neg {
				off -= int64(v)
			} else {
				off += int64(v)
			}
		}
		i = j
	}
	return sym, off, nil
}

// Symbol names as GAS accepts them unquoted: letters, digits, "_", "." and
// "$", not starting with a digit or "$" ("$" starts an immediate).
func isSymbolStart(c byte) bool {
	return c == '_' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isSymbolChar(c byte) bool { return isSymbolStart(c) || isDigit(c) || c == '$' }

func segmentX86(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "%cs", "%ds", "%es", "%fs", "%gs", "%ss":
		return s, true
	}
	return "", false
}

// formatOperandX86 writes the operand of a parsed x86-64 Arg.
func formatOperandX86(b *strings.Builder, a Arg) {
	switch a.Kind {
	case ArgReg:
		b.WriteString("%" + a.Reg)
	case ArgConst:
		b.WriteString("$" + a.constString())
	case ArgMem:
		hasParen := a.Reg != "" || a.Index != ""
		switch {
		case a.Symbol != "":
			b.WriteString(a.Symbol)
			if a.Offset > 0 {
				b.WriteString("+" + strconv.FormatInt(a.Offset, 10))
			} else if a.Offset < 0 {
				b.WriteString("-" + strconv.FormatUint(-uint64(a.Offset), 10))
			}
		case a.Offset != 0 || !hasParen:
			b.WriteString(strconv.FormatInt(a.Offset, 10))
		}
		if !hasParen {
			return
		}
		b.WriteByte('(')
		if a.Reg != "" {
			b.WriteString("%" + a.Reg)
		}
		if a.Index != "" {
			b.WriteString(",%" + a.Index)
			if a.Scale != 1 {
				b.WriteString("," + strconv.Itoa(a.Scale))
			}
		}
		b.WriteByte(')')
	}
}

// lookupX86 resolves an x86-64 register name (lower case, no "%").
func lookupX86(name string) (Register, bool) {
	// The eight legacy registers and their 32-, 16-, low 8- and high 8-bit
	// aliases ("" where the alias does not exist).
	legacy := [...][5]string{
		{"rax", "eax", "ax", "al", "ah"},
		{"rbx", "ebx", "bx", "bl", "bh"},
		{"rcx", "ecx", "cx", "cl", "ch"},
		{"rdx", "edx", "dx", "dl", "dh"},
		{"rsi", "esi", "si", "sil", ""},
		{"rdi", "edi", "di", "dil", ""},
		{"rbp", "ebp", "bp", "bpl", ""},
		{"rsp", "esp", "sp", "spl", ""},
	}
	for _, l := range legacy {
		switch name {
		case "":
			return Register{}, false
		case l[0]:
			return Register{Name: l[0], Width: 8}, true
		case l[1]:
			return Register{Name: l[0], Width: 4}, true
		case l[2]:
			return Register{Name: l[0], Width: 2}, true
		case l[3]:
			return Register{Name: l[0], Width: 1}, true
		case l[4]:
			return Register{Name: l[0], Width: 1, Shift: 8}, true
		}
	}
	switch name {
	case "rip":
		return Register{Name: "rip", Width: 8}, true
	case "eip":
		return Register{Name: "rip", Width: 4}, true
	}
	if num, ok := strings.CutPrefix(name, "xmm"); ok {
		// %xmm16..31 exist with AVX-512.
		if n, ok := parseRegNum(num, 31); ok {
			return Register{Name: "xmm" + strconv.Itoa(n), Width: 16}, true
		}
		return Register{}, false
	}
	if rest, ok := strings.CutPrefix(name, "r"); ok {
		width := 8
		switch {
		case strings.HasSuffix(rest, "d"):
			width = 4
		case strings.HasSuffix(rest, "w"):
			width = 2
		case strings.HasSuffix(rest, "b"):
			width = 1
		}
		if width != 8 {
			rest = rest[:len(rest)-1]
		}
		if n, ok := parseRegNum(rest, 15); ok && n >= 8 {
			return Register{Name: "r" + strconv.Itoa(n), Width: width}, true
		}
	}
	return Register{}, false
}
