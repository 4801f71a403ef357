package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/usdtkit/usdtkit/internal/flame"
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

// parseOutput parses -o: text and json print what the trace prints; a
// flame graph format or file returns a *flameOutput.
func parseOutput(s string) (*flameOutput, error) {
	switch s {
	case "text", "json":
		return nil, nil
	case string(flame.Folded), string(flame.Pprof), string(flame.HTML):
		return &flameOutput{format: flame.Format(s)}, nil
	}
	for _, f := range flameFileFormats {
		if strings.HasSuffix(s, f.suffix) && len(s) > len(f.suffix) {
			return &flameOutput{format: f.format, path: s}, nil
		}
	}
	return nil, fmt.Errorf("--output %q: want text, json, folded, pprof, html, or a file FILE.folded, FILE.pb.gz or FILE.html", s)
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

// noStacksError is the error for a flame graph output of a program that
// counts no stacks.
func noStacksError(output string) error {
	return fmt.Errorf("-o %s writes the counts of stacks, and this trace counts none: add --stacks, or key a map by ustack in the program (@[ustack] = count())", output)
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
