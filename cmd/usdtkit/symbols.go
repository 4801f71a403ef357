package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/uprobe"
	"github.com/usdtkit/usdtkit/uprobe/gosig"
)

func listSymbols(cmd *cobra.Command, o *listOptions, la listArgs) error {
	sels := make([]uprobe.Selector, 0, len(la.uprobes))
	for _, s := range la.uprobes {
		sel, err := uprobe.ParseSelector(s)
		if err != nil {
			return err
		}
		sels = append(sels, sel)
	}
	objs, err := uprobe.List(&uprobe.ListOptions{Paths: la.paths, PID: o.pid, Selectors: sels, Warn: warnTo(cmd.ErrOrStderr())})
	if err != nil {
		return err
	}
	if len(objs) == 0 && len(sels) > 0 {
		// As for probes (see runList): no match is a failure.
		return fmt.Errorf("no function matches %s", strings.Join(la.uprobes, " "))
	}
	if o.output == "json" {
		return writeSymbolsJSON(cmd.OutOrStdout(), objs)
	}
	return writeSymbolsText(cmd.OutOrStdout(), objs, o.verbose)
}

// symbolJSON is one line of `list --symbols -o json`.
type symbolJSON struct {
	Path       string  `json:"path"`
	PID        int     `json:"pid,omitempty"`
	Name       string  `json:"name"`
	Demangled  *string `json:"demangled"`
	Address    string  `json:"address"`
	FileOffset *string `json:"file_offset"`
	Size       uint64  `json:"size"`
	Kind       string  `json:"kind"`
	Bind       string  `json:"bind"`
	Version    *string `json:"version"`
	Source     string  `json:"source"`
}

func writeSymbolsJSON(w io.Writer, objs []uprobe.Object) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, obj := range objs {
		for i := range obj.Symbols {
			s := &obj.Symbols[i]
			j := symbolJSON{
				Path:      escape.Name(obj.Path),
				PID:       obj.PID,
				Name:      escape.Name(s.Name),
				Demangled: strOrNil(escape.Name(s.Demangled)),
				Address:   *hex(s.Value),
				Size:      s.Size,
				Kind:      s.Kind.String(),
				Bind:      bindName(s),
				Version:   strOrNil(escape.Name(s.Version)),
				Source:    s.Source.String(),
			}
			if s.Offset != 0 {
				j.FileOffset = hex(s.Offset)
			}
			if err := enc.Encode(j); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// writeSymbolsText prints "PATH NAME" per symbol (demangled names for C++);
// verbose adds address, file offset, size, kind, binding and version.
func writeSymbolsText(w io.Writer, objs []uprobe.Object, verbose bool) error {
	bw := bufio.NewWriter(w)
	for _, obj := range objs {
		path := escape.Name(obj.Path)
		var sigs map[string]*gosig.Signature
		if verbose && obj.Go {
			sigs = goSignatures(&obj)
		}
		for i := range obj.Symbols {
			s := &obj.Symbols[i]
			if !verbose {
				fmt.Fprintf(bw, "%s %s\n", path, escape.Name(s.DisplayName()))
				continue
			}
			off := "-"
			if s.Offset != 0 {
				off = fmt.Sprintf("%#x", s.Offset)
			}
			name := s.DisplayName()
			if s.Version != "" {
				name += "@" + s.Version
			}
			fmt.Fprintf(bw, "%s %#x %s size=%d %s %s %s\n", path, s.Value, off, s.Size, s.Kind, bindName(s), escape.Name(name))
			if sig := sigs[s.Name]; sig != nil {
				fmt.Fprintf(bw, "  go: %s\n", sig)
			}
		}
	}
	return bw.Flush()
}

// bindName is "global", "local" or "weak".
func bindName(s *uprobe.Symbol) string {
	switch s.Bind.String() {
	case "STB_GLOBAL":
		return "global"
	case "STB_LOCAL":
		return "local"
	case "STB_WEAK":
		return "weak"
	}
	return s.Bind.String()
}

// goSignatures returns what usdtkit trace reads of the Go functions of obj,
// by name; nil if the binary cannot be read that way.
func goSignatures(obj *uprobe.Object) map[string]*gosig.Signature {
	var names []string
	for _, s := range obj.Symbols {
		if s.Kind == uprobe.SymFunc {
			names = append(names, s.Name)
		}
	}
	sigs, err := gosig.Signatures(obj, names)
	if err != nil {
		return nil
	}
	m := make(map[string]*gosig.Signature, len(sigs))
	for i := range sigs {
		m[sigs[i].Name] = &sigs[i]
	}
	return m
}
