package btgen_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/layout"
)

// TestStackLayout: stack keys are StackKeySize bytes referring to a
// frames map per frame count; printf'd stacks carry a copy (or, with a negative
// StackCopy, frames) and their sizes add up.
func TestStackLayout(t *testing.T) {
	src := `uprobe:/x:f { @[ustack, comm] = count(); @p[ustack(perf, 5)] = count(); printf("%s|%d\n", ustack(perf, 7), pid); }`
	tests := []struct {
		name      string
		stackCopy int
		argSize   int
	}{
		{"copy", 0, stackcap.CopySize(&stackcap.CopyOptions{Size: btgen.DefaultStackCopy}) + 16},
		{"copy 4096", 4096, stackcap.CopySize(&stackcap.CopyOptions{Size: 4096}) + 16},
		{"frames", -1, stackcap.FramesSize(&stackcap.FramesOptions{MaxFrames: 7}) + 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, src)
			opts.StackCopy = tt.stackCopy
			out, err := btgen.Generate(prog, opts)
			if err != nil {
				t.Fatal(err)
			}
			m := out.Maps[0]
			if len(m.Keys) != 2 || m.Keys[0].Kind != layout.KeyStack || m.KeyStacks[0] == nil || m.KeyStacks[1] != nil {
				t.Fatalf("@ keys %+v, stacks %+v", m.Keys, m.KeyStacks)
			}
			if m.KeyOffs[1] != btgen.StackKeySize || m.KeyStacks[0].Frames != 127 || m.KeyStacks[0].Perf {
				t.Errorf("@: comm at %d, stack %+v", m.KeyOffs[1], *m.KeyStacks[0])
			}
			p := out.Maps[1].KeyStacks[0]
			if p.Frames != 5 || !p.Perf || p.Map == m.KeyStacks[0].Map {
				t.Errorf("@p stack %+v", *p)
			}
			for _, s := range []*btgen.StackInfo{m.KeyStacks[0], p} {
				spec := out.Spec.Maps[s.Map]
				// x86-64: walked in the program into a frames hash
				// (stackcap.EmitWalkID).
				if spec == nil || spec.Type != ebpf.Hash || spec.KeySize != 8 || int(spec.ValueSize) != 8*s.Frames {
					t.Errorf("stack map %s: %+v", s.Map, spec)
				}
			}
			if out.Spec.Maps[btgen.MapStackPIDs] == nil {
				t.Error("no stackpids map")
			}
			a := out.Printfs[0].Args
			if len(a) != 2 || a[0].Stack == nil || a[0].Size != tt.argSize || a[0].Stack.Frames != 7 || !a[0].Stack.Perf {
				t.Fatalf("printf args %+v", a)
			}
			if a[1].Off < a[0].Off+a[0].Size || out.Printfs[0].Size < a[1].Off+8 {
				t.Errorf("pid at %d after a stack of %d bytes at %d; record %d bytes", a[1].Off, a[0].Size, a[0].Off, out.Printfs[0].Size)
			}
		})
	}
}

// TestStackCallerRead: a printf'd frame-pointer stack (StackCopy < 0) at
// a function's entry reads the caller word only where the kernel's walk
// does not keep the caller itself (a first instruction other than push
// %rbp, such as endbr64, or a kernel before 6.10); a block whose sites
// agree has one capture path, one whose sites differ tests the entry
// flag.
func TestStackCallerRead(t *testing.T) {
	obj := stackSitesObject(t)
	kernel := btgen.CallerKernel()
	tests := []struct {
		name     string
		offs     []uint64
		entry    bool
		reads    bool // the program calls bpf_probe_read_user
		branches bool // the program tests the entry flag
	}{
		{"push rbp", []uint64{0}, true, !kernel, false},
		{"endbr64", []uint64{8}, true, true, false},
		{"no frame", []uint64{16}, true, true, false},
		{"body", []uint64{24}, false, false, false},
		{"mixed", []uint64{0, 16}, true, true, kernel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, `uprobe:/x:f { printf("%s\n", ustack); }`)
			opts.StackCopy = -1
			opts.Sites[0] = stackSites(obj, tt.offs, tt.entry, opts.Sites[0][0].Args)
			out, err := btgen.Generate(prog, opts)
			if err != nil {
				t.Fatal(err)
			}
			reads := countCalls(out, asm.FnProbeReadUser) > 0
			if reads != tt.reads {
				t.Errorf("reads the caller: %v, want %v (kernel keeps it: %v)", reads, tt.reads, kernel)
			}
			if want := map[bool]int{false: 1, true: 2}[tt.branches]; countCalls(out, asm.FnGetStack) != want {
				t.Errorf("%d bpf_get_stack calls, want %d", countCalls(out, asm.FnGetStack), want)
			}
		})
	}
}

// TestStackKeyWalk: on x86-64 a stack key is walked in the program, no
// bpf_get_stackid: by default with call frame information
// (stackcap.EmitCFIWalkID: one bpf_loop per capture path), with
// StackKeysFP by frame pointers (stackcap.EmitWalkID: two
// bpf_probe_read_user calls per capture path). The walk takes the caller
// word from the stack it reads at every entry: sites that are all
// entries, or all not, have one capture path, whatever their first
// instruction; entries mixed with a body test the entry flag.
func TestStackKeyWalk(t *testing.T) {
	obj := stackSitesObject(t)
	tests := []struct {
		name  string
		offs  []uint64
		entry []bool
		paths int
	}{
		{"push rbp", []uint64{0}, []bool{true}, 1},
		{"no frame", []uint64{16}, []bool{true}, 1},
		{"push rbp and no frame", []uint64{0, 16}, []bool{true, true}, 1},
		{"body", []uint64{24}, []bool{false}, 1},
		{"entry and body", []uint64{0, 24}, []bool{true, false}, 2},
	}
	for _, m := range []struct {
		name string
		mode btgen.StackKeys
	}{{"cfi", btgen.StackKeysCFI}, {"fp", btgen.StackKeysFP}} {
		mode := m.mode
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				prog, opts := compile(t, `uprobe:/x:f { @[ustack] = count(); }`)
				var sites []btgen.Site
				for i, off := range tt.offs {
					sites = append(sites, stackSites(obj, []uint64{off}, tt.entry[i], opts.Sites[0][0].Args)...)
				}
				opts.Sites[0] = sites
				opts.StackKeys = mode
				out, err := btgen.Generate(prog, opts)
				if err != nil {
					t.Fatal(err)
				}
				if n := countCalls(out, asm.FnGetStackid); n != 0 {
					t.Errorf("%d bpf_get_stackid calls, want 0", n)
				}
				_, cfiMaps := out.Spec.Maps[stackcap.DefaultCFIRowsMap]
				if mode == btgen.StackKeysCFI {
					if n := countCalls(out, asm.FnLoop); n != tt.paths || !cfiMaps {
						t.Errorf("%d bpf_loop calls, want %d (%d capture paths); tables maps: %v, want true", n, tt.paths, tt.paths, cfiMaps)
					}
					return
				}
				if n := countCalls(out, asm.FnProbeReadUser); n != 2*tt.paths || cfiMaps {
					t.Errorf("%d bpf_probe_read_user calls, want %d (%d capture paths); tables maps: %v, want false", n, 2*tt.paths, tt.paths, cfiMaps)
				}
			})
		}
	}
}

// stackSitesObject writes an object whose code is, at 0, push %rbp; at 8,
// endbr64; at 16, mov %edi,-0x4(%rsp); at 24, nop.
func stackSitesObject(t *testing.T) string {
	obj := filepath.Join(t.TempDir(), "obj")
	code := make([]byte, 32)
	copy(code[0:], []byte{0x55, 0x48, 0x89, 0xe5})
	copy(code[8:], []byte{0xf3, 0x0f, 0x1e, 0xfa})
	copy(code[16:], []byte{0x89, 0x7c, 0x24, 0xfc})
	code[24] = 0x90
	if err := os.WriteFile(obj, code, 0o644); err != nil {
		t.Fatal(err)
	}
	return obj
}

// stackSites returns sites in obj at offs.
func stackSites(obj string, offs []uint64, entry bool, args []argread.Fetch) []btgen.Site {
	var sites []btgen.Site
	for _, off := range offs {
		sites = append(sites, btgen.Site{Path: obj, Offset: off, Entry: entry, Args: args})
	}
	return sites
}

// countCalls counts the calls of helper fn in block0.
func countCalls(out *btgen.Program, fn asm.BuiltinFunc) int {
	n := 0
	for _, ins := range out.Spec.Programs["block0"].Instructions {
		if ins.IsBuiltinCall() && ins.Constant == int64(fn) {
			n++
		}
	}
	return n
}

// TestStackSlots: a count() keyed by one stack alone counts in stack
// slots (a per-CPU array the verifier looks up inline); other maps of
// stacks, and a map a delete() names, count in their hash only. Every
// program that captures stacks reads its pid from MapStackConf.
func TestStackSlots(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		slots bool
	}{
		{"ustack count", `uprobe:/x:f { @[ustack] = count(); }`, true},
		{"ustack(5) count", `uprobe:/x:f { @[ustack(5)] = count(); }`, true},
		{"ustack perf count", `uprobe:/x:f { @[ustack(perf)] = count(); }`, true},
		{"tuple", `uprobe:/x:f { @[ustack, comm] = count(); }`, false},
		{"sum", `uprobe:/x:f { @[ustack] = sum(arg0); }`, false},
		{"deleted", `uprobe:/x:f { @[ustack] = count(); delete(@[ustack]); }`, false},
		{"int key", `uprobe:/x:f { @[pid] = count(); }`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, tt.src)
			out, err := btgen.Generate(prog, opts)
			if err != nil {
				t.Fatal(err)
			}
			mi := out.Maps[0]
			if got := mi.Slots != ""; got != tt.slots {
				t.Fatalf("slots %q, want slots: %v", mi.Slots, tt.slots)
			}
			lookups := 0
			for _, ins := range out.Spec.Programs["block0"].Instructions {
				if ins.IsLoadFromMap() && ins.Reference() == mi.Slots {
					lookups++
				}
			}
			if !tt.slots {
				if lookups != 0 {
					t.Errorf("%d references to slots %q", lookups, mi.Slots)
				}
				return
			}
			spec := out.Spec.Maps[mi.Slots]
			if spec == nil || spec.Type != ebpf.PerCPUArray || spec.KeySize != 4 || spec.ValueSize != btgen.SlotSize || spec.MaxEntries != btgen.StackSlots {
				t.Errorf("slots map %+v", spec)
			}
			if lookups != 1 {
				t.Errorf("%d loads of the slots map, want 1", lookups)
			}
			if conf := out.Spec.Maps[btgen.MapStackConf]; conf == nil || conf.Type != ebpf.Array || conf.ValueSize != 8 {
				t.Errorf("stack conf map %+v", conf)
			}
		})
	}
}

// TestDecodeSlot: a slot decodes to the key layout of its map (stack id,
// caller word, pid) and its count; an empty slot (tag 0) or a short one
// decodes to nothing; ClearSlot empties a slot or zeros its count only.
func TestDecodeSlot(t *testing.T) {
	prog, opts := compile(t, `uprobe:/x:f { @[ustack] = count(); }`)
	out, err := btgen.Generate(prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	mi := &out.Maps[0]
	slot := func(tag, caller, pid, count uint64) []byte {
		var b []byte
		for _, v := range []uint64{tag, caller, pid, count} {
			b = binary.NativeEndian.AppendUint64(b, v)
		}
		return b
	}
	tests := []struct {
		name   string
		v      []byte
		ok     bool
		id     int64
		caller uint64
		pid    uint64
		count  uint64
	}{
		{"id 0", slot(1, 0, 42, 7), true, 0, 0, 42, 7},
		{"caller", slot(2048, 0x401234, 42, 1), true, 2047, 0x401234, 42, 1},
		{"zeroed", slot(5, 0, 42, 0), true, 4, 0, 42, 0},
		{"empty", slot(0, 0x401234, 42, 3), false, 0, 0, 0, 0},
		{"short", slot(1, 0, 42, 7)[:btgen.SlotSize-1], false, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, n, ok := btgen.DecodeSlot(mi, tt.v)
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if len(key) != mi.KeySize {
				t.Fatalf("key of %d bytes, want %d", len(key), mi.KeySize)
			}
			id, err := stackcap.DecodeStackID(key[mi.KeyOffs[0]:])
			if err != nil {
				t.Fatal(err)
			}
			pid := binary.NativeEndian.Uint64(key[mi.KeyOffs[0]+stackcap.StackIDSize:])
			if id.ID != tt.id || id.Caller != tt.caller || pid != tt.pid || n != tt.count {
				t.Errorf("have id %d caller %#x pid %d count %d, want %d %#x %d %d", id.ID, id.Caller, pid, n, tt.id, tt.caller, tt.pid, tt.count)
			}
		})
	}
	v := slot(3, 0x401234, 42, 9)
	btgen.ClearSlot(v, true)
	if _, n, ok := btgen.DecodeSlot(mi, v); !ok || n != 0 {
		t.Errorf("zeroed slot: ok %v count %d, want ok and 0", ok, n)
	}
	btgen.ClearSlot(v, false)
	if _, _, ok := btgen.DecodeSlot(mi, v); ok {
		t.Error("cleared slot still holds a key")
	}
}
