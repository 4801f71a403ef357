package sdt

import (
	"debug/elf"
	"errors"
	"strings"
	"testing"
)

// addArgSeeds adds every spec of the testdata corpora and of the table tests,
// each for its own machine and for the other one.
func addArgSeeds(f *testing.F, add func(m elf.Machine, spec string)) {
	for path, m := range argCorpora {
		for _, line := range readCorpus(f, path) {
			for _, spec := range SplitArgs(line) {
				add(m, spec)
				add(otherMachine(m), spec)
			}
		}
	}
	for _, tt := range parseArgTests {
		add(tt.m, tt.have)
	}
}

func otherMachine(m elf.Machine) elf.Machine {
	if m == elf.EM_X86_64 {
		return elf.EM_AARCH64
	}
	return elf.EM_X86_64
}

// FuzzParseArg checks that ParseArg never panics, that it fails exactly when
// the Arg is ArgInvalid and then with an *ArgError, and that a parsed Arg's
// String() parses back to the same Arg.
func FuzzParseArg(f *testing.F) {
	addArgSeeds(f, func(m elf.Machine, spec string) { f.Add(uint16(m), spec) })
	f.Fuzz(func(t *testing.T, machine uint16, spec string) {
		m := elf.Machine(machine)
		a, err := ParseArg(m, spec)
		if (err == nil) != (a.Kind != ArgInvalid) || a.Err != err {
			t.Fatalf("ParseArg(%v, %q) = %+v, %v: err == nil must match Kind != ArgInvalid and Arg.Err", m, spec, a, err)
		}
		if a.Spec != spec || a.Machine != m {
			t.Fatalf("ParseArg(%v, %q): Spec/Machine not kept: %+v", m, spec, a)
		}
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) || ae.Index != -1 || ae.Spec != spec || ae.Reason == "" {
				t.Fatalf("ParseArg(%v, %q): error %#v is not a complete *ArgError", m, spec, err)
			}
			if a.Reg != "" || a.Index != "" || a.Symbol != "" || a.Offset != 0 || a.Scale != 0 || a.Value != 0 {
				t.Fatalf("ParseArg(%v, %q): failed Arg has operand fields: %+v", m, spec, a)
			}
			_ = ae.Error()
			return
		}
		if a.Size < 0 || a.Size > maxArgSize {
			t.Fatalf("ParseArg(%v, %q): size %d out of range", m, spec, a.Size)
		}
		if a.Kind == ArgConst && truncate(uint64(a.Value), a.Size, a.Signed) != a.Value {
			t.Fatalf("ParseArg(%v, %q): Value %d is not truncated to %d bytes", m, spec, a.Value, a.Size)
		}
		if a.Reg != "" {
			if _, ok := a.BaseRegister(); !ok {
				t.Fatalf("ParseArg(%v, %q): base register %q does not resolve", m, spec, a.Reg)
			}
		}
		if (a.Index != "") != (a.Scale != 0) {
			t.Fatalf("ParseArg(%v, %q): Index %q with Scale %d", m, spec, a.Index, a.Scale)
		}
		if a.Index != "" {
			if _, ok := a.IndexRegister(); !ok {
				t.Fatalf("ParseArg(%v, %q): index register %q does not resolve", m, spec, a.Index)
			}
		}
		s := a.String()
		b, err := ParseArg(m, s)
		if err != nil {
			t.Fatalf("ParseArg(%v, %q) ok, but its String() %q fails: %v", m, spec, s, err)
		}
		b.Spec = a.Spec
		if b != a {
			t.Fatalf("round trip of %q through %q\nhave %+v\nwant %+v", spec, s, b, a)
		}
	})
}

// FuzzSplitArgs checks that SplitArgs loses no text: its pieces are
// non-empty, trimmed, in order, and hold every non-blank byte of the input.
func FuzzSplitArgs(f *testing.F) {
	for path := range argCorpora {
		for _, line := range readCorpus(f, path) {
			f.Add(line)
		}
	}
	f.Add("-4@[sp, 36 8@x0")
	f.Add("] [ ( ) 8@x0")
	f.Fuzz(func(t *testing.T, s string) {
		pieces := SplitArgs(s)
		rest := s
		var got strings.Builder
		for _, p := range pieces {
			if p == "" || isBlank(p[0]) || isBlank(p[len(p)-1]) {
				t.Fatalf("SplitArgs(%q): piece %q is empty or untrimmed", s, p)
			}
			i := strings.Index(rest, p)
			if i < 0 {
				t.Fatalf("SplitArgs(%q): piece %q not found in order", s, p)
			}
			rest = rest[i+len(p):]
			got.WriteString(p)
		}
		if dropBlanks(got.String()) != dropBlanks(s) {
			t.Fatalf("SplitArgs(%q) = %q loses text", s, pieces)
		}
	})
}

func dropBlanks(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if !isBlank(s[i]) {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
