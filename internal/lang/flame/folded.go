package flame

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// FoldedName returns name as a folded-stack frame: each ';' (the frame
// separator) becomes ':', each control character (newline, tab, …)
// becomes a space, spaces at either end are dropped (readers would drop
// those before the count), and a name left empty becomes "[unknown]".
// Inner spaces are kept: readers split the count off at the last space.
func FoldedName(name string) string {
	if strings.IndexFunc(name, needsFolding) >= 0 {
		name = strings.Map(func(r rune) rune {
			switch {
			case r == ';':
				return ':'
			case r < 0x20 || r == 0x7f:
				return ' '
			}
			return r
		}, name)
	}
	name = strings.Trim(name, " ")
	if name == "" {
		return "[unknown]"
	}
	return name
}

func needsFolding(r rune) bool { return r == ';' || r < 0x20 || r == 0x7f }

// foldedStack returns s's stack as one folded line without the count:
// the root first, frames separated by ';'.
func foldedStack(b []byte, s *Sample) []byte {
	if s.Root != "" {
		b = append(b, FoldedName(s.Root)...)
		if len(s.Frames) > 0 {
			b = append(b, ';')
		}
	}
	for i := len(s.Frames) - 1; i >= 0; i-- {
		b = append(b, FoldedName(s.Frames[i].Name())...)
		if i > 0 {
			b = append(b, ';')
		}
	}
	return b
}

// WriteFolded writes samples as folded stacks, the input format of
// flamegraph.pl, inferno and speedscope: one line per distinct stack,
// "ROOT;CALLER;…;LEAF COUNT\n", frames named by Frame.Name and escaped by
// FoldedName, with Sample.Root (if set) as the first frame. Samples with
// the same line are merged (counts added) and lines are sorted, so the
// output is deterministic. Samples with no frames and no root, or a
// count of 0, are left out.
func WriteFolded(w io.Writer, samples []Sample) error {
	counts := make(map[string]uint64, len(samples))
	var buf []byte
	for i := range samples {
		s := &samples[i]
		if s.Count == 0 || len(s.Frames) == 0 && s.Root == "" {
			continue
		}
		buf = foldedStack(buf[:0], s)
		counts[string(buf)] += s.Count
	}
	lines := make([]string, 0, len(counts))
	for k := range counts {
		lines = append(lines, k)
	}
	slices.Sort(lines)
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		bw.WriteString(l)
		bw.WriteByte(' ')
		bw.Write(strconv.AppendUint(buf[:0], counts[l], 10))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// MaxFoldedLine is the longest line ParseFolded accepts, in bytes.
const MaxFoldedLine = 1 << 20

// FormatError reports a malformed line of folded stacks.
type FormatError struct {
	Line int   // 1-based line number
	Off  int64 // byte offset of the line's start in the input
	Msg  string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("folded stacks: line %d (byte %#x): %s", e.Line, e.Off, e.Msg)
}

// ParseFolded reads folded stacks ("ROOT;…;LEAF COUNT" lines, as
// WriteFolded, stackcollapse-perf.pl and inferno write them) and returns
// one Sample per line, in input order, with frames leaf first and only
// Frame.Symbol set. Empty lines are skipped. The count is an unsigned
// decimal integer after the last space or tab. A malformed line (no
// count, an empty frame, a line longer than MaxFoldedLine) gives a
// *FormatError and no samples; read errors are returned wrapped.
func ParseFolded(r io.Reader) ([]Sample, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxFoldedLine)
	var (
		out  []Sample
		off  int64
		line int
	)
	for sc.Scan() {
		line++
		text := sc.Bytes()
		start := off
		off += int64(len(text)) + 1
		text = bytes.TrimSuffix(text, []byte{'\r'})
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		bad := func(msg string) error { return &FormatError{Line: line, Off: start, Msg: msg} }
		sp := bytes.LastIndexAny(text, " \t")
		if sp < 0 {
			return nil, bad("no count after the stack")
		}
		n, err := strconv.ParseUint(string(text[sp+1:]), 10, 64)
		if err != nil {
			return nil, bad(fmt.Sprintf("count %q is not an unsigned integer", text[sp+1:]))
		}
		stack := bytes.TrimRight(text[:sp], " \t")
		if len(stack) == 0 {
			return nil, bad("empty stack")
		}
		parts := bytes.Split(stack, []byte{';'})
		frames := make([]Frame, len(parts))
		for i, p := range parts {
			if len(p) == 0 {
				return nil, bad(fmt.Sprintf("frame %d is empty", i+1))
			}
			frames[len(parts)-1-i] = Frame{Symbol: string(p)}
		}
		out = append(out, Sample{Frames: frames, Count: n})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &FormatError{Line: line + 1, Off: off, Msg: fmt.Sprintf("line longer than %d bytes", MaxFoldedLine)}
		}
		return nil, fmt.Errorf("read folded stacks: %w", err)
	}
	return out, nil
}
