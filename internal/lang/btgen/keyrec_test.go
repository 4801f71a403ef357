package btgen_test

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestCopyKeyStacks: with Options.StackKeys StackKeysCopy, count() and sum() maps
// keyed by a stack are counted in user space: no BPF map, no stack map,
// a record layout holding the key and a stack copy, the larger ring;
// other maps keep their BPF maps; and the programs load.
func TestCopyKeyStacks(t *testing.T) {
	src := `uprobe:/x:f { @[ustack, comm] = count(); @s[pid, ustack(3), "k"] = sum(arg0); @n[comm] = count(); }`
	prog, opts := compile(t, src)
	opts.StackKeys = btgen.StackKeysCopy
	out, err := btgen.Generate(prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	copySize := stackcap.CopySize(&stackcap.CopyOptions{Size: btgen.DefaultStackCopy})
	byName := map[string]*btgen.MapInfo{}
	for i := range out.Maps {
		byName[out.Maps[i].Map.Name] = &out.Maps[i]
	}
	for name, want := range map[string]struct {
		user  bool
		field int
	}{"@": {true, 0}, "@s": {true, 1}, "@n": {false, -1}} {
		mi := byName[name]
		if mi == nil {
			t.Fatalf("no map %s", name)
		}
		if mi.User != want.user || mi.StackField() != want.field {
			t.Errorf("map %s: user %v, stack field %d; want %v, %d", mi.Map.Name, mi.User, mi.StackField(), want.user, want.field)
		}
		if !mi.User {
			if out.Spec.Maps[mi.BPF] == nil {
				t.Errorf("map %s: no BPF map", mi.Map.Name)
			}
			continue
		}
		s := mi.KeyStacks[want.field]
		if mi.BPF != "" || s.Map != "" || s.Copy != btgen.DefaultStackCopy || mi.Slots != "" {
			t.Errorf("map %s: BPF %q, stack %+v, slots %q", mi.Map.Name, mi.BPF, *s, mi.Slots)
		}
		keyOff, stackOff, size := mi.KeyRecord()
		if keyOff != 16 || stackOff < keyOff+mi.KeySize || size != stackOff+copySize+16 {
			t.Errorf("map %s: record key at %d, stack at %d, size %d (key %d bytes, copy %d)", mi.Map.Name, keyOff, stackOff, size, mi.KeySize, copySize)
		}
	}
	if s := byName["@s"].KeyStacks[1]; s.Frames != 3 {
		t.Errorf("@s stack frames %d, want 3", s.Frames)
	}
	for name, spec := range out.Spec.Maps {
		if spec.Type == ebpf.StackTrace {
			t.Errorf("stack map %s", name)
		}
	}
	if out.Spec.Maps[btgen.MapStackPIDs] == nil {
		t.Error("no stackpids map: processes are not announced")
	}
	if n := out.Spec.Maps[btgen.MapEvents].MaxEntries; n != btgen.KeyRingSize {
		t.Errorf("ring of %d bytes, want %d", n, btgen.KeyRingSize)
	}
	testutil.RequireBPF(t)
	mustLoad(t, out.Spec)
}

// TestCopyKeyStacksRefused: under StackKeysCopy, what is not counted in
// user space is an error at the map (or the delete() call).
func TestCopyKeyStacksRefused(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line, col int
	}{
		{"hist", "uprobe:/x:f {\n  @h[ustack] = hist(arg0); }", 2, 3},
		{"int", "uprobe:/x:f {\n  @i[ustack] = 1; }", 2, 3},
		{"two stacks", "uprobe:/x:f {\n  @[ustack, ustack(2)] = count(); }", 2, 3},
		{"delete", "uprobe:/x:f { @[ustack] = count();\n  delete(@[ustack]); }", 2, 3},
		{"scratch", "uprobe:/x:f { @a[ustack] = count(); @b[ustack] = count(); @c[ustack] = count();\n  @d[ustack] = count(); }", 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog, opts := compile(t, tc.src)
			if _, err := btgen.Generate(prog, opts); err != nil {
				t.Fatalf("frame-pointer keys: %v", err)
			}
			opts.StackKeys = btgen.StackKeysCopy
			_, err := btgen.Generate(prog, opts)
			e, ok := err.(*btlang.Error)
			if !ok || e.Pos.Line != tc.line || e.Pos.Col != tc.col {
				t.Fatalf("error %v, want a *btlang.Error at %d:%d", err, tc.line, tc.col)
			}
		})
	}
}

// FuzzDecodeKeyRecord: any record decodes to an error or to parts that
// lie within it, never a panic.
func FuzzDecodeKeyRecord(f *testing.F) {
	prog, err := btlang.Compile("t.bt", []byte(`uprobe:/x:f { @[comm, ustack] = count(); }`), nil)
	if err != nil {
		f.Fatal(err)
	}
	out, err := btgen.Generate(prog, &btgen.Options{Sites: [][]btgen.Site{{{Path: "/bin/true", Offset: 0x1000}}}, StackKeys: btgen.StackKeysCopy, StackCopy: 512})
	if err != nil {
		f.Fatal(err)
	}
	mi := &out.Maps[0]
	_, stackOff, size := mi.KeyRecord()
	good := make([]byte, size)
	binary.NativeEndian.PutUint64(good[8:], 1)
	binary.NativeEndian.PutUint32(good[stackOff+40:], 16)
	binary.NativeEndian.PutUint32(good[stackOff+44:], 512)
	f.Add(good)
	f.Add(good[:size-1])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, rec []byte) {
		val, key, c, _, _, err := btgen.DecodeKeyRecord(mi, rec)
		if err != nil {
			return
		}
		if len(key) != mi.KeySize || len(c.Stack) > 512 || len(rec) < size {
			t.Errorf("value %d, key of %d bytes, stack of %d from a record of %d", val, len(key), len(c.Stack), len(rec))
		}
	})
}
