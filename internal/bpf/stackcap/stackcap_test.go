package stackcap_test

import (
	"debug/elf"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
)

func TestMergeCaller(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pcs    []uint64
		caller uint64
		want   []uint64
	}{
		{"inserted", []uint64{1, 3, 4}, 2, []uint64{1, 2, 3, 4}},
		{"kernel had it", []uint64{1, 2, 3}, 2, []uint64{1, 2, 3}},
		{"only ip", []uint64{1}, 2, []uint64{1, 2}},
		{"no caller", []uint64{1, 3}, 0, []uint64{1, 3}},
		{"empty", nil, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if have := stackcap.MergeCaller(slices.Clone(tc.pcs), tc.caller); !slices.Equal(have, tc.want) {
				t.Fatalf("have %v, want %v", have, tc.want)
			}
		})
	}
}

// framesRecord builds a frames record.
func framesRecord(n, flags uint32, caller uint64, pcs ...uint64) []byte {
	b := make([]byte, 16+8*len(pcs))
	ne := binary.NativeEndian
	ne.PutUint32(b, n)
	ne.PutUint32(b[4:], flags)
	ne.PutUint64(b[8:], caller)
	for i, pc := range pcs {
		ne.PutUint64(b[16+8*i:], pc)
	}
	return b
}

func TestDecodeFrames(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  []byte
		want []uint64
		bad  bool
	}{
		{"plain", framesRecord(2, 0, 9, 1, 3, 7), []uint64{1, 3}, false},
		{"caller", framesRecord(2, stackcap.FlagCaller, 2, 1, 3), []uint64{1, 2, 3}, false},
		{"stack error", framesRecord(0, stackcap.FlagStackErr|stackcap.FlagCaller, 2, 0), nil, false},
		{"short", make([]byte, 15), nil, true},
		{"count too big", framesRecord(3, 0, 0, 1, 2), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have, err := stackcap.DecodeFrames(tc.rec)
			if (err != nil) != tc.bad {
				t.Fatalf("error %v, want error %v", err, tc.bad)
			}
			if !slices.Equal(have, tc.want) {
				t.Fatalf("have %v, want %v", have, tc.want)
			}
		})
	}
}

func TestDecodeCopy(t *testing.T) {
	rec := make([]byte, 48+16)
	ne := binary.NativeEndian
	for i, v := range []uint64{0x401000, 0x7ff0, 0x8000, 0, 0x7000} {
		ne.PutUint64(rec[8*i:], v)
	}
	ne.PutUint32(rec[40:], 8)
	ne.PutUint32(rec[44:], 16)
	c, err := stackcap.DecodeCopy(rec)
	if err != nil {
		t.Fatal(err)
	}
	if c.IP != 0x401000 || c.SP != 0x7ff0 || c.FP != 0x8000 || c.Base != 0x7000 || len(c.Stack) != 8 {
		t.Fatalf("have %+v", c)
	}
	ne.PutUint32(rec[40:], 17)
	if _, err := stackcap.DecodeCopy(rec); err == nil {
		t.Fatal("length past capacity: no error")
	}
	ne.PutUint32(rec[44:], 4096)
	ne.PutUint32(rec[40:], 4096)
	if _, err := stackcap.DecodeCopy(rec); err == nil {
		t.Fatal("length past record: no error")
	}
}

func TestEmitOptions(t *testing.T) {
	for _, m := range []elf.Machine{elf.EM_X86_64, elf.EM_AARCH64} {
		if _, err := stackcap.EmitFrames(m, asm.R6, asm.R7, 0, &stackcap.FramesOptions{Entry: true}, "f"); err != nil {
			t.Errorf("%v frames: %v", m, err)
		}
		if _, err := stackcap.EmitCopy(m, asm.R6, asm.R7, 0, &stackcap.CopyOptions{Size: 2048}, "c"); err != nil {
			t.Errorf("%v copy: %v", m, err)
		}
		if _, err := stackcap.EmitStackID(m, asm.R6, asm.R7, 0, "stacks", nil, "s"); err != nil {
			t.Errorf("%v stack id: %v", m, err)
		}
	}
	for _, tc := range []struct {
		name string
		err  func() error
	}{
		{"machine", func() error {
			_, err := stackcap.EmitFrames(elf.EM_386, asm.R6, asm.R7, 0, nil, "f")
			return err
		}},
		{"ctx register", func() error {
			_, err := stackcap.EmitFrames(elf.EM_X86_64, asm.R1, asm.R7, 0, nil, "f")
			return err
		}},
		{"same registers", func() error {
			_, err := stackcap.EmitCopy(elf.EM_X86_64, asm.R6, asm.R6, 0, nil, "c")
			return err
		}},
		{"max frames", func() error {
			_, err := stackcap.EmitFrames(elf.EM_X86_64, asm.R6, asm.R7, 0, &stackcap.FramesOptions{MaxFrames: stackcap.MaxFrames + 1}, "f")
			return err
		}},
		{"copy size", func() error {
			_, err := stackcap.EmitCopy(elf.EM_X86_64, asm.R6, asm.R7, 0, &stackcap.CopyOptions{Size: 5000}, "c")
			return err
		}},
		{"copy past 32 KiB", func() error {
			_, err := stackcap.EmitCopy(elf.EM_X86_64, asm.R6, asm.R7, 8192, &stackcap.CopyOptions{Size: stackcap.MaxCopySize}, "c")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err() == nil {
				t.Fatal("no error")
			}
		})
	}
	if have, want := stackcap.CopySize(nil), 48+stackcap.DefaultCopySize; have != want {
		t.Errorf("CopySize(nil): have %d, want %d", have, want)
	}
	if have, want := stackcap.FramesSize(&stackcap.FramesOptions{MaxFrames: 4}), 16+32; have != want {
		t.Errorf("FramesSize(4): have %d, want %d", have, want)
	}
}

// FuzzDecode decodes hostile records: errors, never panics, and never
// more frames than the record holds (plus the caller).
func FuzzDecode(f *testing.F) {
	f.Add(framesRecord(2, stackcap.FlagCaller, 2, 1, 3))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		pcs, err := stackcap.DecodeFrames(b)
		if err == nil && len(pcs) > (len(b)-16)/8+1 {
			t.Fatalf("%d frames from %d bytes", len(pcs), len(b))
		}
		if err != nil && pcs != nil {
			t.Fatal("frames with an error")
		}
		c, err := stackcap.DecodeCopy(b)
		if err == nil && len(c.Stack) > len(b) {
			t.Fatal("copy longer than the record")
		}
		stackcap.DecodeStackID(b)
	})
}
