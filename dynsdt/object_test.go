package dynsdt_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
)

var machines = []elf.Machine{elf.EM_X86_64, elf.EM_AARCH64}

// allTypes are the valid argument types.
var allTypes = []dynsdt.ArgType{
	dynsdt.Int8, dynsdt.Int16, dynsdt.Int32, dynsdt.Int64,
	dynsdt.Uint8, dynsdt.Uint16, dynsdt.Uint32, dynsdt.Uint64,
	dynsdt.Bool, dynsdt.Pointer, dynsdt.String, dynsdt.Bytes,
}

// sampleSpec has probes with no, register-only, stack and every kind of
// argument.
func sampleSpec() *dynsdt.ProviderSpec {
	return &dynsdt.ProviderSpec{Name: "myapp", Probes: []dynsdt.ProbeSpec{
		{Name: "request__start", Args: []dynsdt.ArgType{dynsdt.String, dynsdt.Int32}},
		{Name: "all", Args: slices.Clone(allTypes)},
		{Name: "none"},
	}}
}

func build(tb testing.TB, p *dynsdt.ProviderSpec, m elf.Machine) *dynsdt.Object {
	tb.Helper()
	obj, err := dynsdt.Build(p, m, nil)
	if err != nil {
		tb.Fatalf("Build(%s, %v): %v", p.Name, m, err)
	}
	return obj
}

// writeObject builds p for m into a temporary file and returns its path.
func writeObject(tb testing.TB, p *dynsdt.ProviderSpec, m elf.Machine) (string, *dynsdt.Object) {
	tb.Helper()
	obj := build(tb, p, m)
	path := filepath.Join(tb.TempDir(), dynsdt.SOName(p.Name))
	if err := os.WriteFile(path, obj.Bytes, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path, obj
}

// wantLocation is where the C calling convention puts argument i at a
// function's entry: a full register name as sdt.Register names it, or a
// stack offset.
func wantLocation(m elf.Machine, i int) (reg string, stack int64) {
	if m == elf.EM_X86_64 {
		regs := []string{"rdi", "rsi", "rdx", "rcx", "r8", "r9"}
		if i < len(regs) {
			return regs[i], 0
		}
		return "rsp", int64(8 * (i - len(regs) + 1)) // 0(%rsp) is the return address
	}
	if i < 8 {
		return fmt.Sprintf("x%d", i), 0
	}
	return "sp", int64(8 * (i - 8))
}

// TestBuildArgs builds, for both machines, a probe per argument type and
// count (1..MaxArgs) and checks that every spec parses with sdt for its
// machine and says what a tracer must read: size, sign, register or stack
// slot.
func TestBuildArgs(t *testing.T) {
	for _, m := range machines {
		t.Run(m.String(), func(t *testing.T) {
			p := &dynsdt.ProviderSpec{Name: "args"}
			for _, typ := range allTypes {
				for n := 1; n <= dynsdt.MaxArgs; n++ {
					args := make([]dynsdt.ArgType, n)
					for i := range args {
						args[i] = typ
					}
					p.Probes = append(p.Probes, dynsdt.ProbeSpec{Name: fmt.Sprintf("%v_%d", typ, n), Args: args})
				}
			}
			// Mixed sizes, so that each slot is seen with each size.
			for k := range allTypes {
				p.Probes = append(p.Probes, dynsdt.ProbeSpec{Name: fmt.Sprintf("mixed_%d", k),
					Args: append(slices.Clone(allTypes[k:]), allTypes[:k]...)})
			}
			obj := build(t, p, m)
			f, err := elfnotes.NewFile(bytes.NewReader(obj.Bytes))
			if err != nil {
				t.Fatal(err)
			}
			probes, err := sdt.ReadProbes(f, "args.so")
			if err != nil {
				t.Fatal(err)
			}
			if len(probes) != len(p.Probes) {
				t.Fatalf("have %d probes, want %d", len(probes), len(p.Probes))
			}
			for i, pr := range probes {
				spec := p.Probes[i]
				if pr.Provider != p.Name || pr.Name != spec.Name || len(pr.Locations) != 1 {
					t.Fatalf("probe %d: have %s with %d locations, want %s:%s with 1", i, &pr, len(pr.Locations), p.Name, spec.Name)
				}
				loc := pr.Locations[0]
				if loc.Address != obj.Stubs[i] || loc.Semaphore != obj.Semaphores[i] {
					t.Errorf("%s: have address %#x semaphore %#x, want %#x %#x", spec.Name, loc.Address, loc.Semaphore, obj.Stubs[i], obj.Semaphores[i])
				}
				if len(loc.Args) != len(spec.Args) {
					t.Fatalf("%s: have %d args (%q), want %d", spec.Name, len(loc.Args), loc.ArgString, len(spec.Args))
				}
				for j, a := range loc.Args {
					checkArg(t, m, spec.Name, j, spec.Args[j], a)
				}
			}
		})
	}
}

func checkArg(t *testing.T, m elf.Machine, probe string, j int, typ dynsdt.ArgType, a sdt.Arg) {
	t.Helper()
	if a.Err != nil {
		t.Errorf("%s arg %d %q: %v", probe, j, a.Spec, a.Err)
		return
	}
	// The spec must also parse on its own, as ParseArg sees it.
	if _, err := sdt.ParseArg(m, a.Spec); err != nil {
		t.Errorf("%s arg %d: ParseArg(%q): %v", probe, j, a.Spec, err)
	}
	if a.Size != typ.Size() || a.Signed != typ.Signed() || a.Float {
		t.Errorf("%s arg %d %q: have size %d signed %v, want %d %v", probe, j, a.Spec, a.Size, a.Signed, typ.Size(), typ.Signed())
	}
	reg, stack := wantLocation(m, j)
	base, ok := a.BaseRegister()
	if !ok || base.Name != reg {
		t.Errorf("%s arg %d %q: have register %+v, want %s", probe, j, a.Spec, base, reg)
	}
	switch {
	case stack == 0 && reg != "sp":
		if a.Kind != sdt.ArgReg || base.Shift != 0 || (m == elf.EM_X86_64 && base.Width != typ.Size()) {
			t.Errorf("%s arg %d %q: have %v width %d, want register alias of %d bytes", probe, j, a.Spec, a.Kind, base.Width, typ.Size())
		}
	default:
		if a.Kind != sdt.ArgMem || a.Offset != stack || a.Index != "" || a.Symbol != "" {
			t.Errorf("%s arg %d %q: have %v offset %d, want stack slot at %d", probe, j, a.Spec, a.Kind, a.Offset, stack)
		}
	}
}

// TestBuildArgSpecs pins the exact spec strings.
func TestBuildArgSpecs(t *testing.T) {
	pad := func(n int, typ dynsdt.ArgType) []dynsdt.ArgType {
		args := make([]dynsdt.ArgType, n+1)
		for i := range args {
			args[i] = dynsdt.Uint64
		}
		args[n] = typ
		return args
	}
	tests := []struct {
		name string
		m    elf.Machine
		args []dynsdt.ArgType
		want string // the spec of the last argument
	}{
		{"x86 int32 first", elf.EM_X86_64, pad(0, dynsdt.Int32), "-4@%edi"},
		{"x86 uint8 second", elf.EM_X86_64, pad(1, dynsdt.Uint8), "1@%sil"},
		{"x86 int16 second", elf.EM_X86_64, pad(1, dynsdt.Int16), "-2@%si"},
		{"x86 uint64 third", elf.EM_X86_64, pad(2, dynsdt.Uint64), "8@%rdx"},
		{"x86 int8 fourth", elf.EM_X86_64, pad(3, dynsdt.Int8), "-1@%cl"},
		{"x86 bool fifth", elf.EM_X86_64, pad(4, dynsdt.Bool), "1@%r8b"},
		{"x86 uint32 sixth", elf.EM_X86_64, pad(5, dynsdt.Uint32), "4@%r9d"},
		{"x86 int32 seventh", elf.EM_X86_64, pad(6, dynsdt.Int32), "-4@8(%rsp)"},
		{"x86 string eighth", elf.EM_X86_64, pad(7, dynsdt.String), "8@16(%rsp)"},
		{"x86 pointer twelfth", elf.EM_X86_64, pad(11, dynsdt.Pointer), "8@48(%rsp)"},
		{"arm64 int32 first", elf.EM_AARCH64, pad(0, dynsdt.Int32), "-4@x0"},
		{"arm64 uint8 eighth", elf.EM_AARCH64, pad(7, dynsdt.Uint8), "1@x7"},
		{"arm64 int64 ninth", elf.EM_AARCH64, pad(8, dynsdt.Int64), "-8@[sp]"},
		{"arm64 bytes tenth", elf.EM_AARCH64, pad(9, dynsdt.Bytes), "8@[sp, 8]"},
		{"arm64 uint16 twelfth", elf.EM_AARCH64, pad(11, dynsdt.Uint16), "2@[sp, 24]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := build(t, &dynsdt.ProviderSpec{Name: "p", Probes: []dynsdt.ProbeSpec{{Name: "n", Args: tt.args}}}, tt.m)
			notes := readNotes(t, obj)
			specs := sdt.SplitArgs(notes[0].Args)
			if have := specs[len(specs)-1]; have != tt.want {
				t.Errorf("have %q, want %q (all: %q)", have, tt.want, notes[0].Args)
			}
		})
	}
}

func readNotes(tb testing.TB, obj *dynsdt.Object) []elfnotes.SDTProbe {
	tb.Helper()
	f, err := elfnotes.NewFile(bytes.NewReader(obj.Bytes))
	if err != nil {
		tb.Fatal(err)
	}
	notes, err := f.SDTProbes()
	if err != nil {
		tb.Fatal(err)
	}
	return notes
}

// TestBuildLayout checks the file with debug/elf: segments as Object
// describes them, addresses equal to file offsets, the stub code, the
// dynamic section and symbols, and that the SysV hash table finds every
// symbol as the dynamic loader looks it up.
func TestBuildLayout(t *testing.T) {
	stubs := map[elf.Machine][]byte{
		elf.EM_X86_64:  {0x90, 0x41, 0x5b, 0x41, 0xff, 0xe3},             // nop; pop %r11; jmp *%r11
		elf.EM_AARCH64: {0x1f, 0x20, 0x03, 0xd5, 0xc0, 0x03, 0x5f, 0xd6}, // nop; ret
	}
	pages := map[elf.Machine]uint64{elf.EM_X86_64: 0x1000, elf.EM_AARCH64: 0x10000}
	for _, m := range machines {
		t.Run(m.String(), func(t *testing.T) {
			spec := sampleSpec()
			obj := build(t, spec, m)
			f, err := elf.NewFile(bytes.NewReader(obj.Bytes))
			if err != nil {
				t.Fatal(err)
			}
			if f.Type != elf.ET_DYN || f.Machine != m || f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || obj.Machine != m {
				t.Errorf("have %v %v %v %v, want ET_DYN %v ELFCLASS64 ELFDATA2LSB", f.Type, f.Machine, f.Class, f.Data, m)
			}

			var loads []dynsdt.Segment
			var types []elf.ProgType
			for _, p := range f.Progs {
				types = append(types, p.Type)
				if p.Type == elf.PT_GNU_STACK && p.Flags != elf.PF_R|elf.PF_W {
					t.Errorf("PT_GNU_STACK flags %v, want PF_R+PF_W", p.Flags)
				}
				if p.Type != elf.PT_LOAD {
					continue
				}
				loads = append(loads, dynsdt.Segment{Off: p.Off, Vaddr: p.Vaddr, Filesz: p.Filesz, Memsz: p.Memsz, Align: p.Align, Prot: prot(p.Flags)})
				if p.Off != p.Vaddr || p.Off%pages[m] != 0 || p.Align != pages[m] {
					t.Errorf("segment %+v: want Off == Vaddr on a %#x boundary", p.ProgHeader, pages[m])
				}
			}
			wantTypes := []elf.ProgType{elf.PT_LOAD, elf.PT_LOAD, elf.PT_LOAD, elf.PT_DYNAMIC, elf.PT_GNU_STACK}
			if !slices.Equal(types, wantTypes) {
				t.Errorf("have segments %v, want %v", types, wantTypes)
			}
			if !slices.Equal(loads, obj.Segments) {
				t.Errorf("have PT_LOADs %+v\nObject.Segments %+v", loads, obj.Segments)
			}
			wantProt := []int{unix.PROT_READ, unix.PROT_READ | unix.PROT_EXEC, unix.PROT_READ | unix.PROT_WRITE}
			for i, s := range obj.Segments {
				if i < len(wantProt) && s.Prot != wantProt[i] {
					t.Errorf("segment %d: Prot %#x, want %#x", i, s.Prot, wantProt[i])
				}
			}
			for _, s := range f.Sections {
				if s.Flags&elf.SHF_ALLOC != 0 && s.Addr != s.Offset {
					t.Errorf("section %s: address %#x, offset %#x", s.Name, s.Addr, s.Offset)
				}
			}
			text, probes := f.Section(".text"), f.Section(".probes")
			for i, stub := range obj.Stubs {
				// A 16-byte slot: the copy of the stub's first word, then the stub.
				if stub%16 != 4 || stub < text.Addr+4 || stub+12 > text.Addr+text.Size {
					t.Errorf("stub %d at %#x: not at 4 in a 16-byte slot of .text", i, stub)
					continue
				}
				if have := obj.Bytes[stub : stub+uint64(len(stubs[m]))]; !bytes.Equal(have, stubs[m]) {
					t.Errorf("stub %d: have % x, want % x", i, have, stubs[m])
				}
				if have := obj.Bytes[stub-4 : stub]; !bytes.Equal(have, stubs[m][:4]) {
					t.Errorf("stub %d: copy before it % x, want % x", i, have, stubs[m][:4])
				}
				sem := obj.Semaphores[i]
				if sem < probes.Addr || sem+2 > probes.Addr+probes.Size || sem%2 != 0 {
					t.Errorf("semaphore %d at %#x: not in .probes", i, sem)
				}
				if rw := obj.Segments[2]; sem < rw.Vaddr || sem+2 > rw.Vaddr+rw.Filesz {
					t.Errorf("semaphore %d at %#x: not in the writable segment %+v", i, sem, rw)
				}
			}

			if soname, err := f.DynString(elf.DT_SONAME); err != nil || !slices.Equal(soname, []string{"myapp.so"}) {
				t.Errorf("DT_SONAME: have %q, %v; want myapp.so", soname, err)
			}
			syms, err := f.DynamicSymbols()
			if err != nil {
				t.Fatal(err)
			}
			var want []elf.Symbol
			for i, p := range spec.Probes {
				want = append(want,
					elf.Symbol{Name: "myapp_" + p.Name + "_semaphore", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_OBJECT),
						Section: elf.SectionIndex(slices.Index(f.Sections, probes)), Value: obj.Semaphores[i], Size: 2},
					elf.Symbol{Name: "myapp_" + p.Name + "_fire", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC),
						Section: elf.SectionIndex(slices.Index(f.Sections, text)), Value: obj.Stubs[i], Size: uint64(len(stubs[m]))})
			}
			if !slices.Equal(syms, want) {
				t.Errorf("have symbols %+v\nwant %+v", syms, want)
			}
			for i, s := range syms {
				if have, ok := hashLookup(t, f, s.Name); !ok || have != uint32(i+1) {
					t.Errorf("hash lookup %s: have %d %v, want %d", s.Name, have, ok, i+1)
				}
			}
			if _, ok := hashLookup(t, f, "absent"); ok {
				t.Error("hash lookup of an absent name succeeded")
			}
		})
	}
}

func prot(fl elf.ProgFlag) int {
	var p int
	if fl&elf.PF_R != 0 {
		p |= unix.PROT_READ
	}
	if fl&elf.PF_W != 0 {
		p |= unix.PROT_WRITE
	}
	if fl&elf.PF_X != 0 {
		p |= unix.PROT_EXEC
	}
	return p
}

// hashLookup finds name through DT_HASH as a dynamic loader does and
// returns its symbol index.
func hashLookup(tb testing.TB, f *elf.File, name string) (uint32, bool) {
	tb.Helper()
	hash, err := f.Section(".hash").Data()
	if err != nil {
		tb.Fatal(err)
	}
	dynsym, err := f.Section(".dynsym").Data()
	if err != nil {
		tb.Fatal(err)
	}
	dynstr, err := f.Section(".dynstr").Data()
	if err != nil {
		tb.Fatal(err)
	}
	le := binary.LittleEndian
	nbucket := le.Uint32(hash)
	var h uint32
	for _, c := range []byte(name) {
		h = h<<4 + uint32(c)
		g := h & 0xf0000000
		h ^= g >> 24
		h &^= g
	}
	chain := hash[8+4*nbucket:]
	for i := le.Uint32(hash[8+4*(h%nbucket):]); i != 0; i = le.Uint32(chain[4*i:]) {
		off := le.Uint32(dynsym[24*i:])
		end := bytes.IndexByte(dynstr[off:], 0)
		if string(dynstr[off:off+uint32(end)]) == name {
			return i, true
		}
	}
	return 0, false
}

func TestBuildErrors(t *testing.T) {
	ok := []dynsdt.ProbeSpec{{Name: "p"}}
	tests := []struct {
		name string
		spec *dynsdt.ProviderSpec
		m    elf.Machine
		want error
	}{
		{"nil", nil, elf.EM_X86_64, dynsdt.ErrSpec},
		{"bad provider", &dynsdt.ProviderSpec{Name: "my-app", Probes: ok}, elf.EM_X86_64, dynsdt.ErrSpec},
		{"bad probe", &dynsdt.ProviderSpec{Name: "a", Probes: []dynsdt.ProbeSpec{{Name: "1x"}}}, elf.EM_X86_64, dynsdt.ErrSpec},
		{"duplicate", &dynsdt.ProviderSpec{Name: "a", Probes: []dynsdt.ProbeSpec{{Name: "p"}, {Name: "p"}}}, elf.EM_X86_64, dynsdt.ErrSpec},
		{"too many args", &dynsdt.ProviderSpec{Name: "a", Probes: []dynsdt.ProbeSpec{{Name: "p", Args: make([]dynsdt.ArgType, 13)}}}, elf.EM_AARCH64, dynsdt.ErrSpec},
		{"invalid type", &dynsdt.ProviderSpec{Name: "a", Probes: []dynsdt.ProbeSpec{{Name: "p", Args: []dynsdt.ArgType{dynsdt.ArgInvalid}}}}, elf.EM_X86_64, dynsdt.ErrSpec},
		{"no probes", &dynsdt.ProviderSpec{Name: "a"}, elf.EM_X86_64, dynsdt.ErrSpec},
		{"machine", &dynsdt.ProviderSpec{Name: "a", Probes: ok}, elf.EM_RISCV, dynsdt.ErrUnsupportedMachine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := dynsdt.Build(tt.spec, tt.m, nil)
			if !errors.Is(err, tt.want) || obj != nil {
				t.Errorf("have %v, %v; want nil, %v", obj, err, tt.want)
			}
		})
	}
}

func TestBuildDeterministic(t *testing.T) {
	for _, m := range machines {
		a, b := build(t, sampleSpec(), m), build(t, sampleSpec(), m)
		if !bytes.Equal(a.Bytes, b.Bytes) {
			t.Errorf("%v: two builds differ", m)
		}
	}
}

// TestBuildList reads the probes back from a file with sdt.List, as
// usdtkit list does.
func TestBuildList(t *testing.T) {
	for _, m := range machines {
		t.Run(m.String(), func(t *testing.T) {
			spec := sampleSpec()
			path, obj := writeObject(t, spec, m)
			probes, err := sdt.List(&sdt.ListOptions{Paths: []string{path}})
			if err != nil {
				t.Fatal(err)
			}
			if len(probes) != len(spec.Probes) {
				t.Fatalf("have %d probes, want %d", len(probes), len(spec.Probes))
			}
			for i, p := range probes {
				loc := p.Locations[0]
				if p.Machine != m || p.Name != spec.Probes[i].Name || loc.OffsetErr != nil || loc.SemaphoreErr != nil ||
					loc.Offset != obj.Stubs[i] || loc.SemaphoreOffset != obj.Semaphores[i] {
					t.Errorf("probe %d: have %s %v offset %#x (%v) semaphore %#x (%v), want %s offset %#x semaphore %#x",
						i, &p, p.Machine, loc.Offset, loc.OffsetErr, loc.SemaphoreOffset, loc.SemaphoreErr,
						spec.Probes[i].Name, obj.Stubs[i], obj.Semaphores[i])
				}
			}
		})
	}
}

// TestBuildReadelf checks the files with binutils readelf: no warnings for
// the headers, dynamic section and symbols, and every note as built.
func TestBuildReadelf(t *testing.T) {
	readelf := testutil.RequireTool(t, "readelf")
	for _, m := range machines {
		t.Run(m.String(), func(t *testing.T) {
			spec := sampleSpec()
			path, obj := writeObject(t, spec, m)
			var stderr bytes.Buffer
			cmd := exec.Command(readelf, "-lW", "-d", "-Ws", "--dyn-syms", "-n", path)
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || stderr.Len() > 0 {
				t.Fatalf("readelf: %v\n%s", err, stderr.Bytes())
			}
			var have []string
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				for _, key := range []string{"Provider: ", "Name: ", "Location: ", "Arguments:"} {
					if i := strings.Index(line, key); i >= 0 {
						have = append(have, strings.TrimSpace(line[i:]))
					}
				}
			}
			notes := readNotes(t, obj)
			base := notes[0].Base
			var want []string
			for i, p := range spec.Probes {
				want = append(want, "Provider: myapp", "Name: "+p.Name,
					fmt.Sprintf("Location: %#016x, Base: %#016x, Semaphore: %#016x", obj.Stubs[i], base, obj.Semaphores[i]),
					strings.TrimSpace("Arguments: "+notes[i].Args))
			}
			if !slices.Equal(have, want) {
				t.Errorf("readelf -n:\nhave %q\nwant %q", have, want)
			}
			for _, p := range spec.Probes {
				fire := dynsdt.FireSymbol(spec.Name, p.Name)
				if !regexp.MustCompile(`FUNC +GLOBAL +DEFAULT +\d+ ` + fire + `\n`).Match(out) {
					t.Errorf("readelf --dyn-syms: no FUNC %s", fire)
				}
			}
			if !bytes.Contains(out, []byte("Library soname: [myapp.so]")) {
				t.Error("readelf -d: no soname myapp.so")
			}
		})
	}
}

// TestBuildTplist lists the probes with bcc's tplist, which parses the
// argument specs with bcc's own parser.
func TestBuildTplist(t *testing.T) {
	tplist := testutil.RequireTool(t, "tplist-bpfcc")
	spec := sampleSpec()
	path, _ := writeObject(t, spec, elf.EM_X86_64)
	out, err := exec.Command(tplist, "-vv", "-l", path).CombinedOutput()
	if err != nil {
		t.Fatalf("tplist: %v\n%s", err, out)
	}
	for _, want := range []string{
		"myapp:request__start", "myapp:all", "myapp:none",
		"argument #1 8 unsigned bytes @ di", "argument #2 4 signed   bytes @ si",
		"argument #7 4 unsigned bytes @ *(sp + 8)", "argument #12 8 unsigned bytes @ *(sp + 48)",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("tplist output lacks %q:\n%s", want, out)
		}
	}
}

// TestBuildDlopen loads an x86-64 object with the C library's dlopen
// through Python's ctypes and calls every stub; a stub just returns.
func TestBuildDlopen(t *testing.T) {
	if !hostIs(elf.EM_X86_64) {
		t.Skip("the object is x86-64 and this host is not")
	}
	python := testutil.RequireFile(t, "/usr/bin/python3.11")
	path, _ := writeObject(t, sampleSpec(), elf.EM_X86_64)
	script := `
import ctypes, sys
l = ctypes.CDLL(sys.argv[1])
l.myapp_request__start_fire(1, 2)
l.myapp_all_fire(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
l.myapp_none_fire()
print(ctypes.c_uint16.in_dll(l, "myapp_all_semaphore").value, "ok")
`
	out, err := exec.Command(python, "-c", script, path).CombinedOutput()
	if err != nil || string(out) != "0 ok\n" {
		t.Fatalf("python: %v\n%s", err, out)
	}
}

// TestBuildSites checks the stub Build writes for each site kind: on
// x86-64 the kind's bytes at the site, the copy of its first word before
// it, and the symbol's size; on arm64 the one nop stub whatever the kind.
func TestBuildSites(t *testing.T) {
	spec := &dynsdt.ProviderSpec{Name: "sites", Probes: []dynsdt.ProbeSpec{{Name: "a"}, {Name: "b", Args: []dynsdt.ArgType{dynsdt.Int32}}}}
	arm := []byte{0x1f, 0x20, 0x03, 0xd5, 0xc0, 0x03, 0x5f, 0xd6}
	for _, c := range []struct {
		m    elf.Machine
		site dynsdt.Site
		want []byte
		kind dynsdt.Site
	}{
		{elf.EM_X86_64, dynsdt.SiteAuto, []byte{0x90, 0x41, 0x5b, 0x41, 0xff, 0xe3}, dynsdt.SiteNop},
		{elf.EM_X86_64, dynsdt.SiteNop, []byte{0x90, 0x41, 0x5b, 0x41, 0xff, 0xe3}, dynsdt.SiteNop},
		{elf.EM_X86_64, dynsdt.SiteNop5, []byte{0x0f, 0x1f, 0x44, 0x00, 0x00, 0x41, 0x5b, 0x41, 0xff, 0xe3}, dynsdt.SiteNop5},
		{elf.EM_X86_64, dynsdt.SiteNop10, []byte{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc3}, dynsdt.SiteNop10},
		{elf.EM_AARCH64, dynsdt.SiteNop5, arm, dynsdt.SiteNop},
		{elf.EM_AARCH64, dynsdt.SiteNop10, arm, dynsdt.SiteNop},
	} {
		t.Run(fmt.Sprintf("%v/%v", c.m, c.site), func(t *testing.T) {
			obj, err := dynsdt.Build(spec, c.m, &dynsdt.BuildOptions{Site: c.site})
			if err != nil {
				t.Fatal(err)
			}
			if obj.Site != c.kind {
				t.Errorf("Site %v, want %v", obj.Site, c.kind)
			}
			f, err := elf.NewFile(bytes.NewReader(obj.Bytes))
			if err != nil {
				t.Fatal(err)
			}
			syms, err := f.DynamicSymbols()
			if err != nil {
				t.Fatal(err)
			}
			for i, stub := range obj.Stubs {
				if have := obj.Bytes[stub : stub+uint64(len(c.want))]; !bytes.Equal(have, c.want) {
					t.Errorf("stub %d: % x, want % x", i, have, c.want)
				}
				if have := obj.Bytes[stub-4 : stub]; !bytes.Equal(have, c.want[:4]) {
					t.Errorf("stub %d: copy before it % x, want % x", i, have, c.want[:4])
				}
				// On x86-64 the rest of the 16-byte slot is int3 padding.
				if end := stub - 4 + 16; c.m == elf.EM_X86_64 && stub+uint64(len(c.want)) <= end {
					if pad := obj.Bytes[stub+uint64(len(c.want)) : end]; !bytes.Equal(pad, bytes.Repeat([]byte{0xcc}, len(pad))) {
						t.Errorf("stub %d: padding % x, want int3s", i, pad)
					}
				} else if c.m == elf.EM_X86_64 {
					t.Errorf("stub %d: %d bytes do not fit a 16-byte slot after the 4-byte copy", i, len(c.want))
				}
				if s := syms[2*i+1]; s.Value != stub || s.Size != uint64(len(c.want)) {
					t.Errorf("stub %d: symbol %s at %#x size %d, want %#x size %d", i, s.Name, s.Value, s.Size, stub, len(c.want))
				}
			}
		})
	}
	if _, err := dynsdt.Build(spec, elf.EM_X86_64, &dynsdt.BuildOptions{Site: dynsdt.SiteNop10 + 1}); !errors.Is(err, dynsdt.ErrSite) {
		t.Errorf("unknown site: %v, want ErrSite", err)
	}
}

func TestParseSite(t *testing.T) {
	for _, s := range []dynsdt.Site{dynsdt.SiteAuto, dynsdt.SiteNop, dynsdt.SiteNop5, dynsdt.SiteNop10} {
		if p, err := dynsdt.ParseSite(s.String()); err != nil || p != s {
			t.Errorf("ParseSite(%q) = %v, %v; want %v", s.String(), p, err, s)
		}
	}
	for _, bad := range []string{"", "NOP", "nop1", "int3"} {
		if _, err := dynsdt.ParseSite(bad); !errors.Is(err, dynsdt.ErrSite) {
			t.Errorf("ParseSite(%q): %v, want ErrSite", bad, err)
		}
	}
}

// TestBuildSymbolsPrefixed: every dynamic symbol of a built object starts
// with the provider's name, and no two are one, whatever the probes are
// called: probes named write and malloc cannot interpose on the C
// library's functions, and a probe named like another's semaphore
// (a_p_semaphore beside p) has symbols of its own.
func TestBuildSymbolsPrefixed(t *testing.T) {
	spec := &dynsdt.ProviderSpec{Name: "a", Probes: []dynsdt.ProbeSpec{
		{Name: "write", Args: []dynsdt.ArgType{dynsdt.Int32}}, {Name: "malloc"}, {Name: "main"},
		{Name: "a_p_semaphore"}, {Name: "p"}, {Name: "a_p_fire"},
	}}
	obj, err := dynsdt.Build(spec, elf.EM_X86_64, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(obj.Bytes))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[string]bool)
	for _, s := range syms {
		if !strings.HasPrefix(s.Name, "a_") || seen[s.Name] {
			t.Errorf("symbol %q: not prefixed with a_, or twice", s.Name)
		}
		seen[s.Name] = true
	}
	if len(syms) != 2*len(spec.Probes) {
		t.Errorf("%d symbols, want %d (a semaphore and a stub per probe)", len(syms), 2*len(spec.Probes))
	}
}
