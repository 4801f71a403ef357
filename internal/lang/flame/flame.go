package flame

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
)

// Frame is one frame of a stack. Its fields are those of a symbolized
// frame (internal/stacks/symbolize.Frame); every field may be zero.
type Frame struct {
	Addr uint64
	// Object is the file the address is in ("/usr/lib/x86_64-linux-gnu/libc.so.6",
	// a perf map "/tmp/perf-1234.map", "[vdso]"), or "" if unknown.
	Object string
	// Offset is the file offset of Addr in Object.
	Offset uint64
	// Symbol is the function's name (demangled), "" if unknown.
	Symbol string
	// File and Line are the source position, "" and 0 if unknown.
	File string
	Line int
	// Inlined marks a frame of a function inlined into the next frame
	// (its caller): both are at the same address.
	Inlined bool
	// Kind classifies the frame for the HTML colors and legend ("native",
	// "c++", "go", "jit", "unknown", …); "" means derived by FrameKind.
	Kind string
}

// Sample is one stack and how often it was seen.
type Sample struct {
	// Frames lists the stack leaf first: Frames[0] is the innermost frame
	// (where the event happened), the last frame the outermost (main,
	// _start, a thread's start routine), as captures and bpftrace's
	// ustack list them.
	Frames []Frame
	// Count is how many times the stack was seen; samples with Count 0
	// are left out.
	Count uint64
	// Root, if not "", is a pseudo-frame put below the outermost frame,
	// as stackcollapse-perf puts the command name ("python3.11",
	// "python3.11 1234"), so a flame graph of several processes groups
	// their stacks. It has kind "root"; in a pprof profile it is also a
	// sample label "root".
	Root string
}

// Name returns the name a flame graph shows for the frame: the symbol;
// "[OBJECT+0xOFFSET]" (the object's base name) when the symbol is unknown
// but the object is; "0xADDR" otherwise. The name is not escaped.
func (f Frame) Name() string {
	switch {
	case f.Symbol != "":
		return f.Symbol
	case f.Object != "":
		name := path.Base(strings.TrimSuffix(f.Object, " (deleted)"))
		if strings.HasPrefix(f.Object, "[") {
			name = strings.Trim(f.Object, "[]")
		}
		return "[" + name + "+0x" + strconv.FormatUint(f.Offset, 16) + "]"
	}
	return "0x" + strconv.FormatUint(f.Addr, 16)
}

// Frame kinds FrameKind derives; Frame.Kind may name others.
const (
	KindNative  = "native"  // C and other code without a more specific kind
	KindCPP     = "c++"     // a demangled C++ (or Rust) name
	KindGo      = "go"      // Go code (a .go source file, or a runtime. name)
	KindJIT     = "jit"     // named by a perf map or in anonymous memory
	KindUnknown = "unknown" // no symbol
	KindRoot    = "root"    // Sample.Root
)

// FrameKind returns f.Kind if set, and otherwise derives a kind from the
// frame: KindUnknown without a symbol, KindJIT for a perf map or
// anonymous memory, KindGo for a .go source file or a "runtime." symbol,
// KindCPP for a name with "::", and KindNative for the rest.
func FrameKind(f Frame) string {
	switch {
	case f.Kind != "":
		return f.Kind
	case f.Symbol == "":
		return KindUnknown
	case f.Object == "" || strings.HasPrefix(f.Object, "[anon") ||
		strings.HasPrefix(f.Object, "/tmp/perf-") && strings.HasSuffix(f.Object, ".map") ||
		strings.HasPrefix(f.Object, "//anon"):
		return KindJIT
	case strings.HasSuffix(f.File, ".go") || strings.HasPrefix(f.Symbol, "runtime."):
		return KindGo
	case strings.Contains(f.Symbol, "::"):
		return KindCPP
	}
	return KindNative
}

// Format names an output format of Write.
type Format string

// The formats Write writes.
const (
	Folded Format = "folded" // one "root;…;leaf COUNT" line per distinct stack
	Pprof  Format = "pprof"  // a gzipped pprof profile (profile.proto)
	HTML   Format = "html"   // a self-contained interactive flame graph page
)

// Formats returns the formats Write accepts, for flag help and validation.
func Formats() []Format { return []Format{Folded, Pprof, HTML} }

// ErrFormat is wrapped by Write for an unknown format name.
var ErrFormat = errors.New("unknown flame graph format (want folded, pprof or html)")

// Options tunes Write. A nil *Options means the zero value; every field's
// zero value is the default.
type Options struct {
	// Title is the HTML page's title and heading; default "Flame graph".
	Title string
	// Unit names what a sample counts, in the pprof sample type and the
	// HTML tooltips; default "samples".
	Unit string
	// Inverted draws the HTML graph as an icicle (roots on top); the
	// default puts the roots at the bottom as flamegraph.pl does.
	Inverted bool
}

func (o *Options) title() string {
	if o == nil || o.Title == "" {
		return "Flame graph"
	}
	return o.Title
}

func (o *Options) unit() string {
	if o == nil || o.Unit == "" {
		return "samples"
	}
	return o.Unit
}

// Write writes samples to w in format: Folded, Pprof or HTML. An unknown
// format gives an error wrapping ErrFormat before anything is written;
// other errors are w's. samples is not modified. opts may be nil.
func Write(w io.Writer, format Format, samples []Sample, opts *Options) error {
	switch format {
	case Folded:
		return WriteFolded(w, samples)
	case Pprof:
		return WritePprof(w, samples, opts)
	case HTML:
		return WriteHTML(w, samples, opts)
	}
	return fmt.Errorf("%q: %w", string(format), ErrFormat)
}

// ParseFormat returns the format named s ("folded", "pprof", "html"), or
// an error wrapping ErrFormat.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("%q: %w", s, ErrFormat)
}
