package unwind

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

func TestRowLayout(t *testing.T) {
	if n := binary.Size(Row{}); n != RowSize || unsafe.Sizeof(Row{}) != RowSize {
		t.Fatalf("Row: binary size %d, in memory %d, want %d", n, unsafe.Sizeof(Row{}), RowSize)
	}
}

// tableObjects returns the objects the table tests compile: a Go binary
// built here, libc and libstdc++ as a C++ program built here maps them,
// and /usr/bin/python3.11 when installed.
func tableObjects(tb testing.TB) map[string]string {
	tb.Helper()
	objs := map[string]string{"go": testutil.BuildGo(tb, "../../bpf/stackcap/testdata/gochain")}
	gxx := testutil.RequireTool(tb, "g++")
	exe := filepath.Join(tb.TempDir(), "lines")
	src := testutil.RequireFile(tb, filepath.Join("testdata", "lines.cc"))
	if out, err := exec.Command(gxx, "-O2", "-o", exe, src).CombinedOutput(); err != nil {
		tb.Fatalf("g++: %v\n%s", err, out)
	}
	tr := testutil.StartTracee(tb, exe)
	tr.WaitReady(tb)
	maps, err := procfs.ReadMaps(tr.PID())
	if err != nil {
		tb.Fatal(err)
	}
	for _, m := range maps {
		for _, name := range []string{"libc.so", "libstdc++.so"} {
			if m.Exec() && strings.HasPrefix(filepath.Base(m.Path), name) {
				objs[strings.TrimSuffix(name, ".so")] = m.Path
			}
		}
	}
	for _, name := range []string{"libc", "libstdc++"} {
		if objs[name] == "" {
			tb.Fatalf("%s maps no %s", exe, name)
		}
	}
	if _, err := os.Stat("/usr/bin/python3.11"); err == nil {
		objs["python3.11"] = "/usr/bin/python3.11"
	} else {
		tb.Logf("no python3.11: %v", err)
	}
	return objs
}

// loadCFIFile parses the CFI of the file at path.
func loadCFIFile(tb testing.TB, path string) *cfi {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	c := loadCFI(f, nil)
	if c.err != nil {
		tb.Fatalf("%s: %v", path, c.err)
	}
	return c
}

// expectRow turns the rules delve's interpreter gives (a row of Unwind)
// into the Row a Table should hold, or says why no Row can express them.
// The Row's FP rule is FPUndefined where delve's rule is not tabled.
func expectRow(r *row, a arch) (Row, string) {
	if r == nil {
		return Row{Kind: KindNone}, ""
	}
	if r.err != nil {
		return Row{Kind: KindUnsupported}, "delve error"
	}
	var want Row
	ra, ok := r.regs[r.ra]
	switch {
	case !ok && a.lr == ^uint64(0):
		return Row{Kind: KindEnd}, ""
	case !ok:
		// No rule (the zero DWRule reads as undefined): in the link
		// register.
		want.RA = RAInLR
	case ra.Rule == frame.RuleUndefined, ra.Rule == frame.RuleSameVal && a.lr == ^uint64(0):
		return Row{Kind: KindEnd}, ""
	case ra.Rule == frame.RuleSameVal, ra.Rule == frame.RuleRegister && ra.Reg == a.lr:
		want.RA = RAInLR
	case ra.Rule == frame.RuleOffset && ra.Offset == int64(int16(ra.Offset)):
		want.RA, want.RAOffset = RAAtCFA, int16(ra.Offset)
	default:
		return Row{Kind: KindUnsupported}, fmt.Sprintf("return address rule %d", ra.Rule)
	}
	switch {
	case r.cfa.Rule == frame.RuleCFA && r.cfa.Reg == a.sp:
		want.Kind = KindSP
	case r.cfa.Rule == frame.RuleCFA && r.cfa.Reg == a.fp:
		want.Kind = KindFP
	case r.cfa.Rule == frame.RuleExpression:
		off, k, ok := plt(r.cfa.Expression)
		if !ok || a.lr != ^uint64(0) {
			return Row{Kind: KindUnsupported}, "CFA expression"
		}
		want.Kind, want.Arg = KindPLT, k
		r.cfa.Offset = off
	default:
		return Row{Kind: KindUnsupported}, fmt.Sprintf("CFA register %d", r.cfa.Reg)
	}
	want.CFAOffset = int32(r.cfa.Offset)
	fp, ok := r.regs[a.fp]
	switch {
	case !ok, fp.Rule == frame.RuleSameVal:
	case fp.Rule == frame.RuleOffset && fp.Offset == int64(int16(fp.Offset)):
		want.FP, want.FPOffset = FPAtCFA, int16(fp.Offset)
	case fp.Rule == frame.RuleUndefined:
		want.FP = FPUndefined
	default:
		want.FP = FPUndefined
		return want, fmt.Sprintf("frame pointer rule %d (unknown in the caller)", fp.Rule)
	}
	return want, ""
}

// arm64Objects returns arm64 objects for the table tests: Debian's arm64
// libc and dynamic loader (gcc-aarch64-linux-gnu) and testdata/arm64chain.c
// built with pointer authentication (its CFI has
// DW_CFA_AARCH64_negate_ra_state).
func arm64Objects(tb testing.TB) map[string]string {
	tb.Helper()
	gcc := testutil.RequireTool(tb, "aarch64-linux-gnu-gcc")
	objs := map[string]string{
		"arm64-libc":  testutil.RequireFile(tb, "/usr/aarch64-linux-gnu/lib/libc.so.6"),
		"arm64-ld.so": testutil.RequireFile(tb, "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1"),
		"arm64-pac":   filepath.Join(tb.TempDir(), "arm64chain"),
	}
	args := []string{"-O2", "-fomit-frame-pointer", "-mbranch-protection=pac-ret", "-o", objs["arm64-pac"], filepath.Join("testdata", "arm64chain.c")}
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		tb.Fatalf("%s %v: %v\n%s", gcc, args, err, out)
	}
	return objs
}

// TestTableMatchesCFI compiles the tables of real objects and checks, at
// each row's first and last address and its middle, that the row is what
// delve's interpretation of the FDE at that address gives, wherever a
// row can express it; it reports the rest by reason.
func TestTableMatchesCFI(t *testing.T) {
	objs := tableObjects(t)
	maps.Copy(objs, arm64Objects(t))
	for name, path := range objs {
		t.Run(name, func(t *testing.T) {
			c := loadCFIFile(t, path)
			a, err := archOf(c.machine)
			if err != nil {
				t.Fatal(err)
			}
			tab, err := c.table()
			if err != nil {
				t.Fatal(err)
			}
			if len(tab.Rows) == 0 || !sort.SliceIsSorted(tab.Rows, func(i, j int) bool { return tab.Rows[i].PC < tab.Rows[j].PC }) {
				t.Fatalf("%d rows, not sorted", len(tab.Rows))
			}
			kinds := map[Kind]int{}
			for _, r := range tab.Rows {
				kinds[r.Kind]++
			}
			checked, expressible, bad := 0, 0, 0
			reasons := map[string]int{}
			step := 1
			if testing.Short() {
				step = 7
			}
			for i := 0; i < len(tab.Rows)-1; i += step {
				lo, hi := uint64(tab.Rows[i].PC), uint64(tab.Rows[i+1].PC)
				for _, pc := range []uint64{lo, lo + (hi-lo)/2, hi - 1} {
					var r *row
					if fde, err := c.fdes.FDEForPC(pc); err == nil {
						r = establish(fde, pc)
					}
					want, why := expectRow(r, a)
					have := tab.Lookup(uint32(pc))
					checked++
					if why != "" {
						reasons[why]++
						if have.Kind != want.Kind && have.Kind != KindUnsupported {
							t.Errorf("%#x: have %+v, want %+v or unsupported (%s)", pc, have, want, why)
						}
						continue
					}
					expressible++
					want.PC = have.PC
					if have != want {
						if bad++; bad <= 10 {
							t.Errorf("%#x: have %+v, want %+v", pc, have, want)
						}
					}
				}
			}
			if bad > 10 {
				t.Errorf("%d rows differ in all", bad)
			}
			t.Logf("%s: %d rows (%d bytes) %v; %d addresses checked, %d (%.2f%%) expressible; the rest: %v",
				path, len(tab.Rows), tab.Size(), kinds, checked, expressible, 100*float64(expressible)/float64(checked), reasons)
		})
	}
}

// FuzzCompileTable compiles hostile .eh_frame and .debug_frame bytes:
// errors, never panics; a table's rows sorted and adjacent rows
// different; err != nil exactly when there is no table.
func FuzzCompileTable(f *testing.F) {
	// .debug_frame: a CIE (x86-64: code align 1, data align -8, RA 16,
	// CFA rsp+8, RA at CFA-8) and an FDE over 0x1000..0x1010 with
	// DW_CFA_advance_loc 6, DW_CFA_def_cfa_offset 24, DW_CFA_advance_loc
	// 10 and the PLT's CFA expression.
	cie := []byte{0x14, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0x78, 16, 0x0c, 7, 8, 0x90, 1, 0, 0, 0, 0, 0, 0}
	fde := []byte{0x2c, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0,
		0x46, 0x0e, 24, 0x4a, 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22, 0, 0, 0, 0, 0, 0, 0}
	f.Add(append(append([]byte{}, cie...), fde...), uint64(0))
	f.Add(cie, uint64(0))
	f.Add([]byte{}, uint64(0x2000))
	f.Fuzz(func(t *testing.T, data []byte, ehAddr uint64) {
		for _, m := range []elf.Machine{elf.EM_X86_64, elf.EM_AARCH64} {
			tab, err := compileCFI(data, ehAddr, m)
			if (err != nil) != (tab == nil) {
				t.Fatalf("table %v, error %v", tab, err)
			}
			if err != nil {
				continue
			}
			if len(tab.Rows) > 2*len(data)+1 || len(tab.Rows) > MaxTableRows {
				t.Fatalf("%d rows from %d bytes", len(tab.Rows), len(data))
			}
			for i := 1; i < len(tab.Rows); i++ {
				if tab.Rows[i].PC <= tab.Rows[i-1].PC || sameRule(tab.Rows[i], tab.Rows[i-1]) {
					t.Fatalf("rows %d and %d: %+v, %+v", i-1, i, tab.Rows[i-1], tab.Rows[i])
				}
			}
		}
	})
}

// TestCompilePLT compiles the FDE of a PLT (the fuzz seed): rows for
// SP+8, SP+24 and the PLT expression, then none.
func TestCompilePLT(t *testing.T) {
	cie := []byte{0x14, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0x78, 16, 0x0c, 7, 8, 0x90, 1, 0, 0, 0, 0, 0, 0}
	fde := []byte{0x2c, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0,
		0x46, 0x0e, 24, 0x4a, 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22, 0, 0, 0, 0, 0, 0, 0}
	tab, err := compileCFI(append(cie, fde...), 0, elf.EM_X86_64)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{PC: 0x1000, Kind: KindSP, CFAOffset: 8, RAOffset: -8},
		{PC: 0x1006, Kind: KindSP, CFAOffset: 24, RAOffset: -8},
		{PC: 0x1010, Kind: KindPLT, CFAOffset: 8, Arg: 11, RAOffset: -8},
		{PC: 0x1020, Kind: KindNone},
	}
	if fmt.Sprint(tab.Rows) != fmt.Sprint(want) {
		t.Fatalf("have %+v, want %+v", tab.Rows, want)
	}
	if _, err := compileCFI(append(cie, fde...), 0, elf.EM_386); err == nil {
		t.Error("EM_386: no error")
	}
}

// TestTableTooLarge: the row cap is an error, ErrTableTooLarge.
func TestTableTooLarge(t *testing.T) {
	b := &tableBuilder{a: arch{sp: 7, fp: 6, lr: ^uint64(0), ra: 16}}
	for pc := uint64(0); pc <= MaxTableRows && b.err == nil; pc++ {
		b.add(pc, Row{Kind: Kind(pc % 2)})
	}
	if !errors.Is(b.err, ErrTableTooLarge) || len(b.rows) != MaxTableRows {
		t.Fatalf("%d rows, error %v; want %d, ErrTableTooLarge", len(b.rows), b.err, MaxTableRows)
	}
}

// BenchmarkBuildTables compiles the tables of python3.11 (the test binary
// when it is not installed), libc and libstdc++: /parse only parses their
// CFI (the floor), /build parses and compiles and makes the page index
// of each table as BPFTables does. table-bytes is the size of the three
// tables, index-bytes that of their page indexes in the rows map.
func BenchmarkBuildTables(b *testing.B) {
	objs := tableObjects(b)
	paths := []string{objs["python3.11"], objs["libc"], objs["libstdc++"]}
	if paths[0] == "" {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		paths[0] = exe
	}
	files := make([]*os.File, len(paths))
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		files[i] = f
	}
	for _, build := range []bool{false, true} {
		name := "parse"
		if build {
			name = "build"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			size, rows, index := 0, 0, 0
			for b.Loop() {
				size, rows, index = 0, 0, 0
				for _, f := range files {
					c := loadCFI(f, nil)
					if c.err != nil {
						b.Fatal(c.err)
					}
					if !build {
						continue
					}
					tab, err := c.table()
					if err != nil {
						b.Fatal(err)
					}
					size += tab.Size()
					rows += len(tab.Rows)
					if len(tab.Rows) > 0 {
						x := newPageIndex(tab.Rows)
						index += x.slots() * stackcap.CFIRowSize
					}
				}
			}
			if build {
				b.ReportMetric(float64(size), "table-bytes")
				b.ReportMetric(float64(rows), "rows")
				b.ReportMetric(float64(index), "index-bytes")
			}
		})
	}
}
