package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/usdtkit/usdtkit/internal/lang/flame"
	"github.com/usdtkit/usdtkit/trace"
)

// flameOutput is where -o sends the stack counts of a trace, when it
// names a flame graph format: folded, pprof or html on stdout, or a file
// whose name ends in .folded, .pb.gz (.pprof) or .html.
type flameOutput struct {
	format flame.Format
	path   string // "" for stdout
}

// flameFileFormats are the file name endings -o takes, with their formats.
var flameFileFormats = []struct {
	suffix string
	format flame.Format
}{
	{".folded", flame.Folded},
	{".pb.gz", flame.Pprof},
	{".pprof", flame.Pprof},
	{".html", flame.HTML},
	{".htm", flame.HTML},
}

// outputFormats are -f's values and the format names -o takes.
var outputFormats = []string{"text", "json", string(flame.Folded), string(flame.Pprof), string(flame.HTML)}

// outputSpec is what -o and -f ask for.
type outputSpec struct {
	// format is how what the trace prints is printed: text or json.
	format string
	// flame is the flame graph to write after the trace, nil for none.
	flame *flameOutput
	// file receives what the trace prints, "" for stdout.
	file string
	// flag names the flag that asked for the flame graph, for errors:
	// "-o folded", "-f html".
	flag string
}

// parseOutput reads -o (output, "" when not given) and -f (format, ""
// when not given). -f is bpftrace's: the format of what goes to stdout,
// text, json or a flame graph. -o is a format name (one meaning whatever
// -f says: -o json is JSON; ./json is a file); FILE.folded, FILE.pb.gz
// (.pprof) or FILE.html (.htm), a flame graph file; or, as bpftrace's -o,
// any other path with a dot or a slash, which receives what would go to
// stdout. A bare word that is not a format (-o yaml) is a mistake, and so
// is FILE.svg, a flame graph usdtkit does not draw.
func parseOutput(output, format string) (outputSpec, error) {
	if format != "" && !slices.Contains(outputFormats, format) {
		return outputSpec{}, fmt.Errorf("-f %q: want one of %s", format, strings.Join(outputFormats, ", "))
	}
	var file string
	flag := "-f " + format
	switch {
	case output == "" || slices.Contains(outputFormats, output):
		if output != "" && format != "" && output != format {
			return outputSpec{}, fmt.Errorf("-o %s and -f %s ask for two formats: give one (-f FORMAT -o FILE writes FORMAT to FILE)", output, format)
		}
		if format == "" {
			format, flag = cmp.Or(output, "text"), "-o "+output
		}
	case flameFile(output) != nil:
		if format != "" && format != "text" && format != "json" {
			return outputSpec{}, fmt.Errorf("-o %s and -f %s ask for two flame graphs: give one (-f %s -o FILE writes it to FILE)", output, format, format)
		}
		return outputSpec{format: cmp.Or(format, "text"), flame: flameFile(output), flag: "-o " + output}, nil
	case strings.HasSuffix(output, ".svg"):
		return outputSpec{}, fmt.Errorf("--output %q: want text, json, folded, pprof, html, or a flame graph file FILE.folded, FILE.pb.gz or FILE.html (usdtkit draws no SVG: flamegraph.pl draws FILE.folded)", output)
	case !strings.ContainsAny(output, "./"):
		return outputSpec{}, fmt.Errorf("--output %q: want text, json, folded, pprof, html, a flame graph file FILE.folded, FILE.pb.gz or FILE.html, or a file for what the trace prints (a path with a dot or a slash, such as out.txt or ./%s)", output, output)
	default:
		file, format = output, cmp.Or(format, "text")
		if format != "text" && format != "json" {
			flag = "-f " + format
		}
	}
	if format == "text" || format == "json" {
		return outputSpec{format: format, file: file}, nil
	}
	// A flame graph where stdout would be: stdout, or -o's file.
	return outputSpec{format: "text", flame: &flameOutput{format: flame.Format(format), path: file}, flag: flag}, nil
}

// flameFile returns the flame graph file that path's ending names, nil if
// none does.
func flameFile(path string) *flameOutput {
	for _, f := range flameFileFormats {
		if strings.HasSuffix(path, f.suffix) && len(path) > len(f.suffix) {
			return &flameOutput{format: f.format, path: path}
		}
	}
	return nil
}

// flameSamples turns stack counts into flame graph samples. Each sample's
// root frame names the entry's map when it is not @ and the entry's other
// keys (the probe of --stacks, the comm of @[comm, ustack]), space
// separated; a map of stacks alone has no root frame.
func flameSamples(counts []trace.StackCount) []flame.Sample {
	samples := make([]flame.Sample, 0, len(counts))
	for _, c := range counts {
		s := flame.Sample{Count: c.Value, Frames: make([]flame.Frame, len(c.Frames))}
		for i, f := range c.Frames {
			s.Frames[i] = flame.Frame{Addr: f.Addr, Object: f.Object, Offset: f.Offset, Symbol: f.Symbol, File: f.File, Line: f.Line, Inlined: f.Inlined}
		}
		var root []string
		if c.Map != "@" {
			root = append(root, c.Map)
		}
		s.Root = strings.Join(append(root, c.Keys...), " ")
		samples = append(samples, s)
	}
	return samples
}

// writeFlame writes the tracer's stack counts as fo says, after Run: to
// stdout, or to fo.path (written whole, then renamed into place). It says
// on stderr how many stacks and hits it wrote.
func writeFlame(stdout, stderr io.Writer, t *trace.Tracer, fo *flameOutput, title string) error {
	counts, err := t.Stacks()
	if err != nil {
		return err
	}
	samples := flameSamples(counts)
	var hits uint64
	for _, s := range samples {
		hits += s.Count
	}
	opts := &flame.Options{Title: title, Unit: "hits"}
	where := "stdout"
	if fo.path == "" {
		w := bufio.NewWriter(stdout)
		if err := flame.Write(w, fo.format, samples, opts); err != nil {
			return fmt.Errorf("-o %s: %w", fo.format, err)
		}
		if err := w.Flush(); err != nil {
			return fmt.Errorf("-o %s: %w", fo.format, err)
		}
	} else {
		if err := writeFileAtomic(fo.path, func(w io.Writer) error { return flame.Write(w, fo.format, samples, opts) }); err != nil {
			return fmt.Errorf("-o %s: %w", fo.path, err)
		}
		where = fo.path
	}
	fmt.Fprintf(stderr, "Wrote %d stacks (%d hits) as %s to %s.\n", len(samples), hits, fo.format, where)
	return nil
}

// writeFileAtomic writes path through a temporary file in its directory,
// renamed over path once write and close succeeded.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	w := bufio.NewWriter(f)
	if err := write(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// flameTitle is the flame graph's title: the probes traced, or the
// program (-e's text with its spaces collapsed, cut at 100 bytes, or its
// file's name).
func flameTitle(name, src string, probes []string) string {
	if len(probes) > 0 {
		return "usdtkit trace " + strings.Join(probes, " ")
	}
	if name != "-e" {
		return "usdtkit trace " + name
	}
	text := strings.Join(strings.Fields(src), " ")
	if len(text) > 100 {
		text = strings.ToValidUTF8(text[:100], "") + "…"
	}
	return "usdtkit trace -e '" + text + "'"
}

// noStacksError is the error for a flame graph output (flag: "-o
// folded", "-f html") of a program that counts no stacks.
func noStacksError(flag string) error {
	return fmt.Errorf("%s writes the counts of stacks, and this trace counts none: add --stacks, or key a map by ustack in the program (@[ustack] = count())", flag)
}

// stackJSON is one line of writeStacksJSON.
type stackJSON struct {
	Type string `json:"type"`
	Data struct {
		Map    string        `json:"map"`
		PID    int           `json:"pid"`
		Keys   []string      `json:"keys"`
		Value  uint64        `json:"value"`
		Frames []trace.Frame `json:"frames"`
	} `json:"data"`
}

// writeStacksJSON writes, after the maps a -o json trace prints as
// bpftrace does (stacks as text in their keys), one line per entry of the
// maps keyed by a stack with that stack's frames as objects:
// {"type": "stack", "data": {"map", "pid", "keys" (the other keys),
// "value", "frames" (innermost first, trace.Frame's JSON)}}.
func writeStacksJSON(w io.Writer, t *trace.Tracer) error {
	counts, err := t.Stacks()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	for _, c := range counts {
		var line stackJSON
		line.Type = "stack"
		line.Data.Map, line.Data.PID, line.Data.Value = c.Map, c.PID, c.Value
		line.Data.Keys = append([]string{}, c.Keys...)
		line.Data.Frames = append([]trace.Frame{}, c.Frames...)
		b, err := json.Marshal(&line)
		if err != nil {
			return err
		}
		bw.Write(append(b, '\n'))
	}
	return bw.Flush()
}
