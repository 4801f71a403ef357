package attach_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/bpf/attach"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// Instructions at the sites of the tests' files.
var (
	nop  = []byte{0x90}
	int3 = []byte{0xcc}             // a trap: refused on every machine
	hlt  = []byte{0xf4}             // not in the kernel's good_insns_64
	lock = []byte{0xf0, 0xff, 0x07} // lock inc dword ptr [rdi]
)

// siteFile writes a file with one 16-byte slot per site, each holding its
// instruction padded with nops, after a header of hdr, and returns its
// path and the sites' offsets.
func siteFile(t *testing.T, hdr []byte, insns [][]byte) (string, []uint64) {
	t.Helper()
	code := append([]byte(nil), hdr...)
	var offs []uint64
	for _, in := range insns {
		offs = append(offs, uint64(len(code)))
		slot := make([]byte, 16)
		for i := range slot {
			slot[i] = 0x90
		}
		copy(slot, in)
		code = append(code, slot...)
	}
	path := filepath.Join(t.TempDir(), "sites")
	if err := os.WriteFile(path, code, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, offs
}

// x86ELFHeader is the start of an ELF64 little-endian x86-64 header, all
// that precheck reads.
func x86ELFHeader() []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = 2, 1, 1 // ELFCLASS64, ELFDATA2LSB, EV_CURRENT
	binary.LittleEndian.PutUint16(h[18:], 62)
	return h
}

// TestPrecheck: in an x86-64 ELF file, a site whose instruction has a
// lock prefix (after other prefixes or not) is refused with an
// *InsnError before the kernel is asked; in another file nothing is.
func TestPrecheck(t *testing.T) {
	for _, tt := range []struct {
		name  string
		hdr   []byte
		insns [][]byte
		want  []int
	}{
		{"x86-64 ELF", x86ELFHeader(), [][]byte{nop, lock, int3, {0x66, 0xf0, 0x0f, 0xb1, 0x0f}, {0x48, 0x89, 0xe5}}, []int{1, 3}},
		{"no lock", x86ELFHeader(), [][]byte{nop, {0xf3, 0x0f, 0x1e, 0xfa}, {0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}}, nil},
		{"not ELF", make([]byte, 64), [][]byte{nop, lock}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, offs := siteFile(t, tt.hdr, tt.insns)
			refused, err := attach.Precheck(&attach.Object{Path: path, Offsets: offs})
			if err != nil {
				t.Fatal(err)
			}
			var have []int
			for _, r := range refused {
				have = append(have, r.Index)
				var ie *attach.InsnError
				if !errors.As(r.Err, &ie) || r.Offset != offs[r.Index] {
					t.Errorf("site %d: offset %#x, error %v; want offset %#x, an *InsnError", r.Index, r.Offset, r.Err, offs[r.Index])
				}
			}
			if !slices.Equal(have, tt.want) {
				t.Errorf("refused sites %v, want %v", have, tt.want)
			}
		})
	}
}

// TestAttachSitesRefused attaches to the sites of a file for a process
// that maps it, for one that does not (yet), and for every process; the
// file is no ELF, so every refusal is the kernel's, found by bisecting a
// multi link or site by site with classic links. The sites the kernel
// refuses come back with its ENOTSUPP, whether a process maps the file
// or not; the others are attached.
func TestAttachSitesRefused(t *testing.T) {
	testutil.RequireBPF(t)
	swapper := filepath.Join(t.TempDir(), "swapper")
	testutil.BuildSwapper(t, swapper, false)
	n := 17
	for _, tt := range []struct {
		name string
		bad  map[int][]byte
	}{
		{"none refused", nil},
		{"some refused", map[int][]byte{0: int3, 7: hlt, 8: lock, 16: int3}},
		{"all refused", func() map[int][]byte {
			m := make(map[int][]byte)
			for i := range n {
				m[i] = int3
			}
			return m
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			insns := make([][]byte, n)
			var want []int
			for i := range insns {
				insns[i] = nop
				if b, ok := tt.bad[i]; ok {
					insns[i] = b
					want = append(want, i)
				}
			}
			path, offs := siteFile(t, make([]byte, 64), insns)
			pids := map[string]int{
				"mapped":     testutil.StartMapper(t, swapper, path).Process.Pid,
				"not mapped": testutil.StartMapper(t, swapper).Process.Pid,
				"every":      0,
			}
			cookies := make([]uint64, n)
			for i := range cookies {
				cookies[i] = uint64(i)
			}
			obj := &attach.Object{Path: path, Offsets: offs, Cookies: cookies}
			for who, pid := range pids {
				for _, multi := range []bool{true, false} {
					if multi && features.HaveBPFLinkUprobeMulti() != nil {
						if testutil.Strict() {
							t.Fatalf("uprobe_multi: %v", features.HaveBPFLinkUprobeMulti())
						}
						continue
					}
					links, refused, err := attach.AttachSites(loadProg(t, multi), obj, pid, multi)
					if err != nil {
						t.Fatalf("%s, multi %v: %v", who, multi, err)
					}
					for _, l := range links {
						if err := l.Close(); err != nil {
							t.Error(err)
						}
					}
					var have []int
					for _, r := range refused {
						have = append(have, r.Index)
						if !errors.Is(r.Err, unix.Errno(524)) {
							t.Errorf("%s, multi %v: site %d: error %v, want ENOTSUPP", who, multi, r.Index, r.Err)
						}
					}
					if !slices.Equal(have, want) {
						t.Errorf("%s, multi %v: refused sites %v, want %v", who, multi, have, want)
					}
					good := n - len(want)
					switch {
					case good == 0 && len(links) != 0:
						t.Errorf("multi %v: %d links for no site attached", multi, len(links))
					case !multi && len(links) != good:
						t.Errorf("classic: %d links, want one per attached site (%d)", len(links), good)
					case multi && good > 0 && (len(links) == 0 || len(links) > good):
						t.Errorf("multi: %d links for %d sites attached", len(links), good)
					}
					// AttachObject is all or nothing.
					links, err = attach.AttachObject(loadProg(t, multi), obj, pid, multi)
					if (err == nil) != (len(want) == 0) {
						t.Errorf("multi %v: AttachObject: error %v with %d sites refused", multi, err, len(want))
					}
					for _, l := range links {
						if err := l.Close(); err != nil {
							t.Error(err)
						}
					}
				}
			}
		})
	}
}

// loadProg loads a uprobe program that does nothing, for multi links or
// for classic ones.
func loadProg(t *testing.T, multi bool) *ebpf.Program {
	t.Helper()
	spec := &ebpf.ProgramSpec{
		Type:         ebpf.Kprobe,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		License:      "GPL",
	}
	if multi {
		spec.AttachType = ebpf.AttachTraceUprobeMulti
	}
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}
