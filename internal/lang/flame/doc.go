// Package flame writes stacks as folded text (flamegraph.pl, inferno,
// speedscope), pprof profiles and self-contained HTML flame graphs.
//
// Write takes a []Sample: stacks of Frames, leaf first, each with a count.
// Any Frame field may be zero; Frame.Name falls back to
// "[OBJECT+0xOFFSET]", then "0xADDR". ParseFolded reads folded text back.
//
// Folded names replace ';' with ':' and control characters with spaces
// (FoldedName). The HTML page loads nothing from the network and puts
// names in the page only as text. Output grows with distinct stacks, not
// with counts. Functions are safe for concurrent use.
package flame
