package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// toolTarget is a program a tool in testdata/tools traces: it prints
// "ready", answers each line on stdin with "done", having first done its
// work for a line "go", and exits at the end of stdin.
type toolTarget struct {
	tracee *testutil.Tracee
	subst  map[string]string // placeholder in the .bt file → value
}

// buildToolC compiles testdata/tools/NAME.c as its comment says and
// starts it.
func buildToolC(t *testing.T, name string) toolTarget {
	t.Helper()
	bin := buildToolBin(t, name)
	return startToolTarget(t, bin, map[string]string{"BIN": bin})
}

// buildToolBin compiles testdata/tools/NAME.c as its comment says.
func buildToolBin(t *testing.T, name string) string {
	t.Helper()
	gcc := testutil.RequireTool(t, "gcc")
	bin := filepath.Join(t.TempDir(), name)
	if b, err := exec.Command(gcc, "-O1", "-g", "-o", bin, filepath.Join("testdata", "tools", name+".c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return bin
}

// startToolTarget starts bin and waits until it answers a line: it has
// then loaded every library a tool may trace.
func startToolTarget(t *testing.T, bin string, subst map[string]string) toolTarget {
	t.Helper()
	tr := testutil.StartTracee(t, bin)
	if l := tr.Do(t, "ping"); len(l) != 1 || l[0] != "ready" {
		t.Fatalf("target printed %q, want ready", l)
	}
	return toolTarget{tracee: tr, subst: subst}
}

// TestToolsAgainstBpftrace runs the small tools of testdata/tools as
// `usdtkit trace -p PID FILE.bt` and `bpftrace -p PID FILE.bt` on one run
// of a target built at test time, in text and in JSON, and compares their
// printf lines and maps exactly (after sorting printf lines and ties,
// which bpftrace prints in hash order). Each case also checks that bpftrace saw what
// the target is known to do, so that two empty outputs cannot pass.
func TestToolsAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	tests := []struct {
		name   string // testdata/tools/NAME.bt
		target func(t *testing.T) toolTarget
		// pidOnly are the probes given /pid == PID/ for bpftrace: with
		// -p, bpftrace 0.17 traces a library's functions in every
		// process, usdtkit in the -p process only.
		pidOnly []string
		want    []string // in bpftrace's output
		check   func(t *testing.T, theirs string)
	}{
		{
			name:    "gethostlatency",
			target:  func(t *testing.T) toolTarget { return buildToolC(t, "gethost") },
			pidOnly: []string{"uprobe:libc:getaddrinfo"},
			want:    []string{"@calls[localhost]: 3\n", "@calls[127.0.0.1]: 2\n", "@slow: 0\n"},
		},
		{
			name:   "bashreadline",
			target: func(t *testing.T) toolTarget { return buildToolC(t, "readline") },
			want:   []string{"@lines[ls -l]: 2\n", "@lines[echo 'hello world']: 1\n", "\nexit\n"},
		},
		{
			name:    "mallocsizes",
			target:  func(t *testing.T) toolTarget { return buildToolC(t, "mallocsizes") },
			pidOnly: []string{"uprobe:libc:malloc"},
			check:   checkMallocSizes,
		},
		{
			name:   "jvmthreads",
			target: func(t *testing.T) toolTarget { return startJava(t, "JvmThreads") },
			want: []string{"start worker-0 daemon=0\n", "start worker-3 daemon=0\n",
				"@started[worker-2]: 1\n", "@stops[worker-1]: 1\n"},
		},
		{
			name:   "jvmcalls",
			target: func(t *testing.T) toolTarget { return startJava(t, "JvmCalls", "-XX:+ExtendedDTraceProbes") },
			want:   []string{"@calls[other]: 500\n", "@calls[work]: 5000\n", "@bytes: 22500\n"},
		},
	}
	for _, tt := range tests {
		src, err := os.ReadFile(filepath.Join("testdata", "tools", tt.name+".bt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, json := range []bool{false, true} {
			name := tt.name
			if json {
				name += "/json"
			}
			t.Run(name, func(t *testing.T) {
				theirs, ours := runToolBoth(t, bpftrace, tt.name, string(src), tt.target(t), tt.pidOnly, json)
				if json {
					compareJSONLines(t, ours, theirs)
					return
				}
				compareProgramOutput(t, ours, theirs)
				for _, w := range tt.want {
					if !strings.Contains(theirs, w) {
						t.Errorf("bpftrace printed no %q:\n%s", w, theirs)
					}
				}
				if tt.check != nil {
					tt.check(t, theirs)
				}
			})
		}
	}
}

// runToolBoth runs the tool src (named name) under bpftrace and usdtkit
// with -p on target, in text or JSON, lets the target work once and
// returns what each printed. The probes pidOnly get /pid == PID/ for
// bpftrace.
func runToolBoth(t *testing.T, bpftrace, name, src string, target toolTarget, pidOnly []string, json bool) (theirs, ours string) {
	t.Helper()
	prog := src
	for k, v := range target.subst {
		prog = strings.ReplaceAll(prog, k, v)
	}
	pid := strconv.Itoa(target.tracee.PID())
	theirProg := prog
	for _, p := range pidOnly {
		if !strings.Contains(prog, p+"\n{") {
			t.Fatalf("%s.bt has no block %s", name, p)
		}
		theirProg = strings.ReplaceAll(theirProg, p+"\n{", p+"\n/pid == "+pid+"/\n{")
	}
	dir := t.TempDir()
	ourFile := filepath.Join(dir, name+".bt")
	// bpftrace prints READY once every probe is attached.
	theirFile := filepath.Join(dir, "bpftrace-"+name+".bt")
	if err := os.WriteFile(ourFile, []byte(prog), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(theirFile, []byte("BEGIN { printf(\"READY\\n\"); }\n"+theirProg), 0o600); err != nil {
		t.Fatal(err)
	}
	btArgs, usArgs := []string{"-p", pid, theirFile}, []string{"trace", "-p", pid, ourFile}
	if json {
		btArgs, usArgs = append([]string{"-f", "json"}, btArgs...), append(usArgs, "-o", "json")
	}
	theirs, ours = runBothArgs(t, bpftrace, btArgs, usArgs, func() {
		target.tracee.Do(t, "go")
		target.tracee.Quit(t)
	})
	return theirs, ours
}

// compareJSONLines compares JSON output as sets of lines, each decoded:
// the entries of a map with equal values are in hash order in
// bpftrace's.
func compareJSONLines(t *testing.T, ours, theirs string) {
	t.Helper()
	canon := func(out string) []string {
		var lines []string
		for _, l := range nonEmptyLines(out) {
			var v any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b))
		}
		slices.Sort(lines)
		return lines
	}
	have, want := canon(ours), canon(theirs)
	if !slices.Equal(have, want) {
		t.Errorf("JSON output differs:\n--- have\n%s\n--- want (bpftrace)\n%s", ours, theirs)
	}
	if !strings.Contains(theirs, `"type": "map"`) {
		t.Errorf("bpftrace printed no map:\n%s", theirs)
	}
}

// TestToolsCommandAgainstBpftrace runs the C tools of testdata/tools as
// `usdtkit trace -c 'BIN go' FILE.bt` and `bpftrace -c 'BIN go' FILE.bt`,
// one run each of a deterministic target, and compares what they print:
// both run the same text, the library's probes filtered with
// /pid == cpid/; usdtkit also runs the tool as written (with -c, its
// probes are the command's alone).
func TestToolsCommandAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	tests := []struct {
		tool, target string
		// pidOnly are the probes given /pid == cpid/: with -c,
		// bpftrace traces a library's functions in every process.
		pidOnly []string
		want    string // in bpftrace's output
	}{
		{"gethostlatency", "gethost", []string{"uprobe:libc:getaddrinfo"}, "@calls[localhost]: 3\n"},
		{"bashreadline", "readline", nil, "@lines[ls -l]: 2\n"},
		{"mallocsizes", "mallocsizes", []string{"uprobe:libc:malloc"}, "[1M, 2M)              21 |"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			bin := buildToolBin(t, tt.target)
			src, err := os.ReadFile(filepath.Join("testdata", "tools", tt.tool+".bt"))
			if err != nil {
				t.Fatal(err)
			}
			prog := strings.ReplaceAll(string(src), "BIN", bin)
			theirProg := prog
			for _, p := range tt.pidOnly {
				if !strings.Contains(prog, p+"\n{") {
					t.Fatalf("%s.bt has no block %s", tt.tool, p)
				}
				theirProg = strings.ReplaceAll(theirProg, p+"\n{", p+"\n/pid == cpid/\n{")
			}
			dir := t.TempDir()
			ourFile, theirFile := filepath.Join(dir, tt.tool+".bt"), filepath.Join(dir, "bpftrace-"+tt.tool+".bt")
			if err := os.WriteFile(ourFile, []byte(prog), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(theirFile, []byte(theirProg), 0o600); err != nil {
				t.Fatal(err)
			}
			cmdline := bin + " go"
			// The two runs have different PIDs, which mallocsizes keys by.
			pids := regexp.MustCompile(`(?m)^(@\w*\[.*, )\d+\]: `)
			theirs := pids.ReplaceAllString(runBpftrace(t, bpftrace, "-c", cmdline, theirFile), "${1}PID]: ")
			for _, file := range []string{theirFile, ourFile} {
				ours := pids.ReplaceAllString(runProgramCLI(t, "trace", "-c", cmdline, file), "${1}PID]: ")
				compareProgramOutput(t, ours, theirs)
			}
			if !strings.Contains(theirs, tt.want) {
				t.Errorf("bpftrace printed no %q:\n%s", tt.want, theirs)
			}
			if !strings.Contains(string(src), ":BIN:") {
				return
			}
			// usdtkit takes an empty path for the command's executable
			// (bpftrace 0.17 refuses uprobe::FUNC).
			empty := strings.ReplaceAll(string(src), ":BIN:", "::")
			ours := pids.ReplaceAllString(runProgramCLI(t, "trace", "-c", cmdline, "-e", empty), "${1}PID]: ")
			compareProgramOutput(t, ours, theirs)
		})
	}
}

// checkMallocSizes checks that bpftrace counted at least the target's
// own mallocs: 2^i+i bytes i+1 times for i from 4 to 20, besides stdio's.
func checkMallocSizes(t *testing.T, theirs string) {
	t.Helper()
	wantBytes, wantCalls := 0, 0
	for i := 4; i <= 20; i++ {
		wantBytes += (i + 1) * (1<<i + i)
		wantCalls += i + 1
	}
	for _, c := range []struct {
		re   string
		want int
	}{
		{`(?m)^@bytes\[mallocsizes\]: (\d+)$`, wantBytes},
		{`(?m)^@calls: (\d+)$`, wantCalls},
	} {
		m := regexp.MustCompile(c.re).FindStringSubmatch(theirs)
		if m == nil {
			t.Errorf("bpftrace printed no %s:\n%s", c.re, theirs)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n < c.want {
			t.Errorf("bpftrace: %s, want at least %d", m[0], c.want)
		}
	}
	if want := fmt.Sprintf("\n@max: %d\n", 1<<20+20); !strings.Contains(theirs, want) {
		t.Errorf("bpftrace printed no %q:\n%s", want, theirs)
	}
	// The histogram's bucket [1M, 2M) holds the 21 calls of 2^20+20
	// bytes and nothing of stdio's.
	if !regexp.MustCompile(`(?m)^\[1M, 2M\)\s+21 \|@+\|$`).MatchString(theirs) {
		t.Errorf("bpftrace's histogram has no [1M, 2M) bucket of 21:\n%s", theirs)
	}
}

// startJava compiles testdata/tools/CLASS.java and starts it under the
// JVM whose libjvm.so the tools trace, with jvmFlags.
func startJava(t *testing.T, class string, jvmFlags ...string) toolTarget {
	t.Helper()
	libjvm := testutil.RequireFile(t, testutil.LibJVM)
	javac := testutil.RequireTool(t, "javac")
	java := testutil.RequireTool(t, "java")
	dir := t.TempDir()
	if b, err := exec.Command(javac, "-d", dir, filepath.Join("testdata", "tools", class+".java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, b)
	}
	// testutil.Tracee runs a path without arguments: a script that
	// execs the JVM keeps its PID.
	script := filepath.Join(dir, class+".sh")
	body := "#!/bin/sh\nexec " + java + " " + strings.Join(jvmFlags, " ") + " -cp " + dir + " " + class + "\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return startToolTarget(t, script, map[string]string{"LIBJVM": libjvm})
}
