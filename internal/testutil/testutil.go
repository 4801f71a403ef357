// Package testutil holds helpers shared by usdtkit's tests.
//
// Tests that need the kernel call RequireRoot or RequireBPF; tests that
// need a file or a tool of this machine call RequireFile or RequireTool.
// They skip when the need is not met, except with USDTKIT_REQUIRE_BPF=1
// (CI), where a skip is a failure.
package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// RequireEnv is the environment variable that turns skips into failures.
const RequireEnv = "USDTKIT_REQUIRE_BPF"

// Strict reports whether skips must fail: in CI, or with USDTKIT_REQUIRE_BPF=1.
func Strict() bool {
	return os.Getenv(RequireEnv) == "1" || os.Getenv("CI") == "true"
}

// skip skips the test, or fails it when Strict.
func skip(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if Strict() {
		tb.Fatalf("required but unavailable (%s=1 or CI=true): "+format, append([]any{RequireEnv}, args...)...)
	}
	tb.Skipf(format, args...)
}

// RequireRoot skips the test unless it runs as root.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		skip(tb, "needs root")
	}
}

// RequireBPF skips the test unless it may load BPF programs (root).
func RequireBPF(tb testing.TB) {
	tb.Helper()
	RequireRoot(tb)
}

// RequireFile returns path if it exists, and skips the test otherwise.
func RequireFile(tb testing.TB, path string) string {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		skip(tb, "%v", err)
	}
	return path
}

// RequireTool returns the path of an executable found in $PATH, and skips
// the test if there is none.
func RequireTool(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		skip(tb, "%v", err)
	}
	return p
}
