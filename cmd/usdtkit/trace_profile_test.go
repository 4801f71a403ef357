package main

import (
	"debug/elf"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/flame"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// spinWork is how many iterations spin.c's hot spins (half spins half as
// many): some hundreds of milliseconds of CPU, hundreds of samples at
// 997 Hz.
const spinWork = "400000000"

// profileStack is one entry of a map keyed by ustack alone: its frames'
// functions, innermost first, and its count.
type profileStack struct {
	funcs []string
	count int
}

var stackEntryRE = regexp.MustCompile(`(?ms)^@\[\n(.*?)\]: (\d+)$`)

// parseStackMap reads the entries of the map keyed by ustack alone that
// usdtkit or bpftrace printed; fn names a frame line's function.
func parseStackMap(t *testing.T, out string, fn func(frame string) string) []profileStack {
	t.Helper()
	var stacks []profileStack
	for _, m := range stackEntryRE.FindAllStringSubmatch(out, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatalf("count %q: %v", m[2], err)
		}
		var funcs []string
		for l := range strings.Lines(m[1]) {
			if f := strings.TrimSpace(l); f != "" {
				funcs = append(funcs, fn(f))
			}
		}
		stacks = append(stacks, profileStack{funcs, n})
	}
	return stacks
}

// symName returns a usdtkit frame's function: "hot+17" is hot.
func symName(frame string) string {
	if i := strings.LastIndexByte(frame, '+'); i > 0 && !strings.HasPrefix(frame, "[") {
		return frame[:i]
	}
	return frame
}

// elfNamer names bpftrace's bare addresses (the target exited before
// bpftrace printed) by the functions of a non-PIE executable, whose
// addresses are its symbols' own; other addresses stay as printed.
func elfNamer(t *testing.T, path string) func(string) string {
	t.Helper()
	syms := testutil.ELFSymbols(t, path)
	return func(frame string) string {
		a, err := strconv.ParseUint(strings.TrimPrefix(frame, "0x"), 16, 64)
		if err != nil {
			return frame
		}
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && a >= s.Value && a < s.Value+s.Size {
				return s.Name
			}
		}
		return frame
	}
}

// profileSummary is what the tests compare of a profile: the samples, by
// top function, and the samples whose stack holds the chain.
type profileSummary struct {
	total   int
	top     map[string]int
	inChain map[string]int // by top function: samples whose frames are chain[top]
}

// summarize sums stacks by top function; chains gives, per top function,
// the frames its stacks must begin with (innermost first).
func summarize(stacks []profileStack, chains map[string][]string) profileSummary {
	s := profileSummary{top: map[string]int{}, inChain: map[string]int{}}
	for _, st := range stacks {
		s.total += st.count
		if len(st.funcs) == 0 {
			continue
		}
		top := st.funcs[0]
		s.top[top] += st.count
		if c, ok := chains[top]; ok && len(st.funcs) >= len(c) && slices.Equal(st.funcs[:len(c)], c) {
			s.inChain[top] += st.count
		}
	}
	return s
}

// above returns the top functions of more than pct percent of the
// samples, sorted.
func (s profileSummary) above(pct int) []string {
	var names []string
	for name, n := range s.top {
		if n*100 > s.total*pct {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// TestProfileAgainstBpftrace profiles spin.c's CPU-bound run with
// `usdtkit trace -c` and with bpftrace (the same program, /pid == cpid/
// added): both see stacks hot → outer → main and half → outer → main,
// hot with about twice half's samples (it does twice the work, the same
// loop), and the same top functions above 5% of the samples.
func TestProfileAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	bin := testutil.BuildSpin(t)
	cmdline := bin + " spin " + spinWork
	const prog = "profile:hz:997 { @[ustack] = count(); }"
	ours := runProgramCLI(t, "trace", "-c", cmdline, "-e", prog)
	theirs := runBpftrace(t, bpftrace, "-c", cmdline, "-e", strings.Replace(prog, "{", "/pid == cpid/ {", 1))
	chains := map[string][]string{"hot": {"hot", "outer", "main"}, "half": {"half", "outer", "main"}}
	for _, tt := range []struct {
		who string
		s   profileSummary
	}{
		{"usdtkit", summarize(parseStackMap(t, ours, symName), chains)},
		{"bpftrace", summarize(parseStackMap(t, theirs, elfNamer(t, bin)), chains)},
	} {
		s := tt.s
		hot, half := s.top["hot"], s.top["half"]
		t.Logf("%s: %d samples, hot %d (%d as hot, outer, main), half %d (%d as half, outer, main)", tt.who, s.total, hot, s.inChain["hot"], half, s.inChain["half"])
		if s.total < 100 {
			t.Errorf("%s: %d samples, want at least 100 (the work is hundreds of ms of CPU at 997 Hz)", tt.who, s.total)
			continue
		}
		// Frame pointers throughout: every sample in hot or half has
		// the whole chain.
		if s.inChain["hot"] != hot || s.inChain["half"] != half {
			t.Errorf("%s: hot %d/%d, half %d/%d samples with their chain to main", tt.who, s.inChain["hot"], hot, s.inChain["half"], half)
		}
		// hot does two thirds of the work of the two.
		if share := float64(hot) / float64(hot+half); share < 0.55 || share > 0.78 {
			t.Errorf("%s: hot has %.2f of hot's and half's samples (%d, %d), want about 2/3", tt.who, share, hot, half)
		}
		if have := s.above(5); !slices.Equal(have, []string{"half", "hot"}) {
			t.Errorf("%s: top functions above 5%% of samples %q, want half and hot", tt.who, have)
		}
	}
}

// TestProfileFolded: -o folded writes a profile's stacks as folded lines,
// main;outer;hot among them.
func TestProfileFolded(t *testing.T) {
	bin := testutil.BuildSpin(t)
	out := runProgramCLI(t, "trace", "-c", bin+" spin "+spinWork, "-o", "folded", "-e", "profile:hz:997 { @[ustack] = count(); }")
	samples, err := flame.ParseFolded(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	counts := map[string]uint64{}
	for _, s := range samples {
		var names []string
		for i := len(s.Frames) - 1; i >= 0; i-- {
			names = append(names, s.Frames[i].Symbol)
		}
		counts[strings.Join(outerFrames(names), ";")] += uint64(s.Count)
	}
	hot, half := counts["main;outer;hot"], counts["main;outer;half"]
	if hot == 0 || half == 0 || hot < half {
		t.Errorf("folded: main;outer;hot %d, main;outer;half %d; want both, hot the larger:\n%s", hot, half, out)
	}
	if !regexp.MustCompile(`(?m);main;outer;hot \d+$`).MatchString(out) {
		t.Errorf("no folded line ending main;outer;hot N:\n%s", out)
	}
}

// TestProfileSyscalls profiles spin.c's run of pread calls, mostly in the
// kernel: a sample there still has the task's user stack, where the
// context's registers are the kernel's. With frame pointers it is the C
// library's pread, then outer_sys → main (pread keeps no frame pointer,
// so reader is not seen, by bpftrace either); with --unwind cfi, reader
// → outer_sys → main, the first samples (while the dynamic loader maps
// the C library) included.
func TestProfileSyscalls(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	bin := testutil.BuildSpin(t)
	cmdline := bin + " sys 400000"
	const prog = "profile:hz:997 { @[ustack] = count(); }"
	ours := runProgramCLI(t, "trace", "-c", cmdline, "-e", prog)
	cfi := runProgramCLI(t, "trace", "--unwind", "cfi", "-c", cmdline, "-e", prog)
	theirs := runBpftrace(t, bpftrace, "-c", cmdline, "-e", strings.Replace(prog, "{", "/pid == cpid/ {", 1))
	for _, tt := range []struct {
		who    string
		stacks []profileStack
		chain  []string
	}{
		{"usdtkit", parseStackMap(t, ours, symName), []string{"outer_sys", "main"}},
		{"usdtkit --unwind cfi", parseStackMap(t, cfi, symName), []string{"reader", "outer_sys", "main"}},
		{"bpftrace", parseStackMap(t, theirs, elfNamer(t, bin)), []string{"outer_sys", "main"}},
	} {
		total, in := 0, 0
		for _, st := range tt.stacks {
			total += st.count
			i := slices.Index(st.funcs, tt.chain[0])
			if i > 0 && i+len(tt.chain) <= len(st.funcs) && slices.Equal(st.funcs[i:i+len(tt.chain)], tt.chain) {
				in += st.count
			}
		}
		t.Logf("%s: %d samples, %d under %v", tt.who, total, in, tt.chain)
		if total < 20 || in*10 < total*8 {
			t.Errorf("%s: %d of %d samples have a frame under %v, want at least 20 samples and 80%%", tt.who, in, total, tt.chain)
		}
	}
}

// TestProfileOnlyCommand: with -c, samples of other processes are not
// counted (bpftrace counts every process unless told /pid == cpid/),
// even while another process keeps a CPU busy.
func TestProfileOnlyCommand(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildSpin(t)
	// Another process spinning meanwhile (until the test ends).
	other := testutil.StartSpin(t, bin, "100000000000")
	out := runProgramCLI(t, "trace", "-c", bin+" spin "+spinWork, "-e", "profile:hz:997 { @[pid, tid, comm, probe] = count(); }")
	entries := regexp.MustCompile(`(?m)^@\[(\d+), (\d+), (.*), (.*)\]: (\d+)$`).FindAllStringSubmatch(out, -1)
	if len(entries) != 1 || entries[0][1] == strconv.Itoa(other.Process.Pid) || entries[0][2] != entries[0][1] ||
		entries[0][3] != "spin" || entries[0][4] != "profile:hz:997" {
		t.Fatalf("want one entry, the command's: its pid twice, spin, profile:hz:997 (the other spinning process is %d):\n%s", other.Process.Pid, out)
	}
}
