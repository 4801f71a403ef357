package agent

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/trace"
)

// mapState is what the agent keeps of one map of one program across
// processes: which keys it exports (at most limit) and the values folded
// in from the processes that exited.
type mapState struct {
	kind       trace.MapKind
	signed     bool
	keyStrings []bool
	lhist      trace.LinearRange
	limit      int
	skip       bool
	// native: hist maps are also exported as native histograms, created
	// at created (their creation timestamp).
	native    bool
	created   time.Time
	desc      *prometheus.Desc
	valueType prometheus.ValueType
	// admitted are the keys exported, each with the program's
	// generation (program.gen) at which a live process last held it or
	// an exiting one left it; base their folded values (only for kinds
	// whose values outlive a process: not int and string).
	admitted map[string]uint64
	base     map[string]*entry
	// cand are the keys evictOne may evict, oldest first, while candOK.
	cand   []string
	candOK bool
	// evicted counts the folded values dropped by evictOne.
	evicted uint64
	// droppedAtExit counts the keys refused by the limit in the final
	// maps of exited processes, once per process and key: values
	// discarded for good. The keys refused in live maps are counted
	// afresh at each collection and not kept.
	droppedAtExit uint64
}

// entry is one key's merged value.
type entry struct {
	key          []string
	value        uint64
	set          bool
	count, total int64
	buckets      []uint64
}

// state returns the mapState of m, made on first sight.
func (p *program) state(m *trace.Map) *mapState {
	s := p.maps[m.Name]
	if s != nil && s.kind == m.Kind && len(s.keyStrings) == len(m.KeyStrings) {
		return s
	}
	mc := p.cfg.Maps[m.Name]
	limit := mc.SeriesLimit
	if limit == 0 {
		limit = p.cfg.SeriesLimit
	}
	if limit == 0 {
		limit = DefaultSeriesLimit
	}
	s = &mapState{kind: m.Kind, signed: m.Signed, keyStrings: m.KeyStrings, lhist: m.Lhist,
		limit: limit, skip: mc.Skip || m.Kind == trace.MapString,
		native: m.Kind == trace.MapHist && (mc.NativeHistograms || p.cfg.NativeHistograms), created: time.Now(),
		admitted: map[string]uint64{}, base: map[string]*entry{}}
	s.valueType = prometheus.GaugeValue
	if m.Kind == trace.MapCount || m.Kind == trace.MapSum && !m.Signed {
		s.valueType = prometheus.CounterValue
	}
	name := mc.Metric
	if name == "" {
		n := sanitize(strings.TrimPrefix(m.Name, "@"))
		if n == "" {
			n = "map"
		}
		name = "usdtkit_" + p.cfg.Name + "_" + n
		if s.valueType == prometheus.CounterValue {
			name += "_total"
		}
	}
	labels := make([]string, len(m.KeyStrings))
	for i := range labels {
		if i < len(mc.Labels) {
			labels[i] = mc.Labels[i]
		} else {
			labels[i] = "key" + strconv.Itoa(i)
		}
	}
	help := fmt.Sprintf("%s of program %s (%s)", m.Name, p.cfg.Name, m.Kind)
	s.desc = prometheus.NewDesc(name, help, labels, prometheus.Labels(p.cfg.ConstLabels))
	p.maps[m.Name] = s
	return s
}

// sanitize makes s a metric name part.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0) {
			b[i] = '_'
		}
	}
	return string(b)
}

// keyOf returns an entry's key as label values and as one string.
func (s *mapState) keyOf(e *trace.MapEntry) ([]string, string) {
	vals := make([]string, len(s.keyStrings))
	for i := range vals {
		if i >= len(e.Key) {
			continue
		}
		if s.keyStrings[i] || e.Key[i].Str != "" {
			// Prometheus drops a series whose label is not UTF-8,
			// and a traced process chooses these bytes: escape.Name
			// keeps every key, as usdtkit list prints names.
			vals[i] = escape.Name(e.Key[i].Str)
		} else {
			vals[i] = strconv.FormatInt(e.Key[i].Int, 10)
		}
	}
	return vals, strings.Join(vals, "\x00")
}

// admit reports whether key k is exported at generation gen, admitting
// it if the limit allows or, with evict, if evictOne makes room; an
// admitted key is marked with gen. A refused key is not remembered.
func (s *mapState) admit(k string, gen uint64, evict bool, mm map[string]*entry) bool {
	if _, ok := s.admitted[k]; !ok && len(s.admitted) >= s.limit && !(evict && s.evictOne(gen, mm)) {
		return false
	}
	s.admitted[k] = gen
	return true
}

// evictOne makes room for a key at generation gen: it drops the
// admitted key marked longest ago, before gen (no live process held it
// at gen, and no process left it since), with its folded value, also
// from mm; it reports whether there was one.
func (s *mapState) evictOne(gen uint64, mm map[string]*entry) bool {
	if !s.candOK {
		s.cand = s.cand[:0]
		for k, g := range s.admitted {
			if g < gen {
				s.cand = append(s.cand, k)
			}
		}
		slices.SortFunc(s.cand, func(a, b string) int {
			return cmp.Or(cmp.Compare(s.admitted[a], s.admitted[b]), strings.Compare(a, b))
		})
		s.candOK = true
	}
	for len(s.cand) > 0 {
		k := s.cand[0]
		s.cand = s.cand[1:]
		if g, ok := s.admitted[k]; !ok || g >= gen {
			continue
		}
		delete(s.admitted, k)
		if _, ok := s.base[k]; ok {
			delete(s.base, k)
			s.evicted++
		}
		delete(mm, k)
		return true
	}
	return false
}

// mark marks the admitted keys of m with generation gen, and returns
// m's keys.
func (s *mapState) mark(m *trace.Map, gen uint64) []string {
	keys := make([]string, len(m.Entries))
	for i := range m.Entries {
		_, keys[i] = s.keyOf(&m.Entries[i])
		if _, ok := s.admitted[keys[i]]; ok {
			s.admitted[keys[i]] = gen
		}
	}
	s.candOK = false
	return keys
}

// add merges the entries of m, one process's map whose keys mark
// returned, into mm by key, for the keys admit admits at gen, and puts
// the others into refused (a set, so a key refused in several maps is
// there once).
func (s *mapState) add(mm map[string]*entry, refused map[string]struct{}, m *trace.Map, keys []string, gen uint64, evict bool) {
	for i := range m.Entries {
		e := &m.Entries[i]
		k := keys[i]
		if !s.admit(k, gen, evict, mm) {
			refused[k] = struct{}{}
			continue
		}
		d := mm[k]
		if d == nil {
			vals, _ := s.keyOf(e)
			d = &entry{key: vals}
			mm[k] = d
		}
		s.merge(d, e)
	}
}

// merge adds e's value into dst, as the map's kind combines values.
func (s *mapState) merge(dst *entry, e *trace.MapEntry) {
	switch s.kind {
	case trace.MapInt, trace.MapCount, trace.MapSum:
		dst.value += e.Value
	case trace.MapMin:
		if !dst.set || int64(e.Value) < int64(dst.value) {
			dst.value = e.Value
		}
	case trace.MapMax:
		if !dst.set || int64(e.Value) > int64(dst.value) {
			dst.value = e.Value
		}
	case trace.MapAvg, trace.MapStats:
		dst.count += e.Count
		dst.total += e.Total
	case trace.MapHist, trace.MapLhist:
		if len(dst.buckets) < len(e.Buckets) {
			dst.buckets = append(dst.buckets, make([]uint64, len(e.Buckets)-len(dst.buckets))...)
		}
		for i, n := range e.Buckets {
			dst.buckets[i] += n
		}
	}
	dst.set = true
}

// lasting reports whether a kind's values are kept after their process
// exits: counts, sums, extremes and distributions are; an assigned value
// is the process's current state and leaves with it.
func (s *mapState) lasting() bool {
	return s.kind != trace.MapInt && s.kind != trace.MapString
}

// fold adds the final values of an exited process's map into p's, and
// counts in droppedAtExit the keys the limit refuses: their values are
// gone with the process. A new key may evict (evictOne) a key that no
// live process held at the last collection, if that collection read
// every live process's maps.
func (p *program) fold(m *trace.Map) {
	s := p.state(m)
	if s.skip || !s.lasting() {
		return
	}
	refused := map[string]struct{}{}
	s.add(s.base, refused, m, s.mark(m, p.gen), p.gen, p.complete)
	s.droppedAtExit += uint64(len(refused))
}

// collect merges, at a collection, the maps of p's live processes (one
// slice per process) with the folded values, by map: the values of the
// keys exported, and the distinct keys refused by the series limit. It
// starts a generation: every admitted key a live process holds is marked
// with it. Then, if complete (every live process's maps were read), the
// admitted keys no live process holds and that have no folded value
// (deleted by the program, or an assigned value of a process gone) are
// dropped, and a new key the limit refuses takes the place of the key
// longest unmarked if it has one (evictOne): keys held by live processes
// are kept first, then the most recently held.
func (p *program) collect(live [][]trace.Map, complete bool) (map[*mapState]map[string]*entry, map[*mapState]map[string]struct{}) {
	p.gen++
	type read struct {
		s    *mapState
		m    *trace.Map
		keys []string
	}
	var reads []read
	for _, maps := range live {
		for i := range maps {
			m := &maps[i]
			if s := p.state(m); !s.skip {
				reads = append(reads, read{s, m, s.mark(m, p.gen)})
			}
		}
	}
	merged := map[*mapState]map[string]*entry{}
	refused := map[*mapState]map[string]struct{}{}
	for _, s := range p.maps {
		if complete {
			for k, g := range s.admitted {
				if _, ok := s.base[k]; !ok && g < p.gen {
					delete(s.admitted, k)
				}
			}
			s.candOK = false
		}
		mm := make(map[string]*entry, len(s.base))
		for k, e := range s.base {
			c := *e
			c.buckets = append([]uint64(nil), e.buckets...)
			mm[k] = &c
		}
		merged[s] = mm
		refused[s] = map[string]struct{}{}
	}
	for _, r := range reads {
		// A state replaced by another kind of map of the same name
		// (see state) is no longer exported.
		if mm := merged[r.s]; mm != nil {
			r.s.add(mm, refused[r.s], r.m, r.keys, p.gen, complete)
		}
	}
	p.complete = complete
	return merged, refused
}

// Describe sends nothing: the agent's metrics depend on the maps of the
// programs it runs, known only once they run (an unchecked collector).
func (a *Agent) Describe(chan<- *prometheus.Desc) {}

var (
	descAttaches = prometheus.NewDesc("usdtkit_agent_attaches_total",
		"Programs started in a process (a process that maps another object is attached again), or processes a program running file-wide on their executable began to cover.", nil, nil)
	descDetaches = prometheus.NewDesc("usdtkit_agent_detaches_total",
		"Programs ended in a process (it exited, changed or the config was reloaded), or processes a file-wide program no longer covers.", nil, nil)
	descAttachErrors = prometheus.NewDesc("usdtkit_agent_attach_errors_total",
		"Processes (or files, for a program running file-wide) a program could not be started in for another reason than matching no probe.", nil, nil)
	descExitedAttaching = prometheus.NewDesc("usdtkit_agent_exited_while_attaching_total",
		"Processes that exited while the agent attached to them: their hits until then are lost.", nil, nil)
	descLate = prometheus.NewDesc("usdtkit_agent_late_attaches_total",
		"Processes a program was started in after their exec (a target other than a binary it runs on file-wide): what they fired before the attachment is not counted.",
		[]string{"program"}, nil)
	descRefused = prometheus.NewDesc("usdtkit_agent_refused_processes_total",
		"Processes a program's targets selected but it was not started in, because it ran in max_processes processes already (each counted once; it is started there when one of those ends).",
		[]string{"program"}, nil)
	descProcesses = prometheus.NewDesc("usdtkit_agent_processes",
		"Processes a program runs in now.", []string{"program"}, nil)
	descSites = prometheus.NewDesc("usdtkit_agent_attached_sites",
		"Probe sites attached now (uprobes the kernel holds for the agent; a site attached file-wide counts once).", []string{"program"}, nil)
	descProbes = prometheus.NewDesc("usdtkit_agent_probes",
		"Probes attached now, counting each probe once per process.", []string{"program"}, nil)
	descLost = prometheus.NewDesc("usdtkit_agent_lost_events_total",
		"Records (events, printf lines) the ring buffer refused because it was full.", nil, nil)
	descUpdateFails = prometheus.NewDesc("usdtkit_agent_map_update_failures_total",
		"Map updates that failed because a map was full.", nil, nil)
	descDropped = prometheus.NewDesc("usdtkit_agent_dropped_series",
		"Distinct keys the map held in the live processes at this collection that are not exported because of its series limit.",
		[]string{"program", "map"}, nil)
	descDroppedAtExit = prometheus.NewDesc("usdtkit_agent_dropped_exited_keys_total",
		"Keys of the final maps of exited processes whose values were discarded because of the map's series limit, counted once per process and key.",
		[]string{"program", "map"}, nil)
	descEvicted = prometheus.NewDesc("usdtkit_agent_evicted_series_total",
		"Keys no live process held whose folded values (of processes that exited) were discarded to make room, under the map's series limit, for a newer key.",
		[]string{"program", "map"}, nil)
	descScans = prometheus.NewDesc("usdtkit_agent_scans_total",
		"Scans of /proc.", nil, nil)
	descScanSeconds = prometheus.NewDesc("usdtkit_agent_scan_duration_seconds",
		"Duration of the last scan of /proc, attaching included.", nil, nil)
	descCollectSeconds = prometheus.NewDesc("usdtkit_agent_collect_duration_seconds",
		"Duration of the previous collection of the metrics (reading every map).", nil, nil)
)

// Collect reads every map of every program in every process, merges them
// with the values of the processes that exited, and sends one series per
// admitted key, then the agent's own metrics. usdtkit_agent_dropped_series
// is computed from the maps read here alone: it needs no memory across
// collections, and a refused key that no live process holds any more is
// no longer counted.
func (a *Agent) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	// The maps are read without a.mu, which attaching and scanning
	// need: a scrape of many keys would hold them up. Each tracer's
	// read lock keeps it open meanwhile; a tracer retired since (its
	// final values folded) is left out below, so nothing counts twice.
	a.mu.Lock()
	var reads [][]*tracerSnap
	for _, p := range a.progs {
		var rs []*tracerSnap
		for _, at := range p.live {
			if at.t != nil {
				rs = append(rs, &tracerSnap{t: at.t, read: &at.read, sites: at.sites, probes: at.probes,
					what: fmt.Sprintf("program %s, process %d", p.cfg.Name, at.pid), current: func() *trace.Tracer { return at.t }})
			}
		}
		for _, ft := range p.files {
			if ft.t != nil {
				rs = append(rs, &tracerSnap{t: ft.t, read: &ft.read, sites: ft.sites, probes: ft.probes,
					what: fmt.Sprintf("program %s, binary %s", p.cfg.Name, ft.path), current: func() *trace.Tracer { return ft.t }})
			}
		}
		reads = append(reads, rs)
	}
	progs := a.progs
	a.mu.Unlock()
	for _, rs := range reads {
		for _, r := range rs {
			r.load()
			if r.err != nil {
				a.warn(r.err)
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Equal(progs, a.progs) {
		// Reloaded meanwhile: the snapshots are of programs gone.
		reads = make([][]*tracerSnap, len(a.progs))
	}
	var lost, updates uint64
	for pi, p := range a.progs {
		sites, probes := 0, 0
		var live [][]trace.Map
		complete := true
		current := 0
		for _, r := range reads[pi] {
			if r.current() != r.t {
				continue
			}
			current++
			sites += r.sites
			probes += r.probes
			lost += r.lost
			updates += r.updates
			if r.err != nil {
				complete = false
				continue
			}
			live = append(live, r.maps)
		}
		// A tracer started since the snapshot holds keys unread.
		if countTracers(p) != current {
			complete = false
		}
		merged, refused := p.collect(live, complete)
		for name, s := range p.maps {
			if !s.skip {
				for _, e := range merged[s] {
					ch <- s.metric(e)
				}
			}
			ch <- prometheus.MustNewConstMetric(descDropped, prometheus.GaugeValue, float64(len(refused[s])), p.cfg.Name, name)
			ch <- prometheus.MustNewConstMetric(descDroppedAtExit, prometheus.CounterValue, float64(s.droppedAtExit), p.cfg.Name, name)
			ch <- prometheus.MustNewConstMetric(descEvicted, prometheus.CounterValue, float64(s.evicted), p.cfg.Name, name)
		}
		ch <- prometheus.MustNewConstMetric(descProcesses, prometheus.GaugeValue, float64(len(p.live)+len(p.covered)), p.cfg.Name)
		ch <- prometheus.MustNewConstMetric(descLate, prometheus.CounterValue, float64(p.late), p.cfg.Name)
		ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(p.refused), p.cfg.Name)
		ch <- prometheus.MustNewConstMetric(descSites, prometheus.GaugeValue, float64(sites), p.cfg.Name)
		ch <- prometheus.MustNewConstMetric(descProbes, prometheus.GaugeValue, float64(probes), p.cfg.Name)
	}
	st := a.stats
	ch <- prometheus.MustNewConstMetric(descAttaches, prometheus.CounterValue, float64(st.attaches))
	ch <- prometheus.MustNewConstMetric(descDetaches, prometheus.CounterValue, float64(st.detaches))
	ch <- prometheus.MustNewConstMetric(descAttachErrors, prometheus.CounterValue, float64(st.attachErrors))
	ch <- prometheus.MustNewConstMetric(descExitedAttaching, prometheus.CounterValue, float64(st.exitedAttaching))
	ch <- prometheus.MustNewConstMetric(descLost, prometheus.CounterValue, float64(st.lost+lost))
	ch <- prometheus.MustNewConstMetric(descUpdateFails, prometheus.CounterValue, float64(st.updateFails+updates))
	ch <- prometheus.MustNewConstMetric(descScans, prometheus.CounterValue, float64(st.scans))
	ch <- prometheus.MustNewConstMetric(descScanSeconds, prometheus.GaugeValue, st.scanSeconds)
	ch <- prometheus.MustNewConstMetric(descCollectSeconds, prometheus.GaugeValue, st.collectSeconds)
	a.stats.collectSeconds = time.Since(start).Seconds()
}

// countTracers is the number of p's open tracers.
func countTracers(p *program) int {
	n := 0
	for _, at := range p.live {
		if at.t != nil {
			n++
		}
	}
	for _, ft := range p.files {
		if ft.t != nil {
			n++
		}
	}
	return n
}

// tracerSnap is one tracer's maps, read by Collect without Agent.mu.
type tracerSnap struct {
	t             *trace.Tracer
	read          *tracerRead
	sites, probes int
	what          string
	current       func() *trace.Tracer
	maps          []trace.Map
	lost, updates uint64
	err           error
}

// load reads the maps and the lost counts of s.t, unless it was closed.
func (s *tracerSnap) load() {
	s.read.mu.Lock()
	defer s.read.mu.Unlock()
	if s.read.closed {
		// Retired meanwhile: Collect leaves it out (current).
		return
	}
	if l, u, err := s.t.Lost(); err == nil {
		s.lost, s.updates = l, u
	}
	maps, err := s.t.Maps()
	if err != nil {
		s.err = fmt.Errorf("%s: %w", s.what, err)
		return
	}
	s.maps = maps
}

// tracerRead keeps a tracer open while Collect reads it.
type tracerRead struct {
	mu     sync.Mutex
	closed bool
}

// close closes t once no Collect reads it.
func (r *tracerRead) close(t *trace.Tracer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	t.Close()
}

// metric is one key's series.
func (s *mapState) metric(e *entry) prometheus.Metric {
	var m prometheus.Metric
	var err error
	switch s.kind {
	case trace.MapAvg, trace.MapStats:
		m, err = prometheus.NewConstSummary(s.desc, uint64(e.count), float64(e.total), nil, e.key...)
	case trace.MapHist, trace.MapLhist:
		bounds, count := s.cumulative(e.buckets)
		// hist() and lhist() keep counts only: the sum of the values is
		// not known, and is exported as NaN rather than guessed.
		m, err = prometheus.NewConstHistogram(s.desc, count, math.NaN(), bounds, e.key...)
		if err == nil && s.native {
			m, err = s.withNative(m, e.buckets, count, e.key)
		}
	default:
		v := float64(e.value)
		if s.signed || s.kind == trace.MapMin || s.kind == trace.MapMax {
			v = float64(int64(e.value))
		}
		m, err = prometheus.NewConstMetric(s.desc, s.valueType, v, e.key...)
	}
	if err != nil {
		return prometheus.NewInvalidMetric(s.desc, err)
	}
	return m
}

// cumulative turns hist or lhist buckets into Prometheus' cumulative
// buckets by inclusive upper bound, up to the last non-empty bucket
// (the values are integers, so [lo, hi) is le hi-1), and the count.
func (s *mapState) cumulative(b []uint64) (map[float64]uint64, uint64) {
	last := -1
	var count uint64
	for i, n := range b {
		count += n
		if n != 0 {
			last = i
		}
	}
	out := make(map[float64]uint64, last+1)
	var cum uint64
	for i := 0; i <= last; i++ {
		cum += b[i]
		le, ok := s.upper(i)
		if !ok {
			break
		}
		out[le] = cum
	}
	return out, count
}

// upper is bucket i's inclusive upper bound; false for the last lhist
// bucket, whose bound is +Inf.
func (s *mapState) upper(i int) (float64, bool) {
	if s.kind == trace.MapHist {
		switch i {
		case 0:
			return -1, true
		case 1:
			return 0, true
		}
		return math.Ldexp(1, i-1) - 1, true
	}
	r := s.lhist
	if i >= r.Buckets()-1 {
		return 0, false
	}
	return float64(r.Min + int64(i)*r.Step - 1), true
}

// withNative adds to the classic histogram m of a hist() map the native
// histogram (schema 0) of the same buckets, as MapConfig.NativeHistograms
// documents: bucket i ≥ 2 ([2^(i-2), 2^(i-1))) is the positive native
// bucket i-1, bucket 1 (the value 0) the zero bucket, bucket 0 (negative
// values) the negative native bucket 0.
func (s *mapState) withNative(m prometheus.Metric, b []uint64, count uint64, key []string) (prometheus.Metric, error) {
	pos, neg := map[int]int64{}, map[int]int64{}
	var zero uint64
	for i, n := range b {
		switch {
		case n == 0:
		case i == 0:
			neg[0] = int64(n)
		case i == 1:
			zero = n
		default:
			pos[i-1] = int64(n)
		}
	}
	var classic, native dto.Metric
	if err := m.Write(&classic); err != nil {
		return nil, err
	}
	nm, err := prometheus.NewConstNativeHistogram(s.desc, count, math.NaN(), pos, neg, zero, 0, 0, s.created, key...)
	if err != nil {
		return nil, err
	}
	if err := nm.Write(&native); err != nil {
		return nil, err
	}
	h, nh := classic.Histogram, native.Histogram
	h.Schema, h.ZeroThreshold, h.ZeroCount = nh.Schema, nh.ZeroThreshold, nh.ZeroCount
	h.PositiveSpan, h.PositiveDelta = nh.PositiveSpan, nh.PositiveDelta
	h.NegativeSpan, h.NegativeDelta = nh.NegativeSpan, nh.NegativeDelta
	h.CreatedTimestamp = nh.CreatedTimestamp
	return &dtoMetric{desc: s.desc, label: classic.Label, hist: h}, nil
}

// dtoMetric is a histogram already written: classic and native buckets.
type dtoMetric struct {
	desc  *prometheus.Desc
	label []*dto.LabelPair
	hist  *dto.Histogram
}

func (m *dtoMetric) Desc() *prometheus.Desc { return m.desc }

func (m *dtoMetric) Write(out *dto.Metric) error {
	out.Label, out.Histogram = m.label, m.hist
	return nil
}
