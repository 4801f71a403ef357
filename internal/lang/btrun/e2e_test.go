package btrun_test

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/bpf/usdtargs"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/btprint"
	"github.com/usdtkit/usdtkit/internal/lang/btrun"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
)

// buildTarget compiles testdata/target.c (see its comment).
func buildTarget(t *testing.T) string {
	t.Helper()
	gcc := testutil.RequireTool(t, "gcc")
	testutil.RequireFile(t, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	out := filepath.Join(t.TempDir(), "target")
	if b, err := exec.Command(gcc, "-O1", "-g", "-o", out, "testdata/target.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

// funcOffset returns the file offset of function name in the executable.
func funcOffset(t *testing.T, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name != name || elf.ST_TYPE(s.Info) != elf.STT_FUNC {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
				return s.Value - p.Vaddr + p.Off
			}
		}
	}
	t.Fatalf("no function %s in %s", name, path)
	return 0
}

// sites resolves every block's probes in the target to btgen sites: usdt
// probes from the notes (sdt), uprobes at the function's entry with the
// x86-64 argument registers, uretprobes with rax as retval.
func sites(t *testing.T, prog *btlang.Program, bin string) [][]btgen.Site {
	t.Helper()
	probes, err := sdt.List(&sdt.ListOptions{Paths: []string{bin}})
	if err != nil {
		t.Fatal(err)
	}
	reg := func(name string) argread.Fetch {
		off, err := argread.PtRegs(elf.EM_X86_64, name)
		if err != nil {
			t.Fatal(err)
		}
		return argread.Fetch{Kind: argread.FetchReg, Size: 8, Reg: argread.Reg{Off: off, Width: 8}}
	}
	var all [][]btgen.Site
	for _, b := range prog.Blocks {
		var ss []btgen.Site
		for _, p := range b.Probes {
			switch p.Kind {
			case btlang.ProbeUSDT:
				for _, pr := range probes {
					if pr.Provider != p.Provider || pr.Name != p.Name {
						continue
					}
					for _, loc := range pr.Locations {
						s := btgen.Site{Path: bin, Offset: loc.Offset, Probe: fmt.Sprintf("usdt:%s:%s:%s", bin, pr.Provider, pr.Name)}
						if loc.Semaphore != 0 {
							s.RefCtrOffset = loc.SemaphoreOffset
						}
						for _, a := range loc.Args {
							f, err := usdtargs.Fetch(a, loc.Address, nil)
							if err != nil {
								t.Fatal(err)
							}
							s.Args = append(s.Args, f)
						}
						ss = append(ss, s)
					}
				}
			case btlang.ProbeUprobe, btlang.ProbeUretprobe:
				s := btgen.Site{Path: bin, Offset: funcOffset(t, bin, p.Name), Return: p.Kind == btlang.ProbeUretprobe, Probe: p.String()}
				for _, r := range []string{"rdi", "rsi", "rdx", "rcx", "r8", "r9"} {
					s.Args = append(s.Args, reg(r))
				}
				if s.Return {
					s.Ret = reg("rax")
				}
				ss = append(ss, s)
			}
		}
		if len(ss) == 0 && b.Probes[0].Kind != btlang.ProbeBegin && b.Probes[0].Kind != btlang.ProbeEnd && b.Probes[0].Kind != btlang.ProbeInterval {
			t.Fatalf("no sites for block at %s", b.At)
		}
		all = append(all, ss)
	}
	return all
}

// oneLiners are run together, as one program, under bpftrace and btrun
// on the same run of the target; BIN is the target's path.
var oneLiners = []string{
	// count by an integer key
	`usdt:BIN:demo:req { @by_mod[arg0 % 10] = count(); }`,
	// count by a string key
	`usdt:BIN:demo:req { @by_name[str(arg1)] = count(); }`,
	// count by comm
	`usdt:BIN:demo:req { @by_comm[comm] = count(); }`,
	// hist and lhist
	`usdt:BIN:demo:req { @h = hist(arg0); @l = lhist(arg0, 0, 100, 10); }`,
	// sum avg min max stats
	`usdt:BIN:demo:req { @s = sum(arg0); @a = avg(arg0); @mi = min(arg0); @ma = max(arg0); @st = stats(arg0); }`,
	// a tuple key
	`usdt:BIN:demo:req { @pair[str(arg1), arg0 % 3] = count(); }`,
	// a string predicate
	`usdt:BIN:demo:req /str(arg1) == "gamma"/ { @gamma = count(); @gsum = sum(arg0); }`,
	// printf
	`usdt:BIN:demo:req /arg0 < 6/ { printf("req %d %s %x|%5d|%-6s|\n", arg0, str(arg1), arg0 * 3, arg0, str(arg1, 3)); }`,
	// str() of a variable length, a string ternary
	`usdt:BIN:demo:req /arg0 < 4/ { printf("v[%s] t[%s]\n", str(arg1, arg0 + 1), arg0 > 1 ? "big" : "small"); }`,
	// an @start[tid] = nsecs latency pair (times are not compared)
	`uprobe:BIN:work { @start[tid] = nsecs; }`,
	`uretprobe:BIN:work /@start[tid]/ { @pairs = count(); @later = sum(nsecs >= @start[tid]); delete(@start[tid]); }`,
	// uretprobe retval
	`uretprobe:BIN:work { @ret = sum(retval); @rh = lhist(retval, 0, 300, 50); @rmax = max(retval); }`,
	// uprobe arguments, a string from a uprobe
	`uprobe:BIN:work /arg0 % 2 == 0/ { @even[str(arg1)] = count(); }`,
	// if/else, ternary, variables, map reads
	`usdt:BIN:demo:req { if (arg0 > 50) { @big = count(); } else { @small = count(); } @tern[arg0 > 90 ? 1 : 0] = count(); $x = arg0 * 2; @vars = sum($x); @seen[arg0 % 4] += 1; @dbl[arg0 % 4] = @seen[arg0 % 4] * 2; }`,
	// negative values, signed and unsigned
	`usdt:BIN:demo:req { @v = hist(arg2); @vmin = min(arg2); @vmax = max(arg2); @neg[arg2 < 0] = count(); }`,
	// a probe guarded by its semaphore
	`usdt:BIN:demo:sem { @sem = count(); @semsum = sum(arg0); }`,
	// scalar assignment of an int and a string
	`usdt:BIN:demo:done { @final = arg0; } usdt:BIN:demo:req /arg0 == 42/ { @name42 = str(arg1); }`,
}

// jsonOneLiners are run with -f json.
var jsonOneLiners = []string{
	`usdt:BIN:demo:req { @h = hist(arg0); @l = lhist(arg0, 0, 100, 25); @st = stats(arg0); @a = avg(arg0); @s = sum(arg0); }`,
	`usdt:BIN:demo:req { @by[arg0 % 7] = sum(arg0); @name[arg0 % 4, str(arg1)] = max(arg0); }`,
	`usdt:BIN:demo:req /arg0 < 3/ { printf("req %d \"%s\"\t%x\n", arg0, str(arg1), arg0); }`,
	`usdt:BIN:demo:done { @final = arg0; @str = "done"; }`,
}

// splitOutput returns the printf lines and the maps printed at exit.
func splitOutput(out string) (lines []string, maps string) {
	i := strings.Index(out, "\n\n\n")
	j := 3
	if strings.HasPrefix(out, "\n\n") {
		i, j = 0, 2
	}
	if i < 0 {
		return strings.Split(out, "\n"), ""
	}
	head := out[:i]
	if i > 0 {
		head += "\n"
	}
	for l := range strings.Lines(head) {
		lines = append(lines, strings.TrimSuffix(l, "\n"))
	}
	slices.Sort(lines)
	return lines, out[i+j:]
}

// sortTies sorts runs of entries of one map with equal values: bpftrace
// prints them in the kernel's hash order, which varies from run to run
// (see btprint's doc).
func sortTies(maps string) string {
	lines := strings.Split(maps, "\n")
	group := func(l string) string {
		name, _, ok := strings.Cut(l, "[")
		i := strings.LastIndex(l, "]: ")
		if !ok || i < 0 || !strings.HasPrefix(l, "@") {
			return ""
		}
		return name + " " + l[i:]
	}
	for i := 0; i < len(lines); {
		g := group(lines[i])
		j := i + 1
		for g != "" && j < len(lines) && group(lines[j]) == g {
			j++
		}
		slices.Sort(lines[i:j])
		i = j
	}
	return strings.Join(lines, "\n")
}

// exitOneLiners use print, clear, zero and exit at demo:done, after every
// demo:req fired, so that what they print does not depend on when the
// tracer reads its records.
var exitOneLiners = []string{
	`usdt:BIN:demo:req { @p[arg0 % 4] = count(); @c[str(arg1)] = sum(arg0); @z[arg0 % 2] = max(arg0); @keep = count(); @u[arg0 % 5] = sum(arg0); }`,
	`usdt:BIN:demo:done { printf("done %d\n", arg0); print(@p); clear(@c); zero(@z); print(@u, 2, 10); print(@u, 3); time("time %%\n"); printf("bye\n"); exit(); }`,
	`usdt:BIN:demo:done { @after = count(); }`,
}

func TestAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	testutil.RequireTool(t, "bpftrace")
	testutil.RequireTracefs(t)
	bin := buildTarget(t)
	t.Run("aggregations", func(t *testing.T) {
		theirs, ours := runBoth(t, bin, oneLiners)
		wantLines, wantMaps := splitOutput(theirs)
		haveLines, haveMaps := splitOutput(ours)
		wantMaps, haveMaps = sortTies(wantMaps), sortTies(haveMaps)
		if !slices.Equal(haveLines, wantLines) {
			t.Errorf("printf lines differ:\nhave %q\nwant %q", haveLines, wantLines)
		}
		if haveMaps != wantMaps {
			t.Errorf("maps differ:\n--- have\n%s\n--- want (bpftrace)\n%s", haveMaps, wantMaps)
		}
		if len(wantLines) != 10 || !strings.Contains(wantMaps, "@pairs: 100") || !strings.Contains(wantMaps, "@sem: 10\n") {
			t.Errorf("bpftrace saw too little: %d printf lines, maps:\n%s", len(wantLines), wantMaps)
		}
	})
	t.Run("json", func(t *testing.T) {
		// One-liners whose maps have no equal values: JSON puts a map's
		// entries on one line, where ties could not be sorted apart.
		theirs, ours := runBothOutput(t, bin, jsonOneLiners, btprint.OutputJSON)
		have, want := strings.Split(ours, "\n"), strings.Split(theirs, "\n")
		slices.Sort(have)
		slices.Sort(want)
		if !slices.Equal(have, want) {
			t.Errorf("output differs:\n--- have\n%s\n--- want (bpftrace)\n%s", ours, theirs)
		}
		if !strings.Contains(theirs, `"@st"`) {
			t.Errorf("bpftrace printed no @st:\n%s", theirs)
		}
	})
	t.Run("probe", func(t *testing.T) {
		// bpftrace 0.17 fails to load a probe that is in a block of
		// several probes and in another block: each probe once here.
		theirs, ours := runBoth(t, bin, []string{
			`usdt:BIN:demo:req, uprobe:BIN:work { @pr[probe] = count(); } usdt:BIN:demo:done { printf("at %s\n", probe); }`,
		})
		// With -p, bpftrace names usdt probes by the path it opened,
		// /proc/PID/root/PATH; the site's name is the caller's choice.
		theirs = regexp.MustCompile(`usdt:/proc/[0-9]+/root/`).ReplaceAllString(theirs, "usdt:/")
		if sortTies(ours) != sortTies(theirs) {
			t.Errorf("output differs:\n--- have\n%s\n--- want (bpftrace)\n%s", ours, theirs)
		}
		if !strings.Contains(theirs, "uprobe:"+bin+":work]: 100") {
			t.Errorf("bpftrace saw too little:\n%s", theirs)
		}
	})
	t.Run("exit print clear zero", func(t *testing.T) {
		theirs, ours := runBoth(t, bin, exitOneLiners)
		if sortTies(ours) != sortTies(theirs) {
			t.Errorf("output differs:\n--- have\n%s\n--- want (bpftrace)\n%s", ours, theirs)
		}
		if !strings.Contains(theirs, "bye") || !strings.Contains(theirs, "@keep: 100") {
			t.Errorf("bpftrace saw too little:\n%s", theirs)
		}
	})
	t.Run("records after exit dropped", func(t *testing.T) {
		// The target fires demo:req 100 times from one thread without
		// waiting: the hits after the one that calls exit() are in the
		// ring before the tracer reads it. bpftrace drops them and
		// then runs END.
		theirs, ours := runBoth(t, bin, []string{
			`usdt:BIN:demo:req { printf("req %d\n", arg0); if (arg0 == 5) { exit(); } }`,
			`END { printf("end\n"); }`,
		})
		// Both end with the two newlines before the maps (none).
		want := "req 0\nreq 1\nreq 2\nreq 3\nreq 4\nreq 5\nend\n\n\n"
		if ours != want {
			t.Errorf("output:\n%q\nwant:\n%q", ours, want)
		}
		// bpftrace reads one buffer per CPU: a hit on another CPU may
		// come before the exit's record.
		if theirs != want && (!strings.HasPrefix(theirs, "req 0\n") || !strings.HasSuffix(theirs, "\nend\n\n\n") || strings.Count(theirs, "\n") > 12) {
			t.Errorf("bpftrace printed:\n%q\nwant:\n%q", theirs, want)
		}
	})
}

// runBoth runs the one-liners as one program under bpftrace and btrun on
// one run of the target and returns what each printed (bpftrace's without
// its "Attaching" and ready lines).
func runBoth(t *testing.T, bin string, lines []string) (theirs, ours string) {
	return runBothOutput(t, bin, lines, btprint.OutputText)
}

func runBothOutput(t *testing.T, bin string, lines []string, output btprint.Output) (theirs, ours string) {
	t.Helper()
	bpftrace := testutil.RequireTool(t, "bpftrace")
	src := strings.ReplaceAll(strings.Join(lines, "\n"), "BIN", bin)
	prog, err := btlang.Compile("e2e.bt", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	gp, err := btgen.Generate(prog, &btgen.Options{Sites: sites(t, prog, bin)})
	if err != nil {
		t.Fatal(err)
	}

	tr := testutil.StartTracee(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// bpftrace runs BEGIN once every probe is attached.
	args := []string{"-p", fmt.Sprint(tr.PID()), "-e", `BEGIN { printf("READY\n"); } ` + src}
	if output == btprint.OutputJSON {
		args = append([]string{"-f", "json"}, args...)
	}
	bt := exec.CommandContext(ctx, bpftrace, args...)
	var btErr bytes.Buffer
	bt.Stderr = &btErr
	stdout, err := bt.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bt.Process.Kill(); bt.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), "READY") {
	}
	btOut := make(chan string, 1)
	go func() {
		var b strings.Builder
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		btOut <- b.String()
	}()

	var buf bytes.Buffer
	r, err := btrun.Start(gp, &btrun.Options{PIDs: []int{tr.PID()}, Out: &buf, Output: output})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run(ctx) }()

	tr.Do(t, "go")
	tr.Quit(t)
	if err := <-runErr; err != nil {
		t.Fatalf("Run: %v", err)
	}
	select {
	case theirs = <-btOut:
	case <-ctx.Done():
		t.Fatalf("bpftrace did not end: %s", btErr.String())
	}
	if err := bt.Wait(); err != nil {
		t.Fatalf("bpftrace: %v\n%s", err, btErr.String())
	}
	return theirs, buf.String()
}

// TestBeginEndInterval runs a program of BEGIN, interval and END blocks,
// which ends itself with exit() on the third tick, under bpftrace and
// btrun, and compares the outputs. bpftrace may run a tick after exit()
// (it stops asynchronously), which the predicate makes harmless. @early
// says elapsed counts from the tracer's start, not the boot (hours
// here), with room for a loaded machine's slow start.
func TestBeginEndInterval(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	src := `BEGIN { printf("begin %s\n", "now"); @b = 7; @s = "x"; @early = elapsed < 60000000000; }
interval:ms:30 /@ticks < 3/ { @ticks++; @h = hist(@ticks * 100); if (@ticks == 3) { printf("three %d\n", @b); exit(); } }
END { printf("end %d\n", @ticks); @e = count(); }`
	prog, err := btlang.Compile("e2e.bt", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs := runSitelessBoth(t, bpftrace, src, prog)
	if !strings.Contains(theirs, "end 3") {
		t.Errorf("bpftrace printed no END line:\n%s", theirs)
	}
}

// runSitelessBoth runs src, a program of BEGIN, END and interval blocks
// only (prog, checked), under btrun and under bpftrace, fails the test
// unless both print the same, and returns bpftrace's output.
func runSitelessBoth(t *testing.T, bpftrace, src string, prog *btlang.Program) string {
	t.Helper()
	gp, err := btgen.Generate(prog, &btgen.Options{Sites: make([][]btgen.Site, len(prog.Blocks))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var buf bytes.Buffer
	r, err := btrun.Start(gp, &btrun.Options{Out: &buf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	out, err := testutil.RunBpftrace(t, "-e", src)
	if err != nil {
		t.Fatal(err)
	}
	theirs := string(out)
	if _, rest, ok := strings.Cut(theirs, "\n"); ok && strings.HasPrefix(theirs, "Attaching ") {
		theirs = rest
	}
	if buf.String() != theirs {
		t.Errorf("output differs:\n--- have\n%s\n--- want (bpftrace)\n%s", buf.String(), theirs)
	}
	return theirs
}

// runUnread starts src (BIN is bin) on a fresh target generated with
// opts (its Sites filled in), runs the target to its end before anything
// reads the ring, and returns the Runner, not yet Run, and its output.
func runUnread(t *testing.T, bin, src string, opts *btgen.Options) (*btrun.Runner, *bytes.Buffer) {
	t.Helper()
	prog, err := btlang.Compile("lost.bt", []byte(strings.ReplaceAll(src, "BIN", bin)), nil)
	if err != nil {
		t.Fatal(err)
	}
	o := *opts
	o.Sites = sites(t, prog, bin)
	gp, err := btgen.Generate(prog, &o)
	if err != nil {
		t.Fatal(err)
	}
	tr := testutil.StartTracee(t, bin)
	buf := new(bytes.Buffer)
	r, err := btrun.Start(gp, &btrun.Options{PIDs: []int{tr.PID()}, Out: buf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	tr.Do(t, "go")
	tr.Quit(t)
	return r, buf
}

// TestLost: updates of a full map and records a full ring refuses are
// counted and reported, never dropped silently.
func TestLost(t *testing.T) {
	testutil.RequireBPF(t)
	bin := buildTarget(t)
	src := `usdt:BIN:demo:req { $x = arg0 + 1000; @[arg0] = count(); @last[arg0] = arg0; printf("req %d %s %lld\n", arg0, str(arg1), $x); } usdt:BIN:demo:sem { @sem = count(); }`
	r, buf := runUnread(t, bin, src, &btgen.Options{MaxEntries: 8, RingSize: 4096})
	events, updates, err := r.Lost()
	if err != nil {
		t.Fatal(err)
	}
	// 100 distinct keys in two maps of 8 entries: 92 failed inserts each.
	if updates != 2*92 {
		t.Errorf("lost updates = %d, want %d", updates, 2*92)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	printed := uint64(strings.Count(buf.String(), "req "))
	// A failed update must not disturb the block's variables.
	for l := range strings.Lines(buf.String()) {
		var i, x int
		var name string
		if n, _ := fmt.Sscanf(l, "req %d %s %d", &i, &name, &x); n == 3 && x != i+1000 {
			t.Errorf("line %q: $x = %d, want %d", l, x, i+1000)
		}
	}
	if events == 0 || printed+events != 100 {
		t.Errorf("%d records printed, %d lost; want some lost and 100 in all", printed, events)
	}
	if want := fmt.Sprintf("Lost %d events\n", events); !strings.Contains(buf.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, buf.String())
	}
	// The semaphore was raised through the multi link's reference counter.
	if want := "\n@sem: 10\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, buf.String())
	}
	if want := "usdtkit: 184 map updates failed"; !strings.Contains(buf.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, buf.String())
	}
}

// TestExpressions evaluates integer and string expressions in BEGIN under
// bpftrace and btrun and compares what printf prints.
func TestExpressions(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	src := `BEGIN {
	$a = -7; $b = 2; $c = 3; $u = 5; $big = 0x7fffffffffffffff;
	printf("%d %d %d %d %d\n", $a / $b, $a % $c, $a >> 1, $a << 3, $a * $c);
	printf("%d %d %d %d\n", $a + $big, -$a, ~$a, !$a);
	printf("%d %d %d %d %d %d\n", $a < $b, $a > $b, $a <= -7, $a >= 0, $a == -7, $a != -7);
	printf("%d %d %d\n", $a & 0xff, $a | 0x100, $a ^ $b);
	printf("%d %d %d %d\n", $a && $b, 0 && $b, $a || 0, 0 || 0);
	printf("%d %d\n", $a < 0 ? 10 : 20, $u > 9 ? 1 : 2);
	$s = "hello"; $t = "help";
	printf("%d %d %d %d\n", $s == "hello", $s == $t, $s != $t, "ab" == "abc");
	printf("[%s] [%s] [%10s] [%-4s|]\n", $s, $t, $s, "x");
	printf("%x %X %o %u %c|\n", 255, 255, 8, $a, 65);
	@m[1] = 5; @m[2] = -3;
	printf("%d %d %d\n", @m[1], @m[2], @m[3]);
	@m[1] += 10; @m[2]--;
	printf("%d %d\n", @m[1], @m[2]);
	if ($a < 0) { printf("neg\n"); } else { printf("pos\n"); }
	if ($b == 1) { printf("one\n"); } else if ($b == 2) { printf("two\n"); } else { printf("other\n"); }
	exit();
}`
	prog, err := btlang.Compile("expr.bt", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs := runSitelessBoth(t, bpftrace, src, prog)
	if !strings.Contains(theirs, "two\n") {
		t.Errorf("bpftrace printed too little:\n%s", theirs)
	}
}

// TestClassic runs a program with classic uprobe links (the fallback for
// kernels without uprobe_multi): usdt, uretprobe and BEGIN blocks.
func TestClassic(t *testing.T) {
	testutil.RequireBPF(t)
	bin := buildTarget(t)
	src := strings.ReplaceAll(`BEGIN { @b = 1; }
usdt:BIN:demo:req { @[str(arg1)] = count(); }
usdt:BIN:demo:sem { @sem = count(); }
uretprobe:BIN:work { @r = sum(retval); }`, "BIN", bin)
	prog, err := btlang.Compile("classic.bt", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	gp, err := btgen.Generate(prog, &btgen.Options{Sites: sites(t, prog, bin)})
	if err != nil {
		t.Fatal(err)
	}
	tr := testutil.StartTracee(t, bin)
	var buf bytes.Buffer
	r, err := btrun.Start(gp, &btrun.Options{PIDs: []int{tr.PID()}, Out: &buf, Classic: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run(context.Background()) }()
	tr.Do(t, "go")
	tr.Quit(t)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	// @sem: the semaphore was raised through the link's reference counter.
	want := "\n\n@[alpha]: 25\n@[beta]: 25\n@[delta]: 25\n@[gamma]: 25\n@b: 1\n@r: 10375\n@sem: 10\n"
	if buf.String() != want {
		t.Errorf("have\n%s\nwant\n%s", buf.String(), want)
	}
	// While the links closed, one grace period each, Run waited for
	// records once, not in a loop of short deadlines that spins the CPU.
	if n := r.CloseWaits(); n != 1 {
		t.Errorf("Run waited %d times for records while the links closed, want 1", n)
	}
}

// TestArrayMaps: maps stored as arrays (no keys, or keyed by probe) print
// only the slots written, and clear/zero/print act on them as bpftrace
// does on its maps.
func TestArrayMaps(t *testing.T) {
	testutil.RequireBPF(t)
	testutil.RequireTool(t, "bpftrace")
	tests := []struct{ name, src string }{
		{"never written", `BEGIN { if (0) { @c = count(); @i = 1; @s = "x"; @[probe] = sum(1); } exit(); }`},
		{"clear and delete count", `BEGIN { @x = count(); clear(@x); @y = count(); delete(@y); exit(); }`},
		{"zero count", `BEGIN { @x = count(); zero(@x); exit(); }`},
		{"zero min", `BEGIN { @x = min(5); zero(@x); exit(); }`},
		{"clear int", `BEGIN { @x = 5; clear(@x); @y = "a"; exit(); }`},
		{"clear by probe", `BEGIN { @[probe] = count(); clear(@); exit(); }`},
		{"zero by probe", `BEGIN { @[probe] = sum(3); zero(@); exit(); }`},
		{"every kind", `BEGIN { @x = count(); @y = hist(3); @z = stats(4); @w = avg(3); @v = max(3); @s = "abc"; @i = -4; @i += 2; @t = @s; @u = @i + 1; @n = 0; exit(); }`},
		{"print and rewrite", `BEGIN { @[probe] = lhist(5, 0, 10, 1); print(@); @x = sum(-5); @x = sum(2); @s = "x"; @s = "longer"; clear(@s); @s = "again"; exit(); } END { @e[probe] = count(); }`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { sameAsBpftrace(t, tt.src) })
	}
}

// TestPrintfFormats: printf's verbs are the ones bpftrace 0.17 reads, and
// print what it prints: "%%d" takes an argument and prints "%d", %td is a
// verb. (The checker once read formats with a grammar of its own.)
func TestPrintfFormats(t *testing.T) {
	testutil.RequireBPF(t)
	testutil.RequireTool(t, "bpftrace")
	sameAsBpftrace(t, `BEGIN { printf("[%%%d|%%d] [%td] [%-5hhd] [%08.3x] [%c%s]\n", 1, 2, 3, 257, 255, 65, "bc"); exit(); }`)
}

// sameAsBpftrace runs src, a program of BEGIN and END blocks, and checks
// that it prints what bpftrace prints.
func sameAsBpftrace(t *testing.T, src string) {
	t.Helper()
	prog, err := btlang.Compile("e2e.bt", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	runSitelessBoth(t, testutil.RequireTool(t, "bpftrace"), src, prog)
}

// TestOutputFlushedWhenIdle: output is buffered, but a line reaches
// Options.Out as soon as the ring is empty, while Run still runs.
func TestOutputFlushedWhenIdle(t *testing.T) {
	testutil.RequireBPF(t)
	prog, err := btlang.Compile("e2e.bt", []byte(`BEGIN { printf("ready %d\n", 7); }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	gp, err := btgen.Generate(prog, &btgen.Options{Sites: make([][]btgen.Site, len(prog.Blocks))})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	r, err := btrun.Start(gp, &btrun.Options{Out: pw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	// Without a flush, Run's end (the timeout) would flush the line:
	// the line must come while Run runs.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) before the line came", err)
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err != nil || line != "ready 7\n" {
		t.Errorf("have %q (%v) before Run returned, want %q", line, err, "ready 7\n")
	}
}

// TestLostKeyRecords: hits of a map counted in user space
// (btgen.Options.StackKeys StackKeysCopy) whose records a full ring refuses are
// counted and reported as lost events; counted and lost add up to the
// hits.
func TestLostKeyRecords(t *testing.T) {
	testutil.RequireBPF(t)
	bin := buildTarget(t)
	// Room for one or two records of an 8 KiB stack copy.
	r, buf := runUnread(t, bin, `usdt:BIN:demo:req { @[ustack] = count(); }`, &btgen.Options{StackKeys: btgen.StackKeysCopy, RingSize: 1 << 15})
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	events, _, err := r.Lost()
	if err != nil {
		t.Fatal(err)
	}
	var counted uint64
	for l := range strings.Lines(buf.String()) {
		var n uint64
		if _, err := fmt.Sscanf(l, "]: %d", &n); err == nil {
			counted += n
		}
	}
	if events == 0 || counted == 0 || counted+events != 100 {
		t.Errorf("%d hits counted, %d lost; want some of each and 100 in all:\n%s", counted, events, buf.String())
	}
	if want := fmt.Sprintf("Lost %d events\n", events); !strings.Contains(buf.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, buf.String())
	}
}
