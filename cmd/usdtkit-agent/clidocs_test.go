package main

import (
	"bytes"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra/doc"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli/usdtkit-agent.md from the command")

// TestCLIDocs: docs/cli/usdtkit-agent.md is cobra's Markdown of the
// agent's command line as it is now (make docs rewrites it).
func TestCLIDocs(t *testing.T) {
	cmd := newAgentCmd()
	cmd.DisableAutoGenTag = true
	var b bytes.Buffer
	if err := doc.GenMarkdownCustom(cmd, &b, func(s string) string { return s }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "--config") {
		t.Fatalf("no --config in\n%s", b.String())
	}
	testutil.GoldenDir(t, filepath.Join("..", "..", "docs", "cli"), map[string][]byte{"usdtkit-agent.md": b.Bytes()},
		func(name string) bool { return name == "usdtkit-agent.md" }, *updateDocs, "make docs")
}
