package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// commandLine is what the -c command of TestTraceCommandStdout prints on
// its stdout.
const commandLine = "a line of the traced command"

// TestTraceCommandStdout runs usdtkit as a user does, `usdtkit trace -c
// CMD … -o FORMAT > FILE`, with a command that prints a line and spins:
// with json, folded or pprof on stdout the command's line goes to stderr
// and the file is what its reader parses (go tool pprof for the profile);
// with text, or a flame graph written to a named file, the line stays on
// stdout.
func TestTraceCommandStdout(t *testing.T) {
	testutil.RequireBPF(t)
	py := testutil.RequireFile(t, testutil.Python311)
	bin := usdtkitBin(t)
	command := py + ` -c "import time
print('` + commandLine + `', flush=True)
end = time.time() + 0.3
while time.time() < end: pass"`
	const prog = `profile:hz:199 { @[ustack] = count(); }`
	folded := regexp.MustCompile(`^\S.* \d+$`)
	tests := []struct {
		name      string
		output    string
		toStdout  bool // the command's line is on stdout, not stderr
		checkFile func(t *testing.T, path string, data []byte)
	}{
		{name: "text", output: "text", toStdout: true},
		{name: "json", output: "json", checkFile: func(t *testing.T, _ string, data []byte) {
			// bpftrace's -f json writes two empty lines before the maps
			// at exit, after its attached_probes object.
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if l != "" && !json.Valid([]byte(l)) {
					t.Errorf("stdout line is not JSON: %q", l)
				}
			}
		}},
		{name: "folded", output: "folded", checkFile: func(t *testing.T, _ string, data []byte) {
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if !folded.MatchString(l) {
					t.Errorf("stdout line is not a folded stack: %q", l)
				}
			}
		}},
		{name: "pprof", output: "pprof", checkFile: func(t *testing.T, path string, _ []byte) {
			out, err := exec.Command(goTool(), "tool", "pprof", "-top", path).CombinedOutput()
			if err != nil {
				t.Errorf("go tool pprof -top: %v\n%s", err, out)
			}
		}},
		{name: "html-file", output: "FILE.html", toStdout: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			output := strings.Replace(tt.output, "FILE", filepath.Join(dir, "flame"), 1)
			stdoutPath := filepath.Join(dir, "stdout")
			stdout, err := os.Create(stdoutPath)
			if err != nil {
				t.Fatal(err)
			}
			defer stdout.Close()
			var stderr bytes.Buffer
			c := exec.Command(bin, "trace", "-c", command, "-e", prog, "-o", output)
			c.Stdout, c.Stderr = stdout, &stderr
			if err := c.Run(); err != nil {
				t.Fatalf("usdtkit: %v\n%s", err, stderr.Bytes())
			}
			data, err := os.ReadFile(stdoutPath)
			if err != nil {
				t.Fatal(err)
			}
			inStdout, inStderr := hasLine(data, commandLine), hasLine(stderr.Bytes(), commandLine)
			if inStdout != tt.toStdout || inStderr == tt.toStdout {
				t.Errorf("the command's line on stdout %v, on stderr %v; want it on stdout: %v\nstdout:\n%s\nstderr:\n%s",
					inStdout, inStderr, tt.toStdout, data, stderr.Bytes())
			}
			if tt.checkFile != nil {
				if len(bytes.TrimSpace(data)) == 0 {
					t.Fatalf("nothing on stdout; stderr:\n%s", stderr.Bytes())
				}
				tt.checkFile(t, stdoutPath, data)
			}
		})
	}
}

// hasLine reports whether data has the line l.
func hasLine(data []byte, l string) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if sc.Text() == l {
			return true
		}
	}
	return false
}
