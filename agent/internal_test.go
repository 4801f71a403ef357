package agent

import (
	"encoding/binary"
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

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
// admitted, however often they are read, and droppedAtExit counts each
// exited process's refused keys once.
func TestDroppedSeries(t *testing.T) {
	keys := func(lo, hi int64) *trace.Map {
		m := &trace.Map{Name: "@k", Kind: trace.MapCount, KeyStrings: []bool{false}}
		for k := lo; k < hi; k++ {
			m.Entries = append(m.Entries, trace.MapEntry{Key: []trace.MapKey{{Int: k}}, Value: 1})
		}
		return m
	}
	a, b, c := keys(0, 10), keys(5, 20), keys(100, 102)
	type step struct {
		name    string
		exit    *trace.Map   // folded first, when not nil
		live    []*trace.Map // then collected
		refused int
		atExit  uint64
	}
	steps := []step{
		{name: "A: 3 of 10 admitted", live: []*trace.Map{a}, refused: 7},
		{name: "A read again", live: []*trace.Map{a}, refused: 7},
		{name: "A and B: 17 refused", live: []*trace.Map{a, b}, refused: 17},
		{name: "A and B read again", live: []*trace.Map{a, b}, refused: 17},
		{name: "A and B once more", live: []*trace.Map{a, b}, refused: 17},
		{name: "A exits", exit: a, live: []*trace.Map{b}, refused: 15, atExit: 7},
		{name: "B read again", live: []*trace.Map{b}, refused: 15, atExit: 7},
		{name: "B exits", exit: b, refused: 0, atExit: 22},
		{name: "C: new keys, no room", live: []*trace.Map{c}, refused: 2, atExit: 22},
		{name: "C gone", refused: 0, atExit: 22},
	}
	p := &program{cfg: ProgramConfig{Name: "p", SeriesLimit: 3}, maps: map[string]*mapState{}}
	s := p.state(a)
	for _, st := range steps {
		if st.exit != nil {
			p.fold(st.exit)
		}
		mm := map[string]*entry{}
		for k, e := range s.base {
			c := *e
			mm[k] = &c
		}
		refused := map[string]struct{}{}
		for _, m := range st.live {
			s.add(mm, refused, m)
		}
		if len(refused) != st.refused || s.droppedAtExit != st.atExit {
			t.Errorf("%s: have %d refused, %d dropped at exit; want %d, %d",
				st.name, len(refused), s.droppedAtExit, st.refused, st.atExit)
		}
		for k := range refused {
			if _, ok := mm[k]; ok || s.admitted[k] {
				t.Errorf("%s: key %q both refused and exported", st.name, k)
			}
		}
		// A's first keys were admitted at the first collection and are
		// the only ones exported throughout: read live while A runs,
		// then folded.
		want := map[string]uint64{"0": 1, "1": 1, "2": 1}
		have := map[string]uint64{}
		for k, e := range mm {
			have[k] = e.value
		}
		if !maps.Equal(have, want) {
			t.Errorf("%s: exported %v, want %v", st.name, have, want)
		}
	}
}
