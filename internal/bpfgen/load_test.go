package bpfgen

import (
	"debug/elf"
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// x86 registers by name, for tests.
func x86(t testing.TB, name string, width, shift uint8) Reg {
	t.Helper()
	off, err := PtRegs(elf.EM_X86_64, name)
	if err != nil {
		t.Fatal(err)
	}
	return Reg{Off: off, Width: width, Shift: shift}
}

// sampleArgs returns fetches of every kind.
func sampleArgs(t testing.TB) []Fetch {
	return []Fetch{
		{Kind: FetchReg, Size: 4, Signed: true, Reg: x86(t, "rax", 4, 0)},
		{Kind: FetchReg, Size: 1, Reg: x86(t, "rbx", 1, 8)},
		{Kind: FetchMem, Size: 8, HasBase: true, Reg: x86(t, "rbp", 8, 0), Offset: -24},
		{Kind: FetchMem, Size: 2, Signed: true, HasBase: true, Reg: x86(t, "rsp", 8, 0), HasIndex: true, Index: x86(t, "rdx", 8, 0), Scale: 8, Offset: 16},
		{Kind: FetchMem, Size: 4, IPRel: true, Offset: 0x2000},
		{Kind: FetchConst, Size: 8, Value: -5},
		{Kind: FetchConst, Size: 8, Value: 1 << 40},
		{Kind: FetchMem, Size: 8, HasIndex: true, Index: x86(t, "rdi", 4, 0), Scale: 4, Offset: 0x601000},
		{Kind: FetchReg, Size: 0, Reg: x86(t, "rsi", 8, 0)},
	}
}

// chainArgs returns 12 arguments for the new paths: pointer chains of 1 to
// MaxDerefs hops, and pointers with lengths for byte strings (bytesSite).
func chainArgs(t testing.TB) []Fetch {
	args := sampleArgs(t)
	out := make([]Fetch, MaxArgs)
	for i := range out {
		f := args[(2+i)%5] // the FetchMem and FetchConst ones
		if f.Kind == FetchMem {
			f.Derefs = uint8(1 + i%MaxDerefs)
			for k := range int(f.Derefs) {
				f.Path[k] = int32(8 * (k + i))
			}
		}
		out[i] = f
	}
	return out
}

// bytesSite reads every even argument of chainArgs as a byte string whose
// length is the next argument.
func bytesSite(t testing.TB, probe uint32) Site {
	site := Site{Probe: probe, Args: chainArgs(t)}
	for i := 0; i < MaxArgs; i += 2 {
		site.Bytes |= 1 << i
		site.BytesLen[i] = uint8(i + 1)
	}
	return site
}

// loadSpec loads spec into the kernel and closes it; a verifier rejection
// fails the test with the verifier log.
func loadSpec(t *testing.T, spec *ebpf.CollectionSpec) {
	t.Helper()
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("verifier: %+v", ve)
		}
		t.Fatal(err)
	}
	coll.Close()
}

func TestGenerateLoads(t *testing.T) {
	testutil.RequireBPF(t)
	args := sampleArgs(t)
	sites := []Site{
		{Probe: 1, Args: args},
		{Probe: 1, Args: args[:3]},
		{Probe: 2, Args: args, Strings: 1 << 8},
		{Probe: 3, Args: args[2:5]},
		{Probe: 0xffffffff, Args: args[5:]},
	}
	filters := []Filter{{Arg: 0, Op: OpGt, Value: -3, Signed: true}, {Arg: 1, Op: OpNe, Value: 1 << 40}}
	for _, mode := range []Mode{ModeEvents, ModeCount, ModeHist, ModeLatency} {
		for _, multi := range []bool{false, true} {
			for _, variant := range []string{"plain", "strings", "filters", "chains"} {
				name := fmt.Sprintf("%v/multi=%v/%s", mode, multi, variant)
				t.Run(name, func(t *testing.T) {
					cfg := &Config{
						Machine: elf.EM_X86_64, Sites: sites, Multi: multi, Mode: mode,
						CountBy: CountPID | CountComm, HistArg: 2,
						LatencyStart: 1, LatencyDone: 0xffffffff,
					}
					if mode == ModeHist {
						cfg.HistArg = 1
					}
					switch variant {
					case "plain":
						cfg.Sites = []Site{{Probe: 1, Args: args[:2]}, {Probe: 0xffffffff, Args: args[5:7]}}
					case "filters":
						cfg.Filters = filters
					case "strings":
						cfg.StrLen = 256
					case "chains":
						// Twelve chains and six byte strings in one
						// block, strings and bytes in another, and
						// LatencyByArg: the verifier must not see the
						// paths multiply.
						mixed := bytesSite(t, 1)
						mixed.Bytes &^= 1 << 10
						mixed.Strings = 1 << 10
						cfg.Sites = []Site{bytesSite(t, 0xffffffff), mixed, {Probe: 2, Args: chainArgs(t)}}
						cfg.HistArg, cfg.LatencyByArg, cfg.LatencyArg = 3, true, 5
						cfg.Filters = filters
					}
					spec, err := Generate(cfg)
					if err != nil {
						t.Fatal(err)
					}
					loadSpec(t, spec)
				})
			}
		}
	}
}

// scaleSites returns n sites with fetch lists that differ from site to site
// (n/3 distinct blocks) and up to MaxArgs arguments each.
func scaleSites(t testing.TB, n int) []Site {
	args := sampleArgs(t)
	sites := make([]Site, n)
	for i := range sites {
		var fs []Fetch
		for j := range MaxArgs {
			f := args[(i+j)%len(args)]
			f.Offset += int64(i / 3)
			fs = append(fs, f)
		}
		sites[i] = Site{Probe: uint32(i / 7), Args: fs[:1+i%MaxArgs]}
	}
	return sites
}

func TestGenerateScale(t *testing.T) {
	testutil.RequireBPF(t)
	for _, tc := range []struct {
		name  string
		sites int
		mode  Mode
	}{
		{"events-2000", 2000, ModeEvents},
		{"events-max", MaxSites, ModeEvents},
		{"count-max", MaxSites, ModeCount},
		{"hist-2000", 2000, ModeHist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{Machine: elf.EM_X86_64, Sites: scaleSites(t, tc.sites), Multi: true, Mode: tc.mode}
			if tc.mode == ModeEvents {
				cfg.Sites[5].Strings = 1
			}
			spec, err := Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d instructions", len(spec.Programs[ProgName].Instructions))
			loadSpec(t, spec)
		})
	}
}

// TestCountSlots checks which "counts" map ModeCount gets: a per-CPU array
// with one slot per probe id when counting by probe alone and the ids are
// small, the hash otherwise; each loads.
func TestCountSlots(t *testing.T) {
	testutil.RequireBPF(t)
	args := sampleArgs(t)
	for _, tc := range []struct {
		name     string
		probes   []uint32
		by       CountKey
		wantType ebpf.MapType
		wantMax  uint32
	}{
		{"probe", []uint32{3, 0, 1}, 0, ebpf.PerCPUArray, 4},
		{"largest-slot", []uint32{maxCountSlots - 1}, 0, ebpf.PerCPUArray, maxCountSlots},
		{"large-id", []uint32{1, maxCountSlots}, 0, ebpf.Hash, DefaultMaxEntries},
		{"pid", []uint32{1}, CountPID, ebpf.Hash, DefaultMaxEntries},
		{"comm", []uint32{1}, CountComm, ebpf.Hash, DefaultMaxEntries},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sites []Site
			for _, p := range tc.probes {
				sites = append(sites, Site{Probe: p, Args: args[:2]})
			}
			spec, err := Generate(&Config{Machine: elf.EM_X86_64, Sites: sites, Multi: true, Mode: ModeCount, CountBy: tc.by})
			if err != nil {
				t.Fatal(err)
			}
			m := spec.Maps[MapCounts]
			if m.Type != tc.wantType || m.MaxEntries != tc.wantMax {
				t.Errorf("counts: %v of %d entries, want %v of %d", m.Type, m.MaxEntries, tc.wantType, tc.wantMax)
			}
			loadSpec(t, spec)
		})
	}
}
