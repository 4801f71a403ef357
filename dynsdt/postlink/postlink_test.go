package postlink

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// buildGoStatic builds bench/gostatic, whose probe gostatic:bench is
// static, without the post-link step, with extra go build flags.
func buildGoStatic(t *testing.T, env []string, flags ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "gostatic")
	args := append(append([]string{"build", "-o", out}, flags...), "github.com/usdtkit/usdtkit/bench/gostatic")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func sdtNotes(t *testing.T, data []byte) []elfnotes.SDTProbe {
	t.Helper()
	f, err := elfnotes.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	probes, err := f.SDTProbes()
	if err != nil {
		t.Fatal(err)
	}
	return probes
}

func TestBytes(t *testing.T) {
	tests := []struct {
		name  string
		env   []string
		flags []string
		args  string
	}{
		{"amd64", nil, nil, "-4@8(%rsp) -4@16(%rsp)"},
		{"amd64 stripped", nil, []string{"-ldflags=-s -w"}, "-4@8(%rsp) -4@16(%rsp)"},
		{"arm64 pie", []string{"GOARCH=arm64"}, []string{"-buildmode=pie"}, "-4@[sp, 8] -4@[sp, 16]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := buildGoStatic(t, tt.env, tt.flags...)
			if len(sdtNotes(t, data)) != 0 {
				t.Fatal("notes before the step")
			}
			out, res, err := Bytes(data)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed || len(res.Probes) != 1 || len(res.Missing) != 0 {
				t.Fatalf("result %+v", res)
			}
			notes := sdtNotes(t, out)
			if len(notes) != 1 || notes[0].Provider != "gostatic" || notes[0].Name != "bench" || notes[0].Args != tt.args || notes[0].Semaphore == 0 {
				t.Fatalf("notes %+v", notes)
			}
			// What was there is not moved: only the ELF header changes.
			if !bytes.Equal(out[ehSize:len(data)], data[ehSize:]) {
				t.Error("the step changed bytes of the file other than its header")
			}
			again, res2, err := Bytes(out)
			if err != nil || res2.Changed || !bytes.Equal(again, out) {
				t.Errorf("the step again: changed %v, %v", res2.Changed, err)
			}
			// debug/elf reads the result, and the stub and semaphore are
			// where the note says.
			f, err := elf.NewFile(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			probes := f.Section(".probes")
			if probes == nil || notes[0].Semaphore < probes.Addr || notes[0].Semaphore+2 > probes.Addr+probes.Size {
				t.Errorf(".probes %+v does not hold semaphore %#x", probes, notes[0].Semaphore)
			}
		})
	}
}

// TestBytesKeepsOtherNotes: notes of other probes in the file (C code
// linked with cgo) stay, and the step adds its own beside them once.
func TestBytesKeepsOtherNotes(t *testing.T) {
	data := buildGoStatic(t, nil)
	other := elfnotes.Stapsdt{PC: 0x401000, Provider: "cgo", Name: "probe", Args: "-4@%edi"}
	desc := other.AppendDesc(nil, elf.ELFCLASS64, binary.LittleEndian)
	im := &image{r: bytes.NewReader(data), size: uint64(len(data))}
	copy(im.hdr[:], data)
	if err := im.putSection(section{name: ".note.stapsdt", typ: elf.SHT_NOTE, align: 4,
		content: elfnotes.AppendNote(nil, binary.LittleEndian, elfnotes.OwnerStapsdt, elfnotes.NTStapsdt, desc)}); err != nil {
		t.Fatal(err)
	}
	foreign := im.apply(data)
	out, res, err := Bytes(foreign)
	if err != nil || !res.Changed {
		t.Fatalf("%+v, %v", res, err)
	}
	notes := sdtNotes(t, out)
	if len(notes) != 2 || notes[0].Provider != "cgo" || notes[1].Provider != "gostatic" {
		t.Fatalf("notes %+v", notes)
	}
	if _, res, err := Bytes(out); err != nil || res.Changed {
		t.Errorf("the step again: %+v, %v", res, err)
	}
}

// TestBytesNoTables: a program without static probes is left as it is.
func TestBytesNoTables(t *testing.T) {
	exe, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	out, res, err := Bytes(exe)
	if err != nil || res.Changed || len(res.Probes) != 0 || !bytes.Equal(out, exe) {
		t.Errorf("%+v, %v", res, err)
	}
}

// TestFile runs the step on a file in place, then on a running executable
// (ETXTBSY), which is replaced instead; the mode is kept, and both files
// are what Bytes returns.
func TestFile(t *testing.T) {
	data := buildGoStatic(t, nil)
	path := filepath.Join(t.TempDir(), "gostatic")
	if err := os.WriteFile(path, data, 0o751); err != nil {
		t.Fatal(err)
	}
	before := testutil.StatID(t, path)
	res, err := File(path)
	if err != nil || !res.Changed {
		t.Fatalf("%+v, %v", res, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o751 {
		t.Errorf("mode after the step: %v, %v", st.Mode(), err)
	}
	want, _, err := Bytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, path), want) {
		t.Error("in place: the file is not what Bytes returns")
	}
	if testutil.StatID(t, path) != before {
		t.Error("in place: the file was replaced")
	}

	busy := filepath.Join(t.TempDir(), "busy")
	if err := os.WriteFile(busy, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(busy)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	before = testutil.StatID(t, busy)
	if res, err := File(busy); err != nil || !res.Changed {
		t.Fatalf("running executable: %+v, %v", res, err)
	}
	if !bytes.Equal(mustRead(t, busy), want) {
		t.Error("running executable: the file is not what Bytes returns")
	}
	if testutil.StatID(t, busy) == before {
		t.Error("running executable: the file was not replaced (no ETXTBSY?)")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBytesErrors: damaged tables and files are errors, not panics.
func TestBytesErrors(t *testing.T) {
	data := buildGoStatic(t, nil)
	i := bytes.Index(data, []byte(dynsdt.StaticMagic))
	if i < 0 {
		t.Fatal("no table in the program")
	}
	bad := bytes.Clone(data)
	bad[i+len(dynsdt.StaticMagic)] ^= 0x10 // the description's length
	if _, _, err := Bytes(bad); !errors.Is(err, dynsdt.ErrStaticTable) {
		t.Errorf("damaged table: %v", err)
	}
	if _, _, err := Bytes(data[:100]); err == nil {
		t.Error("truncated file: no error")
	}
}

// tinyProvider is tinyELF's provider.
var tinyProvider = &dynsdt.ProviderSpec{Name: "fz", Probes: []dynsdt.ProbeSpec{{Name: "hit", Args: []dynsdt.ArgType{dynsdt.Int64}}}}

// tinyELF is a small ELF64 executable for the fuzz seeds: .text with a
// stub, .noptrdata with a table of provider p, and a .symtab naming the stub.
func tinyELF(t testing.TB) []byte { return tinyELFAt(t, 0, false) }

// tinyELFAt is tinyELF with pad bytes before the table in .noptrdata. With
// named, a symbol main.usdtkitSDT names the table, as in a Go executable;
// without, the step finds it by scanning.
func tinyELFAt(t testing.TB, pad int, named bool) []byte {
	p := tinyProvider
	tab, _, err := dynsdt.ParseStaticTable(dynsdt.StaticTableData(p))
	if err != nil {
		t.Fatal(err)
	}
	strtab := append([]byte("\x00main."+tab.Stub(0)+".abi0"), 0)
	sym := make([]byte, 48)
	binary.LittleEndian.PutUint32(sym[24:], 1)
	sym[24+4] = byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_FUNC)
	binary.LittleEndian.PutUint16(sym[24+6:], 1)
	binary.LittleEndian.PutUint64(sym[24+8:], 0x401000)
	binary.LittleEndian.PutUint64(sym[24+16:], 6)
	if named {
		tsym := make([]byte, 24)
		binary.LittleEndian.PutUint32(tsym, uint32(len(strtab)))
		tsym[4] = byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_OBJECT)
		binary.LittleEndian.PutUint16(tsym[6:], 2)
		binary.LittleEndian.PutUint64(tsym[8:], uint64(0x402000+pad))
		binary.LittleEndian.PutUint64(tsym[16:], uint64(len(dynsdt.StaticTableData(p))))
		sym = append(sym, tsym...)
		strtab = append(append(strtab, "main."+tableSymbol...), 0)
	}
	b := elfnotes.Builder{Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB, Type: elf.ET_EXEC, Machine: elf.EM_X86_64,
		Sections: []elfnotes.BuildSection{
			{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: 0x401000, Align: 16, Data: []byte{0x0f, 0x1f, 0x44, 0, 0, 0xc3}},
			{Name: ".noptrdata", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: 0x402000, Align: 8, Data: append(make([]byte, pad), dynsdt.StaticTableData(p)...)},
			{Name: ".symtab", Type: elf.SHT_SYMTAB, Link: 4, Info: 1, Entsize: 24, Align: 8, Data: sym},
			{Name: ".strtab", Type: elf.SHT_STRTAB, Data: strtab},
		},
		Progs: []elfnotes.BuildProg{
			{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Align: 0x1000, Sections: []string{".text"}},
			{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Align: 0x1000, Sections: []string{".noptrdata"}},
		},
	}
	data, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestTinyELF(t *testing.T) {
	out, res, err := Bytes(tinyELF(t))
	if err != nil || !res.Changed || len(res.Probes) != 1 || res.Probes[0].PC != 0x401000 {
		t.Fatalf("%+v, %v", res, err)
	}
	if n := sdtNotes(t, out); len(n) != 1 || n[0].Args != "-8@8(%rsp)" {
		t.Errorf("notes %+v", n)
	}
}

// TestScanChunks: a table found by scanning (no symbol names it) is found
// wherever it lies in its section, across the scan's chunks too.
func TestScanChunks(t *testing.T) {
	for _, pad := range []int{0, scanChunk - len(dynsdt.StaticMagic)/2, scanChunk - len(dynsdt.StaticMagic), scanChunk + 3} {
		data := tinyELFAt(t, pad, false)
		_, res, err := Bytes(data)
		if err != nil || !res.Changed || len(res.Probes) != 1 {
			t.Fatalf("table at %d: %+v, %v", pad, res, err)
		}
		if have, want := res.Probes[0].Semaphore, uint64(0x402000+pad+len(dynsdt.StaticTableData(tinyProvider))-2); have != want {
			t.Errorf("table at %d: semaphore at %#x, want %#x", pad, have, want)
		}
	}
}

// TestTableBySymbol: a table that .symtab names is read where the symbol
// says, without scanning the data before it; unnamed, it is found by
// scanning. Both give the same note.
func TestTableBySymbol(t *testing.T) {
	const pad = 4 << 20
	var notes []elfnotes.Stapsdt
	for _, named := range []bool{true, false} {
		data := tinyELFAt(t, pad, named)
		cr := &countingReader{r: bytes.NewReader(data)}
		im, res, err := plan(cr, int64(len(data)))
		if err != nil || im == nil || len(res.Probes) != 1 {
			t.Fatalf("named %v: %+v, %v", named, res, err)
		}
		if n := cr.n.Load(); named != (n < pad) {
			t.Errorf("named %v: read %d bytes of %d", named, n, len(data))
		}
		notes = append(notes, res.Probes...)
	}
	if notes[0] != notes[1] {
		t.Errorf("by symbol %+v, by scanning %+v", notes[0], notes[1])
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// TestPlanReadsLittle: on an executable with .symtab, the step reads its
// headers, .symtab, its strings, the table and the notes, and not its code,
// .gopclntab or the rest of its data.
func TestPlanReadsLittle(t *testing.T) {
	data := buildGoStatic(t, nil)
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The ELF, program and section headers, 4 KiB for the table and the
	// notes, and the symbols.
	budget := uint64(64 + 56*len(f.Progs) + 64*len(f.Sections) + 0x1000)
	for _, name := range []string{".symtab", ".strtab", ".shstrtab"} {
		s := f.Section(name)
		if s == nil {
			t.Fatalf("no %s", name)
		}
		budget += s.Size
	}
	cr := &countingReader{r: bytes.NewReader(data)}
	im, res, err := plan(cr, int64(len(data)))
	if err != nil || im == nil || len(res.Probes) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	t.Logf("read %d bytes of %d, budget %d", cr.n.Load(), len(data), budget)
	if n := uint64(cr.n.Load()); n > budget {
		t.Errorf("read %d bytes of %d, want at most %d", n, len(data), budget)
	}
}

// FuzzBytes: no input panics, and a file the step changed is left as it is
// by the step again.
func FuzzBytes(f *testing.F) {
	f.Add(tinyELF(f))
	f.Add(tinyELFAt(f, 8, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, res, err := Bytes(data)
		if err != nil || !res.Changed {
			return
		}
		if _, res2, err := Bytes(out); err != nil || res2.Changed {
			t.Fatalf("the step again: %+v, %v", res2, err)
		}
	})
}
