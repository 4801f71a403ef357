package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// The static probes' test program: two probes of provider myapp, built
// with the documented commands (usdtkit gen --static, then go build
// -toolexec 'usdtkit toolexec').
var staticProbes = []string{"--provider", "myapp", "--probe", "req__start:string,int32,bool", "--probe", "req__done:int64"}

var (
	usdtkitBinOnce sync.Once
	usdtkitBinPath string
	usdtkitBinErr  error
)

// usdtkitBin builds this command once per test binary, for go build
// -toolexec.
func usdtkitBin(t *testing.T) string {
	t.Helper()
	usdtkitBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "usdtkit-bin-")
		if err != nil {
			usdtkitBinErr = err
			return
		}
		usdtkitBinPath = filepath.Join(dir, "usdtkit")
		out, err := exec.Command(goTool(), "build", "-o", usdtkitBinPath, ".").CombinedOutput()
		if err != nil {
			usdtkitBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if usdtkitBinErr != nil {
		t.Fatal(usdtkitBinErr)
	}
	return usdtkitBinPath
}

func goTool() string { return filepath.Join(runtime.GOROOT(), "bin", "go") }

// staticModule writes the test program and its generated probes into a
// module of its own that uses this repository, and returns its directory.
func staticModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	usdtkit(t, append([]string{"gen", "--static", "--package", "main", "-o", dir}, staticProbes...)...)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	src := readFile(t, "testdata/staticapp/main.go")
	sum := readFile(t, filepath.Join(root, "go.sum"))
	mod := fmt.Sprintf("module staticapp\n\ngo 1.26\n\nrequire github.com/usdtkit/usdtkit v0.0.0\n\nreplace github.com/usdtkit/usdtkit => %s\n", root)
	for name, data := range map[string][]byte{"main.go": src, "go.sum": sum, "go.mod": []byte(mod)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// buildStatic builds the module in dir with go build and extra, in an
// environment with env added, and returns the executable.
func buildStatic(t *testing.T, dir string, env []string, extra ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "staticapp")
	buildStaticTo(t, dir, bin, env, extra...)
	return bin
}

// buildStaticTo is buildStatic writing to bin.
func buildStaticTo(t *testing.T, dir, bin string, env []string, extra ...string) {
	t.Helper()
	args := append(append([]string{"build", "-o", bin}, extra...), ".")
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	cmd.Env = append(cmd.Env, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// staticNote is one probe as readelf -n shows it.
type staticNote struct {
	name, args string
	sem        uint64
}

func staticNotes(t *testing.T, bin string) []staticNote {
	t.Helper()
	var notes []staticNote
	for _, n := range readelfNotes(t, bin) {
		notes = append(notes, staticNote{n.provider + ":" + n.name, n.args, n.semaphore})
	}
	return notes
}

// staticApp is a running test program.
type staticApp struct {
	cmd *exec.Cmd
	in  *os.File
	out *bufio.Scanner
}

func startStaticApp(t *testing.T, bin string) *staticApp {
	t.Helper()
	cmd := exec.Command(bin)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = inR
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	a := &staticApp{cmd: cmd, in: inW, out: bufio.NewScanner(out)}
	t.Cleanup(func() {
		inW.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	if a.do(t, "") != "ready" {
		t.Fatal("the program did not start")
	}
	return a
}

// do sends a command (none if "") and returns the program's answer.
func (a *staticApp) do(t *testing.T, command string) string {
	t.Helper()
	if command != "" {
		fmt.Fprintln(a.in, command)
	}
	if !a.out.Scan() {
		t.Fatalf("%q: the program ended: %v", command, a.out.Err())
	}
	return a.out.Text()
}

// sems reads the probes' semaphores from the process's memory.
func (a *staticApp) sems(t *testing.T, notes []staticNote) []uint16 {
	t.Helper()
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", a.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	var v []uint16
	for _, n := range notes {
		var b [2]byte
		if _, err := mem.ReadAt(b[:], int64(n.sem)); err != nil {
			t.Fatalf("semaphore of %s at %#x: %v", n.name, n.sem, err)
		}
		v = append(v, binary.LittleEndian.Uint16(b[:]))
	}
	return v
}

// TestStaticProbes builds a program with static probes in one go build,
// checks what readelf, tplist and usdtkit list see, and traces two
// processes of it, started before and after the attach, by path with
// usdtkit and with bpftrace, checking the values and the semaphores.
func TestStaticProbes(t *testing.T) {
	testutil.RequireBPF(t)
	dir := staticModule(t)
	bin := buildStatic(t, dir, nil, "-toolexec", usdtkitBin(t)+" toolexec")

	notes := staticNotes(t, bin)
	want := []staticNote{{"myapp:req__start", "8@8(%rsp) -4@16(%rsp) 1@24(%rsp)", 0}, {"myapp:req__done", "-8@8(%rsp)", 0}}
	if len(notes) != 2 || notes[0].name != want[0].name || notes[0].args != want[0].args || notes[1].name != want[1].name || notes[1].args != want[1].args {
		t.Fatalf("readelf -n: %+v, want %+v", notes, want)
	}
	checkSemaphoresInData(t, bin, notes)

	tplist := exec.Command(testutil.RequireTool(t, "tplist-bpfcc"), "-l", bin)
	out, err := tplist.CombinedOutput()
	if err != nil {
		t.Fatalf("tplist: %v: %s", err, out)
	}
	if have := strings.Fields(string(out)); !slices.Equal(have, []string{bin, "myapp:req__start", bin, "myapp:req__done"}) {
		t.Errorf("tplist-bpfcc -l: %q", out)
	}
	list := listJSON(t, bin)
	if len(list) != 2 {
		t.Fatalf("usdtkit list: %+v", list)
	}
	for i, l := range list {
		if l.Provider+":"+l.Name != want[i].name || l.Semaphore == nil || parseHex(t, *l.Semaphore) != notes[i].sem {
			t.Errorf("usdtkit list: %+v, want %s with semaphore %#x", l, want[i].name, notes[i].sem)
		}
	}

	// The step again changes nothing.
	before := readFile(t, bin)
	if have := usdtkit(t, "link", bin); !strings.Contains(have, "2 probes, already added") {
		t.Errorf("usdtkit link again: %q", have)
	}
	if !bytes.Equal(before, readFile(t, bin)) {
		t.Error("usdtkit link again changed the file")
	}

	checkStaticTraced(t, bin, notes)
}

// TestStaticProbesSites: usdtkit link --site=nop5 writes the 5-byte nop
// over the generated 1-byte nop's stub, and both tracers still count the
// semaphores and read every argument there; --site=nop restores the file.
// (nop10: Linux 6.18 cannot probe it; postlink's tests check its bytes.)
// usdtkit toolexec writes the kind USDTKIT_SITE names, and the build cache
// keeps binaries linked with different kinds apart.
func TestStaticProbesSites(t *testing.T) {
	testutil.RequireBPF(t)
	t.Setenv("USDTKIT_SITE", "")
	dir := staticModule(t)
	toolexec := usdtkitBin(t) + " toolexec"
	bin := buildStatic(t, dir, nil, "-toolexec", toolexec)
	if have := usdtkit(t, "link", "--site=nop", bin); !strings.Contains(have, "already added") {
		t.Errorf("usdtkit link --site=nop after toolexec: %q", have)
	}
	// The same output again: the go command relinks only if the
	// linker's version line (which names the kind) changed.
	bin5 := filepath.Join(t.TempDir(), "staticapp")
	buildStaticTo(t, dir, bin5, nil, "-toolexec", toolexec)
	buildStaticTo(t, dir, bin5, []string{"USDTKIT_SITE=nop5"}, "-toolexec", toolexec)
	if have := usdtkit(t, "link", "--site=nop5", bin5); !strings.Contains(have, "already added") {
		t.Errorf("usdtkit link --site=nop5 after USDTKIT_SITE=nop5 toolexec: %q", have)
	}
	notes := staticNotes(t, bin)
	orig := readFile(t, bin)
	if have := usdtkit(t, "link", "--site=nop5", bin); !strings.Contains(have, "2 sites made nop5") {
		t.Fatalf("usdtkit link --site=nop5: %q", have)
	}
	if bytes.Equal(orig, readFile(t, bin)) {
		t.Fatal("usdtkit link --site=nop5 left the file as it was")
	}
	checkStaticTraced(t, bin, notes)
	usdtkit(t, "link", "--site=nop", bin)
	if !bytes.Equal(orig, readFile(t, bin)) {
		t.Error("usdtkit link --site=nop did not give back the generated file")
	}
}

// checkStaticTraced checks, for usdtkit and for bpftrace, that one trace
// by path sees two processes of bin, one started before it and one after:
// exact argument values, and semaphores 0 before, non-zero while attached
// and 0 after.
func checkStaticTraced(t *testing.T, bin string, notes []staticNote) {
	prog := fmt.Sprintf(`usdt:%[1]s:myapp:req__start { printf("start %%d %%s %%d %%d\n", pid, str(arg0), arg1, arg2); }
usdt:%[1]s:myapp:req__done { printf("done %%d %%d\n", pid, arg0); }`, bin)
	for _, tracer := range []string{"usdtkit", "bpftrace"} {
		t.Run(tracer, func(t *testing.T) {
			a := startStaticApp(t, bin)
			if have := a.sems(t, notes); !slices.Equal(have, []uint16{0, 0}) {
				t.Fatalf("semaphores before the attach: %v", have)
			}
			stop, lines := startStaticTracer(t, tracer, prog)
			b := startStaticApp(t, bin)
			for _, p := range []*staticApp{a, b} {
				if have := p.sems(t, notes); have[0] == 0 || have[1] == 0 {
					t.Errorf("semaphores of %d while attached: %v", p.cmd.Process.Pid, have)
				}
				if have := p.do(t, "enabled"); have != "true true" {
					t.Errorf("enabled while attached: %q", have)
				}
			}
			a.do(t, "fire héllo 3")
			b.do(t, "fire world -4")
			wantLines := []string{
				fmt.Sprintf("start %d héllo 3 0", a.cmd.Process.Pid),
				fmt.Sprintf("done %d 6", a.cmd.Process.Pid),
				fmt.Sprintf("start %d world -4 1", b.cmd.Process.Pid),
				fmt.Sprintf("done %d 5", b.cmd.Process.Pid),
			}
			have := lines(len(wantLines))
			stop()
			if tracer == "bpftrace" {
				// bpftrace 0.17 prints from a perf buffer per CPU, read
				// one CPU after another: lines fired on two CPUs may come
				// out of order. usdtkit's one ring keeps the order.
				have, wantLines = slices.Sorted(slices.Values(have)), slices.Sorted(slices.Values(wantLines))
			}
			if !slices.Equal(have, wantLines) {
				t.Errorf("%s printed\n%s\nwant\n%s", tracer, strings.Join(have, "\n"), strings.Join(wantLines, "\n"))
			}
			for _, p := range []*staticApp{a, b} {
				if have := p.sems(t, notes); !slices.Equal(have, []uint16{0, 0}) {
					t.Errorf("semaphores of %d after the trace: %v", p.cmd.Process.Pid, have)
				}
			}
		})
	}
}

// startStaticTracer attaches usdtkit or bpftrace with prog, without -p, and
// returns a function that ends it and one that returns its first n output
// lines (failing the test if they do not come within a minute).
func startStaticTracer(t *testing.T, tracer, prog string) (stop func(), lines func(n int) []string) {
	t.Helper()
	if tracer == "usdtkit" {
		tr := startTrace(t, "trace", "-e", prog)
		return tr.stop, func(n int) []string {
			deadline := time.Now().Add(time.Minute)
			for time.Now().Before(deadline) {
				tr.mu.Lock()
				have := nonEmptyLines(tr.stdout.String())
				tr.mu.Unlock()
				if len(have) >= n {
					return have
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Fatalf("usdtkit printed too little: %s", tr.stderr.String())
			return nil
		}
	}
	bt := testutil.StartBpftrace(t, "-e", `BEGIN { printf("ready\n"); } `+prog)
	sc, cmd := bt.Out, bt.Cmd
	got := make(chan string, 64)
	go func() {
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				got <- l
			}
		}
		close(got)
	}()
	// bpftrace ends at SIGINT; one that has not within 10 s is killed
	// (its output is complete by then: the lines were read).
	stop = func() {
		cmd.Process.Signal(os.Interrupt)
		timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
		defer timer.Stop()
		cmd.Wait()
	}
	return stop, func(n int) []string {
		var have []string
		timeout := time.After(time.Minute)
		for len(have) < n {
			select {
			case l, ok := <-got:
				if !ok {
					t.Fatalf("bpftrace ended: %s", bt.Stderr())
				}
				have = append(have, l)
			case <-timeout:
				t.Fatalf("bpftrace printed %q only: %s", have, bt.Stderr())
			}
		}
		return have
	}
}

// checkSemaphoresInData checks that every semaphore is in a writable
// section with file contents, inside the .probes section the step adds.
func checkSemaphoresInData(t *testing.T, bin string, notes []staticNote) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	probes := f.Section(".probes")
	if probes == nil {
		t.Fatal("no .probes section")
	}
	for _, n := range notes {
		var in *elf.Section
		for _, s := range f.Sections {
			if s.Type == elf.SHT_PROGBITS && s.Name != ".probes" && n.sem >= s.Addr && n.sem+2 <= s.Addr+s.Size {
				in = s
			}
		}
		switch {
		case in == nil || in.Flags&elf.SHF_WRITE == 0:
			t.Errorf("%s: semaphore %#x is not in writable initialised data (%v)", n.name, n.sem, in)
		case n.sem < probes.Addr || n.sem+2 > probes.Addr+probes.Size:
			t.Errorf("%s: semaphore %#x outside .probes [%#x, %#x)", n.name, n.sem, probes.Addr, probes.Addr+probes.Size)
		case probes.Offset-in.Offset != probes.Addr-in.Addr:
			t.Errorf(".probes at offset %#x does not map like %s", probes.Offset, in.Name)
		}
	}
}

// TestStaticProbesBuilds checks the notes of the other documented builds:
// stripped (-ldflags=-s -w), PIE, cross-built for arm64, and the same
// program without the step, which runs with probes that never fire.
func TestStaticProbesBuilds(t *testing.T) {
	dir := staticModule(t)
	toolexec := usdtkitBin(t) + " toolexec"
	amd64 := []staticNote{{"myapp:req__start", "8@8(%rsp) -4@16(%rsp) 1@24(%rsp)", 0}, {"myapp:req__done", "-8@8(%rsp)", 0}}
	arm64 := []staticNote{{"myapp:req__start", "8@[sp, 8] -4@[sp, 16] 1@[sp, 24]", 0}, {"myapp:req__done", "-8@[sp, 8]", 0}}
	tests := []struct {
		name    string
		env     []string
		flags   []string
		machine elf.Machine
		want    []staticNote
	}{
		{"stripped", nil, []string{"-ldflags=-s -w", "-trimpath"}, elf.EM_X86_64, amd64},
		{"pie", nil, []string{"-buildmode=pie"}, elf.EM_X86_64, amd64},
		{"arm64", []string{"GOARCH=arm64"}, nil, elf.EM_AARCH64, arm64},
		{"arm64 pie stripped", []string{"GOARCH=arm64"}, []string{"-buildmode=pie", "-ldflags=-s -w"}, elf.EM_AARCH64, arm64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := buildStatic(t, dir, tt.env, append(tt.flags, "-toolexec", toolexec)...)
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			m := f.Machine
			f.Close()
			if m != tt.machine {
				t.Fatalf("machine %v, want %v", m, tt.machine)
			}
			notes := staticNotes(t, bin)
			if len(notes) != len(tt.want) {
				t.Fatalf("readelf -n: %+v", notes)
			}
			for i := range notes {
				if notes[i].name != tt.want[i].name || notes[i].args != tt.want[i].args || notes[i].sem == 0 {
					t.Errorf("note %d: %+v, want %+v with a semaphore", i, notes[i], tt.want[i])
				}
			}
			checkSemaphoresInData(t, bin, notes)
			if tt.machine == elf.EM_X86_64 {
				a := startStaticApp(t, bin)
				if have := a.do(t, "fire x 1"); have != "fired" {
					t.Errorf("fire: %q", have)
				}
			}
		})
	}
	t.Run("without the step", func(t *testing.T) {
		bin := buildStatic(t, dir, nil)
		if notes := staticNotes(t, bin); len(notes) != 0 {
			t.Errorf("notes without the step: %+v", notes)
		}
		a := startStaticApp(t, bin)
		if have := a.do(t, "fire x 1"); have != "fired" {
			t.Errorf("fire: %q", have)
		}
		if have := a.do(t, "enabled"); have != "false false" {
			t.Errorf("enabled: %q", have)
		}
		// The step afterwards, as usdtkit link, gives the same notes.
		if have := usdtkit(t, "link", bin); !strings.Contains(have, "2 probes added") {
			t.Errorf("usdtkit link: %q", have)
		}
		if notes := staticNotes(t, bin); len(notes) != 2 {
			t.Errorf("notes after usdtkit link: %+v", notes)
		}
	})
}
