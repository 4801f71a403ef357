package trace

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/golang/gofunc"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/proc/target"
	"github.com/usdtkit/usdtkit/uprobe"
)

// Go functions in programs.
//
// A uprobe on a Go function is a probe at its entry site, the first
// instruction after the stack check (package gofunc), where the register
// ABI's argument registers and the stack hold the parameters; programs
// read them by name, args.NAME, as the function's DWARF places them. A
// uretprobe on a Go function is never a uretprobe, which would replace a
// return address on a goroutine stack that the runtime moves (the program
// dies with "unexpected return pc"): it is a plain probe on each RET
// instruction of the function, where args.NAME are the results and
// retval the first result when it is an integer. goid reads the current
// goroutine's id through the g register.

// goBinary is a Go binary Compile reads, open until Compile returns.
type goBinary struct {
	file *os.File
	bin  *gofunc.Binary
}

// goBinary opens, once per Compile, the Go binary fn is in, checking that
// it is the file uprobe.Functions listed.
func (r *resolver) goBinary(fn *uprobe.Function) (*gofunc.Binary, error) {
	k := object{fn.Path, fn.PID, fn.Dev, fn.Inode}
	if b, ok := r.gobins[k]; ok {
		return b.bin, nil
	}
	f, err := target.Reopen(fn.Path, fn.PID, procfs.FileID{Dev: fn.Dev, Inode: fn.Inode})
	if err != nil {
		return nil, listError{err}
	}
	b, err := gofunc.Open(procfs.FDPath(f))
	if err != nil {
		f.Close()
		return nil, err
	}
	if r.gobins == nil {
		r.gobins = make(map[object]goBinary)
	}
	r.gobins[k] = goBinary{f, b}
	return b, nil
}

// closeGo closes the Go binaries Compile read.
func (r *resolver) closeGo() {
	for _, b := range r.gobins {
		b.bin.Close()
		b.file.Close()
	}
	r.gobins = nil
}

// goEventSpec is what the events of a block carry of Go functions.
type goEventSpec struct {
	fields  []string
	strings uint16
}

// prescan notes, before the program is checked, the field paths it reads
// (args.s.hits), which Go functions then provide as args.NAME, and what
// the events of blocks carry of Go functions.
func (r *resolver) prescan(prog *btlang.Program, events []*btgen.Event, fields [][]string) {
	for _, b := range prog.Blocks {
		btlang.Inspect(b, func(n btlang.Node) bool {
			if f, ok := n.(*btlang.ArgField); ok && strings.Contains(f.Name, ".") && !slices.Contains(r.fieldPaths, f.Name) {
				r.fieldPaths = append(r.fieldPaths, f.Name)
			}
			return true
		})
	}
	for i, b := range prog.Blocks {
		if i >= len(events) || events[i] == nil {
			continue
		}
		spec := &goEventSpec{strings: events[i].Strings}
		if i < len(fields) {
			spec.fields = fields[i]
		}
		if r.events == nil {
			r.events = make(map[*btlang.Probe]*goEventSpec)
		}
		for _, p := range b.Probes {
			r.events[p] = spec
		}
	}
}

// goFunction returns the sites of Go function fn and what a program can
// read there; when probe p's block sends events, each site's event
// arguments are the function's values (goEventLayout).
func (r *resolver) goFunction(fn *uprobe.Function, warn func(error), p *btlang.Probe) ([]btgen.Site, btlang.ProbeArgs, error) {
	var args btlang.ProbeArgs
	if strings.HasSuffix(fn.Symbol.Name, ".abi0") {
		// Assembly with the stack-based ABI0: no register holds g, and
		// DWARF has no parameters; its ABIInternal wrapper (the name
		// without .abi0) is the function Go code calls.
		warn(fmt.Errorf("%s in %s is an assembly function (ABI0): not traced; probe %s, which Go code calls", fn.Symbol.Name, fn.Path, strings.TrimSuffix(fn.Symbol.Name, ".abi0")))
		return nil, args, nil
	}
	b, err := r.goBinary(fn)
	if err != nil {
		return nil, args, err
	}
	gf, err := b.Func(fn.Symbol.Name)
	if err != nil {
		return nil, args, err
	}
	fname := fn.Symbol.DisplayName()
	name := functionProbe(fn).FullName()
	short := fname
	if fn.Delta != 0 {
		short += fmt.Sprintf("+%d", fn.Delta)
	}
	r.names[name] = probeName{short, fn.Path, fn.Delta == 0}
	for _, pr := range gf.Problems {
		warn(fmt.Errorf("%s: %s", name, pr))
	}
	var offs []uint64
	switch {
	case fn.Return && fn.Delta != 0:
		return nil, args, fmt.Errorf("%s in %s: a return probe must be at the function's start", fname, fn.Path)
	case fn.Return:
		if len(gf.Returns) == 0 {
			// A glob may match functions that never return.
			warn(fmt.Errorf("%s: no RET instruction (the function never returns): not traced", name))
			return nil, args, nil
		}
		for _, a := range gf.Returns {
			offs = append(offs, fn.Symbol.Offset+(a-gf.Entry))
		}
	case fn.Delta != 0:
		off, err := fn.FileOffset()
		if err != nil {
			return nil, args, err
		}
		if err := checkBoundary(fn); err != nil {
			return nil, args, err
		}
		offs = []uint64{off}
	default:
		offs = []uint64{fn.Symbol.Offset + (gf.Site - gf.Entry)}
	}
	args.Refuse = map[string]string{}
	values, what := gf.Params, "parameters"
	if fn.Return {
		values, what = gf.Results, "results"
	}
	args.Refuse["arg"] = fmt.Sprintf("arg0…arg11 are C ABI registers, which mean nothing in Go function %s; read its %s by name as args.NAME (%s)", fname, what, valueNames(values))
	site := btgen.Site{Probe: name, Func: fname}
	switch {
	case !b.DWARF:
		why := fmt.Sprintf("%s has no DWARF (built with -ldflags=-w or stripped), so the names and places of %s's %s are unknown", fn.Path, fname, what)
		args.Refuse["args"], args.Refuse["retval"] = why, why
	case fn.Delta != 0:
		args.Refuse["args"] = fmt.Sprintf("Go functions' parameters are read at their entry, not at an offset: use uprobe:%s:%s", fn.Path, fname)
	default:
		if err := goValues(fn, fname, values, &args, &site); err != nil {
			return nil, args, err
		}
		if !fn.Return {
			goFields(fn, fname, gf.Params, r.fieldPaths, &args, &site)
		}
	}
	if fn.Return && args.Refuse["retval"] == "" {
		if err := goRetval(fn, fname, gf.Results, &args, &site); err != nil {
			return nil, args, err
		}
	}
	if b.GoidOffset >= 0 {
		if site.GoID, err = argread.GoIDFetch(fn.Machine, b.GReg, b.GoidOffset); err != nil {
			return nil, args, err
		}
		args.GoID = true
	} else {
		args.Refuse["goid"] = fmt.Sprintf("%s does not say where runtime.g keeps the goroutine id (no DWARF)", fn.Path)
	}
	if ev := r.events[p]; ev != nil {
		if ev.strings != 0 {
			return nil, args, fmt.Errorf("%s is a Go function: its values are read by their types, not as C strings (EventProbe.Strings)", fname)
		}
		values, fields := gf, ev.fields
		if fn.Delta != 0 {
			// Inside the function, where DWARF does not say where the
			// values are: the hit and its goroutine only.
			values, fields = &gofunc.Func{}, nil
		}
		var layout *goLayout
		site.Args, site.Bytes, layout, err = goEventLayout(fn, values, b.GoidOffset, b.GReg, fields, warn)
		if err != nil {
			return nil, args, fmt.Errorf("%s: %w", fname, err)
		}
		layout.types = b.TypeNames()
		if r.goLayouts == nil {
			r.goLayouts = make(map[string]*goLayout)
		}
		r.goLayouts[name] = layout
	}
	var sites []btgen.Site
	for _, off := range offs {
		s := site
		s.Path, s.Offset = fn.Path, off
		// At the function's first instruction, ustack reads the caller.
		s.Entry = !fn.Return && fn.Delta == 0 && gf.Site == gf.Entry
		sites = append(sites, s)
	}
	return sites, args, nil
}

// goValues makes the parameters or results of a Go function args.NAME.
func goValues(fn *uprobe.Function, fname string, values []gofunc.Param, args *btlang.ProbeArgs, site *btgen.Site) error {
	structs := make(map[string]bool)
	for i := range values {
		p := &values[i]
		if p.Of != "" {
			// A struct passed by value, split into its fields.
			if !structs[p.Of] {
				structs[p.Of] = true
				args.Named = append(args.Named, btlang.NamedArg{Name: p.Of, Err: fmt.Sprintf("args.%s of %s has type %s, a struct passed by value, which programs cannot read; pass a pointer, or integers and strings", p.Of, fname, p.OfType)})
			}
			continue
		}
		na := btlang.NamedArg{Name: p.Name}
		nf := btgen.NamedFetch{Name: p.Name}
		var err error
		switch p.Kind {
		case gofunc.Int, gofunc.Uint, gofunc.Bool, gofunc.Pointer:
			na.Type = btlang.Type{Kind: btlang.KindInt, Size: 8, Signed: p.Kind == gofunc.Int}
			nf.Value, err = wordFetch(fn, p.Words[0], p.Size, p.Kind == gofunc.Int)
		case gofunc.String:
			na.Type = btlang.StringType(btlang.DefaultStrLen)
			if nf.Value, err = wordFetch(fn, p.Words[0], 8, false); err == nil {
				nf.Len, err = wordFetch(fn, p.Words[1], 8, false)
			}
		case gofunc.Slice, gofunc.Interface:
			na.Err = fmt.Sprintf("args.%s of %s has type %s, %s, which programs cannot read; they read integers, bools, pointers and strings", p.Name, fname, p.Type, map[gofunc.Kind]string{gofunc.Slice: "a slice", gofunc.Interface: "an interface"}[p.Kind])
		default:
			na.Err = fmt.Sprintf("args.%s of %s (%s) cannot be read: %s", p.Name, fname, p.Type, p.Reason)
		}
		if err != nil {
			na.Err = fmt.Sprintf("args.%s of %s (%s) cannot be read: %v", p.Name, fname, p.Type, err)
		}
		args.Named = append(args.Named, na)
		if na.Err == "" {
			site.Named = append(site.Named, nf)
		}
	}
	return nil
}

// goFields makes the field paths through pointer parameters a program
// reads args.NAME at the entry of fn: each path whose first name is a
// parameter of fn (others are not fn's to provide).
func goFields(fn *uprobe.Function, fname string, params []gofunc.Param, paths []string, args *btlang.ProbeArgs, site *btgen.Site) {
	for _, path := range paths {
		root, _, _ := strings.Cut(path, ".")
		if !slices.ContainsFunc(params, func(p gofunc.Param) bool { return p.Name == root }) {
			continue
		}
		f, v, err := goField(fn, params, path)
		if err != nil {
			args.Named = append(args.Named, btlang.NamedArg{Name: path, Err: fmt.Sprintf("args.%s of %s: %v", path, fname, err)})
			continue
		}
		args.Named = append(args.Named, btlang.NamedArg{Name: path, Type: btlang.Type{Kind: btlang.KindInt, Size: 8, Signed: v.kind == gofunc.Int}})
		site.Named = append(site.Named, btgen.NamedFetch{Name: path, Value: f})
	}
}

// goRetval makes the first result of a Go function retval when it is an
// integer.
func goRetval(fn *uprobe.Function, fname string, results []gofunc.Param, args *btlang.ProbeArgs, site *btgen.Site) error {
	if len(results) == 0 {
		args.Refuse["retval"] = fmt.Sprintf("Go function %s returns nothing", fname)
		return nil
	}
	p := &results[0]
	switch {
	case p.Of != "":
		args.Refuse["retval"] = fmt.Sprintf("retval is a Go function's first result when it is an integer; that of %s has type %s, a struct", fname, p.OfType)
		return nil
	case p.Kind != gofunc.Int && p.Kind != gofunc.Uint && p.Kind != gofunc.Bool && p.Kind != gofunc.Pointer:
		args.Refuse["retval"] = fmt.Sprintf("retval is a Go function's first result when it is an integer; that of %s has type %s: read it as args.%s", fname, p.Type, p.Name)
		return nil
	}
	f, err := wordFetch(fn, p.Words[0], p.Size, p.Kind == gofunc.Int)
	if err != nil {
		args.Refuse["retval"] = fmt.Sprintf("the first result of %s cannot be read: %v", fname, err)
		return nil
	}
	site.Ret = f
	return nil
}

func wordFetch(fn *uprobe.Function, w gofunc.Word, size int64, signed bool) (argread.Fetch, error) {
	return argread.WordFetch(fn.Machine, w.Reg, w.SPOffset, size, signed)
}

// valueNames lists the names of values for messages.
func valueNames(ps []gofunc.Param) string {
	if len(ps) == 0 {
		return "it has none"
	}
	var names []string
	seen := make(map[string]bool)
	for i := range ps {
		n := ps[i].Name
		if ps[i].Of != "" {
			n = ps[i].Of
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return "it has " + strings.Join(names, ", ")
}

// mergeGoArgs narrows a, what one Go function of a probe provides, to
// what b, another one, provides too: the names both have (a name of two
// types cannot be read), goid if both have it, the first reason to refuse.
func mergeGoArgs(a, b btlang.ProbeArgs, fa, fb string) btlang.ProbeArgs {
	var named []btlang.NamedArg
	for _, x := range a.Named {
		for _, y := range b.Named {
			if x.Name != y.Name {
				continue
			}
			if x.Err == "" && y.Err != "" {
				x = y
			} else if x.Err == "" && !x.Type.Equal(y.Type) {
				x.Err = fmt.Sprintf("args.%s is %s in %s but %s in %s", x.Name, x.Type, fa, y.Type, fb)
			}
			named = append(named, x)
		}
	}
	a.Named = named
	a.GoID = a.GoID && b.GoID
	for k, v := range b.Refuse {
		if a.Refuse[k] == "" {
			a.Refuse[k] = v
		}
	}
	return a
}
