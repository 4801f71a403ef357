package dynsdt

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// HelperDirEnv makes a test binary of this package run TestHelperLoad as a
// child process that loads a provider into the directory it names
// (provider_reap_test.go). Exported for the external test package.
const HelperDirEnv = "DYNSDT_TEST_HELPER_DIR"

// StartLoadHelper starts cmd, a test binary of this package running
// TestHelperLoad with HelperDirEnv=dir in its environment, and returns it
// once it has printed its object file's path, which must be in dir. Closing
// the returned stdin makes the helper exit normally; the helper is killed
// when the test ends. Exported for the external test package.
func StartLoadHelper(t *testing.T, cmd *exec.Cmd, dir string) (io.Closer, string) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("%s: no output: %v", cmd, sc.Err())
	}
	path := sc.Text()
	if filepath.Dir(path) != dir {
		t.Fatalf("%s: object %s is not in %s", cmd, path, dir)
	}
	return stdin, path
}
