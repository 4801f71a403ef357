package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// buildBtTarget compiles testdata/bttarget.c (see its comment).
func buildBtTarget(t *testing.T) string {
	t.Helper()
	gcc := testutil.RequireTool(t, "gcc")
	testutil.RequireFile(t, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	out := filepath.Join(t.TempDir(), "bttarget")
	if b, err := exec.Command(gcc, "-O1", "-g", "-o", out, "testdata/bttarget.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

// programOneLiners run together as one program, under bpftrace and
// usdtkit; BIN is the target's path.
var programOneLiners = []string{
	// count by a string key
	`usdt:BIN:demo:req { @by_name[str(arg1)] = count(); }`,
	// hist and lhist
	`usdt:BIN:demo:req { @h = hist(arg0); @l = lhist(arg2 + 200, 0, 1000, 100); }`,
	// printf with str()
	`usdt:BIN:demo:req /arg0 < 6/ { printf("req %d %s|%-6s|\n", arg0, str(arg1), str(arg1, 3)); }`,
	// uretprobe retval
	`uretprobe:BIN:work { @ret = sum(retval); @rh = lhist(retval, 0, 300, 50); @rmax = max(retval); }`,
	// an @start[tid] latency pair (times themselves are not compared:
	// @lat's buckets are replaced by their total)
	`uprobe:BIN:work { @start[tid] = nsecs; }`,
	`uretprobe:BIN:work /@start[tid]/ { @lat = hist(nsecs - @start[tid]); @pairs = count(); @later = sum(nsecs >= @start[tid]); delete(@start[tid]); }`,
	// strncmp in a predicate and in keys, with lengths past a word,
	// past both strings and 0
	`usdt:BIN:demo:req /strncmp(str(arg1), "gam", 3) == 0/ { @gam = count(); }`,
	`usdt:BIN:demo:req { @nc[str(arg1), strncmp(str(arg1), "alphabet", 5), strncmp("delta", str(arg1), 2), strncmp(str(arg1), "betamaxes", 40), strncmp(str(arg1), "x", 0)] = count(); }`,
	// casts and reads of the process's memory: a name's bytes, values
	// cut to fewer bits, signed and not
	`usdt:BIN:demo:req { @mem[*(uint8*)arg1, *(int16*)(arg1 + 1), (int8)arg2 % 5, (uint16)arg2 / 1000, (int32)(arg2 << 31) < 0] = count(); @first = sum(*(int64*)arg1 & 0xff); }`,
	// registers by bpftrace's names (ip's offset in its page, which ASLR
	// keeps)
	`uprobe:BIN:work { @regs[reg("di") == arg0, reg("si") == arg1, reg("sp") % 8, reg("ip") & 0xfff] = count(); }`,
	`uretprobe:BIN:work { @rax[reg("ax") == retval] = count(); }`,
	// return, in an if and in both branches of one
	`usdt:BIN:demo:req { if (arg0 % 3 == 0) { @skip = count(); return; } @kept = count(); if (arg0 > 50) { return; } else { @low = count(); } }`,
	`uretprobe:BIN:work { if (retval > 100) { @big = count(); return; } else { return; } }`,
	// unroll over a name's bytes, read from the process's memory
	`usdt:BIN:demo:req { $i = 0; $s = 0; unroll(5) { $s += *(uint8*)(arg1 + $i); $i++; if ($i > 3) { @ended[$i] = count(); } } @bytes[str(arg1)] = sum($s); }`,
	// while with break and continue: a name's length and its vowels,
	// read byte by byte from the process's memory
	`usdt:BIN:demo:req { $n = 0; $v = 0; while ($n < 16) { $c = *(uint8*)(arg1 + $n); if ($c == 0) { break; } $n++; if ($c != 97 && $c != 101) { continue; } $v++; } @len[str(arg1), $n, $v] = count(); }`,
	// print() of values
	`usdt:BIN:demo:req /arg0 < 3/ { print(arg0); print(str(arg1)); print(arg2 - 1000); print((int32)arg2 - 1000); }`,
	// bswap of each width, rand, numaid
	`usdt:BIN:demo:req { @bs[bswap((uint16)arg0), bswap((uint32)arg2), bswap(*(uint8*)arg1), bswap((int8)arg2)] = count(); @bs64 = sum(bswap(arg0) >> 56); @rand = sum(rand > 0); @numa[numaid] = count(); }`,
	// buffers of the process's memory, as keys and values
	`usdt:BIN:demo:req { @buf[buf(arg1, 4), buf(str(arg1), 2)] = count(); @lastbuf[arg0 % 2] = buf(arg1, arg0 % 8); }`,
	// a tuple key, a string predicate, stats
	`usdt:BIN:demo:req /str(arg1) != "beta"/ { @pair[str(arg1), arg0 % 3] = count(); @st = stats(arg2); }`,
}

// TestProgramAgainstBpftrace runs programs with trace -p, -c, -o json and
// FILE.bt and bpftrace 0.17 on the same target, and compares what they
// print after sorting printf lines and equal map values (bpftrace prints
// ties in hash order).
func TestProgramAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	bin := buildBtTarget(t)
	src := strings.ReplaceAll(strings.Join(programOneLiners, "\n"), "BIN", bin)

	t.Run("-p", func(t *testing.T) {
		theirs, ours := runBothPID(t, bpftrace, bin, src, nil)
		compareProgramOutput(t, ours, theirs)
		if !strings.Contains(theirs, "@pairs: 100") || !strings.Contains(theirs, "req 5 beta|bet   |") ||
			!strings.Contains(theirs, "@gam: 25") || !strings.Contains(theirs, "@nc[alpha, 0, 1, 1, 0]: 25") ||
			!strings.Contains(histTotal(theirs, "@lat"), "@lat: 100 in all") {
			t.Errorf("bpftrace saw too little:\n%s", theirs)
		}
	})
	t.Run("-p empty path", func(t *testing.T) {
		// usdt::demo:req: every object of the process.
		src := `usdt::demo:req { @[str(arg1)] = sum(arg0); } usdt::demo:done { printf("done %d\n", arg0); }`
		theirs, ours := runBothPID(t, bpftrace, bin, src, nil)
		compareProgramOutput(t, ours, theirs)
		if !strings.Contains(theirs, "@[delta]: 1275") {
			t.Errorf("bpftrace saw too little:\n%s", theirs)
		}
	})
	t.Run("-p relative path", func(t *testing.T) {
		// A relative path with -p is taken from the tracer's working
		// directory, through a symbolic link here, and names the object
		// the process maps by its real path (bpftrace's abs_path).
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(filepath.Dir(bin), link); err != nil {
			t.Fatal(err)
		}
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(wd, filepath.Join(link, filepath.Base(bin)))
		if err != nil || filepath.IsAbs(rel) {
			t.Fatalf("no relative path to %s from %s: %v", bin, wd, err)
		}
		src := strings.ReplaceAll(`usdt:REL:demo:req { @[str(arg1)] = sum(arg0); } uretprobe:REL:work { @r = sum(retval); }`, "REL", rel)
		theirs, ours := runBothPID(t, bpftrace, bin, src, nil)
		compareProgramOutput(t, ours, theirs)
		if !strings.Contains(theirs, "@[delta]: 1275") || !strings.Contains(theirs, "@r: 10375") {
			t.Errorf("bpftrace saw too little:\n%s", theirs)
		}
	})
	t.Run("-p func", func(t *testing.T) {
		// func in printf, as bpftrace prints it. bpftrace 0.17 gets it
		// wrong elsewhere: map keys of a process gone print as bare
		// addresses, a uretprobe's func is the caller, a second use in
		// one printf prints an address, and a printf in an if prints
		// once: those are checked against the number of calls.
		// Nor does it always symbolize printf's func once the process
		// exits: a line of bpftrace's may have work's address instead
		// (checked by its offset in the page, which ASLR keeps).
		src := strings.ReplaceAll(`uprobe:BIN:work /arg0 < 4/ { printf("%s %s\n", func, probe); }`, "BIN", bin)
		theirs, ours := runBothPID(t, bpftrace, bin, src, nil)
		work := symbolValue(t, bin, "work")
		suffix := " uprobe:" + bin + ":work"
		theirLines, ourLines := nonEmptyLines(theirs), nonEmptyLines(ours)
		if len(ourLines) != 4 || len(theirLines) != 4 {
			t.Fatalf("have %q, bpftrace %q; want 4 lines each", ourLines, theirLines)
		}
		symbolized := 0
		for i, l := range theirLines {
			if ourLines[i] != "work"+suffix {
				t.Errorf("line %q, want %q", ourLines[i], "work"+suffix)
			}
			addr, ok := strings.CutSuffix(l, suffix)
			if addr == "work" {
				symbolized++
				continue
			}
			v, err := strconv.ParseUint(strings.TrimPrefix(addr, "0x"), 16, 64)
			if !ok || err != nil || v%4096 != work%4096 {
				t.Errorf("bpftrace printed %q, neither work nor its address (%#x in the file)", l, work)
			}
		}
		if symbolized == 0 {
			t.Logf("bpftrace symbolized none of its lines: %q", theirLines)
		}
		src = strings.ReplaceAll(`uprobe:BIN:work { @calls = count(); @f[func, probe] = count(); if (arg0 < 4) { printf("%s|%8s|\n", func, func); } }
uretprobe:BIN:work { @r[func] = count(); }`, "BIN", bin)
		ours = runProgramCLI(t, "trace", "-c", bin+" run", "-e", src)
		want := strings.Repeat("work|    work|\n", 4) + "\n\n@calls: 100\n@f[work, uprobe:" + bin + ":work]: 100\n@r[work]: 100\n"
		if ours != want {
			t.Errorf("have\n%q\nwant\n%q", ours, want)
		}
		// func and probe as map values, read back as a key and in
		// printf (Debian's sslsnoop.bt keeps func so): bpftrace 0.17
		// prints such keys of a -c trace as bare addresses.
		src = strings.ReplaceAll(`uprobe:BIN:work { @f[tid] = func; @p[tid] = probe; @by[@f[tid], @p[tid]] = count(); if (arg0 == 1) { printf("%s %s\n", @f[tid], @p[tid]); } }`, "BIN", bin)
		ours = runProgramCLI(t, "trace", "-c", bin+" run", "-e", src)
		probe := "uprobe:" + bin + ":work"
		wantRE := `^work ` + regexp.QuoteMeta(probe) + `\n\n\n@by\[work, ` + regexp.QuoteMeta(probe) + `\]: 100\n@f\[\d+\]: work\n@p\[\d+\]: ` + regexp.QuoteMeta(probe) + `\n$`
		if !regexp.MustCompile(wantRE).MatchString(ours) {
			t.Errorf("have\n%q\nwant to match\n%q", ours, wantRE)
		}
	})
	t.Run("-c usym", func(t *testing.T) {
		// usym() in printf and in map keys: the function the ELF symbols
		// say the address is in, an address in none in hex. bpftrace
		// 0.17 cannot be the reference: with -c it aborts in usym(), and
		// with -p it printed 2 of 3 such lines here, one address bare.
		work := symbolValue(t, bin, "work")
		var size uint64
		for _, s := range testutil.ELFSymbols(t, bin) {
			if s.Name == "work" {
				size = s.Size
			}
		}
		if size <= 4 {
			t.Fatalf("work is %d bytes: the test reads an address 4 bytes in", size)
		}
		src := strings.ReplaceAll(`uprobe:BIN:work /arg0 < 3/ { printf("%s %s %s\n", usym(reg("ip")), usym(reg("ip") + 4), usym(1)); }
uprobe:BIN:work { @u[usym(reg("ip")), usym(16)] = count(); print(usym(reg("ip"))); }`, "BIN", bin)
		ours := runProgramCLI(t, "trace", "-c", bin+" run", "-e", src)
		lines := map[string]int{}
		for _, l := range nonEmptyLines(ours) {
			lines[l]++
		}
		if lines["work work 0x1"] != 3 || lines["work"] != 100 || lines["@u[work, 0x10]: 100"] != 1 {
			t.Errorf("have\n%s\nwant 3 lines %q, 100 of print(), and @u[work, 0x10]: 100 (work at %#x)", ours, "work work 0x1", work)
		}
	})
	t.Run("-p python", func(t *testing.T) {
		// CPython's USDT probes (guarded by semaphores), a string
		// predicate, a tuple key of a string and an integer, and an
		// empty action that only enables python:line, without which
		// CPython 3.11 fires no function__entry.
		py := startPyScript(t, 50)
		// (The script's path may be longer than the 64 bytes bpftrace
		// allows in a string literal: the predicates name the function.)
		src := `usdt::python:function__entry /str(arg1) == "f"/ { @calls[str(arg1), arg2] = count(); }
usdt::python:function__return /str(arg1) == "f"/ { @returns = count(); }
usdt::python:line {}`
		theirs, ours := runBothOn(t, bpftrace, py.PID(), src, nil, func() { py.run(t) })
		compareProgramOutput(t, ours, theirs)
		if !strings.Contains(theirs, "@calls[f, 2]: 50") {
			t.Errorf("bpftrace saw too little:\n%s", theirs)
		}
	})
	t.Run("-o json", func(t *testing.T) {
		src := strings.ReplaceAll(`usdt:BIN:demo:req { @h = hist(arg0); @st = stats(arg0); @by[arg0 % 7] = sum(arg0); }
usdt:BIN:demo:req /arg0 < 3/ { printf("req %d \"%s\"\t%x\n", arg0, str(arg1), arg0); print(arg0); print((int32)arg2 - 1000); print(str(arg1)); }`, "BIN", bin)
		theirs, ours := runBothPID(t, bpftrace, bin, src, []string{"-f", "json"})
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
	t.Run("-c", func(t *testing.T) {
		cmdline := bin + " run"
		ours := runProgramCLI(t, "trace", "-c", cmdline, "-e", src)
		theirs := runBpftrace(t, bpftrace, "-c", cmdline, "-e", src)
		compareProgramOutput(t, ours, theirs)
		if !strings.Contains(theirs, "@pairs: 100") {
			t.Errorf("bpftrace saw too little:\n%s", theirs)
		}
	})
	t.Run("-c positional parameters", func(t *testing.T) {
		// $N as a number, str($N) and in a probe, $#, and a parameter
		// not given (0, "").
		src := strings.ReplaceAll(`uprobe:BIN:$3 /arg0 < $1/ { @[str($2), $#, $6, str($6), str($4), str(arg1, 3)] = count(); }
usdt:BIN:demo:req /str(arg1) == str($2)/ { @n = count(); @neg = sum($5); }`, "BIN", bin)
		params := []string{"3", "beta", "work", "", "-0x10"}
		cmdline := bin + " run"
		ours := runProgramCLI(t, append([]string{"trace", "-c", cmdline, "-e", src, "--"}, params...)...)
		theirs := runBpftrace(t, bpftrace, append([]string{"-c", cmdline, "-e", src, "--"}, params...)...)
		compareProgramOutput(t, ours, theirs)
		if !strings.Contains(theirs, "@[beta, 5, 0, , , bet]: 1") || !strings.Contains(theirs, "@neg: -400") {
			t.Errorf("bpftrace saw too little:\n%s", theirs)
		}
	})
	t.Run("-c --classic", func(t *testing.T) {
		// Classic links, one per site: the kernels without uprobe_multi.
		cmdline := bin + " run"
		ours := runProgramCLI(t, "trace", "--classic", "-c", cmdline, "-e", src)
		theirs := runBpftrace(t, bpftrace, "-c", cmdline, "-e", src)
		compareProgramOutput(t, ours, theirs)
	})
	t.Run("-c empty path FILE.bt", func(t *testing.T) {
		// bpftrace 0.17 needs a path with -c; usdtkit takes the
		// command's executable for an empty one.
		file := filepath.Join(t.TempDir(), "req.bt")
		prog := "usdt::demo:req\n{\n\t@[arg0 % 4] = count();\n}\nuretprobe:BIN:work { @r = sum(retval); }\n"
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(prog, "BIN", bin)), 0o600); err != nil {
			t.Fatal(err)
		}
		cmdline := bin + " run"
		ours := runProgramCLI(t, "trace", "-c", cmdline, file)
		theirs := runBpftrace(t, bpftrace, "-c", cmdline, "-e", strings.ReplaceAll(strings.ReplaceAll(prog, "usdt::", "usdt:BIN:"), "BIN", bin))
		compareProgramOutput(t, ours, theirs)
		if !strings.Contains(theirs, "@r: 10375") {
			t.Errorf("bpftrace saw too little:\n%s", theirs)
		}
	})
}

// runBothPID starts the target, bpftrace and usdtkit on it with -p, lets
// the target run and returns what each printed on stdout.
func runBothPID(t *testing.T, bpftrace, bin, src string, btArgs []string) (theirs, ours string) {
	t.Helper()
	tr := testutil.StartTracee(t, bin)
	return runBothOn(t, bpftrace, tr.PID(), src, btArgs, func() {
		tr.Do(t, "go")
		tr.Quit(t)
	})
}

// runBothOn runs bpftrace and usdtkit with -p on process pid, calls fire
// once both are attached, which must make the process run and exit, and
// returns what each printed on stdout.
func runBothOn(t *testing.T, bpftrace string, pidNum int, src string, btArgs []string, fire func()) (theirs, ours string) {
	t.Helper()
	pid := fmt.Sprint(pidNum)
	// bpftrace runs BEGIN once every probe is attached.
	args := append(append([]string(nil), btArgs...), "-p", pid, "-e", `BEGIN { printf("READY\n"); } `+src)
	usArgs := []string{"trace", "-p", pid, "-e", src}
	if len(btArgs) > 0 {
		usArgs = append(usArgs, "-o", "json")
	}
	theirs, ours = runBothArgs(t, bpftrace, args, usArgs, fire)
	if len(btArgs) > 0 {
		// -f json prints "attached_probes" before READY is seen; the
		// rest is compared.
		theirs = strings.TrimLeft(theirs, "\n")
	}
	return theirs, ours
}

// runBothArgs runs bpftrace with args, whose program must print a line
// with READY in BEGIN, and usdtkit with usArgs, calls fire once both are
// attached, which must make the traced process run and exit, and returns
// what each printed on stdout after READY.
func runBothArgs(t *testing.T, bpftrace string, args, usArgs []string, fire func()) (theirs, ours string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
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

	run := startTrace(t, usArgs...)
	fire()
	code, ours, errOut := run.wait(t)
	if code != 0 {
		t.Fatalf("usdtkit: exit %d: %s", code, errOut)
	}
	select {
	case theirs = <-btOut:
	case <-ctx.Done():
		t.Fatalf("bpftrace did not end: %s", btErr.String())
	}
	if err := bt.Wait(); err != nil {
		t.Fatalf("bpftrace: %v\n%s", err, btErr.String())
	}
	return theirs, ours
}

// runProgramCLI runs usdtkit in-process until it ends by itself and
// returns its stdout.
func runProgramCLI(t *testing.T, args ...string) string {
	t.Helper()
	run := startTrace(t, args...)
	code, out, errOut := run.wait(t)
	if code != 0 {
		t.Fatalf("usdtkit %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// runBpftrace runs bpftrace and returns its stdout without its
// "Attaching" line and the -c target's own lines.
func runBpftrace(t *testing.T, bpftrace string, args ...string) string {
	t.Helper()
	out, _ := runBpftraceErr(t, bpftrace, args...)
	var b strings.Builder
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "ready ") || l == "done\n" {
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}

// compareProgramOutput compares printf lines as sets and the maps after
// sorting ties.
func compareProgramOutput(t *testing.T, ours, theirs string) {
	t.Helper()
	haveLines, haveMaps := splitProgramOutput(ours)
	wantLines, wantMaps := splitProgramOutput(theirs)
	if !slices.Equal(haveLines, wantLines) {
		t.Errorf("printf lines differ:\nhave %q\nwant %q", haveLines, wantLines)
	}
	haveMaps, wantMaps = histTotal(haveMaps, "@lat"), histTotal(wantMaps, "@lat")
	if sortTies(haveMaps) != sortTies(wantMaps) {
		t.Errorf("maps differ:\n--- have\n%s\n--- want (bpftrace)\n%s", haveMaps, wantMaps)
	}
	if len(wantMaps) == 0 {
		t.Errorf("bpftrace printed no maps:\n%s", theirs)
	}
}

// splitProgramOutput returns the printf lines, sorted, and the maps
// printed at exit (after bpftrace's "\n\n").
func splitProgramOutput(out string) (lines []string, maps string) {
	head, maps, ok := strings.Cut(out, "\n\n")
	if !ok {
		head, maps = out, ""
	}
	for l := range strings.Lines(head) {
		if l = strings.TrimSuffix(l, "\n"); l != "" {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines, maps
}

// sortTies sorts runs of entries of one map with equal values: bpftrace
// prints them in the kernel's hash order, which varies from run to run.
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

// TestProgramErrors checks that each mistake in a program or its flags
// gives exit status 1, nothing on stdout and stderr lines that say what is
// wrong, at file:line:col when it is in the program.
func TestProgramErrors(t *testing.T) {
	bin := buildBtTarget(t)
	dir := t.TempDir()
	badFile := filepath.Join(dir, "bad.bt")
	if err := os.WriteFile(badFile, []byte("BEGIN {\n\tprintf(\"x\\n\");\n\t@x = count(;\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string // on stderr
	}{
		{"syntax", []string{"trace", "-e", "BEGIN { @x = count( }"}, `usdtkit: -e:1:21: expected an expression, found "}"`},
		{"syntax in FILE.bt", []string{"trace", badFile}, "usdtkit: " + badFile + `:3:13: expected an expression, found ";"`},
		{"no match", []string{"trace", "-e", "BEGIN { }\n  usdt:" + bin + ":demo:nosuch { @ = count(); }"},
			"usdtkit: -e:2:3: usdt:" + bin + ":demo:nosuch: matches nothing"},
		{"no such function", []string{"trace", "-e", "uprobe:" + bin + ":nosuch { @ = count(); }"},
			"usdtkit: -e:1:1: uprobe:" + bin + ":nosuch: matches nothing"},
		{"arg a probe lacks", []string{"trace", "-e", "usdt:" + bin + ":demo:req { @ = sum(arg3); }"},
			"usdtkit: -e:1:" + fmt.Sprint(len("usdt:"+bin+":demo:req { @ = sum(")+1) + ": arg3 does not exist"},
		// demo:* matches req (3 arguments), sem and done (1): the least.
		{"arg some matches lack", []string{"trace", "-e", "usdt:" + bin + ":demo:* { @ = sum(arg1); }"}, "has 1 arguments"},
		{"empty path without a process", []string{"trace", "-e", "usdt::demo:req { @ = count(); }"}, "needs a process: trace one with -p or -c"},
		{"-e and --count", []string{"trace", "--count", "-e", "BEGIN { exit(); }"}, "-e and --count exclude each other: write @[probe] = count() in the program"},
		{"-e and -F", []string{"trace", "-F", "%d", "-e", "BEGIN { exit(); }"}, "-e and --format exclude each other"},
		{"FILE.bt and --hist", []string{"trace", "--hist", "arg0", badFile}, badFile + " and --hist exclude each other"},
		{"-e and a probe", []string{"trace", "-e", "BEGIN { exit(); }", "python:x"}, "-e takes the whole program"},
		{"FILE.bt missing", []string{"trace", filepath.Join(dir, "missing.bt")}, "ERROR: failed to open file '" + filepath.Join(dir, "missing.bt") + "': No such file or directory"},
		{"-e -p and -c", []string{"trace", "-p", "1", "-c", "true", "-e", "BEGIN { exit(); }"}, "-p and -c exclude each other"},
		{"-e bad output", []string{"trace", "-o", "yaml", "-e", "BEGIN { exit(); }"}, `--output "yaml"`},
		{"signal without --unsafe", []string{"trace", "-e", "uprobe:" + bin + `:work { signal("SIGUSR1"); }`}, "signal() changes the traced process: it needs --unsafe, as in bpftrace"},
		{"signal in BEGIN", []string{"trace", "--unsafe", "-e", `BEGIN { signal("SIGUSR1"); }`}, "signal() in a BEGIN block would signal usdtkit itself"},
		{"signal unknown", []string{"trace", "--unsafe", "-e", "uprobe:" + bin + `:work { signal("SIGNOPE"); }`}, `"SIGNOPE" is not a signal name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tt.args, &out, &errb)
			if code != 1 || out.Len() != 0 || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, no stdout, stderr with %q", code, out.String(), errb.String(), tt.want)
			}
		})
	}
}

// TestProgramDuration: -d ends a program that would run forever, and its
// END block and maps are printed, as at Ctrl-C.
func TestProgramDuration(t *testing.T) {
	out := runProgramCLI(t, "trace", "-d", "200ms", "-e", `interval:ms:10 { @ticks = count(); } END { printf("end\n"); @n = 1; }`)
	if !strings.HasPrefix(out, "end\n\n\n@n: 1\n@ticks: ") {
		t.Errorf("output %q: want the END line, then @n and @ticks", out)
	}
}

// TestProgramCommandStatus: with -c, a program ends when the command
// exits, prints its maps, and usdtkit exits with the command's status.
func TestProgramCommandStatus(t *testing.T) {
	bin := buildBtTarget(t)
	run := startTrace(t, "trace", "-c", bin+" run 7", "-e",
		`BEGIN { @begin = 1; } uprobe:`+bin+`:work { @calls = count(); } END { printf("end\n"); }`)
	code, out, errOut := run.wait(t)
	if code != 7 {
		t.Errorf("exit %d, want the command's 7; stderr %s", code, errOut)
	}
	if want := "end\n\n\n@begin: 1\n@calls: 100\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

// histTotal replaces the buckets of the histogram map name, whose values
// are times, by the total count.
func histTotal(maps, name string) string {
	var b strings.Builder
	in, total := false, 0
	for l := range strings.Lines(maps) {
		switch {
		case l == name+": \n" || l == name+":\n":
			in, total = true, 0
			continue
		case in && strings.HasPrefix(l, "["):
			f := strings.Fields(l[strings.Index(l, ")")+1:])
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				total += n
			}
			continue
		case in:
			fmt.Fprintf(&b, "%s: %d in all\n", name, total)
			in = false
		}
		b.WriteString(l)
	}
	if in {
		fmt.Fprintf(&b, "%s: %d in all\n", name, total)
	}
	return b.String()
}

// symbolValue returns the value of the symbol name in the ELF file path.
func symbolValue(t *testing.T, path, name string) uint64 {
	t.Helper()
	for _, s := range testutil.ELFSymbols(t, path) {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("%s has no symbol %s", path, name)
	return 0
}
