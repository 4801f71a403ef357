package agent

import (
	"encoding/binary"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/trace"
)

func TestIsProvider(t *testing.T) {
	tests := []struct {
		path, name string
		want       bool
	}{
		{"/memfd:app.so", "app", true},
		{"/run/user/0/usdtkit/app-1234-0123456789abcdef.so", "app", true},
		{"/usr/lib/app.so", "app", true},
		{"/usr/lib/apple.so", "app", false},
		{"/usr/lib/app-x-1.so", "app", false},
		{"/memfd:jit", "app", false},
		{"/usr/lib/libapp.so", "app", false},
	}
	for _, tt := range tests {
		if have := isProvider(tt.path, tt.name); have != tt.want {
			t.Errorf("isProvider(%q, %q) = %v, want %v", tt.path, tt.name, have, tt.want)
		}
	}
}

// TestCumulative checks the buckets exported for hist() and lhist()
// against counts made from the values directly.
func TestCumulative(t *testing.T) {
	values := []int64{-5, 0, 0, 1, 2, 3, 4, 9, 15, 16, 100}
	hist := make([]uint64, trace.HistBuckets)
	r := trace.LinearRange{Min: 0, Max: 20, Step: 5}
	lhist := make([]uint64, r.Buckets())
	for _, v := range values {
		hist[trace.HistBucket(v)]++
		switch {
		case v < r.Min:
			lhist[0]++
		case v >= r.Max:
			lhist[len(lhist)-1]++
		default:
			lhist[(v-r.Min)/r.Step+1]++
		}
	}
	le := func(b float64) uint64 {
		n := uint64(0)
		for _, v := range values {
			if float64(v) <= b {
				n++
			}
		}
		return n
	}
	tests := []struct {
		name   string
		s      mapState
		b      []uint64
		bounds []float64
	}{
		{"hist", mapState{kind: trace.MapHist}, hist, []float64{-1, 0, 1, 3, 7, 15, 31, 63, 127}},
		{"lhist", mapState{kind: trace.MapLhist, lhist: r}, lhist, []float64{-1, 4, 9, 14, 19}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, count := tt.s.cumulative(tt.b)
			want := map[float64]uint64{}
			for _, b := range tt.bounds {
				want[b] = le(b)
			}
			if !maps.Equal(have, want) || count != uint64(len(values)) {
				t.Errorf("have %v count %d, want %v count %d", have, count, want, len(values))
			}
		})
	}
}

// execMessage is a connector datagram with one process event.
func execMessage(what uint32, tgid int) []byte {
	b := make([]byte, 16+cnMsgSize+24)
	binary.NativeEndian.PutUint32(b, uint32(len(b)))
	binary.NativeEndian.PutUint32(b[16:], cnIdxProc)
	binary.NativeEndian.PutUint32(b[16+cnMsgSize:], what)
	binary.NativeEndian.PutUint32(b[16+cnMsgSize+20:], uint32(tgid))
	return b
}

func TestExecPID(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		pid  int
		ok   bool
	}{
		{"exec", execMessage(procEventExec, 42), 42, true},
		{"fork", execMessage(1, 42), 0, false},
		{"fork then exec", append(execMessage(1, 7), execMessage(procEventExec, 8)...), 8, true},
		{"short", execMessage(procEventExec, 42)[:40], 0, false},
		{"empty", nil, 0, false},
	}
	for _, tt := range tests {
		if pid, ok := execPID(tt.b); pid != tt.pid || ok != tt.ok {
			t.Errorf("%s: have %d, %v; want %d, %v", tt.name, pid, ok, tt.pid, tt.ok)
		}
	}
}

// FuzzExecPID: any datagram is read without panic.
func FuzzExecPID(f *testing.F) {
	f.Add(execMessage(procEventExec, 42))
	f.Add(append(execMessage(1, 7), execMessage(procEventExec, 8)...))
	f.Fuzz(func(t *testing.T, b []byte) { execPID(b) })
}

// TestNativeBuckets checks the native buckets of a hist() map against
// the mapping MapConfig.NativeHistograms documents, computed from the
// values directly: v > 0 is in the schema-0 bucket whose interval
// (2^(i-1), 2^i] holds v+1, 0 in the zero bucket, v < 0 in negative
// bucket 0.
func TestNativeBuckets(t *testing.T) {
	values := []int64{-5, -1, 0, 0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 100, 1 << 40}
	hist := make([]uint64, trace.HistBuckets)
	wantPos, wantNeg := map[int32]int64{}, map[int32]int64{}
	var wantZero uint64
	for _, v := range values {
		hist[trace.HistBucket(v)]++
		switch {
		case v < 0:
			wantNeg[0]++
		case v == 0:
			wantZero++
		default:
			i := int32(0)
			for uint64(1)<<i < uint64(v)+1 {
				i++
			}
			wantPos[i]++
		}
	}
	s := &mapState{kind: trace.MapHist, native: true}
	s.desc = prometheus.NewDesc("h", "h", nil, nil)
	m := s.metric(&entry{buckets: hist})
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	h := out.GetHistogram()
	spread := func(spans []*dto.BucketSpan, deltas []int64) map[int32]int64 {
		got := map[int32]int64{}
		var idx int32
		var cnt int64
		for _, sp := range spans {
			idx += sp.GetOffset()
			for range sp.GetLength() {
				cnt, deltas = cnt+deltas[0], deltas[1:]
				if cnt != 0 {
					got[idx] = cnt
				}
				idx++
			}
		}
		return got
	}
	if have := spread(h.GetPositiveSpan(), h.GetPositiveDelta()); !maps.Equal(have, wantPos) {
		t.Errorf("positive buckets %v, want %v", have, wantPos)
	}
	if have := spread(h.GetNegativeSpan(), h.GetNegativeDelta()); !maps.Equal(have, wantNeg) {
		t.Errorf("negative buckets %v, want %v", have, wantNeg)
	}
	if h.GetZeroCount() != wantZero || h.GetSchema() != 0 || h.GetSampleCount() != uint64(len(values)) || len(h.GetBucket()) == 0 {
		t.Errorf("zero %d schema %d count %d classic %d; want %d 0 %d and classic buckets",
			h.GetZeroCount(), h.GetSchema(), h.GetSampleCount(), len(h.GetBucket()), wantZero, len(values))
	}
}

// TestDroppedSeries follows one count() map under a limit of 3 through
// collections and process exits, with more distinct refused keys than
// the limit and keys that stop appearing: the refused keys of a
// collection are exactly the distinct keys of the live maps not
// admitted, however often they are read; droppedAtExit counts each
// exited process's refused keys once; keys held by live processes are
// never evicted, and a new key takes the place of the folded key held
// longest ago (evicted counts those).
func TestDroppedSeries(t *testing.T) {
	a, b, c := countMap(0, 10), countMap(5, 20), countMap(100, 102)
	steps := []collectStep{
		{name: "A: 3 of 10 admitted", live: []*trace.Map{a}, refused: 7, want: ones("0", "1", "2")},
		{name: "A read again", live: []*trace.Map{a}, refused: 7, want: ones("0", "1", "2")},
		{name: "A and B: 17 refused", live: []*trace.Map{a, b}, refused: 17, want: ones("0", "1", "2")},
		{name: "A and B read again", live: []*trace.Map{a, b}, refused: 17, want: ones("0", "1", "2")},
		// A's folded keys were live at the last collection: A's
		// other keys find no room. Then B's keys take their place.
		{name: "A exits", exit: a, live: []*trace.Map{b}, refused: 12, atExit: 7, evicted: 3, want: ones("5", "6", "7")},
		{name: "B read again", live: []*trace.Map{b}, refused: 12, atExit: 7, evicted: 3, want: ones("5", "6", "7")},
		{name: "B exits", exit: b, atExit: 19, evicted: 3, want: ones("5", "6", "7")},
		{name: "C: new keys evict two", live: []*trace.Map{c}, atExit: 19, evicted: 5, want: ones("7", "100", "101")},
		// C's keys were never folded: gone from the live maps
		// (deleted), they leave nothing to export.
		{name: "C gone", atExit: 19, evicted: 5, want: ones("7")},
		// A holds 7 too: its count adds to the folded one.
		{name: "A again", live: []*trace.Map{a}, refused: 7, atExit: 19, evicted: 5, want: map[string]uint64{"7": 2, "0": 1, "1": 1}},
	}
	runCollect(t, &program{cfg: ProgramConfig{Name: "p", SeriesLimit: 3}, maps: map[string]*mapState{}}, steps)
}

// TestCollectFreesKeys: keys that leave nothing to export free their
// place for new keys, and an incomplete collection neither drops nor
// evicts: assigned values (@x[k] = v) of processes gone, keys a live
// program deletes, and folded keys while a live process's maps could not
// be read.
func TestCollectFreesKeys(t *testing.T) {
	assigned := func(k int64) *trace.Map {
		m := countMap(k, k+1)
		m.Kind = trace.MapInt
		m.Entries[0].Value = 7
		return m
	}
	sevens := func(keys ...string) map[string]uint64 {
		m := map[string]uint64{}
		for _, k := range keys {
			m[k] = 7
		}
		return m
	}
	runCollect(t, &program{cfg: ProgramConfig{Name: "p", SeriesLimit: 2}, maps: map[string]*mapState{}}, []collectStep{
		{name: "processes 1 and 2", live: []*trace.Map{assigned(1), assigned(2)}, want: sevens("1", "2")},
		{name: "3 refused", live: []*trace.Map{assigned(1), assigned(2), assigned(3)}, refused: 1, want: sevens("1", "2")},
		{name: "1 exits: 3 admitted", exit: assigned(1), live: []*trace.Map{assigned(2), assigned(3)}, want: sevens("2", "3")},
		{name: "2 deletes its key: 4 admitted", live: []*trace.Map{countMap(0, 0), assigned(3), assigned(4)}, want: sevens("3", "4")},
	})
	runCollect(t, &program{cfg: ProgramConfig{Name: "p", SeriesLimit: 2}, maps: map[string]*mapState{}}, []collectStep{
		{name: "A", live: []*trace.Map{countMap(0, 2)}, want: ones("0", "1")},
		{name: "A exits, B unread", exit: countMap(0, 2), incomplete: true, live: []*trace.Map{countMap(2, 4)}, refused: 2, want: ones("0", "1")},
		{name: "B read", live: []*trace.Map{countMap(2, 4)}, evicted: 2, want: ones("2", "3")},
	})
}

// collectStep is one step of runCollect: a process's final map folded
// (exit), then a collection of the live maps, and what it must give.
type collectStep struct {
	name            string
	exit            *trace.Map
	live            []*trace.Map
	incomplete      bool
	refused         int
	atExit, evicted uint64
	want            map[string]uint64
}

// runCollect runs steps on p, whose maps are all one map's.
func runCollect(t *testing.T, p *program, steps []collectStep) {
	t.Helper()
	for _, st := range steps {
		if st.exit != nil {
			p.fold(st.exit)
		}
		var live [][]trace.Map
		for _, m := range st.live {
			live = append(live, []trace.Map{*m})
		}
		merged, refused := p.collect(live, !st.incomplete)
		if len(p.maps) != 1 {
			t.Fatalf("%s: %d map states, want 1", st.name, len(p.maps))
		}
		for _, s := range p.maps {
			if len(refused[s]) != st.refused || s.droppedAtExit != st.atExit || s.evicted != st.evicted {
				t.Errorf("%s: have %d refused, %d dropped at exit, %d evicted; want %d, %d, %d",
					st.name, len(refused[s]), s.droppedAtExit, s.evicted, st.refused, st.atExit, st.evicted)
			}
			have := map[string]uint64{}
			for k, e := range merged[s] {
				have[k] = e.value
				if _, ok := refused[s][k]; ok {
					t.Errorf("%s: key %q both refused and exported", st.name, k)
				}
			}
			if !maps.Equal(have, st.want) {
				t.Errorf("%s: exported %v, want %v", st.name, have, st.want)
			}
			if len(s.admitted) > s.limit {
				t.Errorf("%s: %d keys admitted, limit %d", st.name, len(s.admitted), s.limit)
			}
		}
	}
}

// countMap is a count() map @k with a key for each integer in [lo, hi),
// each counted once.
func countMap(lo, hi int64) *trace.Map {
	m := &trace.Map{Name: "@k", Kind: trace.MapCount, KeyStrings: []bool{false}}
	for k := lo; k < hi; k++ {
		m.Entries = append(m.Entries, trace.MapEntry{Key: []trace.MapKey{{Int: k}}, Value: 1})
	}
	return m
}

// ones is keys, each with the value 1.
func ones(keys ...string) map[string]uint64 {
	m := map[string]uint64{}
	for _, k := range keys {
		m[k] = 1
	}
	return m
}

func TestFileWideSource(t *testing.T) {
	tests := []struct {
		name, src string
		want      bool
	}{
		{"usdt", "usdt::p:n { @ = count(); }", true},
		{"uprobe and uretprobe", "uprobe::f { @a[comm] = count(); } uretprobe::f { @b = hist(retval); }", true},
		{"explicit path", "usdt:/usr/lib/libx.so:p:n { @ = count(); }", false},
		{"BEGIN", "BEGIN { @s = 1; } usdt::p:n { @ = count(); }", false},
		{"interval", "usdt::p:n { @ = count(); } interval:s:1 { print(@); }", false},
		{"profile", "profile:hz:99 { @ = count(); }", false},
		{"key pid", "usdt::p:n { @[pid, arg0] = count(); }", false},
		{"key tid inside", "usdt::p:n { @[tid % 4] = count(); }", false},
		{"pid as value", "usdt::p:n { @ = sum(pid); }", true},
		{"ustack", "usdt::p:n { @[ustack] = count(); }", false},
		{"usym", "uprobe::f { @[usym(reg(\"ip\"))] = count(); }", false},
		{"not parsed", "usdt::p:n { @ = count( }", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A false must be the case's reason, not a parse error.
			if _, err := btlang.Parse("source", []byte(tc.src)); (err != nil) != (tc.name == "not parsed") {
				t.Fatalf("parse: %v", err)
			}
			if have := fileWideSource(tc.src); have != tc.want {
				t.Errorf("have %v, want %v", have, tc.want)
			}
		})
	}
}

// TestPruneCovered: the covered processes that exited are left, the live
// stay, and the next check waits for twice as many.
func TestPruneCovered(t *testing.T) {
	self := os.Getpid()
	p := &program{covered: map[int]bool{self: true, 1 << 30: true, 1<<30 + 1: true}, coveredPrune: 3}
	a := &Agent{}
	a.pruneCovered(p)
	if !maps.Equal(p.covered, map[int]bool{self: true}) {
		t.Errorf("have covered %v, want only %d", p.covered, self)
	}
	if a.stats.detaches != 2 {
		t.Errorf("have %d detaches, want 2", a.stats.detaches)
	}
	if p.coveredPrune != minCoveredPrune {
		t.Errorf("have next check at %d, want %d", p.coveredPrune, minCoveredPrune)
	}
}

// TestLabelEscaped: string keys that are not valid UTF-8 (a cut through
// a character, raw bytes) are exported escaped as escape.Name writes
// them, not dropped.
func TestLabelEscaped(t *testing.T) {
	tests := []struct{ name, key, want string }{
		{"ascii", "GET", "GET"},
		{"utf-8", "café", "café"},
		{"cut character", "caf\xc3", `caf\xc3`},
		{"raw bytes", "\xff\xfe", `\xff\xfe`},
		{"backslash", `a\b`, `a\\b`},
		{"control", "a\nb", `a\x0ab`},
	}
	m := &trace.Map{Name: "@k", Kind: trace.MapCount, KeyStrings: []bool{true}}
	for _, tt := range tests {
		m.Entries = append(m.Entries, trace.MapEntry{Key: []trace.MapKey{{Str: tt.key}}, Value: 1})
	}
	p := &program{cfg: ProgramConfig{Name: "p"}, maps: map[string]*mapState{}}
	p.fold(m)
	reg := prometheus.NewRegistry()
	reg.MustRegister(&Agent{progs: []*program{p}})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	have := map[string]bool{}
	dropped := -1.0
	for _, mf := range mfs {
		for _, mm := range mf.GetMetric() {
			switch mf.GetName() {
			case "usdtkit_p_k_total":
				have[mm.GetLabel()[0].GetValue()] = true
			case "usdtkit_agent_dropped_series":
				dropped = mm.GetGauge().GetValue()
			}
		}
	}
	for _, tt := range tests {
		if !have[tt.want] {
			t.Errorf("%s: key %q not exported as %q; have %q", tt.name, tt.key, tt.want, slices.Collect(maps.Keys(have)))
		}
	}
	if len(have) != len(tests) || dropped != 0 {
		t.Errorf("have %d series and %v dropped, want %d and 0", len(have), dropped, len(tests))
	}
}
