package symbolize

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// jitRec is one record for jitdumpBytes.
type jitRec struct {
	id    JitRecord
	addr  uint64 // LOAD: code_addr; MOVE: new_code_addr
	size  uint64 // code_size; LOAD writes that many code bytes
	index uint64
	name  string // LOAD: written with its NUL
	raw   []byte // when not nil, the payload as is
	total int    // when not 0, the record header's total_size
}

// jitdumpBytes writes a jitdump in byte order o, as the specification
// lays it out.
func jitdumpBytes(o binary.AppendByteOrder, recs []jitRec) []byte {
	b := o.AppendUint32(nil, jitMagic)
	b = o.AppendUint32(b, 1)
	b = o.AppendUint32(b, jitHeaderSize)
	b = o.AppendUint32(b, 62)
	b = o.AppendUint32(b, 0)
	b = o.AppendUint32(b, 1234)
	b = o.AppendUint64(b, 1)
	b = o.AppendUint64(b, 0)
	for _, r := range recs {
		var p []byte
		switch {
		case r.raw != nil:
			p = r.raw
		case r.id == JitCodeLoad:
			p = o.AppendUint32(p, 1234)
			p = o.AppendUint32(p, 1235)
			p = o.AppendUint64(p, r.addr)
			p = o.AppendUint64(p, r.addr)
			p = o.AppendUint64(p, r.size)
			p = o.AppendUint64(p, r.index)
			p = append(append(p, r.name...), 0)
			if r.size < 1<<16 {
				p = append(p, make([]byte, r.size)...)
			}
		case r.id == JitCodeMove:
			p = o.AppendUint32(p, 1234)
			p = o.AppendUint32(p, 1235)
			p = o.AppendUint64(p, r.addr)
			p = o.AppendUint64(p, 0)
			p = o.AppendUint64(p, r.addr)
			p = o.AppendUint64(p, r.size)
			p = o.AppendUint64(p, r.index)
		}
		total := r.total
		if total == 0 {
			total = jitRecordHeader + len(p)
		}
		b = o.AppendUint32(b, uint32(r.id))
		b = o.AppendUint32(b, uint32(total))
		b = o.AppendUint64(b, 2)
		b = append(b, p...)
	}
	return b
}

// debugInfo is the payload of a JIT_CODE_DEBUG_INFO record of the
// function at addr: its lines, each in file.
func debugInfo(o binary.AppendByteOrder, addr uint64, lines []jitLine, file string) []byte {
	b := o.AppendUint64(nil, addr)
	b = o.AppendUint64(b, uint64(len(lines)))
	for _, l := range lines {
		b = o.AppendUint64(b, l.addr)
		b = o.AppendUint32(b, l.line)
		b = o.AppendUint32(b, 0)
		b = append(append(b, file...), 0)
	}
	return b
}

// seedRecords are the records of testdata/jit-1.dump.
var seedRecords = []jitRec{
	{id: JitCodeLoad, addr: 0x7f0000001000, size: 0x20, index: 1, name: "jit_hot"},
	{id: JitCodeDebugInfo, raw: debugInfo(binary.LittleEndian, 0x7f0000001100, []jitLine{{0x7f0000001100, 7, 0}, {0x7f0000001108, 9, 0}}, "Hot.java")},
	{id: JitCodeLoad, addr: 0x7f0000001100, size: 0x10, index: 2, name: "LHot;::work(IZ)J"},
	{id: JitCodeMove, addr: 0x7f0000002000, size: 0x10, index: 2},
	{id: JitCodeUnwindingInfo, raw: make([]byte, 24)},
	{id: JitCodeClose},
}

var update = flag.Bool("update", false, "rewrite testdata/jit-1.dump")

// TestJitdumpSeed checks that testdata/jit-1.dump, the fuzz seed, is
// jitdumpBytes(LittleEndian, seedRecords); -update writes it.
func TestJitdumpSeed(t *testing.T) {
	want := jitdumpBytes(binary.LittleEndian, seedRecords)
	have, err := os.ReadFile("testdata/jit-1.dump")
	if err != nil && !*update {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("testdata/jit-1.dump", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(have, want) {
		t.Errorf("testdata/jit-1.dump is not jitdumpBytes(seedRecords): run go test -run TestJitdumpSeed -update")
	}
}

func TestParseJitdump(t *testing.T) {
	load := func(addr, size, index uint64, name string) jitRec {
		return jitRec{id: JitCodeLoad, addr: addr, size: size, index: index, name: name}
	}
	hot := PerfSymbol{0x1000, 0x20, "jit_hot"}
	tests := []struct {
		name     string
		order    binary.AppendByteOrder
		recs     []jitRec
		cut      int // bytes cut off the end
		want     []PerfSymbol
		warnings []string // the messages of the FormatErrors
	}{
		{name: "seed", order: binary.LittleEndian, recs: seedRecords,
			want: []PerfSymbol{{0x7f0000001000, 0x20, "jit_hot"}, {0x7f0000001100, 0x10, "LHot;::work(IZ)J"}, {0x7f0000002000, 0x10, "LHot;::work(IZ)J"}}},
		{name: "big-endian", order: binary.BigEndian, recs: []jitRec{load(0x1000, 0x20, 1, "jit_hot")}, want: []PerfSymbol{hot}},
		{name: "last record being written", order: binary.LittleEndian, recs: []jitRec{load(0x1000, 0x20, 1, "jit_hot"), load(0x2000, 0x20, 2, "cut")}, cut: 5, want: []PerfSymbol{hot}},
		{name: "record header cut", order: binary.LittleEndian, recs: []jitRec{load(0x1000, 0x20, 1, "jit_hot"), {id: JitCodeClose}}, cut: 3, want: []PerfSymbol{hot}},
		{name: "nothing after close", order: binary.LittleEndian, recs: []jitRec{load(0x1000, 0x20, 1, "jit_hot"), {id: JitCodeClose}, load(0x2000, 0x20, 2, "after")}, want: []PerfSymbol{hot}},
		{name: "unknown record passed over", order: binary.LittleEndian, recs: []jitRec{{id: 99, raw: []byte{1, 2, 3}}, load(0x1000, 0x20, 1, "jit_hot")}, want: []PerfSymbol{hot}},
		{name: "size below the header", order: binary.LittleEndian, recs: []jitRec{load(0x1000, 0x20, 1, "jit_hot"), {id: JitCodeClose, total: 8}, load(0x2000, 0x20, 2, "lost")},
			want: []PerfSymbol{hot}, warnings: []string{"record size smaller than its header"}},
		{name: "name without NUL", order: binary.LittleEndian, recs: []jitRec{{id: JitCodeLoad, raw: append(make([]byte, jitLoadFixed), "abc"...)}, load(0x1000, 0x20, 1, "jit_hot")},
			want: []PerfSymbol{hot}, warnings: []string{"JIT_CODE_LOAD name without its NUL"}},
		{name: "short load", order: binary.LittleEndian, recs: []jitRec{{id: JitCodeLoad, raw: make([]byte, 8)}, load(0x1000, 0x20, 1, "jit_hot")},
			want: []PerfSymbol{hot}, warnings: []string{"JIT_CODE_LOAD record too short"}},
		{name: "empty name", order: binary.LittleEndian, recs: []jitRec{load(0x3000, 1, 1, ""), load(0x1000, 0x20, 1, "jit_hot")},
			want: []PerfSymbol{hot}, warnings: []string{"JIT_CODE_LOAD with an empty name"}},
		{name: "wraps", order: binary.LittleEndian, recs: []jitRec{load(^uint64(0)-4, 0x10, 1, "w"), load(0x1000, 0x20, 1, "jit_hot")},
			want: []PerfSymbol{hot}, warnings: []string{"JIT_CODE_LOAD code wraps around the address space"}},
		{name: "move of unknown index", order: binary.LittleEndian, recs: []jitRec{load(0x1000, 0x20, 1, "jit_hot"), {id: JitCodeMove, addr: 0x5000, size: 0x20, index: 7}},
			want: []PerfSymbol{hot}, warnings: []string{"JIT_CODE_MOVE of a code_index no JIT_CODE_LOAD gave"}},
		{name: "short move", order: binary.LittleEndian, recs: []jitRec{load(0x1000, 0x20, 1, "jit_hot"), {id: JitCodeMove, raw: make([]byte, 40)}},
			want: []PerfSymbol{hot}, warnings: []string{"JIT_CODE_MOVE record too short"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := jitdumpBytes(tt.order, tt.recs)
			b = b[:len(b)-tt.cut]
			syms, warnings, err := ParseJitdump(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(syms, tt.want) {
				t.Errorf("have %+v\nwant %+v", syms, tt.want)
			}
			var msgs []string
			for _, w := range warnings {
				var fe *FormatError
				if !errors.As(w, &fe) || fe.Off < jitHeaderSize || fe.Off >= int64(len(b)) {
					t.Errorf("warning %v: want a FormatError at a record's offset", w)
					continue
				}
				msgs = append(msgs, fe.Msg)
			}
			if !slices.Equal(msgs, tt.warnings) {
				t.Errorf("warnings %q, want %q", msgs, tt.warnings)
			}
		})
	}
}

// TestJitdumpDebugInfo: JIT_CODE_DEBUG_INFO records give source
// positions, each file kept once; a damaged record keeps the entries
// before the damage and warns.
func TestJitdumpDebugInfo(t *testing.T) {
	o := binary.LittleEndian
	two := []jitLine{{0x1000, 7, 0}, {0x1008, 9, 0}}
	good := debugInfo(o, 0x1000, two, "Hot.java")
	tests := []struct {
		name    string
		payload []byte
		lines   []jitLine
		warn    string
	}{
		{"two entries", good, two, ""},
		{"count past the end", append(append(slices.Clone(good[:8]), o.AppendUint64(nil, 3)...), good[16:]...), two, "JIT_CODE_DEBUG_INFO entries past the record's end"},
		{"name without NUL", good[:len(good)-1], two[:1], "JIT_CODE_DEBUG_INFO file name without its NUL"},
		{"short", good[:8], nil, "JIT_CODE_DEBUG_INFO record too short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := jitdumpBytes(o, []jitRec{{id: JitCodeDebugInfo, raw: tt.payload}, {id: JitCodeLoad, addr: 0x1000, size: 0x20, index: 1, name: "hot"}})
			var p jitParser
			warnings, err := p.parse(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.lines, tt.lines) || len(p.syms) != 1 {
				t.Errorf("lines %v, symbols %v; want %v and hot", p.lines, p.syms, tt.lines)
			}
			if len(tt.lines) > 0 && !slices.Equal(p.files, []string{"Hot.java"}) {
				t.Errorf("files %q, want [Hot.java]", p.files)
			}
			var fe *FormatError
			if tt.warn == "" && len(warnings) != 0 || tt.warn != "" && (len(warnings) != 1 || !errors.As(warnings[0], &fe) || fe.Msg != tt.warn) {
				t.Errorf("warnings %v, want %q", warnings, tt.warn)
			}
		})
	}
}

// TestParseJitdumpHeader: a file that is not a jitdump is an error, a
// *FormatError at the offending field, and no symbols.
func TestParseJitdumpHeader(t *testing.T) {
	good := jitdumpBytes(binary.LittleEndian, nil)
	tests := []struct {
		name string
		b    []byte
		off  int64
	}{
		{"short", good[:20], 0},
		{"magic", append([]byte("ELF\x7f"), good[4:]...), 0},
		{"version", append(append(slices.Clone(good[:4]), 2, 0, 0, 0), good[8:]...), 4},
		{"header size", append(append(slices.Clone(good[:8]), 8, 0, 0, 0), good[12:]...), 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			syms, warnings, err := ParseJitdump(bytes.NewReader(tt.b), int64(len(tt.b)))
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Off != tt.off || syms != nil || warnings != nil {
				t.Errorf("have %v, %v, %v; want a FormatError at byte %d and nothing else", syms, warnings, err, tt.off)
			}
		})
	}
}

// FuzzParseJitdump checks that no input panics ParseJitdump; that err !=
// nil exactly when there are no symbols (nil), every warning and error
// being a FormatError; that every symbol is named and does not wrap;
// and that reading the file in two steps, as it grows, gives the
// symbols of one read. Seeds: testdata/*.dump.
func FuzzParseJitdump(f *testing.F) {
	files, err := filepath.Glob("testdata/*.dump")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata/*.dump (%v)", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(len(b)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		r := bytes.NewReader(data)
		syms, warnings, err := ParseJitdump(r, int64(len(data)))
		var fe *FormatError
		if err != nil {
			if !errors.As(err, &fe) || syms != nil || warnings != nil {
				t.Fatalf("err %v with %v, %v", err, syms, warnings)
			}
		} else if syms == nil {
			t.Fatal("no error and nil symbols")
		}
		for _, w := range warnings {
			if !errors.As(w, &fe) {
				t.Fatalf("warning %v is not a FormatError", w)
			}
		}
		for _, s := range syms {
			if s.Name == "" || s.Start+s.Size < s.Start || len(s.Name) > maxJitName {
				t.Fatalf("bad symbol %+v", s)
			}
		}
		var p jitParser
		if _, err := p.parse(r, int64(len(data))); err == nil {
			for _, l := range p.lines {
				if int(l.file) >= len(p.files) {
					t.Fatalf("line %+v of %d files", l, len(p.files))
				}
			}
		}
		p = jitParser{}
		k := min(int64(split), int64(len(data)))
		if _, err := p.parse(r, k); err != nil {
			p = jitParser{}
		}
		_, err2 := p.parse(r, int64(len(data)))
		if (err2 != nil) != (err != nil) || err == nil && !slices.Equal(p.syms, syms) {
			t.Fatalf("in two steps (%d bytes, then %d): %v, %v; in one: %v, %v", k, len(data), p.syms, err2, syms, err)
		}
	})
}

// TestJitdump symbolizes a stack through code in an anonymous executable
// mapping that the process's jitdump names: jitdump.c calls a function
// it wrote into the mapping, which calls back into the program; the
// return address in the JIT code names the JIT function. The dump is
// found as /tmp/jit-PID.dump, or wherever the process maps it (as perf's
// JIT agents map it); it is read again when it grows (a later function
// and a JIT_CODE_MOVE); it is still read once the process has removed it
// and exited; MaxJitdump bounds what is read.
func TestJitdump(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildC(t, "gcc", "jitdump.c", t.TempDir(), "jitdump", "-O1")
	for _, mapped := range []bool{false, true} {
		t.Run("mapped="+strconv.FormatBool(mapped), func(t *testing.T) {
			dump := ""
			if mapped {
				dump = filepath.Join(t.TempDir(), "jit-1.dump")
				t.Setenv("JITDUMP", dump)
			}
			want, tr := addrs(t, bin)
			if !mapped {
				dump = "/tmp/jit-" + strconv.Itoa(tr.PID()) + ".dump"
				t.Cleanup(func() { os.Remove(dump) })
			}
			s := newSymbolizer(t, tr.PID(), nil)
			// A stack: the callback, called from jit_hot.
			fr := s.StackFrames([]uint64{want["callback"], want["ret"]})
			if len(fr) != 2 || fr[0].Symbol != "callback" || fr[0].Object != bin {
				t.Fatalf("stack %+v: want callback in %s first", fr, bin)
			}
			off := want["ret"] - want["jit_hot"]
			if f := fr[1]; f.Symbol != "jit_hot" || f.SymOffset != off || f.Object != dump || f.String() != "jit_hot+"+strconv.FormatUint(off, 10) {
				t.Errorf("return address %#x: have %+v, want jit_hot+%d from %s", want["ret"], f, off, dump)
			}
			// jit_hot's call is at hot.js:11 (its debug entries);
			// jit_cold has none.
			if f := fr[1]; f.File != "hot.js" || f.Line != 11 {
				t.Errorf("return address in jit_hot: at %s:%d, want hot.js:11", f.File, f.Line)
			}
			if f := s.Frames([]uint64{want["jit_hot"]})[0]; f.File != "hot.js" || f.Line != 10 {
				t.Errorf("jit_hot+0: at %s:%d, want hot.js:10", f.File, f.Line)
			}
			if f := s.Frames([]uint64{want["jit_cold"] + 3})[0]; f.Symbol != "jit_cold" || f.SymOffset != 3 || f.File != "" || f.Line != 0 {
				t.Errorf("jit_cold+3: have %+v, want no position", f)
			}
			// Past every function, in the same page: a bare address.
			if f := s.Frames([]uint64{want["jit_hot"] + 0x400})[0]; f.Symbol != "" {
				t.Errorf("jit_hot+0x400: have %+v, want no symbol", f)
			}

			// The dump grows: a new function, and jit_cold moved.
			for _, line := range tr.Do(t, "more") {
				name, a, _ := strings.Cut(line, " ")
				want[name] = hexArg(t, a)
			}
			if f := s.Frames([]uint64{want["jit_later"]})[0]; f.Symbol != "jit_later" || f.SymOffset != 0 {
				t.Errorf("jit_later after the dump grew: have %+v", f)
			}
			if f := s.Frames([]uint64{want["jit_cold_moved"] + 1})[0]; f.Symbol != "jit_cold" || f.SymOffset != 1 {
				t.Errorf("jit_cold moved: have %+v, want jit_cold+1", f)
			}

			// A Symbolizer made while the process lives holds its dump
			// open: once the process has removed it and exited, the
			// dump still names its code.
			late := newSymbolizer(t, tr.PID(), nil)
			defer func() {
				tr.Quit(t)
				if _, err := os.Stat(dump); !os.IsNotExist(err) {
					t.Fatalf("%s still there after its process ended (%v)", dump, err)
				}
				if f := late.Frames([]uint64{want["jit_later"] + 2})[0]; f.Symbol != "jit_later" || f.SymOffset != 2 || f.Object != dump {
					t.Errorf("jit_later+2 after the process removed its dump and exited: have %+v", f)
				}
			}()

			// MaxJitdump just past the first record: jit_hot only.
			first := int64(jitHeaderSize + jitRecordHeader + 16 + 2*(16+7) + jitRecordHeader + jitLoadFixed + len("jit_hot") + 1 + 18)
			small := newSymbolizer(t, tr.PID(), &Options{MaxJitdump: first})
			if f := small.Frames([]uint64{want["jit_hot"]})[0]; f.Symbol != "jit_hot" {
				t.Errorf("MaxJitdump %d, jit_hot: have %+v", first, f)
			}
			if f := small.Frames([]uint64{want["jit_cold"]})[0]; f.Symbol != "" {
				t.Errorf("MaxJitdump %d, jit_cold: have %+v, want no symbol past the limit", first, f)
			}

			// A dump another user owns is not the process's: ignored,
			// until it is the process's user's again.
			owner := chownTo(t, dump, 54321)
			other := newSymbolizer(t, tr.PID(), nil)
			if f := other.Frames([]uint64{want["jit_hot"]})[0]; f.Symbol != "" {
				t.Errorf("dump owned by uid 54321, the process's uid %d: have %+v, want no symbol", owner, f)
			}
			chownTo(t, dump, owner)
			if f := other.Frames([]uint64{want["jit_hot"]})[0]; f.Symbol != "jit_hot" {
				t.Errorf("dump owned by the process's uid %d again: have %+v, want jit_hot", owner, f)
			}
		})
	}
}
