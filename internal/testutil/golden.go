package testutil

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// GoldenDir compares got (file name → content) with the files of dir
// that own reports as its own, or with update rewrites them (and removes
// the owned files got no longer has). A difference fails the test with
// the names and how to regenerate the files (fix).
func GoldenDir(t *testing.T, dir string, got map[string][]byte, own func(name string) bool, update bool, fix string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !(update && os.IsNotExist(err)) {
		t.Fatal(err)
	}
	var stale, differ []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !own(e.Name()) {
			continue
		}
		if _, ok := got[e.Name()]; !ok {
			stale = append(stale, e.Name())
		}
	}
	if update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range stale {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		for name, b := range got {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for name, b := range got {
		have, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(have, b) {
			differ = append(differ, name)
		}
	}
	slices.Sort(differ)
	slices.Sort(stale)
	if len(differ) > 0 || len(stale) > 0 {
		t.Errorf("%s is not current: differs or is missing: %s; not generated any more: %s (%s)",
			dir, strings.Join(differ, " "), strings.Join(stale, " "), fix)
	}
}
