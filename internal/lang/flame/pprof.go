package flame

import (
	"io"
	"math"
	"strconv"

	"github.com/google/pprof/profile"
)

// Profile returns samples as a pprof profile with one sample type,
// (Options.Unit, "count"), for `go tool pprof` (-top, -traces, -http).
//
// Each run of inlined frames with the frame they are inlined into makes
// one location, its lines innermost first as pprof wants; every frame
// gets a function named by Frame.Name (so frames without a symbol show
// their object and offset), with File as its file name and Line as the
// line. Frames of one object share a mapping named by the object, its
// address range the range of the addresses seen. Sample.Root becomes an
// outermost location and a sample label "root". Samples with no frames
// and no root, or a count of 0, are left out; counts above MaxInt64 are
// clamped. samples is not modified.
func Profile(samples []Sample, opts *Options) *profile.Profile {
	b := pprofBuilder{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{{Type: opts.unit(), Unit: "count"}},
		},
		locs:  map[string]*profile.Location{},
		funcs: map[string]*profile.Function{},
		maps:  map[string]*profile.Mapping{},
	}
	for i := range samples {
		s := &samples[i]
		if s.Count == 0 || len(s.Frames) == 0 && s.Root == "" {
			continue
		}
		ps := &profile.Sample{
			Value:    []int64{int64(min(s.Count, math.MaxInt64))},
			Location: make([]*profile.Location, 0, len(s.Frames)+1),
		}
		for j := 0; j < len(s.Frames); {
			k := j
			for k < len(s.Frames)-1 && s.Frames[k].Inlined {
				k++
			}
			ps.Location = append(ps.Location, b.location(s.Frames[j:k+1]))
			j = k + 1
		}
		if s.Root != "" {
			ps.Location = append(ps.Location, b.location([]Frame{{Symbol: s.Root}}))
			ps.Label = map[string][]string{"root": {s.Root}}
		}
		b.p.Sample = append(b.p.Sample, ps)
	}
	return b.p
}

// WritePprof writes Profile(samples, opts) to w, gzipped, as `go tool
// pprof` reads it. Errors are w's.
func WritePprof(w io.Writer, samples []Sample, opts *Options) error {
	return Profile(samples, opts).Write(w)
}

type pprofBuilder struct {
	p     *profile.Profile
	key   []byte
	locs  map[string]*profile.Location
	funcs map[string]*profile.Function
	maps  map[string]*profile.Mapping
}

// location returns the location of frames: inlined frames, innermost
// first, then the frame they are inlined into, all at one address.
func (b *pprofBuilder) location(frames []Frame) *profile.Location {
	last := frames[len(frames)-1]
	k := strconv.AppendUint(b.key[:0], last.Addr, 16)
	k = append(k, 0)
	k = append(k, last.Object...)
	for _, f := range frames {
		k = append(k, 0)
		k = append(k, f.Name()...)
		k = append(k, 0)
		k = append(k, f.File...)
		k = strconv.AppendInt(append(k, 0), int64(f.Line), 10)
	}
	b.key = k
	if l, ok := b.locs[string(k)]; ok {
		return l
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: last.Addr}
	for _, f := range frames {
		l.Line = append(l.Line, profile.Line{Function: b.function(f), Line: int64(f.Line)})
	}
	if last.Object != "" {
		l.Mapping = b.mapping(last)
	}
	b.locs[string(k)] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

func (b *pprofBuilder) function(f Frame) *profile.Function {
	name := f.Name()
	k := name + "\x00" + f.File
	if fn, ok := b.funcs[k]; ok {
		return fn
	}
	fn := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name, Filename: f.File}
	b.funcs[k] = fn
	b.p.Function = append(b.p.Function, fn)
	return fn
}

func (b *pprofBuilder) mapping(f Frame) *profile.Mapping {
	m, ok := b.maps[f.Object]
	if !ok {
		m = &profile.Mapping{
			ID:           uint64(len(b.p.Mapping) + 1),
			File:         f.Object,
			Start:        f.Addr,
			Limit:        f.Addr,
			Offset:       f.Offset,
			HasFunctions: true,
		}
		b.maps[f.Object] = m
		b.p.Mapping = append(b.p.Mapping, m)
	}
	if f.Addr < m.Start {
		m.Start, m.Offset = f.Addr, f.Offset
	}
	// Limit is exclusive; the top address of the address space stays out.
	if f.Addr >= m.Limit && f.Addr < math.MaxUint64 {
		m.Limit = f.Addr + 1
	}
	if f.File != "" {
		m.HasFilenames = true
	}
	if f.Line != 0 {
		m.HasLineNumbers = true
		m.HasInlineFrames = true
	}
	return m
}
