package bpfgen_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// buildChains compiles testdata/chains.c with flags into a temporary
// directory and returns the executable's path.
func buildChains(tb testing.TB, flags ...string) string {
	tb.Helper()
	gcc := testutil.RequireTool(tb, "gcc")
	testutil.RequireFile(tb, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	src := testutil.RequireFile(tb, filepath.Join("testdata", "chains.c"))
	out := filepath.Join(tb.TempDir(), "chains")
	args := append(append([]string{}, flags...), "-g", "-o", out, src)
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		tb.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
	return out
}

// chase turns the fetch of a pointer argument into the fetch of a field
// behind it: offs are the field offsets from the pointer's value, each but
// the last leading to the next pointer; the last field has size bytes.
func chase(tb testing.TB, f bpfgen.Fetch, size uint8, signed bool, offs ...int32) bpfgen.Fetch {
	tb.Helper()
	switch f.Kind {
	case bpfgen.FetchReg:
		// The pointer is the register: its first field needs no read.
		f = bpfgen.Fetch{Kind: bpfgen.FetchMem, HasBase: true, Reg: f.Reg, Offset: int64(offs[0])}
		offs = offs[1:]
	case bpfgen.FetchMem:
		// The pointer is in memory: read it first.
	default:
		tb.Fatalf("pointer argument of kind %v", f.Kind)
	}
	f.Size, f.Signed, f.Derefs = size, signed, uint8(len(offs))
	copy(f.Path[:], offs)
	return f
}

// Offsets in chains.c's struct node {long pad; struct node *next; int count;}.
const (
	offNext  = 8
	offCount = 16
)

var chainBuilds = []struct {
	name  string
	flags []string
}{
	{"O0", []string{"-O0"}}, // arguments in memory: 8@-8(%rbp)
	{"O2", []string{"-O2"}}, // arguments in registers: 8@%rdi
}

// TestPointerChains follows s->next->...->count from probe "chain" and
// compares with the values chains.c printed; a NULL next faults.
func TestPointerChains(t *testing.T) {
	testutil.RequireBPF(t)
	for _, b := range chainBuilds {
		for _, multi := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/multi=%v", b.name, multi), func(t *testing.T) {
				path := buildChains(t, b.flags...)
				tr := testutil.StartTracee(t, path)
				s := newSession(t, path, nil, "chain")
				s.cfg.Multi = multi
				for i := range s.cfg.Sites {
					site := &s.cfg.Sites[i]
					p := site.Args[0]
					site.Args = []bpfgen.Fetch{
						chase(t, p, 4, true, offCount),
						chase(t, p, 4, true, offNext, offCount),
						chase(t, p, 4, true, offNext, offNext, offCount),
						chase(t, p, 4, true, offNext, offNext, offNext, offCount),
						chase(t, p, 8, false, offNext),
					}
				}
				a := s.attach(t, path, tr.PID())
				rd, err := ringbuf.NewReader(a.coll.Maps[bpfgen.MapEvents])
				if err != nil {
					t.Fatal(err)
				}
				defer rd.Close()
				lines := tr.Do(t, "chain")
				if !slices.Equal(lines, []string{"chain 1 2 -3"}) {
					t.Fatalf("chains printed %q", lines)
				}
				evs := drain(t, &s.cfg, rd)
				if len(evs) != 2 {
					t.Fatalf("%d events, want 2", len(evs))
				}
				tests := []struct {
					name   string
					args   []int64 // the pointer, last, is checked apart
					faults uint16
					next   bool
				}{
					// n1: the fourth hop meets n3's NULL next.
					{"list", []int64{1, 2, -3, 0}, 0b01000, true},
					// lone: every hop past s meets its NULL next.
					{"lone", []int64{9, 0, 0, 0}, 0b01110, false},
				}
				for i, tc := range tests {
					ev := &evs[i]
					var have []int64
					for _, v := range ev.Args[:4] {
						have = append(have, int64(v))
					}
					if !slices.Equal(have, tc.args) || ev.Faults != tc.faults || (ev.Args[4] != 0) != tc.next {
						t.Errorf("%s: args %v faults %#b next %#x, want %v faults %#b next set %v", tc.name, have, ev.Faults, ev.Args[4], tc.args, tc.faults, tc.next)
					}
				}
			})
		}
	}
}

// TestByteStrings reads (pointer, length) pairs of probe "bytes" as Go
// strings: NULs kept, cut at StrLen-2 bytes, negative lengths cut, a NULL
// pointer faulting unless the length is 0.
func TestByteStrings(t *testing.T) {
	testutil.RequireBPF(t)
	const strLen = 32
	big := strings.Repeat("0123456789", 4)
	want := []struct {
		data       string
		n          int64
		cut, fault bool
	}{
		{"ab\x00cd", 5, false, false},
		{big[:strLen-2], 40, true, false},
		{big[:strLen-2], -1, true, false},
		{"", 0, false, false},
		{"", 5, false, true},
	}
	for _, b := range chainBuilds {
		for _, multi := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/multi=%v", b.name, multi), func(t *testing.T) {
				path := buildChains(t, b.flags...)
				tr := testutil.StartTracee(t, path)
				s := newSession(t, path, nil, "bytes")
				s.cfg.Multi, s.cfg.StrLen = multi, strLen
				for i := range s.cfg.Sites {
					s.cfg.Sites[i].Bytes = 1 << 0
					s.cfg.Sites[i].BytesLen[0] = 1
				}
				a := s.attach(t, path, tr.PID())
				rd, err := ringbuf.NewReader(a.coll.Maps[bpfgen.MapEvents])
				if err != nil {
					t.Fatal(err)
				}
				defer rd.Close()
				tr.Do(t, "bytes")
				evs := drain(t, &s.cfg, rd)
				if len(evs) != len(want) {
					t.Fatalf("%d events, want %d", len(evs), len(want))
				}
				for i, w := range want {
					ev := &evs[i]
					if ev.BytesArgs != 1 || ev.StringArgs != 0 || ev.Strings[0] != w.data || int64(ev.Args[1]) != w.n ||
						(ev.Truncated == 1) != w.cut || (ev.Faults == 1) != w.fault || ev.Truncated>>1 != 0 || ev.Faults>>1 != 0 {
						t.Errorf("event %d: %q n %d bytes %#b truncated %#b faults %#b, want %q n %d cut %v fault %v",
							i, ev.Strings[0], int64(ev.Args[1]), ev.BytesArgs, ev.Truncated, ev.Faults, w.data, w.n, w.cut, w.fault)
					}
				}
			})
		}
	}
}

// TestLatencyByArg measures two interleaved calls on one thread, as two
// goroutines on one M would make them: keyed by the id argument both pair
// up (one of at least 2 ms), keyed by the thread the second start
// overwrites the first and the outer done finds no start.
func TestLatencyByArg(t *testing.T) {
	testutil.RequireBPF(t)
	path := buildChains(t, "-O2")
	for _, tc := range []struct {
		byArg bool
		n     uint64
	}{{true, 2}, {false, 1}} {
		for _, multi := range []bool{true, false} {
			t.Run(fmt.Sprintf("byarg=%v/multi=%v", tc.byArg, multi), func(t *testing.T) {
				tr := testutil.StartTracee(t, path)
				s := newSession(t, path, nil, "enter", "leave")
				s.cfg.Multi, s.cfg.Mode = multi, bpfgen.ModeLatency
				s.cfg.LatencyStart, s.cfg.LatencyDone = s.probe("enter"), s.probe("leave")
				s.cfg.LatencyByArg, s.cfg.LatencyArg = tc.byArg, 0
				a := s.attach(t, path, tr.PID())
				tr.Do(t, "lat")
				hist, err := bpfgen.ReadHist(a.coll.Maps[bpfgen.MapHist])
				if err != nil {
					t.Fatal(err)
				}
				var n uint64
				top := 0
				for b, c := range hist[s.probe("leave")] {
					n += c
					if c != 0 {
						top = b
					}
				}
				if len(hist) != 1 || n != tc.n {
					t.Fatalf("hist %v: want %d latencies of probe leave", hist, tc.n)
				}
				if long := bpfgen.HistBucket(2e6, false); tc.byArg && top < long {
					t.Errorf("longest latency in bucket %d, want >= %d (2 ms)", top, long)
				}
				starts := a.coll.Maps[bpfgen.MapStarts]
				want := 8
				if tc.byArg {
					want = 16
				}
				if int(starts.KeySize()) != want {
					t.Errorf("starts key of %d bytes, want %d", starts.KeySize(), want)
				}
				key := make([]byte, starts.KeySize())
				var v uint64
				if starts.Iterate().Next(&key, &v) && tc.byArg {
					t.Errorf("starts not empty: %x -> %d", key, v)
				}
			})
		}
	}
}
