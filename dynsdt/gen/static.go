package gen

// Static probes: usdtkit gen --static.
//
// The generated package has the API Go's has (Xxx(...),
// XxxEnabled(), Load, Close, Path), but its probes are compiled into the
// program: per probe an assembly stub whose first instruction is the probe
// site, and a 2-byte semaphore in the program's initialised data. A post-link
// step (package dynsdt/postlink, usdtkit link, or go build -toolexec 'usdtkit
// toolexec') finds both in the linked executable and adds the
// .note.stapsdt notes that tracers read. See StaticTable for what the
// program carries for that step.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"go/format"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// StaticMagic starts every static probe table in a program's data (see
// StaticTable); the last byte is the table format's version.
const StaticMagic = "usdtkit-static\x00\x01"

// staticHeaderSize is the table's header: StaticMagic, the description's
// length and the probe count, both little-endian uint32.
const staticHeaderSize = len(StaticMagic) + 8

// StaticTable is what a program built with gen --static carries for the
// post-link step, one per provider: a variable in the program's
// initialised, pointer-free data (.noptrdata, in the file-backed writable
// segment, where the kernel's uprobe ref_ctr needs semaphores), laid out as
//
//	magic   StaticMagic (16 bytes)
//	n       uint32 LE: the length of desc, a multiple of 8
//	count   uint32 LE: the number of probes
//	desc    "PROVIDER\0TOKEN\0" then per probe "NAME\0TYPES\0", zero-padded
//	sems    count uint16 semaphores, in probe order
//
// TYPES are the argument types' names (ArgType.String) separated by
// commas. The stub of probe i is the assembly function named
// "usdtkit_TOKEN_i" in the program's package; TOKEN is derived from the
// provider's declaration, so that a table and its stubs match. A table is
// found by its magic, so a program stripped of its symbol table
// (-ldflags=-s) still gets its notes; stubs are then found by name in
// .gopclntab.
type StaticTable struct {
	Provider string
	Token    string
	Probes   []dynsdt.ProbeSpec
	// Sems is the offset of the first semaphore from the table's start.
	Sems int
}

// Stub returns the name of probe i's stub function, without its package.
func (t *StaticTable) Stub(i int) string { return staticStub(t.Token, i) }

func staticStub(token string, i int) string { return "usdtkit_" + token + "_" + strconv.Itoa(i) }

// ErrStaticTable is wrapped by ParseStaticTable's errors.
var ErrStaticTable = errors.New("malformed static probe table")

// ParseStaticTable decodes the static probe table at the start of b (which
// begins with StaticMagic) and returns it with its size in bytes. The
// semaphores must be inside b. Errors wrap ErrStaticTable.
func ParseStaticTable(b []byte) (*StaticTable, int, error) {
	fail := func(format string, args ...any) (*StaticTable, int, error) {
		return nil, 0, fmt.Errorf("%w: %s", ErrStaticTable, fmt.Sprintf(format, args...))
	}
	if len(b) < staticHeaderSize || string(b[:len(StaticMagic)]) != StaticMagic {
		return fail("no header")
	}
	n := binary.LittleEndian.Uint32(b[len(StaticMagic):])
	count := binary.LittleEndian.Uint32(b[len(StaticMagic)+4:])
	if n%8 != 0 || uint64(n) > uint64(len(b)-staticHeaderSize) {
		return fail("description of %d bytes in %d", n, len(b))
	}
	if count == 0 || count > maxStaticProbes {
		return fail("%d probes", count)
	}
	size := uint64(staticHeaderSize) + uint64(n) + 2*uint64(count)
	if size > uint64(len(b)) {
		return fail("%d semaphores do not fit", count)
	}
	fields := strings.Split(string(b[staticHeaderSize:staticHeaderSize+int(n)]), "\x00")
	if len(fields) < 2+2*int(count) {
		return fail("%d strings for %d probes", len(fields), count)
	}
	t := &StaticTable{Provider: fields[0], Token: fields[1], Sems: staticHeaderSize + int(n)}
	if !isToken(t.Token) {
		return fail("provider %q, token %q", t.Provider, t.Token)
	}
	for i := range int(count) {
		// "NAME\0TYPES" says what ParseProbeSpec's "NAME:TYPES" does;
		// the comparison with the generator's bytes below rejects the
		// spaces ParseProbeSpec would allow.
		name, types := fields[2+2*i], fields[3+2*i]
		pr, err := dynsdt.ParseProbeSpec(name + ":" + types)
		if err != nil {
			return fail("%v", err)
		}
		t.Probes = append(t.Probes, pr)
	}
	p := dynsdt.ProviderSpec{Name: t.Provider, Probes: t.Probes}
	if err := p.Validate(); err != nil {
		return fail("%v", err)
	}
	if t.Token != staticToken(&p) {
		return fail("token %s does not match the probes", t.Token)
	}
	// The description holds nothing but its strings and zero padding:
	// bytes the generator did not write mean the table is not one of ours.
	if !bytes.Equal(staticTableBytes(&p), b[:t.Sems]) {
		return fail("description has bytes after its strings or more padding than its strings need")
	}
	return t, int(size), nil
}

// maxStaticProbes bounds a table's probe count.
const maxStaticProbes = 1 << 16

func isToken(s string) bool {
	if len(s) != 16 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// staticToken names a provider's stubs: 16 hex digits of a hash of its
// declaration, so that a table matches only the stubs generated with it.
func staticToken(p *dynsdt.ProviderSpec) string {
	h := sha256.New()
	h.Write([]byte(p.Name))
	for _, pr := range p.Probes {
		h.Write([]byte{0})
		h.Write([]byte(pr.Name))
		for _, a := range pr.Args {
			h.Write([]byte{',', byte(a)})
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// StaticTableData returns the bytes of p's static probe table as the
// generated variable holds them, semaphores (zero) included: what
// ParseStaticTable reads. It does not validate p.
func StaticTableData(p *dynsdt.ProviderSpec) []byte {
	return append(staticTableBytes(p), make([]byte, 2*len(p.Probes))...)
}

// staticTableBytes returns p's table without the semaphores.
func staticTableBytes(p *dynsdt.ProviderSpec) []byte {
	var desc []byte
	desc = append(append(desc, p.Name...), 0)
	desc = append(append(desc, staticToken(p)...), 0)
	for _, pr := range p.Probes {
		desc = append(append(desc, pr.Name...), 0)
		for i, a := range pr.Args {
			if i > 0 {
				desc = append(desc, ',')
			}
			desc = append(desc, a.String()...)
		}
		desc = append(desc, 0)
	}
	for len(desc)%8 != 0 {
		desc = append(desc, 0)
	}
	hdr := []byte(StaticMagic)
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(desc)))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(p.Probes)))
	return append(hdr, desc...)
}

// Static returns the files of gen --static for p in package pkg:
// PROVIDER.go (the API), PROVIDER_stubs.go (the stubs' declarations, amd64
// and arm64), PROVIDER_amd64.s and PROVIDER_arm64.s (the stubs), and
// PROVIDER_other.go (no-op stubs for other architectures, where the
// probes never fire). Each probe's Xxx and XxxEnabled are small enough for
// the compiler to inline, whatever the probe's arguments: an untraced
// probe costs its caller one load of the semaphore and a branch. Errors
// are Go's.
func Static(p *dynsdt.ProviderSpec, pkg string) ([]File, error) {
	if _, err := Go(p, pkg); err != nil {
		return nil, err // the same checks of p, pkg and Go names
	}
	tok := staticToken(p)
	table := staticTableBytes(p)

	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("// Code generated by usdtkit gen --static; DO NOT EDIT.\n\n")
	w("package %s\n\n", pkg)
	w("import (\n")
	if uses(p, dynsdt.String) || uses(p, dynsdt.Bytes) {
		w("%q\n", "runtime")
	}
	if uses(p, dynsdt.String) || uses(p, dynsdt.Bytes) {
		w("%q\n", "unsafe")
	}
	w("\n%q\n)\n\n", "github.com/usdtkit/usdtkit/dynsdt")
	w("// This file declares the static USDT probes of provider %s: they are\n", p.Name)
	w("// part of the executable once usdtkit's post-link step has added their\n")
	w("// notes (go build -toolexec 'usdtkit toolexec', or usdtkit link BIN after\n")
	w("// go build), so tracers find them by path, before the program runs, in\n")
	w("// every process of it. Without the step the program runs and the probes\n")
	w("// never fire. Every function is safe for concurrent use.\n\n")

	w("// usdtkitSDT is provider %s's static probe table (StaticTable in\n", p.Name)
	w("// package dynsdt/gen): what the post-link step reads, and the probes'\n")
	w("// semaphores, which tracers raise while attached.\n")
	w("var usdtkitSDT = struct {\n")
	w("hdr [%d]byte\n", staticHeaderSize)
	w("desc [%d]byte\n", len(table)-staticHeaderSize)
	w("sems [%d]uint16\n", len(p.Probes))
	w("}{\n")
	w("hdr: [%d]byte{%s},\n", staticHeaderSize, byteList(table[:staticHeaderSize]))
	w("desc: [%d]byte{%s},\n", len(table)-staticHeaderSize, byteList(table[staticHeaderSize:]))
	w("}\n\n")

	w(`// Load does nothing: static probes need no loading. It is here so that
// code written for usdtkit gen's run-time probes builds unchanged.
func Load(opts *dynsdt.Options) error { return nil }

// Close does nothing, as Load.
func Close() error { return nil }

// Path returns "": static probes are in the executable itself.
func Path() string { return "" }
`)
	for i, pr := range p.Probes {
		writeStaticProbe(&b, p.Name, tok, i, pr)
	}
	if uses(p, dynsdt.Bool) {
		w("\nfunc usdtkitBool(b bool) uint64 {\nif b {\nreturn 1\n}\nreturn 0\n}\n")
	}
	if uses(p, dynsdt.String) || uses(p, dynsdt.Bytes) {
		w("\nfunc usdtkitPtr(p unsafe.Pointer) uint64 { return uint64(uintptr(p)) }\n")
	}
	api, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("generate provider %s: format: %w", p.Name, err)
	}

	var decl, other, amd, arm bytes.Buffer
	fmt.Fprintf(&decl, "// Code generated by usdtkit gen --static; DO NOT EDIT.\n\n//go:build amd64 || arm64\n\npackage %s\n\n", pkg)
	fmt.Fprintf(&other, "// Code generated by usdtkit gen --static; DO NOT EDIT.\n\n//go:build !amd64 && !arm64\n\npackage %s\n\n", pkg)
	for _, f := range []*bytes.Buffer{&amd, &arm} {
		fmt.Fprintf(f, "// Code generated by usdtkit gen --static; DO NOT EDIT.\n\n#include \"textflag.h\"\n")
	}
	for i, pr := range p.Probes {
		stub := staticStub(tok, i)
		var params []string
		for j := range pr.Args {
			params = append(params, fmt.Sprintf("a%d", j))
		}
		sig := ""
		if len(params) > 0 {
			sig = strings.Join(params, ", ") + " uint64"
		}
		fmt.Fprintf(&decl, "// %s is the site of probe %s:%s.\n//\n//go:noescape\nfunc %s(%s)\n\n", stub, p.Name, pr.Name, stub, sig)
		fmt.Fprintf(&other, "func %s(%s) {}\n\n", stub, sig)
		frame := fmt.Sprintf("$0-%d", 8*len(pr.Args))
		// x86-64: StaticStubAMD64(SiteNop), dynsdt's stub for the 1-byte
		// nop (see stubX86Nop), as bytes: the assembler does not track the
		// pop, so the slot can take another kind's stub (postlink's Site).
		// arm64: nop, then ret.
		fmt.Fprintf(&amd, "\n// func %s(%s)\n// nop (the probe site); pop %%r11; jmp *%%r11; int3 up to 16 bytes (usdtkit link --site)\nTEXT ·%s(SB), NOSPLIT|NOFRAME, %s", stub, sig, stub, frame)
		for j, b := range dynsdt.StaticStubAMD64(dynsdt.SiteNop) {
			sep := "; "
			if j%8 == 0 {
				sep = "\n\t"
			}
			fmt.Fprintf(&amd, "%sBYTE $0x%02x", sep, b)
		}
		amd.WriteString("\n")
		fmt.Fprintf(&arm, "\n// func %s(%s)\nTEXT ·%s(SB), NOSPLIT|NOFRAME, %s\n\tWORD $0xd503201f\n\tRET\n", stub, sig, stub, frame)
	}
	declSrc, err := format.Source(decl.Bytes())
	if err != nil {
		return nil, fmt.Errorf("generate provider %s: format: %w", p.Name, err)
	}
	otherSrc, err := format.Source(other.Bytes())
	if err != nil {
		return nil, fmt.Errorf("generate provider %s: format: %w", p.Name, err)
	}
	return []File{
		{p.Name + ".go", api},
		{p.Name + "_stubs.go", declSrc},
		{p.Name + "_other.go", otherSrc},
		{p.Name + "_amd64.s", amd.Bytes()},
		{p.Name + "_arm64.s", arm.Bytes()},
	}, nil
}

func byteList(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = "0x" + strconv.FormatUint(uint64(c), 16)
	}
	return strings.Join(parts, ", ")
}

// writeStaticProbe writes probe pr's functions: Xxx, which the compiler
// inlines into every caller, so that an untraced probe costs its caller
// one load and a branch; and XxxEnabled.
//
// A probe of at most staticDirectArgs arguments, none a string or bytes
// and at most one a bool, calls its stub from Xxx itself: the site is then in the caller's body,
// as a sys/sdt.h probe is in C. Any other probe's Xxx calls
// usdtkitFireXxx, out of line, which converts the arguments (a string is
// copied with a NUL) and calls the stub; Xxx would not inline otherwise.
// Traced, that costs one more call and return per hit, and the return
// after the site's int3 trap is the costly one (see "Probe sites" in
// docs/probes.md).
func writeStaticProbe(b *bytes.Buffer, provider, tok string, index int, pr dynsdt.ProbeSpec) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	g := goName(pr.Name)
	var params, names, sig, call, alive []string
	direct, bools := len(pr.Args) <= staticDirectArgs, 0
	for i, a := range pr.Args {
		if a == dynsdt.Bool {
			bools++
		}
		params = append(params, fmt.Sprintf("arg%d %s", i, argGo[a].param))
		names = append(names, fmt.Sprintf("arg%d", i))
		sig = append(sig, a.String())
		direct = direct && a != dynsdt.String && a != dynsdt.Bytes && bools <= 1
	}
	w("\n// %s fires probe %s:%s(%s)\n", g, provider, pr.Name, strings.Join(sig, ", "))
	w("// if a tracer has enabled it, and otherwise returns at once.\n")
	w("func %s(%s) {\n", g, strings.Join(params, ", "))
	w("if usdtkitSDT.sems[%d] != 0 {\n", index)
	if !direct {
		w("usdtkitFire%s(%s)\n", g, strings.Join(names, ", "))
		w("}\n}\n\n")
		w("// usdtkitFire%s calls probe %s:%s's stub. It is not inlined, so that\n", g, provider, pr.Name)
		w("// %s is.\n//\n//go:noinline\n", g)
		w("func usdtkitFire%s(%s) {\n", g, strings.Join(params, ", "))
	}
	for i, a := range pr.Args {
		switch a {
		case dynsdt.String:
			w("s%d := dynsdt.CString(arg%d)\n", i, i)
			call = append(call, fmt.Sprintf("usdtkitPtr(unsafe.Pointer(unsafe.SliceData(s%d)))", i))
			alive = append(alive, fmt.Sprintf("s%d", i))
		case dynsdt.Bytes:
			call = append(call, fmt.Sprintf("usdtkitPtr(unsafe.Pointer(unsafe.SliceData(arg%d)))", i))
			alive = append(alive, fmt.Sprintf("arg%d", i))
		case dynsdt.Pointer:
			call = append(call, fmt.Sprintf("uint64(arg%d)", i))
		case dynsdt.Bool:
			call = append(call, fmt.Sprintf("usdtkitBool(arg%d)", i))
		default:
			// Signed values sign-extend, as a signed spec expects.
			call = append(call, fmt.Sprintf("uint64(arg%d)", i))
		}
	}
	w("%s(%s)\n", staticStub(tok, index), strings.Join(call, ", "))
	for _, v := range alive {
		w("runtime.KeepAlive(%s)\n", v)
	}
	if direct {
		w("}\n")
	}
	w("}\n\n")
	w("// %sEnabled reports whether a tracer has enabled probe %s:%s;\n", g, provider, pr.Name)
	w("// use it to skip work that only computes the probe's arguments.\n")
	w("func %sEnabled() bool {\nreturn usdtkitSDT.sems[%d] != 0\n}\n", g, index)
}

// staticDirectArgs is the most arguments (none a string or bytes, one
// bool at most) with which Xxx calls its stub itself and still inlines:
// the compiler's inlining budget (80) takes the call (57) and the
// conversions of two (TestGenerateStaticInlines checks every kind).
const staticDirectArgs = 2
