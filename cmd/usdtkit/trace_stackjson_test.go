package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// stackFrameJSON is a frame of a printf'd stack in -o json's "stacks".
type stackFrameJSON struct {
	Address      string `json:"address"`
	Object       string `json:"object"`
	ObjectOffset uint64 `json:"object_offset"`
	Symbol       string `json:"symbol"`
	Offset       uint64 `json:"offset"`
	File         string `json:"file"`
	Line         int    `json:"line"`
	Inlined      bool   `json:"inlined"`
}

// TestTraceStackJSON: with -o json, a printf'd ustack's line keeps
// bpftrace's "data" text and adds "stacks": per stack argument, its
// frames as objects with address, object, symbol, offset, file and line.
// chain.c is built -O2 -g -fomit-frame-pointer; at leaf's entry under
// "levels" the frames are leaf, level3, level2, level1, main, each in the
// executable, at the file and line addr2line gives (for a caller, of its
// call), and the printed text is made of the same frames.
func TestTraceStackJSON(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O2", "-g", "-fomit-frame-pointer")
	want := []string{"leaf", "level3", "level2", "level1", "main"}
	tr := testutil.StartTracee(t, bin)
	tr.Do(t, "loop 0")
	run := startTrace(t, "trace", "-p", strconv.Itoa(tr.PID()), "-o", "json", "-e", strings.ReplaceAll(`uprobe:BIN:leaf { printf("%d %s|%s\n", pid, ustack, ustack(2)); }`, "BIN", bin))
	tr.Do(t, "levels")
	tr.Quit(t)
	code, out, errOut := run.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var line struct {
		Type   string             `json:"type"`
		Data   string             `json:"data"`
		Stacks [][]stackFrameJSON `json:"stacks"`
	}
	found := false
	for sc := bufio.NewScanner(strings.NewReader(out)); sc.Scan(); {
		if !strings.Contains(sc.Text(), `"printf"`) {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		found = true
		break
	}
	if !found {
		t.Fatalf("no printf line:\n%s", out)
	}
	if len(line.Stacks) != 2 {
		t.Fatalf("%d stacks, want 2 (ustack, ustack(2)): %+v", len(line.Stacks), line)
	}
	full := line.Stacks[0]
	if len(full) < len(want) {
		t.Fatalf("%d frames, want at least %d: %+v", len(full), len(want), full)
	}
	for i, w := range want {
		f := full[i]
		// addr2line, at the address or, for a return address, the call
		// before it.
		at := fileVaddr(t, bin, f.ObjectOffset)
		if i > 0 {
			at--
		}
		wantFile, wantLine := addr2line(t, bin, at)
		addr, err := strconv.ParseUint(strings.TrimPrefix(f.Address, "0x"), 16, 64)
		if err != nil || !strings.HasPrefix(f.Address, "0x") || addr == 0 {
			t.Errorf("frame %d: address %q, want 0x and hex digits", i, f.Address)
		}
		if f.Symbol != w || f.Object != bin || f.Inlined {
			t.Errorf("frame %d: %s in %s (inlined %v), want %s in %s", i, f.Symbol, f.Object, f.Inlined, w, bin)
		}
		if !strings.HasSuffix(f.File, "/chain.c") || f.File != wantFile || f.Line != wantLine {
			t.Errorf("frame %d (%s): at %s:%d, want %s:%d (addr2line)", i, f.Symbol, f.File, f.Line, wantFile, wantLine)
		}
		if i == 0 && f.Offset != 0 {
			t.Errorf("frame 0: leaf+%d, want leaf+0 (the probe is at its entry)", f.Offset)
		}
		if i > 0 && f.Offset == 0 {
			t.Errorf("frame %d: %s+0 for a return address", i, f.Symbol)
		}
	}
	// Each stack's text in "data" is its frames, as symbol+offset.
	pid, texts, ok := strings.Cut(line.Data, " ")
	if !ok || pid != strconv.Itoa(tr.PID()) {
		t.Fatalf("data %q: want the pid %d first", line.Data, tr.PID())
	}
	parts := strings.Split(strings.TrimSuffix(texts, "\n"), "|")
	if len(parts) != 2 {
		t.Fatalf("data %q: want two stacks", line.Data)
	}
	for k, frames := range line.Stacks {
		var b strings.Builder
		b.WriteString("\n")
		for _, f := range frames {
			if !f.Inlined {
				b.WriteString("        " + f.Symbol + "+" + strconv.FormatUint(f.Offset, 10) + "\n")
			}
		}
		if parts[k] != b.String() {
			t.Errorf("stack %d: text %q, frames print %q", k, parts[k], b.String())
		}
	}
	if n := len(line.Stacks[1]); n != 2 {
		t.Errorf("ustack(2) has %d frames, want 2: %+v", n, line.Stacks[1])
	}
}

// fileVaddr returns the virtual address of file offset off of the ELF
// file path.
func fileVaddr(t *testing.T, path string, off uint64) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && off >= p.Off && off-p.Off < p.Filesz {
			return p.Vaddr + off - p.Off
		}
	}
	t.Fatalf("%s: offset %#x in no PT_LOAD", path, off)
	return 0
}

// addr2line returns the file and line binutils' addr2line gives for
// vaddr in path (the innermost, when inlined).
func addr2line(t *testing.T, path string, vaddr uint64) (string, int) {
	t.Helper()
	tool := testutil.RequireTool(t, "addr2line")
	b, err := exec.Command(tool, "-e", path, "0x"+strconv.FormatUint(vaddr, 16)).Output()
	if err != nil {
		t.Fatalf("addr2line: %v", err)
	}
	pos, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ") // " (discriminator N)"
	file, l, ok := strings.Cut(pos, ":")
	line, err := strconv.Atoi(l)
	if !ok || err != nil {
		t.Fatalf("addr2line printed %q", b)
	}
	return file, line
}

// TestTraceStacksJSON: --stacks -o json prints bpftrace's map, then one
// "stack" line per entry with the stack's frames as objects, its other
// keys (the probe) and its count: leaf, level3, level2, level1, main in
// the executable, counted twice.
func TestTraceStacksJSON(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	out, _ := traceLevels(t, bin, 2, "uprobe:"+bin+":leaf", "--stacks", "-o", "json")
	maps, stacks := splitStacksJSON(t, out)
	if len(maps) != 1 || len(stacks) != 1 {
		t.Fatalf("%d map lines and %d stack lines, want 1 and 1:\n%s", len(maps), len(stacks), out)
	}
	checkLevelsStack(t, stacks[0], bin, true)
}

// checkLevelsStack checks a "stack" line of --stacks on leaf after two
// "levels": map @, the probe as its key, a count of 2, a pid, and frames
// leaf, level3, level2, level1, main in bin (with addr, each with a hex
// address).
func checkLevelsStack(t *testing.T, s stackLineJSON, bin string, addr bool) {
	t.Helper()
	if s.Map != "@" || s.Value != 2 || !slices.Equal(s.Keys, []string{"uprobe:" + bin + ":leaf"}) || s.PID == 0 {
		t.Errorf("stack line %+v: want map @, keys [uprobe:%s:leaf], value 2, a pid", s, bin)
	}
	want := []string{"leaf", "level3", "level2", "level1", "main"}
	if len(s.Frames) < len(want) {
		t.Fatalf("frames %+v: want at least %d", s.Frames, len(want))
	}
	for i, w := range want {
		f := s.Frames[i]
		if f.Symbol != w || f.Object != bin || addr && !strings.HasPrefix(f.Address, "0x") {
			t.Errorf("frame %d: %+v, want %s in %s", i, f, w, bin)
		}
	}
}

// splitStacksJSON returns the data of the "map" lines and the "stack"
// lines of -o json output.
func splitStacksJSON(t *testing.T, out string) (maps []string, stacks []stackLineJSON) {
	t.Helper()
	for sc := bufio.NewScanner(strings.NewReader(out)); sc.Scan(); {
		var line struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			continue // the newlines bpftrace prints before the maps
		}
		switch line.Type {
		case "map":
			maps = append(maps, string(line.Data))
		case "stack":
			var s stackLineJSON
			if err := json.Unmarshal(line.Data, &s); err != nil {
				t.Fatalf("stack line %s: %v", sc.Text(), err)
			}
			stacks = append(stacks, s)
		}
	}
	return maps, stacks
}

// stackLineJSON is the data of a "stack" line.
type stackLineJSON struct {
	Map    string           `json:"map"`
	PID    int              `json:"pid"`
	Keys   []string         `json:"keys"`
	Value  uint64           `json:"value"`
	Frames []stackFrameJSON `json:"frames"`
}
