package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli from the commands")

// TestCLIDocs: docs/cli holds cobra's Markdown of every command, as the
// commands are now (make docs rewrites it). usdtkit-agent.md is
// cmd/usdtkit-agent's.
func TestCLIDocs(t *testing.T) {
	root := newRootCmd()
	var noTag func(*cobra.Command)
	noTag = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			noTag(sub)
		}
	}
	noTag(root)
	dir := t.TempDir()
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = b
	}
	if len(got) < 7 || got["usdtkit_trace.md"] == nil || !strings.Contains(string(got["usdtkit_trace.md"]), "--dump") {
		t.Fatalf("cobra wrote %d files, want one per command, with trace's flags", len(got))
	}
	testutil.GoldenDir(t, filepath.Join("..", "..", "docs", "cli"), got,
		func(name string) bool { return name != "usdtkit-agent.md" }, *updateDocs, "make docs")
}
