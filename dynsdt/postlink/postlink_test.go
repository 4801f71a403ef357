package postlink

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/elfnotes"
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

// TestBytesSites: Options.Site writes each kind's stub over the one gen
// --static wrote, and only those bytes change; the step again with the
// same kind changes nothing, and back to nop gives the original bytes.
// USDTKIT_SITE stands for SiteAuto. Bytes that are no kind's stub are an
// error.
func TestBytesSites(t *testing.T) {
	t.Setenv(dynsdt.SiteEnv, "")
	data := buildGoStatic(t, nil)
	base, res, err := Bytes(data)
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
			out, res, err := BytesWith(base, &Options{Site: c.site})
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
			if _, res, err := BytesWith(out, &Options{Site: want}); err != nil || res.Changed {
				t.Errorf("again: %+v, %v", res, err)
			}
			back, _, err := BytesWith(out, &Options{Site: dynsdt.SiteNop})
			if err != nil || !bytes.Equal(back, base) {
				t.Errorf("back to nop: %v, same bytes %v", err, bytes.Equal(back, base))
			}
		})
	}
	t.Run("foreign", func(t *testing.T) {
		bad := slices.Clone(base)
		bad[off+1] = 0x90
		if _, _, err := BytesWith(bad, &Options{Site: dynsdt.SiteNop5}); err == nil {
			t.Error("no error for a stub of no kind")
		}
	})
	t.Run("bad env", func(t *testing.T) {
		t.Setenv(dynsdt.SiteEnv, "int3")
		if _, _, err := Bytes(base); !errors.Is(err, dynsdt.ErrSite) {
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
	foreign, err := putSection(data, section{name: ".note.stapsdt", typ: elf.SHT_NOTE, align: 4,
		content: elfnotes.AppendNote(nil, binary.LittleEndian, elfnotes.OwnerStapsdt, elfnotes.NTStapsdt, desc)})
	if err != nil {
		t.Fatal(err)
	}
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
// (ETXTBSY), which is replaced instead; the mode is kept.
func TestFile(t *testing.T) {
	data := buildGoStatic(t, nil)
	path := filepath.Join(t.TempDir(), "gostatic")
	if err := os.WriteFile(path, data, 0o751); err != nil {
		t.Fatal(err)
	}
	res, err := File(path)
	if err != nil || !res.Changed {
		t.Fatalf("%+v, %v", res, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o751 {
		t.Errorf("mode after the step: %v, %v", st.Mode(), err)
	}
	if n := len(sdtNotes(t, mustRead(t, path))); n != 1 {
		t.Errorf("%d notes", n)
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
	if res, err := File(busy); err != nil || !res.Changed {
		t.Fatalf("running executable: %+v, %v", res, err)
	}
	if n := len(sdtNotes(t, mustRead(t, busy))); n != 1 {
		t.Errorf("running executable: %d notes", n)
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

// tinyELF is a small ELF64 executable for the fuzz seeds: .text with a
// stub, .noptrdata with a table of provider p, and a .symtab naming the stub.
func tinyELF(t testing.TB) []byte {
	p := &dynsdt.ProviderSpec{Name: "fz", Probes: []dynsdt.ProbeSpec{{Name: "hit", Args: []dynsdt.ArgType{dynsdt.Int64}}}}
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
	b := elfnotes.Builder{Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB, Type: elf.ET_EXEC, Machine: elf.EM_X86_64,
		Sections: []elfnotes.BuildSection{
			{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: 0x401000, Align: 16, Data: []byte{0x0f, 0x1f, 0x44, 0, 0, 0xc3}},
			{Name: ".noptrdata", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: 0x402000, Align: 8, Data: dynsdt.StaticTableData(p)},
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
	// Its stub is an older gen --static's 6 bytes: auto leaves it, a
	// kind asked for is an error.
	if res.Site != dynsdt.SiteAuto || res.Rewritten != 0 {
		t.Errorf("site %v, rewritten %d; want auto, 0", res.Site, res.Rewritten)
	}
	if _, _, err := BytesWith(tinyELF(t), &Options{Site: dynsdt.SiteNop}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("site nop over a 6-byte stub: %v, want ErrNotSupported", err)
	}
}

// FuzzBytes: no input panics, and a file the step changed is left as it is
// by the step again.
func FuzzBytes(f *testing.F) {
	f.Add(tinyELF(f))
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
