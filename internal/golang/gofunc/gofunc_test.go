package gofunc

import (
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/golang/goabi"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode, os.Getenv(childPathEnv)))
	}
	testutil.MainCheckingFDs(m)
}

// goTool is the go command of the toolchain running the tests.
func goTool() string { return filepath.Join(runtime.GOROOT(), "bin", "go") }

// buildFixture builds testdata/funcs for goarch with the given extra
// flags ("-ldflags=-s -w"), and strips the result with strip(1) when
// strip is set:
//
//	CGO_ENABLED=0 GOOS=linux GOARCH=$goarch go build $flags -o funcs ./testdata/funcs
func buildFixture(tb testing.TB, goarch string, strip bool, flags ...string) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "funcs-"+goarch)
	args := append(append([]string{"build", "-o", bin}, flags...), "./testdata/funcs")
	cmd := exec.Command(goTool(), args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go %v: %v\n%s", args, err, out)
	}
	if strip {
		// binutils' strip knows only the host's machine; llvm-strip
		// knows all.
		name := "llvm-strip"
		if _, err := exec.LookPath(name); err != nil && goarch == runtime.GOARCH {
			name = "strip"
		}
		tool := testutil.RequireTool(tb, name)
		if out, err := exec.Command(tool, bin).CombinedOutput(); err != nil {
			tb.Fatalf("strip: %v\n%s", err, out)
		}
	}
	return bin
}

// asmInst is one instruction as `go tool objdump` prints it.
type asmInst struct {
	addr uint64
	size int
	code []byte
	text string // Go assembler syntax: "CMPQ SP, 0x10(R14)"
}

// objdump disassembles the function name of bin with `go tool objdump`, a
// disassembler we did not write (it prints Go assembler syntax, for amd64
// and arm64 alike). It needs the binary's symbol table.
func objdump(tb testing.TB, bin, name string) []asmInst {
	tb.Helper()
	out, err := exec.Command(goTool(), "tool", "objdump", "-s", "^"+regexp.QuoteMeta(name)+"$", bin).Output()
	if err != nil {
		tb.Fatalf("go tool objdump -s %s: %v", name, err)
	}
	var insts []asmInst
	for line := range strings.Lines(string(out)) {
		if !strings.HasPrefix(line, "  ") {
			continue
		}
		var fields []string
		for f := range strings.SplitSeq(strings.TrimSpace(line), "\t") {
			if f = strings.TrimSpace(f); f != "" {
				fields = append(fields, f)
			}
		}
		if len(fields) < 4 {
			// arm64 padding words print as "?" with no text sometimes.
			continue
		}
		addr, err := strconv.ParseUint(strings.TrimPrefix(fields[1], "0x"), 16, 64)
		if err != nil {
			tb.Fatalf("objdump line %q: %v", line, err)
		}
		code, err := hex.DecodeString(fields[2])
		if err != nil {
			tb.Fatalf("objdump line %q: %v", line, err)
		}
		insts = append(insts, asmInst{addr: addr, size: len(code), code: code, text: fields[3]})
	}
	if len(insts) == 0 {
		tb.Fatalf("go tool objdump found no function %s in %s", name, bin)
	}
	return insts
}

// objdumpCheckEnd returns the address after the stack check's conditional
// branch to morestack, read from objdump's text: amd64 compares with
// 16(R14) (g.stackguard0) and JBE follows; arm64 loads 16(R28) into R16
// and a BLS follows within the check's few instructions. ok is false for a
// function without a stack check.
func objdumpCheckEnd(m elf.Machine, insts []asmInst) (end uint64, ok bool) {
	for i, in := range insts[:min(len(insts), 8)] {
		switch m {
		case elf.EM_X86_64:
			if strings.HasPrefix(in.text, "CMPQ ") && strings.HasSuffix(in.text, ", 0x10(R14)") &&
				i+1 < len(insts) && strings.HasPrefix(insts[i+1].text, "JBE ") {
				return insts[i+1].addr + uint64(insts[i+1].size), true
			}
		case elf.EM_AARCH64:
			if in.text == "MOVD 16(R28), R16" {
				for _, b := range insts[i+1 : min(len(insts), i+8)] {
					if strings.HasPrefix(b.text, "BLS ") {
						return b.addr + uint64(b.size), true
					}
				}
			}
		}
	}
	return 0, false
}

// argRegs are the argument registers in Go assembler syntax.
var argRegs = map[elf.Machine]*regexp.Regexp{
	elf.EM_X86_64:  regexp.MustCompile(`^(AX|BX|CX|DI|SI|R8|R9|R10|R11|X[0-9]|X1[0-4])$`),
	elf.EM_AARCH64: regexp.MustCompile(`^(R[0-9]|R1[0-5]|F[0-9]|F1[0-5])$`),
}

// operands splits an instruction's operands at top-level commas.
func operands(text string) []string {
	_, args, ok := strings.Cut(text, " ")
	if !ok {
		return nil
	}
	var out []string
	depth, start := 0, 0
	for i, c := range args {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(args[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(args[start:]))
}

// harmless reports whether an instruction between the stack check and the
// entry site leaves every argument register as it was and falls through:
// frame setup and spills, whose destination (the last operand in Go
// syntax) is memory or a non-argument register.
func harmless(m elf.Machine, in asmInst) bool {
	op, _, _ := strings.Cut(in.text, " ")
	op = strings.TrimSuffix(strings.TrimSuffix(op, ".W"), ".P")
	switch {
	case op == "RET", op == "CALL", op == "JMP", op == "B", op == "BL",
		strings.HasPrefix(op, "J"), strings.HasPrefix(op, "CB"), strings.HasPrefix(op, "TB"),
		m == elf.EM_AARCH64 && len(op) == 3 && op[0] == 'B':
		return false
	}
	args := operands(in.text)
	if len(args) == 0 {
		return op == "NOPL" || op == "NOP"
	}
	return !argRegs[m].MatchString(args[len(args)-1])
}

// spDelta returns by how much an instruction lowers SP: PUSHQ, SUBQ $n, SP
// on amd64; MOVD.W R30, -n(RSP) and SUB $n, RSP, RSP on arm64.
var spDeltaRE = []*regexp.Regexp{
	regexp.MustCompile(`^SUBQ \$(0x[0-9a-f]+|[0-9]+), SP$`),
	regexp.MustCompile(`^MOVD\.W R30, -([0-9]+)\(RSP\)$`),
	regexp.MustCompile(`^SUB \$([0-9]+), RSP, RSP$`),
}

func spDelta(tb testing.TB, in asmInst) int64 {
	if strings.HasPrefix(in.text, "PUSHQ ") {
		return 8
	}
	for _, re := range spDeltaRE {
		if m := re.FindStringSubmatch(in.text); m != nil {
			n, err := strconv.ParseInt(m[1], 0, 64)
			if err != nil {
				tb.Fatalf("%q: %v", in.text, err)
			}
			return n
		}
	}
	return 0
}

// ABI types of the fixture's signatures, written from the Go types, not
// from DWARF.
var (
	tInt   = &goabi.Type{Kind: goabi.Int, Size: 8, Align: 8, Name: "int"}
	tInt32 = &goabi.Type{Kind: goabi.Int, Size: 4, Align: 4, Name: "int32"}
	tByte  = &goabi.Type{Kind: goabi.Int, Size: 1, Align: 1, Name: "uint8"}
	tPtr   = &goabi.Type{Kind: goabi.Int, Size: 8, Align: 8, Name: "pointer"}
	tF64   = &goabi.Type{Kind: goabi.Float, Size: 8, Align: 8, Name: "float64"}
	tStr   = &goabi.Type{Kind: goabi.String, Size: 16, Align: 8, Name: "string"}
	tSlice = &goabi.Type{Kind: goabi.Slice, Size: 24, Align: 8, Name: "slice"}
	tIface = &goabi.Type{Kind: goabi.Interface, Size: 16, Align: 8, Name: "interface"}
	tPoint = &goabi.Type{Kind: goabi.Struct, Size: 8, Align: 4, Name: "main.Point", Fields: []goabi.Field{
		{Name: "X", Offset: 0, Type: tInt32}, {Name: "Y", Offset: 4, Type: tInt32}}}
)

type value struct {
	name string
	typ  *goabi.Type
}

func vals(nt ...any) []value {
	var out []value
	for i := 0; i+1 < len(nt); i += 2 {
		out = append(out, value{nt[i].(string), nt[i+1].(*goabi.Type)})
	}
	return out
}

// fixtureFunc is a function of testdata/funcs and what it must look like.
type fixtureFunc struct {
	name string
	// check: the function starts with a stack check (a leaf with a small
	// frame has none).
	check bool
	// minReturns is the fewest RETs the source implies.
	minReturns int
	// dict: a generic instantiation, whose first argument is the
	// dictionary, with no DWARF entry.
	dict            bool
	params, results []value
}

var fixtureFuncs = []fixtureFunc{
	{name: "main.Leaf", minReturns: 1, params: vals("a", tInt, "b", tInt), results: vals("r0", tInt)},
	{name: "main.Normal", check: true, minReturns: 2, params: vals("s", tStr, "n", tInt), results: vals("r0", tStr, "r1", tIface)},
	{name: "main.Medium", check: true, minReturns: 1, params: vals("i", tInt), results: vals("r0", tByte)},
	{name: "main.Large", check: true, minReturns: 1, params: vals("i", tInt), results: vals("r0", tByte)},
	{name: "main.Multi", check: true, minReturns: 3, params: vals("x", tInt), results: vals("r0", tInt)},
	{name: "main.Recovers", check: true, minReturns: 2, params: vals("fail", tByte), results: vals("err", tIface)},
	{name: "main.(*Server).Handle", check: true, minReturns: 1, params: vals("s", tPtr, "path", tStr, "n", tInt), results: vals("r0", tStr, "r1", tIface)},
	{name: "main.Many", minReturns: 1, params: vals("a", tInt, "b", tInt, "c", tInt, "d", tInt, "e", tInt, "f", tInt,
		"g", tInt, "h", tInt, "i", tInt, "j", tInt, "k", tInt, "s", tSlice), results: vals("r0", tInt, "r1", tByte)},
	{name: "main.Mixed", minReturns: 2, params: vals("a", tInt32, "f", tF64, "b", tByte, "p", tPtr, "ok", tByte), results: vals("r0", tF64, "r1", tPtr)},
	{name: "main.Move", minReturns: 1, params: vals("p", tPoint, "dx", tInt32), results: vals("r0", tPoint)},
	{name: "main.Outer.func1", check: true, minReturns: 1, params: vals("x", tInt), results: vals("r0", tInt)},
	{name: "main.Map[go.shape.int]", check: true, minReturns: 1, dict: true, params: vals("xs", tSlice, "f", tPtr), results: vals("r0", tSlice)},
}

// TestFunc opens testdata/funcs built for amd64 and arm64, with DWARF,
// with -ldflags='-s -w' and stripped by strip(1), and checks every
// function of fixtureFuncs against `go tool objdump` of the DWARF build
// (the others have no symbols for it; their code is the same, which the
// entry addresses confirm):
//
//   - Returns are exactly the RET instructions objdump shows;
//   - Site is the instruction after the stack check's JBE/BLS (the entry
//     when there is none), or later with only frame setup and spills in
//     between: no branch, nothing that writes an argument register;
//   - with DWARF, Params and Results are where goabi.Assign puts the
//     hand-written signature: the same registers and sizes, stack words at
//     SP offsets that account for the frame objdump shows being set up
//     before Site.
func TestFunc(t *testing.T) {
	for _, arch := range []struct {
		goarch string
		m      elf.Machine
		greg   string
	}{{"amd64", elf.EM_X86_64, "r14"}, {"arm64", elf.EM_AARCH64, "x28"}} {
		t.Run(arch.goarch, func(t *testing.T) {
			ref := buildFixture(t, arch.goarch, false)
			builds := []struct {
				name  string
				bin   string
				dwarf bool
			}{
				{"dwarf", ref, true},
				{"ldflags-s-w", buildFixture(t, arch.goarch, false, "-ldflags=-s -w"), false},
				{"strip", buildFixture(t, arch.goarch, true), false},
			}
			dumps := make(map[string][]asmInst)
			for _, ff := range fixtureFuncs {
				dumps[ff.name] = objdump(t, ref, ff.name)
			}
			for _, bd := range builds {
				t.Run(bd.name, func(t *testing.T) {
					b, err := Open(bd.bin)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { b.Close() })
					if b.Machine != arch.m || b.GReg != arch.greg || b.DWARF != bd.dwarf {
						t.Fatalf("have Machine %v GReg %q DWARF %v, want %v %q %v", b.Machine, b.GReg, b.DWARF, arch.m, arch.greg, bd.dwarf)
					}
					if bd.dwarf && b.GoidOffset <= 0 {
						t.Errorf("have GoidOffset %d, want runtime.g's goid offset", b.GoidOffset)
					}
					for _, ff := range fixtureFuncs {
						t.Run(ff.name, func(t *testing.T) {
							fn, err := b.Func(ff.name)
							if err != nil {
								t.Fatal(err)
							}
							checkCode(t, arch.m, ff, fn, dumps[ff.name])
							if bd.dwarf {
								checkValues(t, arch.m, ff, fn, dumps[ff.name])
								return
							}
							if len(fn.Params) != 0 || len(fn.Results) != 0 {
								t.Errorf("without DWARF: have %d params and %d results, want none", len(fn.Params), len(fn.Results))
							}
							if len(fn.Problems) != 1 || !strings.Contains(fn.Problems[0], "no DWARF") {
								t.Errorf("have Problems %q, want one saying the binary has no DWARF", fn.Problems)
							}
						})
					}
				})
			}
		})
	}
}

// checkCode compares fn's entry, site and returns with objdump's insts.
func checkCode(t *testing.T, m elf.Machine, ff fixtureFunc, fn *Func, insts []asmInst) {
	t.Helper()
	if fn.Entry != insts[0].addr {
		t.Fatalf("have Entry %#x, objdump's function starts at %#x", fn.Entry, insts[0].addr)
	}
	var rets []uint64
	var starts []uint64
	for _, in := range insts {
		starts = append(starts, in.addr)
		if in.text == "RET" {
			rets = append(rets, in.addr)
		}
	}
	if last := insts[len(insts)-1]; fn.End < last.addr+uint64(last.size) {
		t.Errorf("have End %#x, objdump's last instruction ends at %#x", fn.End, last.addr+uint64(last.size))
	}
	if !slices.Equal(fn.Returns, rets) {
		t.Errorf("have Returns %#x, objdump's RETs are %#x", fn.Returns, rets)
	}
	if len(rets) < ff.minReturns {
		t.Errorf("objdump shows %d RETs, the source has at least %d", len(rets), ff.minReturns)
	}
	after, checked := objdumpCheckEnd(m, insts)
	if checked != ff.check {
		t.Fatalf("objdump: stack check %v, want %v (the fixture no longer covers its case)", checked, ff.check)
	}
	if !checked {
		after = fn.Entry
	}
	if fn.Site < after || !slices.Contains(starts, fn.Site) {
		t.Fatalf("have Site %#x, want an instruction at or after %#x", fn.Site, after)
	}
	for _, in := range insts {
		if in.addr >= after && in.addr < fn.Site && !harmless(m, in) {
			t.Errorf("have Site %#x, after %q at %#x, which branches or overwrites an argument register", fn.Site, in.text, in.addr)
		}
	}
}

// checkValues compares fn's Params and Results with goabi.Assign's
// placement of ff's signature.
func checkValues(t *testing.T, m elf.Machine, ff fixtureFunc, fn *Func, insts []asmInst) {
	t.Helper()
	types := func(vs []value) []*goabi.Type {
		var ts []*goabi.Type
		for _, v := range vs {
			ts = append(ts, v.typ)
		}
		return ts
	}
	pts := types(ff.params)
	if ff.dict {
		pts = append([]*goabi.Type{tPtr}, pts...)
	}
	frame, err := goabi.Assign(m, pts, types(ff.results))
	if err != nil {
		t.Fatal(err)
	}
	pa := frame.Params
	if ff.dict {
		pa = pa[1:]
	}
	// Stack parameters are read at Site, below the frame the prologue
	// set up; results at a RET, where SP is back at the entry's.
	var frameSize int64
	for _, in := range insts {
		if in.addr >= fn.Site {
			break
		}
		frameSize += spDelta(t, in)
	}
	argsAtSite := frameSize + goabi.StackArgsOffset(m)
	compareValues(t, m, "param", fn.Params, ff.params, pa, argsAtSite)
	compareValues(t, m, "result", fn.Results, ff.results, frame.Results, goabi.StackArgsOffset(m))
}

func compareValues(t *testing.T, m elf.Machine, what string, have []Param, want []value, as []goabi.Assignment, stackBase int64) {
	t.Helper()
	groups := make(map[string][]Param)
	var order []string
	for _, p := range have {
		top, _, _ := strings.Cut(p.Name, ".")
		if _, ok := groups[top]; !ok {
			order = append(order, top)
		}
		groups[top] = append(groups[top], p)
	}
	var wantNames []string
	for _, v := range want {
		wantNames = append(wantNames, v.name)
	}
	if !slices.Equal(order, wantNames) {
		t.Fatalf("have %ss %q, want %q", what, order, wantNames)
	}
	for i, v := range want {
		g, a := groups[v.name], as[i]
		float := slices.ContainsFunc(a.Pieces, func(p goabi.Piece) bool { return p.Reg.Float })
		if float {
			if len(g) != 1 || g[0].Kind != Unreadable || g[0].Reason == "" {
				t.Errorf("%s %s: have %+v, want one Unreadable with a Reason (a float register)", what, v.name, g)
			}
			continue
		}
		var haveWords, wantWords []Word
		for _, p := range g {
			if p.Kind == Unreadable {
				t.Errorf("%s %s: unreadable: %s", what, p.Name, p.Reason)
			}
			haveWords = append(haveWords, p.Words...)
		}
		if a.Stack {
			for off := int64(0); off < v.typ.Size; off += 8 {
				wantWords = append(wantWords, Word{SPOffset: stackBase + a.StackOffset + off, Size: min(8, v.typ.Size-off)})
			}
		}
		for _, p := range a.Pieces {
			wantWords = append(wantWords, Word{Reg: goabi.IntRegName(m, p.Reg.N), Size: p.Size})
		}
		if !slices.Equal(haveWords, wantWords) {
			t.Errorf("%s %s: have words %+v, want %+v", what, v.name, haveWords, wantWords)
		}
	}
}

// TestOpenErrors checks the errors of Open and Func for files that are
// not Go binaries of a supported machine, and for unknown functions.
func TestOpenErrors(t *testing.T) {
	bin := buildFixture(t, runtime.GOARCH, false, "-ldflags=-s -w")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// e_machine is the half-word at byte 18 of the ELF header.
	riscv := slices.Clone(data)
	riscv[18], riscv[19] = byte(elf.EM_RISCV), byte(elf.EM_RISCV>>8)
	// A non-Go ELF file of a supported machine: the test's own fixture
	// with .gopclntab and .go.buildinfo renamed.
	notGo := slices.Clone(data)
	renameSections(t, notGo, map[string]string{".gopclntab": ".gopclnta_", ".go.buildinfo": ".go.buildinf_"})

	for _, tc := range []struct {
		name string
		path string
		want error // nil: any error
	}{
		{"missing", filepath.Join(dir, "nonexistent"), os.ErrNotExist},
		{"empty", write("empty", nil), nil},
		{"text", write("text", []byte("#!/bin/sh\necho not ELF\n")), nil},
		{"not-go", write("notgo", notGo), ErrNotGo},
		{"riscv64", write("riscv", riscv), ErrUnsupportedArch},
		{"truncated-header", write("trunc64", data[:64]), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Open(tc.path)
			if err == nil {
				b.Close()
				t.Fatalf("have no error, want one")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("have %v, want %v", err, tc.want)
			}
		})
	}

	t.Run("system-binary", func(t *testing.T) {
		// A C program of this machine, if there is one.
		p := testutil.RequireFile(t, "/bin/true")
		b, err := Open(p)
		if err == nil {
			b.Close()
		}
		if !errors.Is(err, ErrNotGo) {
			t.Fatalf("have %v, want %v", err, ErrNotGo)
		}
	})

	t.Run("unknown-function", func(t *testing.T) {
		for _, path := range []string{bin, buildFixture(t, runtime.GOARCH, false)} {
			b, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			// main.inlined exists only inlined into main.main.
			for _, name := range []string{"main.NoSuch", "", "main.(*Server).Nope", "main.Leaf ", "main.inlined"} {
				fn, err := b.Func(name)
				if !errors.Is(err, ErrNotFound) || fn != nil {
					t.Errorf("Func(%q): have %v, %v, want %v", name, fn, err, ErrNotFound)
				}
			}
		}
	})
}

// renameSections overwrites section names in an ELF file's section name
// table with names of the same length.
func renameSections(tb testing.TB, data []byte, names map[string]string) {
	tb.Helper()
	for from, to := range names {
		if len(from) != len(to) {
			tb.Fatalf("rename %s to %s: lengths differ", from, to)
		}
		i := strings.Index(string(data), "\x00"+from+"\x00")
		if i < 0 {
			tb.Fatalf("no section name %s", from)
		}
		copy(data[i+1:], to)
	}
}

// TestCorrupt cuts and damages a Go binary, with and without DWARF, and
// checks that Open and Func return errors or results but never panic:
// delve's loader runs goroutines of its own, where a panic would end the
// test binary (and guard could not turn it into an error).
//
// The linker compresses DWARF, so damaged DWARF sections fail to
// decompress before delve parses them. TestCraftedDWARF covers damage
// that delve's loader goroutines could not survive.
func TestCorrupt(t *testing.T) {
	for _, bd := range []struct {
		name  string
		flags []string
	}{{"dwarf", nil}, {"stripped", []string{"-ldflags=-s -w"}}} {
		t.Run(bd.name, func(t *testing.T) {
			bin := buildFixture(t, runtime.GOARCH, false, bd.flags...)
			data, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			ef, err := elf.NewFile(strings.NewReader(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			var cases []struct {
				name string
				data []byte
			}
			add := func(name string, d []byte) {
				cases = append(cases, struct {
					name string
					data []byte
				}{name, d})
			}
			for _, frac := range []int{2, 3, 5, 10, 100} {
				add(fmt.Sprintf("truncated-1/%d", frac), data[:len(data)/frac])
			}
			// Each section cut in half, and each overwritten with a
			// pattern.
			for _, s := range ef.Sections {
				if s.Type == elf.SHT_NOBITS || s.Size == 0 || s.Offset+s.Size > uint64(len(data)) {
					continue
				}
				add("cut-in-"+s.Name, data[:s.Offset+s.Size/2])
				d := slices.Clone(data)
				for i := s.Offset; i < s.Offset+s.Size; i++ {
					d[i] = byte(i*131) ^ 0xa5
				}
				add("garbage-"+s.Name, d)
			}
			dir := t.TempDir()
			for i, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					p := filepath.Join(dir, strconv.Itoa(i))
					if err := os.WriteFile(p, tc.data, 0o755); err != nil {
						t.Fatal(err)
					}
					b, err := Open(p)
					if err != nil {
						if b != nil {
							t.Errorf("Open returned a Binary and an error")
						}
						return
					}
					defer b.Close()
					for _, ff := range fixtureFuncs {
						fn, err := b.Func(ff.name)
						if (err == nil) == (fn == nil) {
							t.Errorf("Func(%s): have %v, %v: want a result or an error", ff.name, fn, err)
						}
						if err == nil && (fn.Site < fn.Entry || fn.Site >= fn.End) {
							t.Errorf("Func(%s): Site %#x outside %#x..%#x", ff.name, fn.Site, fn.Entry, fn.End)
						}
					}
				})
			}
		})
	}
}

// TestNoDebuginfod checks that opening a binary without DWARF does not
// run debuginfod-find, which delve calls to download debug information.
func TestNoDebuginfod(t *testing.T) {
	bin := buildFixture(t, runtime.GOARCH, false, "-ldflags=-s -w")
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	script := "#!/bin/sh\ntouch '" + marker + "'\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "debuginfod-find"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.DWARF {
		t.Fatal("the fixture has DWARF")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("Open ran debuginfod-find")
	}
}
