package btgen_test

import (
	"errors"
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestEventLayout generates blocks with events and checks their records'
// layout, and that the kernel's verifier loads them: strings, a
// predicate reading a string, a return site, a body that aggregates.
func TestEventLayout(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		event btgen.Event
		want  btgen.EventInfo // Block 0
		// bytes is Site.Bytes of the block's second site (Go bytes).
		bytes uint16
	}{
		{"ints", `uprobe:/bin/true:f {}`, btgen.Event{},
			btgen.EventInfo{ArgCap: 6, StrLen: 64, Size: btgen.EvArgsOff + 6*8}, 0},
		{"two args", `uprobe:/bin/true:f {}`, btgen.Event{Args: 2},
			btgen.EventInfo{ArgCap: 2, StrLen: 64, Size: btgen.EvArgsOff + 2*8}, 0},
		{"strings", `uprobe:/bin/true:f /str(arg1) == "GET"/ {}`, btgen.Event{Args: 3, Strings: 0b101, StrLen: 10},
			btgen.EventInfo{ArgCap: 3, Strings: 0b101, StrLen: 10, StrOffs: [12]int{0: 80, 2: 96}, Size: 112}, 0},
		{"return", `uretprobe:/bin/true:f {}`, btgen.Event{},
			btgen.EventInfo{ArgCap: 1, StrLen: 64, Size: btgen.EvArgsOff + 8}, 0},
		{"with a body", `uprobe:/bin/true:f { @[arg0] = hist(arg1); }`, btgen.Event{Strings: 1},
			btgen.EventInfo{ArgCap: 6, Strings: 1, StrLen: 64, StrOffs: [12]int{0: 104}, Size: 168}, 0},
		{"Go bytes at one site", `uprobe:/bin/true:f {}`, btgen.Event{Strings: 1, StrLen: 16},
			btgen.EventInfo{ArgCap: 6, Strings: 0b1001, Bytes: 0b1000, StrLen: 16, StrOffs: [12]int{0: 104, 3: 120}, Size: 136}, 0b1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, tt.src)
			opts.Events = []*btgen.Event{&tt.event}
			opts.Sites[0][1].Bytes = tt.bytes
			out, err := btgen.Generate(prog, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Events) != 1 || out.Events[0] != tt.want {
				t.Fatalf("have %+v, want %+v", out.Events, tt.want)
			}
			testutil.RequireBPF(t)
			mustLoad(t, out.Spec)
		})
	}
}

// TestEventErrors: events a block cannot send are errors at the block.
func TestEventErrors(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		event btgen.Event
		bytes uint16 // Site.Bytes of the first site
	}{
		{"BEGIN", `BEGIN {}`, btgen.Event{}, 0},
		{"string beyond the sites", `uprobe:/bin/true:f {}`, btgen.Event{Strings: 1 << 7}, 0},
		{"string length", `uprobe:/bin/true:f {}`, btgen.Event{StrLen: 1}, 0},
		{"args", `uprobe:/bin/true:f {}`, btgen.Event{Args: 13}, 0},
		{"bytes without their length", `uprobe:/bin/true:f {}`, btgen.Event{Args: 3}, 1 << 2},
		{"bytes and a string", `uprobe:/bin/true:f {}`, btgen.Event{Strings: 1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, tt.src)
			opts.Events = []*btgen.Event{&tt.event}
			opts.Sites[0][0].Bytes = tt.bytes
			_, err := btgen.Generate(prog, opts)
			var be *btlang.Error
			if !errors.As(err, &be) {
				t.Fatalf("error %v, want a *btlang.Error", err)
			}
		})
	}
}
