package dynsdt

import (
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
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
	h := testutil.StartCmd(t, cmd)
	path, ok := h.Next()
	if !ok {
		t.Fatalf("%s: no output", cmd)
	}
	if filepath.Dir(path) != dir {
		t.Fatalf("%s: object %s is not in %s", cmd, path, dir)
	}
	return h.Stdin(), path
}
