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
	"slices"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/dynsdt/gen"
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
	t.Setenv(dynsdt.SiteEnv, "") // auto: the generated nop stays
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := buildGoStatic(t, tt.env, tt.flags...)
			if len(sdtNotes(t, data)) != 0 {
				t.Fatal("notes before the step")
			}
			out, res, err := Bytes(data, nil)
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
			again, res2, err := Bytes(out, nil)
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

// TestBytesSites: Options.Site writes each kind's stub over the one gen
// --static wrote, and only those bytes change; the step again with the
// same kind changes nothing, and back to nop gives the original bytes.
// USDTKIT_SITE stands for SiteAuto. Bytes that are no kind's stub are an
// error.
func TestBytesSites(t *testing.T) {
	t.Setenv(dynsdt.SiteEnv, "")
	data := buildGoStatic(t, nil)
	base, res, err := Bytes(data, nil)
	if err != nil || res.Site != dynsdt.SiteNop || res.Rewritten != 0 {
		t.Fatalf("auto: %+v, %v", res, err)
	}
	pc := sdtNotes(t, base)[0].PC
	f, err := elfnotes.NewFile(bytes.NewReader(base))
	if err != nil {
		t.Fatal(err)
	}
	off, ok := textOffset(f, uint64(len(base)), pc, dynsdt.StaticStubLen)
	f.Close()
	if !ok {
		t.Fatalf("stub at %#x not in .text", pc)
	}
	if have, want := base[off:off+dynsdt.StaticStubLen], dynsdt.StaticStubAMD64(dynsdt.SiteNop); !bytes.Equal(have, want) {
		t.Fatalf("generated stub % x, want % x", have, want)
	}
	for _, c := range []struct {
		site dynsdt.Site
		env  string
	}{{dynsdt.SiteNop5, ""}, {dynsdt.SiteNop10, ""}, {dynsdt.SiteAuto, "nop5"}} {
		t.Run(c.site.String()+c.env, func(t *testing.T) {
			t.Setenv(dynsdt.SiteEnv, c.env)
			want := c.site
			if c.env != "" {
				want, _ = dynsdt.ParseSite(c.env)
			}
			out, res, err := Bytes(base, &Options{Site: c.site})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed || res.Rewritten != 1 || res.Site != want {
				t.Fatalf("result %+v", res)
			}
			if have := out[off : off+dynsdt.StaticStubLen]; !bytes.Equal(have, dynsdt.StaticStubAMD64(want)) {
				t.Errorf("stub % x, want % x", have, dynsdt.StaticStubAMD64(want))
			}
			if !bytes.Equal(out[:off], base[:off]) || !bytes.Equal(out[off+dynsdt.StaticStubLen:], base[off+dynsdt.StaticStubLen:]) {
				t.Error("bytes other than the stub changed")
			}
			if _, res, err := Bytes(out, &Options{Site: want}); err != nil || res.Changed {
				t.Errorf("again: %+v, %v", res, err)
			}
			back, _, err := Bytes(out, &Options{Site: dynsdt.SiteNop})
			if err != nil || !bytes.Equal(back, base) {
				t.Errorf("back to nop: %v, same bytes %v", err, bytes.Equal(back, base))
			}
		})
	}
	t.Run("earlier nop5 stub", func(t *testing.T) {
		// What usdtkit link --site=nop5 wrote when the nop5 stub ended in
		// ret: still a stub the step rewrites, to any kind.
		old := slices.Clone(base)
		copy(old[off:], []byte{0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3})
		for _, site := range []dynsdt.Site{dynsdt.SiteNop, dynsdt.SiteNop5} {
			out, res, err := Bytes(old, &Options{Site: site})
			if err != nil || res.Rewritten != 1 || res.Site != site {
				t.Fatalf("%v: %+v, %v", site, res, err)
			}
			if have, want := out[off:off+dynsdt.StaticStubLen], dynsdt.StaticStubAMD64(site); !bytes.Equal(have, want) {
				t.Errorf("%v: stub % x, want % x", site, have, want)
			}
		}
	})
	t.Run("foreign", func(t *testing.T) {
		bad := slices.Clone(base)
		bad[off+1] = 0x90
		if _, _, err := Bytes(bad, &Options{Site: dynsdt.SiteNop5}); err == nil {
			t.Error("no error for a stub of no kind")
		}
	})
	t.Run("bad env", func(t *testing.T) {
		t.Setenv(dynsdt.SiteEnv, "int3")
		if _, _, err := Bytes(base, nil); !errors.Is(err, dynsdt.ErrSite) {
			t.Errorf("USDTKIT_SITE=int3: %v, want ErrSite", err)
		}
	})
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
	out, res, err := Bytes(foreign, nil)
	if err != nil || !res.Changed {
		t.Fatalf("%+v, %v", res, err)
	}
	notes := sdtNotes(t, out)
	if len(notes) != 2 || notes[0].Provider != "cgo" || notes[1].Provider != "gostatic" {
		t.Fatalf("notes %+v", notes)
	}
	if _, res, err := Bytes(out, nil); err != nil || res.Changed {
		t.Errorf("the step again: %+v, %v", res, err)
	}
}

// TestBytesNoTables: a program without static probes is left as it is.
func TestBytesNoTables(t *testing.T) {
	exe, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	out, res, err := Bytes(exe, nil)
	if err != nil || res.Changed || len(res.Probes) != 0 || !bytes.Equal(out, exe) {
		t.Errorf("%+v, %v", res, err)
	}
}

// TestFile: the step on a file writes what Bytes returns, in place (the
// same inode) when it can and by replacing the file when it is a running
// executable (ETXTBSY), site patches included: with the generated nop
// stubs kept (only appended bytes and the header change), with nop5 stubs
// asked for (the stub's 16 bytes written too), and with only the stub
// changing on a file that already has its notes. The step again changes
// nothing.
func TestFile(t *testing.T) {
	t.Setenv(dynsdt.SiteEnv, "")
	data := buildGoStatic(t, nil)
	noted, res, err := Bytes(data, &Options{Site: dynsdt.SiteNop})
	if err != nil || !res.Changed || res.Rewritten != 0 {
		t.Fatalf("notes: %+v, %v", res, err)
	}
	tests := []struct {
		name      string
		in        []byte
		site      dynsdt.Site
		rewritten int
	}{
		{"nop", data, dynsdt.SiteNop, 0},
		{"nop5", data, dynsdt.SiteNop5, 1},
		{"nop5 stubs only", noted, dynsdt.SiteNop5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &Options{Site: tt.site}
			want, wres, err := Bytes(tt.in, opts)
			if err != nil || !wres.Changed || wres.Rewritten != tt.rewritten {
				t.Fatalf("bytes: %+v, %v", wres, err)
			}
			if tt.rewritten == 0 && !bytes.Equal(want[0x40:len(tt.in)], tt.in[0x40:]) {
				t.Fatal("bytes: the file changed before its end past its ELF header")
			}
			if len(want) == len(tt.in) && tt.rewritten == 0 {
				t.Fatal("bytes: nothing appended and no stub rewritten")
			}

			path := filepath.Join(t.TempDir(), "gostatic")
			if err := os.WriteFile(path, tt.in, 0o751); err != nil {
				t.Fatal(err)
			}
			before := testutil.StatID(t, path)
			res, err := File(path, opts)
			if err != nil || !res.Changed || res.Rewritten != tt.rewritten || res.Site != tt.site {
				t.Fatalf("%+v, %v", res, err)
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o751 {
				t.Errorf("mode after the step: %v, %v", st.Mode(), err)
			}
			if !bytes.Equal(mustRead(t, path), want) {
				t.Error("in place: the file is not what Bytes returns")
			}
			if testutil.StatID(t, path) != before {
				t.Error("in place: the file was replaced")
			}
			if res, err := File(path, opts); err != nil || res.Changed {
				t.Errorf("again: %+v, %v", res, err)
			}

			busy := filepath.Join(t.TempDir(), "busy")
			if err := os.WriteFile(busy, tt.in, 0o755); err != nil {
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
			if res, err := File(busy, opts); err != nil || !res.Changed || res.Rewritten != tt.rewritten {
				t.Fatalf("running executable: %+v, %v", res, err)
			}
			if !bytes.Equal(mustRead(t, busy), want) {
				t.Error("running executable: the file is not what Bytes returns")
			}
			if testutil.StatID(t, busy) == before {
				t.Error("running executable: the file was not replaced (no ETXTBSY?)")
			}
		})
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
	i := bytes.Index(data, []byte(gen.StaticMagic))
	if i < 0 {
		t.Fatal("no table in the program")
	}
	bad := bytes.Clone(data)
	bad[i+len(gen.StaticMagic)] ^= 0x10 // the description's length
	if _, _, err := Bytes(bad, nil); !errors.Is(err, gen.ErrStaticTable) {
		t.Errorf("damaged table: %v", err)
	}
	if _, _, err := Bytes(data[:100], nil); err == nil {
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
	tab, _, err := gen.ParseStaticTable(gen.StaticTableData(p))
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
		binary.LittleEndian.PutUint64(tsym[16:], uint64(len(gen.StaticTableData(p))))
		sym = append(sym, tsym...)
		strtab = append(append(strtab, "main."+tableSymbol...), 0)
	}
	b := elfnotes.Builder{Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB, Type: elf.ET_EXEC, Machine: elf.EM_X86_64,
		Sections: []elfnotes.BuildSection{
			{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: 0x401000, Align: 16, Data: []byte{0x0f, 0x1f, 0x44, 0, 0, 0xc3}},
			{Name: ".noptrdata", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: 0x402000, Align: 8, Data: append(make([]byte, pad), gen.StaticTableData(p)...)},
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
	out, res, err := Bytes(tinyELF(t), nil)
	if err != nil || !res.Changed || len(res.Probes) != 1 || res.Probes[0].PC != 0x401000 {
		t.Fatalf("%+v, %v", res, err)
	}
	if n := sdtNotes(t, out); len(n) != 1 || n[0].Args != "-8@8(%rsp)" {
		t.Errorf("notes %+v", n)
	}
	// Its stub is an older gen --static's 6 bytes: auto leaves it, a
	// kind asked for is an error.
	if res.Site != dynsdt.SiteAuto || res.Rewritten != 0 {
		t.Errorf("site %v, rewritten %d; want auto, 0", res.Site, res.Rewritten)
	}
	if _, _, err := Bytes(tinyELF(t), &Options{Site: dynsdt.SiteNop}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("site nop over a 6-byte stub: %v, want ErrNotSupported", err)
	}
}

// TestScanChunks: a table found by scanning (no symbol names it) is found
// wherever it lies in its section, across the scan's chunks too.
func TestScanChunks(t *testing.T) {
	for _, pad := range []int{0, scanChunk - len(gen.StaticMagic)/2, scanChunk - len(gen.StaticMagic), scanChunk + 3} {
		data := tinyELFAt(t, pad, false)
		_, res, err := Bytes(data, nil)
		if err != nil || !res.Changed || len(res.Probes) != 1 {
			t.Fatalf("table at %d: %+v, %v", pad, res, err)
		}
		if have, want := res.Probes[0].Semaphore, uint64(0x402000+pad+len(gen.StaticTableData(tinyProvider))-2); have != want {
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
		im, res, err := plan(cr, int64(len(data)), nil)
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
// headers, .symtab, its strings, the table, the notes and, to set the site
// kind, each stub's 16 bytes, and not the rest of its code, .gopclntab or
// the rest of its data.
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
	for _, site := range []dynsdt.Site{dynsdt.SiteNop, dynsdt.SiteNop5} {
		cr := &countingReader{r: bytes.NewReader(data)}
		im, res, err := plan(cr, int64(len(data)), &Options{Site: site})
		if err != nil || im == nil || len(res.Probes) != 1 || res.Site != site {
			t.Fatalf("%v: %+v, %v", site, res, err)
		}
		if want := min(int(site-dynsdt.SiteNop), 1); len(im.patches) != want {
			t.Errorf("%v: %d patches, want %d", site, len(im.patches), want)
		}
		limit := budget + uint64(len(res.Probes)*dynsdt.StaticStubLen)
		t.Logf("%v: read %d bytes of %d, budget %d", site, cr.n.Load(), len(data), limit)
		if n := uint64(cr.n.Load()); n > limit {
			t.Errorf("%v: read %d bytes of %d, want at most %d", site, n, len(data), limit)
		}
	}
}

// FuzzBytes: no input panics, and a file the step changed is left as it is
// by the step again.
func FuzzBytes(f *testing.F) {
	f.Add(tinyELF(f))
	f.Add(tinyELFAt(f, 8, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, res, err := Bytes(data, nil)
		if err != nil || !res.Changed {
			return
		}
		if _, res2, err := Bytes(out, nil); err != nil || res2.Changed {
			t.Fatalf("the step again: %+v, %v", res2, err)
		}
	})
}

// keepRunning runs the executable at path (gostatic, which waits for the
// end of its stdin) until the test ends: writing the file is then
// ETXTBSY.
func keepRunning(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command(path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
}

// TestFileKeepsMetadata: the step keeps what makes the file the one it
// was, written in place or replaced because it runs: its owner, setuid
// bit and file capabilities; a symlink named instead stays a symlink to
// the changed file; a running file with hard links is refused rather
// than split from them.
func TestFileKeepsMetadata(t *testing.T) {
	testutil.RequireRoot(t)
	t.Setenv(dynsdt.SiteEnv, "")
	data := buildGoStatic(t, nil)
	// vfs_cap_data revision 2, effective, permitted CAP_NET_BIND_SERVICE.
	capability := binary.LittleEndian.AppendUint32(nil, 0x02000001)
	capability = binary.LittleEndian.AppendUint32(capability, 1<<10)
	capability = append(capability, make([]byte, 12)...)
	for _, running := range []bool{false, true} {
		t.Run(map[bool]string{false: "in place", true: "running"}[running], func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "gostatic")
			if err := os.WriteFile(path, data, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o755|os.ModeSetuid); err != nil {
				t.Fatal(err)
			}
			if err := unix.Setxattr(path, "security.capability", capability, 0); err != nil {
				t.Fatalf("set file capabilities: %v", err)
			}
			link := filepath.Join(dir, "link")
			if err := os.Symlink(path, link); err != nil {
				t.Fatal(err)
			}
			if running {
				keepRunning(t, path)
			}
			if res, err := File(link, nil); err != nil || !res.Changed {
				t.Fatalf("File: %+v, %v", res, err)
			}
			if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the symlink is no longer one: %v, %v", st.Mode(), err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			sys := st.Sys().(*syscall.Stat_t)
			if sys.Uid != 65534 || sys.Gid != 65534 || st.Mode()&(os.ModePerm|os.ModeSetuid) != 0o755|os.ModeSetuid {
				t.Errorf("owner %d:%d, mode %v; want 65534:65534, -rwsr-xr-x", sys.Uid, sys.Gid, st.Mode())
			}
			have := make([]byte, 64)
			n, err := unix.Getxattr(path, "security.capability", have)
			if err != nil || !bytes.Equal(have[:n], capability) {
				t.Errorf("file capabilities %x, %v; want %x", have[:max(n, 0)], err, capability)
			}
			if res, err := File(path, nil); err != nil || res.Changed {
				t.Errorf("the step ran on the symlink's target: again %+v, %v", res, err)
			}

			hard := filepath.Join(dir, "hard")
			other := filepath.Join(dir, "other")
			if err := os.WriteFile(other, data, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(other, hard); err != nil {
				t.Fatal(err)
			}
			if running {
				keepRunning(t, other)
			}
			_, err = File(other, nil)
			if running && err == nil {
				t.Error("a running file with a hard link was replaced, splitting the link")
			}
			if !running && (err != nil || testutil.StatID(t, other) != testutil.StatID(t, hard)) {
				t.Errorf("in place with a hard link: %v; the links must stay one file", err)
			}
		})
	}
}
