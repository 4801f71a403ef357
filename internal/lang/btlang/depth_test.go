package btlang

import (
	"strings"
	"testing"
)

// TestDepthRoundTrip checks that the deepest trees Parse accepts still
// print to programs it accepts: a left-associated chain of operators has
// no parentheses in the source, but one per level when printed.
func TestDepthRoundTrip(t *testing.T) {
	for _, src := range []string{
		"BEGIN { @x = " + strings.Repeat("1 + ", maxDepth-3) + "1; }",
		"BEGIN { @x = " + strings.Repeat("- ", maxDepth-2) + "1; }",
		"BEGIN { @x = " + strings.Repeat("(", maxRecursion-3) + "1" + strings.Repeat(")", maxRecursion-3) + "; }",
		"BEGIN { " + strings.Repeat("if (1) { ", maxDepth-2) + "@x = 1" + strings.Repeat(" }", maxDepth-2) + " }",
	} {
		prog, err := Parse("stdin", []byte(src))
		if err != nil {
			t.Fatalf("%.40s…: %v", src, err)
		}
		roundTrip(t, prog)
	}
}
