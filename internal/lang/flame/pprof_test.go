package flame_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/usdtkit/usdtkit/internal/lang/flame"
)

// TestProfile checks the profile's structure: valid, one location per
// address with inlined frames as lines, functions with files, mappings
// per object and the root label.
func TestProfile(t *testing.T) {
	var b bytes.Buffer
	if err := flame.Write(&b, flame.Pprof, demo(), &flame.Options{Unit: "hits"}); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if st := p.SampleType; len(st) != 1 || st[0].Type != "hits" || st[0].Unit != "count" {
		t.Errorf("sample type %v, want hits/count", st)
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[0]
	}
	if sum != 100 {
		t.Errorf("samples sum to %d, want 100", sum)
	}
	var goSample *profile.Sample
	for _, s := range p.Sample {
		if s.Label["root"][0] == "gosrv" {
			goSample = s
		}
	}
	if goSample == nil {
		t.Fatal("no sample labeled root=gosrv")
	}
	// main.add inlined into main.work: one location, two lines; then
	// main.main, runtime.main and the root.
	var have []string
	for _, l := range goSample.Location {
		var lines []string
		for _, ln := range l.Line {
			lines = append(lines, ln.Function.Name+":"+strconv.FormatInt(ln.Line, 10)+":"+filepath.Base(ln.Function.Filename))
		}
		have = append(have, strings.Join(lines, "|"))
	}
	want := []string{"main.add:12:main.go|main.work:20:main.go", "main.main:30:main.go", "runtime.main:283:proc.go", "gosrv:0:."}
	if strings.Join(have, " ") != strings.Join(want, " ") {
		t.Errorf("go sample's locations:\nhave %q\nwant %q", have, want)
	}
	if m := goSample.Location[0].Mapping; m == nil || m.File != goApp || m.Start > 0x4a1234 || m.Limit <= 0x4a2000 {
		t.Errorf("main.add's mapping %+v, want %s covering 0x4a1234..0x4a2000", m, goApp)
	}
}

// TestPprofTool reads the profile with `go tool pprof -top -traces` and
// checks each function's flat and cumulative counts and a trace.
func TestPprofTool(t *testing.T) {
	// The go command builds its pprof on first use (minutes on a busy
	// machine), then runs it from the build cache.
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		t.Fatalf("the go command: %v", err)
	}
	path := filepath.Join(t.TempDir(), "demo.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := flame.Write(f, flame.Pprof, demo(), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "tool", "pprof", "-symbolize=none", "-top", "-nodecount=100", path)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, out)
	}
	// "      flat  flat%   sum%        cum   cum%" rows: flat, cum, name.
	row := regexp.MustCompile(`(?m)^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.+?)\s*$`)
	type fc struct{ flat, cum string }
	have := map[string]fc{}
	for _, m := range row.FindAllStringSubmatch(string(out), -1) {
		have[m[3]] = fc{m[1], m[2]}
	}
	want := map[string]fc{
		"malloc":              {"40", "40"},
		"leaf":                {"20", "60"},
		"level2":              {"0", "70"},
		"level1":              {"0", "85"},
		"main":                {"0", "85"},
		"[libc.so.6+0x12345]": {"8", "8"},
		"LHello;::run":        {"7", "7"},
		"main.add (inline)":   {"15", "15"},
		"main.work":           {"0", "15"},
		"runtime.main":        {"0", "15"},
		"server":              {"0", "85"},
		"gosrv":               {"0", "15"},
		// -symbolize=none keeps C++ names whole.
		"std::vector<int, std::allocator<int> >::push_back(int const&)": {"10", "10"},
	}
	for name, w := range want {
		if h, ok := have[name]; !ok || h != w {
			t.Errorf("%s: have flat/cum %v (found %v), want %v", name, h, ok, w)
		}
	}
	if t.Failed() {
		t.Logf("pprof -top:\n%s", out)
	}
	cmd = exec.Command(goTool, "tool", "pprof", "-symbolize=none", "-traces", path)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, out)
	}
	trace := regexp.MustCompile(`(?m)^\s+40\s+malloc\n\s+leaf\n\s+level3\n\s+level2\n\s+level1\n\s+main\n\s+__libc_start_call_main\n\s+server\n`)
	if !trace.Match(out) {
		t.Errorf("pprof -traces has no 40-sample trace malloc…server:\n%s", out)
	}
}

// TestProfileEmpty checks no samples give a valid, empty profile.
func TestProfileEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := flame.WritePprof(&b, nil, nil); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil || len(p.Sample) != 0 {
		t.Errorf("have %v, %d samples; want a valid empty profile", err, len(p.Sample))
	}
}
