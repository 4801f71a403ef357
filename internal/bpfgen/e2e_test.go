package bpfgen_test

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/usdtkit/usdtkit/internal/argfetch"
	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
)

// symbols returns a resolver over the symbol table of path.
func symbols(tb testing.TB, path string) func(string) (uint64, error) {
	tb.Helper()
	f, err := elf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]uint64{}
	for _, s := range syms {
		m[s.Name] = s.Value
	}
	return func(name string) (uint64, error) {
		if v, ok := m[name]; ok {
			return v, nil
		}
		return 0, fmt.Errorf("no symbol %s", name)
	}
}

// session is the Config of some probes of one file, with what attaching
// needs per site.
type session struct {
	cfg     bpfgen.Config
	names   []string // probe id -> name
	offsets []uint64
	refs    []uint64
	strs    map[string]uint16 // probe name -> string arguments
}

// newSession builds sites for the named probes (all when names is empty).
func newSession(tb testing.TB, path string, strs map[string]uint16, names ...string) *session {
	tb.Helper()
	probes, err := sdt.List(&sdt.ListOptions{Paths: []string{path}})
	if err != nil {
		tb.Fatal(err)
	}
	sym := symbols(tb, path)
	s := &session{cfg: bpfgen.Config{Machine: elf.EM_X86_64}, strs: strs}
	for _, p := range probes {
		if len(names) > 0 && !slices.Contains(names, p.Name) {
			continue
		}
		id := uint32(len(s.names))
		s.names = append(s.names, p.Name)
		for _, loc := range p.Locations {
			if loc.OffsetErr != nil || loc.SemaphoreErr != nil {
				tb.Fatalf("%s: %v %v", p.Name, loc.OffsetErr, loc.SemaphoreErr)
			}
			site := bpfgen.Site{Probe: id, Strings: strs[p.Name]}
			for _, a := range loc.Args {
				f, err := argfetch.Fetch(a, loc.Address, sym)
				if err != nil {
					tb.Fatalf("%s: %v", p.Name, err)
				}
				site.Args = append(site.Args, f)
			}
			s.cfg.Sites = append(s.cfg.Sites, site)
			s.offsets = append(s.offsets, loc.Offset)
			s.refs = append(s.refs, loc.SemaphoreOffset)
		}
	}
	if len(s.cfg.Sites) == 0 {
		tb.Fatalf("no probes %v in %s", names, path)
	}
	return s
}

func (s *session) probe(name string) uint32 {
	return uint32(slices.Index(s.names, name))
}

// attached is a loaded and attached session.
type attached struct {
	coll  *ebpf.Collection
	links []link.Link
}

func (a *attached) Close() error {
	var errs []error
	for _, l := range a.links {
		errs = append(errs, l.Close())
	}
	a.links = nil
	if a.coll != nil {
		a.coll.Close()
		a.coll = nil
	}
	return errors.Join(errs...)
}

// attach loads the session's program and attaches it to every site, for
// pid only: one uprobe_multi link when cfg.Multi, else one link per site.
func (s *session) attach(tb testing.TB, path string, pid int) *attached {
	tb.Helper()
	spec, err := bpfgen.Generate(&s.cfg)
	if err != nil {
		tb.Fatal(err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			tb.Fatalf("verifier: %+v", ve)
		}
		tb.Fatal(err)
	}
	a := &attached{coll: coll}
	tb.Cleanup(func() { a.Close() })
	ex, err := link.OpenExecutable(path)
	if err != nil {
		tb.Fatal(err)
	}
	prog := coll.Programs[bpfgen.ProgName]
	if s.cfg.Multi {
		cookies := make([]uint64, len(s.offsets))
		for i := range cookies {
			cookies[i] = uint64(i)
		}
		l, err := ex.UprobeMulti(nil, prog, &link.UprobeMultiOptions{
			Addresses: s.offsets, Cookies: cookies, RefCtrOffsets: s.refs, PID: uint32(pid),
		})
		if err != nil {
			tb.Fatal(err)
		}
		a.links = append(a.links, l)
		return a
	}
	for i, off := range s.offsets {
		l, err := ex.Uprobe("", prog, &link.UprobeOptions{Address: off, RefCtrOffset: s.refs[i], Cookie: uint64(i), PID: pid})
		if err != nil {
			tb.Fatal(err)
		}
		a.links = append(a.links, l)
	}
	return a
}

// drain returns every record in the ring buffer now.
func drain(tb testing.TB, cfg *bpfgen.Config, rd *ringbuf.Reader) []bpfgen.Event {
	tb.Helper()
	rd.SetDeadline(time.Now())
	var evs []bpfgen.Event
	var rec ringbuf.Record
	for {
		err := rd.ReadInto(&rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return evs
		}
		if err != nil {
			tb.Fatal(err)
		}
		var ev bpfgen.Event
		if err := cfg.DecodeEvent(rec.RawSample, &ev); err != nil {
			tb.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

// format prints an event the way tracee prints the values it passed.
func (s *session) format(ev *bpfgen.Event) string {
	name := s.names[ev.Probe]
	parts := []string{name}
	for i := range ev.NArgs {
		switch {
		case ev.StringArgs&(1<<i) != 0:
			parts = append(parts, ev.Strings[i])
		case s.signedArg(ev.Probe, i):
			parts = append(parts, strconv.FormatInt(int64(ev.Args[i]), 10))
		default:
			parts = append(parts, strconv.FormatUint(ev.Args[i], 10))
		}
	}
	return strings.Join(parts, " ")
}

func (s *session) signedArg(probe uint32, i int) bool {
	for _, site := range s.cfg.Sites {
		if site.Probe == probe && i < len(site.Args) {
			return site.Args[i].Signed
		}
	}
	return false
}

var builds = []struct {
	name  string
	flags []string
}{
	{"O0", []string{"-O0"}},
	{"O2", []string{"-O2"}},
	{"O2-nopie", []string{"-O2", "-fno-pie", "-no-pie"}},
}

var stringArgs = map[string]uint16{"str": 1 << 0}

// TestEvents traces every probe of tracee and compares each event with the
// line tracee printed for it.
func TestEvents(t *testing.T) {
	testutil.RequireBPF(t)
	for _, b := range builds {
		for _, multi := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/multi=%v", b.name, multi), func(t *testing.T) {
				path := testutil.BuildTracee(t, b.flags...)
				tr := testutil.StartTracee(t, path)
				s := newSession(t, path, stringArgs)
				s.cfg.Multi = multi
				a := s.attach(t, path, tr.PID())
				rd, err := ringbuf.NewReader(a.coll.Maps[bpfgen.MapEvents])
				if err != nil {
					t.Fatal(err)
				}
				defer rd.Close()

				want := tr.Do(t, "run 3")
				evs := drain(t, &s.cfg, rd)
				var have []string
				for i := range evs {
					ev := &evs[i]
					if ev.PID != uint32(tr.PID()) || ev.TID != uint32(tr.PID()) || ev.Comm != "tracee" {
						t.Errorf("event %d: pid %d tid %d comm %q, want %d %d tracee", i, ev.PID, ev.TID, ev.Comm, tr.PID(), tr.PID())
					}
					if ev.Faults != 0 {
						t.Errorf("event %d (%s): faults %#x", i, s.format(ev), ev.Faults)
					}
					if i > 0 && ev.Time < evs[i-1].Time {
						t.Errorf("event %d: time %d before %d", i, ev.Time, evs[i-1].Time)
					}
					have = append(have, s.format(ev))
				}
				if len(want) != 3*9 {
					t.Fatalf("tracee printed %d lines, want 27", len(want))
				}
				if !slices.Equal(have, want) {
					t.Errorf("events differ from what tracee passed\nhave:\n%s\nwant:\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
				}
				events, updates, err := bpfgen.ReadLost(a.coll.Maps[bpfgen.MapLost])
				if err != nil || events != 0 || updates != 0 {
					t.Errorf("lost: %d events, %d updates, %v", events, updates, err)
				}
			})
		}
	}
}

// TestSemaphore checks that attaching raises the semaphore of a guarded
// probe and closing lowers it again.
func TestSemaphore(t *testing.T) {
	testutil.RequireBPF(t)
	for _, multi := range []bool{true, false} {
		t.Run(fmt.Sprintf("multi=%v", multi), func(t *testing.T) {
			path := testutil.BuildTracee(t, "-O2")
			tr := testutil.StartTracee(t, path)
			if have := tr.Do(t, "sem"); !slices.Equal(have, []string{"sem disabled"}) {
				t.Fatalf("before attach: %q", have)
			}
			s := newSession(t, path, nil, "sem")
			s.cfg.Multi = multi
			a := s.attach(t, path, tr.PID())
			rd, err := ringbuf.NewReader(a.coll.Maps[bpfgen.MapEvents])
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			if have := tr.Do(t, "sem"); !slices.Equal(have, []string{"sem enabled", "sem 7"}) {
				t.Fatalf("attached: %q", have)
			}
			evs := drain(t, &s.cfg, rd)
			if len(evs) != 1 || s.format(&evs[0]) != "sem 7" {
				t.Errorf("events %+v, want one \"sem 7\"", evs)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if have := tr.Do(t, "sem"); !slices.Equal(have, []string{"sem disabled"}) {
				t.Fatalf("after close: %q", have)
			}
		})
	}
}

// TestFilter keeps the hits of "ints" whose signed char argument is > -6.
func TestFilter(t *testing.T) {
	testutil.RequireBPF(t)
	path := testutil.BuildTracee(t, "-O2")
	tr := testutil.StartTracee(t, path)
	s := newSession(t, path, nil, "ints")
	s.cfg.Multi = true
	s.cfg.Filters = []bpfgen.Filter{{Arg: 0, Op: bpfgen.OpGt, Value: -6, Signed: true}, {Arg: 7, Op: bpfgen.OpGe, Value: -16}}
	a := s.attach(t, path, tr.PID())
	rd, err := ringbuf.NewReader(a.coll.Maps[bpfgen.MapEvents])
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var want []string
	for _, l := range tr.Do(t, "run 3") {
		// c = -5-k passes only for k = 0; ul = 2^64-16+k passes all.
		if strings.HasPrefix(l, "ints -5 ") {
			want = append(want, l)
		}
	}
	var have []string
	for _, ev := range drain(t, &s.cfg, rd) {
		have = append(have, s.format(&ev))
	}
	if len(want) != 1 || !slices.Equal(have, want) {
		t.Errorf("have %q, want %q", have, want)
	}
}

// TestAggregations checks ModeCount, ModeHist and ModeLatency against what
// tracee printed.
func TestAggregations(t *testing.T) {
	testutil.RequireBPF(t)
	path := testutil.BuildTracee(t, "-O2")
	const runs = 5
	for _, multi := range []bool{true, false} {
		// By probe alone: the per-CPU array; with PID and comm: the hash.
		for _, by := range []bpfgen.CountKey{0, bpfgen.CountPID | bpfgen.CountComm} {
			t.Run(fmt.Sprintf("count/multi=%v/by=%d", multi, by), func(t *testing.T) {
				tr := testutil.StartTracee(t, path)
				s := newSession(t, path, nil)
				s.cfg.Multi, s.cfg.Mode, s.cfg.CountBy = multi, bpfgen.ModeCount, by
				a := s.attach(t, path, tr.PID())
				wantType := ebpf.PerCPUArray
				if by != 0 {
					wantType = ebpf.Hash
				}
				if typ := a.coll.Maps[bpfgen.MapCounts].Type(); typ != wantType {
					t.Errorf("counts map is a %v, want %v", typ, wantType)
				}
				want := map[string]uint64{}
				for _, l := range tr.Do(t, fmt.Sprintf("run %d", runs)) {
					want[strings.Fields(l)[0]]++
				}
				counts, err := bpfgen.ReadCounts(a.coll.Maps[bpfgen.MapCounts])
				if err != nil {
					t.Fatal(err)
				}
				wantPID, wantComm := uint32(tr.PID()), "tracee"
				if by == 0 {
					wantPID, wantComm = 0, ""
				}
				have := map[string]uint64{}
				for _, c := range counts {
					if c.PID != wantPID || c.Comm != wantComm {
						t.Errorf("entry %+v: want pid %d comm %q", c, wantPID, wantComm)
					}
					have[s.names[c.Probe]] += c.Count
				}
				if len(want) == 0 || fmt.Sprint(have) != fmt.Sprint(want) {
					t.Errorf("counts %v, want %v", have, want)
				}
			})
		}
		t.Run(fmt.Sprintf("hist/multi=%v", multi), func(t *testing.T) {
			tr := testutil.StartTracee(t, path)
			s := newSession(t, path, nil, "ints")
			s.cfg.Multi, s.cfg.Mode = multi, bpfgen.ModeHist
			for arg := range 8 {
				s.cfg.HistArg = arg
				a := s.attach(t, path, tr.PID())
				want := make([]uint64, bpfgen.HistBuckets)
				for _, l := range tr.Do(t, fmt.Sprintf("run %d", runs)) {
					if v := strings.Fields(l); v[0] == "ints" {
						signed := strings.HasPrefix(v[1+arg], "-") || arg < 4
						want[bpfgen.HistBucket(parseValue(t, v[1+arg]), signed)]++
					}
				}
				hist, err := bpfgen.ReadHist(a.coll.Maps[bpfgen.MapHist])
				if err != nil {
					t.Fatal(err)
				}
				if have := hist[s.probe("ints")]; !slices.Equal(have, want) {
					t.Errorf("arg %d: buckets %v, want %v", arg, have, want)
				}
				a.Close()
			}
		})
		t.Run(fmt.Sprintf("latency/multi=%v", multi), func(t *testing.T) {
			tr := testutil.StartTracee(t, path)
			s := newSession(t, path, nil, "ints", "consts")
			s.cfg.Multi, s.cfg.Mode = multi, bpfgen.ModeLatency
			s.cfg.LatencyStart, s.cfg.LatencyDone = s.probe("ints"), s.probe("consts")
			a := s.attach(t, path, tr.PID())
			tr.Do(t, fmt.Sprintf("run %d", runs))
			hist, err := bpfgen.ReadHist(a.coll.Maps[bpfgen.MapHist])
			if err != nil {
				t.Fatal(err)
			}
			var n uint64
			for b, c := range hist[s.probe("consts")] {
				if c != 0 && b < 2 {
					t.Errorf("bucket %d has %d: a latency is positive", b, c)
				}
				n += c
			}
			if len(hist) != 1 || n != runs {
				t.Errorf("hist %v: want %d latencies of probe consts", hist, runs)
			}
			starts := a.coll.Maps[bpfgen.MapStarts]
			var k, v uint64
			if starts.Iterate().Next(&k, &v) {
				t.Errorf("starts not empty: %d -> %d", k, v)
			}
		})
	}
}

func parseValue(tb testing.TB, s string) uint64 {
	if strings.HasPrefix(s, "-") {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return uint64(v)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}
