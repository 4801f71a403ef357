package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// fakeGo stands in for the go command in TestDemoProgress: it prints what
// it builds and writes a fake binary to -o: a usdtkit that prints its
// arguments, or a server that prints a ready line and exits on SIGTERM.
const fakeGo = `#!/bin/sh
out= pkg=
while [ $# -gt 0 ]; do
	case $1 in
	-o) out=$2; shift ;;
	./*) pkg=$1 ;;
	esac
	shift
done
echo "FAKE go build $pkg"
case $pkg in
./cmd/usdtkit) printf '#!/bin/sh\necho "FAKE usdtkit $1"\n' >"$out" ;;
*) printf '#!/bin/sh\nsleep 1000 & s=$!\ntrap "kill $s; exit 0" TERM\necho "listening pid $$ probes /nonexistent/server.so"\nwait $s\n' >"$out" ;;
esac
chmod +x "$out"
`

// TestDemoProgress runs demo.sh with a fake go command and checks that it
// says what it does before each long step: the first builds take a minute,
// during which the demo used to print nothing.
func TestDemoProgress(t *testing.T) {
	testutil.RequireRoot(t) // demo.sh refuses to run otherwise
	dir := t.TempDir()
	goCmd := filepath.Join(dir, "go")
	if err := os.WriteFile(goCmd, []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "examples/go-server/demo.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GO="+goCmd, "BIN="+filepath.Join(dir, "bin", "usdtkit"))
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	// Each step's announcement, then the step itself, in this order.
	steps := []string{
		"building usdtkit", "FAKE go build ./cmd/usdtkit",
		"building examples/go-server", "FAKE go build ./examples/go-server",
		"starting server", "go-server: listening",
		"tracing for 3s", "FAKE usdtkit trace",
		"go-server: stopped",
	}
	lines := strings.Split(string(out), "\n")
	i := 0
	for _, l := range lines {
		if i < len(steps) && strings.HasPrefix(l, steps[i]) {
			i++
		}
	}
	if i != len(steps) {
		t.Errorf("output lacks %q (or has it out of order):\n%s", steps[i], out)
	}
}
