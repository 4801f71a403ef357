package gofunc

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// fuzzSections are the parts of a base binary that a FuzzFunc input
// patches, by index: the ELF header, the section header table, then
// sections by name.
var fuzzSections = []string{"", "", ".debug_abbrev", ".debug_info", ".debug_line", ".debug_frame",
	".debug_loclists", ".debug_rnglists", ".debug_addr", ".gopclntab", ".symtab", ".text"}

// fuzzBase is a binary FuzzFunc patches: its bytes and the extent of each
// of fuzzSections in them.
type fuzzBase struct {
	data    []byte
	regions [][2]int64 // offset, size
}

// fuzzFuncNames are the functions FuzzFunc resolves.
var fuzzFuncNames = []string{"main.Leaf", "main.Normal", "main.(*Server).Handle", "main.Outer.func1"}

// buildFuzzBase builds testdata/funcs with flags into the user's cache
// directory, once per toolchain and source, so that the fuzzer's worker
// processes share it, and reads it.
func buildFuzzBase(tb testing.TB, flags ...string) *fuzzBase {
	tb.Helper()
	src, err := os.ReadFile("testdata/funcs/main.go")
	if err != nil {
		tb.Fatal(err)
	}
	h := sha256.New()
	h.Write(src)
	h.Write([]byte(runtime.Version() + runtime.GOARCH))
	for _, f := range flags {
		h.Write([]byte("\x00" + f))
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "usdtkit-fuzz")
	bin := filepath.Join(dir, "funcs-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(bin); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		tmp, err := os.MkdirTemp(dir, "build")
		if err != nil {
			tb.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		out := filepath.Join(tmp, "funcs")
		args := append(append([]string{"build", "-trimpath", "-o", out}, flags...), "./testdata/funcs")
		cmd := exec.Command(goTool(), args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
		if o, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("go %v: %v\n%s", args, err, o)
		}
		// Workers may build at once: the rename makes one of them win.
		if err := os.Rename(out, bin); err != nil {
			tb.Fatal(err)
		}
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		tb.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	if ef.Class != elf.ELFCLASS64 {
		tb.Fatalf("base is %v", ef.Class)
	}
	shoff := int64(binary.LittleEndian.Uint64(data[0x28:]))
	shsize := int64(binary.LittleEndian.Uint16(data[0x3a:])) * int64(len(ef.Sections))
	b := &fuzzBase{data: data, regions: [][2]int64{{0, 64}, {shoff, shsize}}}
	for _, name := range fuzzSections[2:] {
		s := ef.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			tb.Fatalf("base has no section %s", name)
		}
		b.regions = append(b.regions, [2]int64{int64(s.Offset), int64(s.FileSize)})
	}
	return b
}

// patch applies a FuzzFunc input to b: in[0] selects the region (its top
// bit the base: b with compressed DWARF, raw without), in[1:5] is the
// little-endian offset in it, the rest the bytes written there (cut at
// the region's end).
func fuzzPatch(compressed, raw *fuzzBase, in []byte) []byte {
	if len(in) < 5 {
		return nil
	}
	b := raw
	if in[0]&0x80 != 0 {
		b = compressed
	}
	r := b.regions[int(in[0]&0x7f)%len(b.regions)]
	off := int64(binary.LittleEndian.Uint32(in[1:])) % r[1]
	out := make([]byte, len(b.data))
	copy(out, b.data)
	n := min(int64(len(in)-5), r[1]-off)
	copy(out[r[0]+off:], in[5:5+n])
	return out
}

// FuzzFunc opens patched copies of testdata/funcs and resolves a few of
// its functions: Open and Func must return an error or a result, never
// panic or crash the process (delve's loader goroutines included), and
// stay within an address-space limit while fuzzing. An input patches one
// part of a base binary built at fuzz time (see fuzzPatch), so that the
// seeds in testdata/fuzz/FuzzFunc stay small: the crafted binaries of
// TestCraftedDWARF are among them.
func FuzzFunc(f *testing.F) {
	if fl := flag.Lookup("test.fuzz"); fl != nil && fl.Value.String() != "" {
		// A runaway allocation fails here, as a crash the fuzzer
		// reports, instead of pressing the machine.
		lim := unix.Rlimit{Cur: childMemLimit, Max: childMemLimit}
		if err := unix.Setrlimit(unix.RLIMIT_AS, &lim); err != nil {
			f.Fatal(err)
		}
	}
	compressed := buildFuzzBase(f)
	raw := buildFuzzBase(f, "-ldflags=-compressdwarf=false")
	path := filepath.Join(f.TempDir(), "funcs")
	f.Fuzz(func(t *testing.T, in []byte) {
		data := fuzzPatch(compressed, raw, in)
		if data == nil {
			return
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := Open(path)
		if err != nil {
			if b != nil {
				t.Fatalf("Open returned a Binary and %v", err)
			}
			return
		}
		defer b.Close()
		if len(in) == 5 && (!b.DWARF || b.DWARFError != nil) {
			t.Fatalf("the unpatched base: DWARF %v, DWARFError %v; want the DWARF read", b.DWARF, b.DWARFError)
		}
		for _, name := range fuzzFuncNames {
			fn, err := b.Func(name)
			if (err == nil) == (fn == nil) {
				t.Fatalf("Func(%s): have %v, %v: want a result or an error", name, fn, err)
			}
			if err != nil {
				continue
			}
			if fn.Site < fn.Entry || fn.Site >= fn.End {
				t.Fatalf("Func(%s): site %#x outside %#x..%#x", name, fn.Site, fn.Entry, fn.End)
			}
			for _, r := range fn.Returns {
				if r < fn.Entry || r >= fn.End {
					t.Fatalf("Func(%s): return %#x outside %#x..%#x", name, r, fn.Entry, fn.End)
				}
			}
		}
	})
}
