package symtab

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// Read returns the symbols of f as [ReadPartial] does, but fails on the
// first problem ReadPartial would report as a warning: then the slice is
// nil and the error is that warning.
func Read(f *elfnotes.File) ([]Symbol, error) {
	syms, warnings, err := ReadPartial(f)
	if err != nil {
		return nil, err
	}
	if len(warnings) > 0 {
		return nil, warnings[0]
	}
	return syms, nil
}

// ReadPartial returns the defined symbols of f, of every type, sorted by
// Value, then Name, then Version (then in the order read). Undefined
// symbols (imports) and symbols without a name (section symbols) are
// skipped. A symbol in both .symtab and .dynsym (same name and value) is
// listed once. A Go binary without .symtab is read from its .gopclntab
// instead, together with its .dynsym, if any.
//
// Damage stays local, as in readelf: a table that cannot be read (bad
// sh_link, string table or entry size, contents past the end of the file)
// is skipped, and so is a symbol whose name lies outside its string table
// or whose version index names no version; damaged version sections leave
// the symbols that need them without a version. Each adds one warning, a
// *[elfnotes.FormatError] with the file offset of the bad entry or
// section, and the rest is returned.
//
// err wraps [ErrNoSymbols] if f has no table, or is an I/O error of the
// reader; then syms is nil. Otherwise syms is not nil, even when every
// table was damaged. It does not retain f.
func ReadPartial(f *elfnotes.File) (syms []Symbol, warnings []error, err error) {
	return ReadPartialDebug(f, nil)
}

// ReadPartialDebug is ReadPartial for an object whose separate debug file
// (see [OpenDebugFile]) is debug, or nil. When f has no .symtab with
// contents (it was stripped) and debug has one, that table takes the place
// of f's own, its symbols marked [SourceDebug]; the .dynsym and versions
// are still f's, merged as ReadPartial merges them. The debug file's
// symbol values are the object's virtual addresses, as objcopy
// --only-keep-debug keeps them.
func ReadPartialDebug(f, debug *elfnotes.File) (syms []Symbol, warnings []error, err error) {
	return ReadPartialWith(f, &ReadOptions{Debug: debug})
}

// ReadOptions says what [ReadPartialWith] reads.
type ReadOptions struct {
	// Debug is the object's separate debug file (see [OpenDebugFile]),
	// read as [ReadPartialDebug] reads it; nil for none.
	Debug *elfnotes.File
	// Keep, when not nil, selects the symbols read by their plain name
	// (the name without "@VERSION"): a symbol whose plain name Keep
	// rejects is skipped before its version is read, and is not kept. The
	// symbols returned are then exactly those of the whole list whose
	// plain name Keep accepts, in the same order and with the same
	// fields, since the entries merged into one symbol share a plain
	// name; warnings are those about the tables and the entries read.
	// Keep must not retain its argument. nil keeps every symbol.
	Keep func(plain string) bool
}

// ReadPartialWith is [ReadPartialDebug] with options; nil opts means
// ReadPartial. A plain name looked up with Keep costs one pass over the
// tables, without the sorting and merging of every symbol.
func ReadPartialWith(f *elfnotes.File, opts *ReadOptions) (syms []Symbol, warnings []error, err error) {
	if opts == nil {
		opts = &ReadOptions{}
	}
	debug := opts.Debug
	symtab := sectionOfType(f, elf.SHT_SYMTAB)
	dynsym := sectionOfType(f, elf.SHT_DYNSYM)

	r := &tableReader{f: f, keep: opts.Keep}
	// The first table read makes room for the .dynsym entries merged
	// after it, whose symbols would otherwise make the list grow again.
	reserve := 0
	if size := symEntSize(f.Class); dynsym != nil && size > 0 && dynsym.Type != elf.SHT_NOBITS && opts.Keep == nil {
		reserve = int(min(dynsym.Size/uint64(size), maxSymbols))
	}
	var out []Symbol
	var debugTab *elfnotes.Section
	if debug != nil && (symtab == nil || symtab.Type == elf.SHT_NOBITS) {
		if s := sectionOfType(debug, elf.SHT_SYMTAB); s != nil && s.Type != elf.SHT_NOBITS && debug.Class == f.Class {
			debugTab = s
		}
	}
	switch {
	case debugTab != nil:
		dr := &tableReader{f: debug, keep: opts.Keep, reserve: reserve}
		t, err := dr.table(debugTab, SourceDebug)
		if err == nil {
			out, _, err = dr.appendSyms(nil, t)
		}
		for _, w := range dr.warnings {
			r.warnings = append(r.warnings, fmt.Errorf("debug file: %w", w))
		}
		if err = r.warn(debugTab, err); err != nil {
			return nil, nil, err
		}
	case symtab != nil:
		t, err := r.table(symtab, SourceSymtab)
		if err == nil {
			r.reserve = reserve
			out, _, err = r.appendSyms(nil, t)
			r.reserve = 0
		}
		if err = r.warn(symtab, err); err != nil {
			return nil, nil, err
		}
	case IsGo(f) && gopclntabSection(f) != nil:
		var err error
		out, err = goSymbols(f)
		if err = r.warn(gopclntabSection(f), err); err != nil {
			return nil, nil, err
		}
		if r.keep != nil {
			out = slices.DeleteFunc(out, func(s Symbol) bool { return !r.keep(PlainName(s.Name)) })
		}
	case dynsym == nil:
		return nil, nil, ErrNoSymbols
	}

	if dynsym != nil {
		merged, err := r.mergeDynsym(dynsym, out)
		if err = r.warn(dynsym, err); err != nil {
			return nil, nil, err
		}
		if merged != nil {
			out = merged
		}
	}

	if out == nil {
		out = []Symbol{} // success is never nil, even with no symbols
	}
	sortSymbols(out)
	return out, r.warnings, nil
}

// warn records err, an error about section s, as a warning when it is
// about the file's contents (a FormatError), and returns it otherwise.
func (r *tableReader) warn(s *elfnotes.Section, err error) error {
	var fe *elfnotes.FormatError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe) || errors.Is(err, ErrNoSymbols):
		r.warnings = append(r.warnings, fmt.Errorf("%s: %w", s.Name, err))
		return nil
	}
	return fmt.Errorf("%s: %w", s.Name, err)
}

// PlainName returns name without the "@VERSION" or "@@VERSION" that ld
// writes into .symtab for symbols versioned with .symver: the name
// ReadOptions.Keep is given.
func PlainName(name string) string {
	plain, _ := splitVersion(name)
	return plain
}

// mergeDynsym adds the symbols of the .dynsym section dyn to out. An entry
// already in out (from .symtab, or earlier in .dynsym) with the same name
// and value is marked Dynamic and given its version instead of being added
// again.
func (r *tableReader) mergeDynsym(dyn *elfnotes.Section, out []Symbol) ([]Symbol, error) {
	t, err := r.table(dyn, SourceDynsym)
	if err != nil {
		return nil, err
	}
	n := len(out)
	out, hidden, err := r.appendSyms(out, t)
	if err != nil {
		return nil, err
	}
	type key struct {
		name  string
		value uint64
	}
	// Only a .symtab entry at the value of a .dynsym entry can be merged
	// with one: the others, most of a large .symtab, need no string key.
	var dynValues map[uint64]struct{}
	if n > 0 {
		dynValues = make(map[uint64]struct{}, len(out)-n)
		for _, e := range out[n:] {
			dynValues[e.Value] = struct{}{}
		}
	}
	var merging []int
	for i := range out[:n] {
		if _, ok := dynValues[out[i].Value]; ok {
			merging = append(merging, i)
		}
	}
	dynValues = nil
	seen := make(map[key]int, len(merging)+len(out)-n)
	for _, i := range merging {
		// ld writes versioned names into .symtab when the source used
		// .symver ("foo@V1", "foo@@V2"); .dynsym has the plain name.
		seen[key{PlainName(out[i].Name), out[i].Value}] = i
	}
	// glibc 2.34 moved libpthread's functions into libc, where each has
	// its old version and GLIBC_2.34 at one address: one symbol, listed
	// once with its default ("@@") version. isDefault[i] records that
	// out[i] has a default version.
	isDefault := make([]bool, len(out))
	w := n
	for j := n; j < len(out); j++ {
		e := out[j]
		h := hidden != nil && hidden[j-n]
		k := key{e.Name, e.Value}
		if i, ok := seen[k]; ok {
			switch {
			case out[i].Dynamic && (h || isDefault[i]):
				// Keep the first version, unless this is the default.
			case out[i].Source == SourceDynsym:
				// Versions at one address may differ in size
				// (glibc's sys_errlist grew with each one).
				out[i] = e
			default:
				out[i].Name = e.Name
				out[i].Dynamic = true
				out[i].Version = e.Version
			}
			isDefault[i] = isDefault[i] || !h
			continue
		}
		seen[k] = w
		isDefault[w] = !h
		out[w] = e
		w++
	}
	clear(out[w:]) // drop the strings of merged entries
	return out[:w], nil
}

// sortSymbols sorts syms by Value, Name and Version, and symbols equal in
// all three in their order in syms, so that the order does not depend on
// the sorting algorithm and a subset of syms (see ReadOptions.Keep) sorts
// as it does within the whole. Symbols are large: their values and indexes
// are sorted instead (a stable radix sort, so equal values keep the order
// of syms), then each run of one value by name, version and index, and
// each symbol is then moved once, along the cycles of the permutation.
func sortSymbols(syms []Symbol) {
	keys := make([]sortKey, len(syms))
	for i := range syms {
		keys[i] = sortKey{syms[i].Value, i}
	}
	keys = radixSort(keys)
	for lo := 0; lo < len(keys); {
		hi := lo + 1
		for hi < len(keys) && keys[hi].value == keys[lo].value {
			hi++
		}
		if hi-lo > 1 {
			slices.SortFunc(keys[lo:hi], func(a, b sortKey) int {
				x, y := &syms[a.i], &syms[b.i]
				return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.Version, y.Version), cmp.Compare(a.i, b.i))
			})
		}
		lo = hi
	}
	// syms[i] must become the old syms[keys[i].i]; -1 marks a placed slot.
	for i := range syms {
		if keys[i].i < 0 {
			continue
		}
		tmp := syms[i]
		j := i
		for {
			k := keys[j].i
			keys[j].i = -1
			if k == i {
				syms[j] = tmp
				break
			}
			syms[j] = syms[k]
			j = k
		}
	}
}

// sortKey is a symbol's value and its index in the list being sorted.
type sortKey struct {
	value uint64
	i     int
}

// radixSort sorts keys by value, keeping the order of equal values (an
// LSD radix sort a byte at a time, which skips the bytes all values
// share: in a symbol table, most of the high ones). It returns keys or
// a slice of the same length that replaces it.
func radixSort(keys []sortKey) []sortKey {
	if len(keys) < 2 {
		return keys
	}
	var diff uint64 // the bits in which some values differ
	for _, k := range keys {
		diff |= k.value ^ keys[0].value
	}
	tmp := make([]sortKey, len(keys))
	for shift := 0; shift < 64; shift += 8 {
		if (diff>>shift)&0xff == 0 {
			continue
		}
		var count [256]int
		for _, k := range keys {
			count[(k.value>>shift)&0xff]++
		}
		pos := 0
		for b, c := range count {
			count[b] = pos
			pos += c
		}
		for _, k := range keys {
			b := (k.value >> shift) & 0xff
			tmp[count[b]] = k
			count[b]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}
