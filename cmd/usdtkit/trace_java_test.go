package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

var reTracing = regexp.MustCompile(`Tracing (\d+) probes at (\d+) sites`)

// TestTraceJava attaches to every hotspot probe site of a running JVM
// (OpenJDK 17's libjvm.so has 531 probe notes) and counts the method entries the JVM fires with -XX:+ExtendedDTraceProbes.
// How long attaching and detaching take is measured in bench/.
func TestTraceJava(t *testing.T) {
	testutil.RequireFile(t, testutil.LibJVM)
	javac := testutil.RequireTool(t, "javac")
	java := testutil.RequireTool(t, "java")
	dir := t.TempDir()
	if out, err := exec.Command(javac, "-d", dir, "testdata/Spin.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	cmd := exec.Command(java, "-XX:+ExtendedDTraceProbes", "-cp", dir, "Spin", "20000")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("java: %q, %v", line, err)
	}
	tr := startTrace(t, "trace", "-p", strconv.Itoa(cmd.Process.Pid), "--count", "-o", "json", "-d", "500ms", "usdt:*:hotspot*:*")
	tr.mu.Lock()
	m := reTracing.FindStringSubmatch(tr.stderr.String())
	tr.mu.Unlock()
	if m == nil {
		t.Fatalf("no Tracing line in %q", tr.stderr.String())
	}
	if sites, _ := strconv.Atoi(m[2]); sites < 500 {
		t.Errorf("%s sites, want 500 or more", m[2])
	}
	code, out, errs := tr.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// --count prints bpftrace's -f json map: {"type": "map", "data":
	// {"@": {"usdt:PATH:PROVIDER:NAME": COUNT, …}}}.
	var entries float64
	for _, l := range nonEmptyLines(out) {
		var m struct {
			Type string                        `json:"type"`
			Data map[string]map[string]float64 `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %.200q: %v", l, err)
		}
		for probe, n := range m.Data["@"] {
			if strings.HasSuffix(probe, ":hotspot:method__entry") {
				entries += n
			}
		}
	}
	if entries < 1000 {
		t.Errorf("hotspot:method__entry counted %v times, want many; output %q", entries, out)
	}
}
