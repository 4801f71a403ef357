// Package flame writes stacks as flame graphs and profiles: folded stacks
// (flamegraph.pl, inferno, speedscope), a pprof profile (`go tool pprof`)
// and a self-contained interactive HTML flame graph.
//
// # Model
//
// The input is plain data that any capture can produce: a []Sample, each
// a stack of Frames listed leaf first (Frames[0] is where the event
// happened, the last frame the outermost, as bpftrace's ustack prints
// them) with a count and an optional Root pseudo-frame (a command name, as
// stackcollapse-perf puts it below the stack). A Frame carries what
// symbolization found (address, object, file offset, symbol, file, line,
// inlined flag) and every field may be zero: Frame.Name names a frame by
// its symbol, else "[OBJECT+0xOFFSET]", else "0xADDR". An inlined frame is
// followed by the frame it was inlined into, at the same address.
// FrameKind classifies frames (native, c++, go, jit, unknown, root) for
// the HTML colors; Frame.Kind overrides it.
//
// # Outputs
//
// Write(w, format, samples, opts) writes one of Folded, Pprof or HTML:
//
//   - Folded: "root;caller;…;leaf COUNT" lines, identical stacks merged
//     and lines sorted. ';' in a name becomes ':', control characters
//     (newlines, tabs) become spaces and spaces at a name's ends are
//     dropped (FoldedName); inner spaces are kept, since readers split
//     the count off at the last space. ParseFolded reads the format back.
//   - Pprof: a gzipped profile.proto (github.com/google/pprof/profile)
//     with one sample type (Options.Unit, "count"); a location per
//     address with its inlined frames as lines; a function per name and
//     file; a mapping per object.
//   - HTML: one page with inline style, script and data, no network (a
//     Content-Security-Policy forbids it). The data is JSON in a
//     <script type="application/json"> element, with <, > and & escaped as
//     \u003c…, so no name can close the element; the script puts names
//     in the page only as text, never as markup. The page zooms on click,
//     searches by regular expression showing the matched share, shows a
//     tooltip per frame and keeps its state in the URL fragment
//     ("#q=SEARCH&zoom=NODE").
//
// Nothing here reads the input's counts as sizes: the outputs grow with
// the number of distinct stacks and frames only. Functions are safe for
// concurrent use; they do not modify samples.
package flame
