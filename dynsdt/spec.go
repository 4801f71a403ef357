package dynsdt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// MaxArgs is the most arguments a probe may have, as with sys/sdt.h.
const MaxArgs = elfnotes.MaxArgs

// ArgType is the type of one probe argument, as a probe's caller passes it
// in the C calling convention.
type ArgType uint8

const (
	ArgInvalid ArgType = iota
	Int8
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Bool
	// Pointer is an address (uintptr, unsafe.Pointer, void *).
	Pointer
	// String is passed as a pointer to a NUL-terminated copy (char *).
	String
	// Bytes is passed as a pointer to the data; tracers read it with a
	// length they know from another argument.
	Bytes
)

var argTypeNames = [...]string{"invalid", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool", "pointer", "string", "bytes"}

func (t ArgType) String() string {
	if int(t) < len(argTypeNames) {
		return argTypeNames[t]
	}
	return "ArgType(" + strconv.Itoa(int(t)) + ")"
}

// Size is the number of bytes the argument occupies in its register (the
// N of a USDT argument spec "[-]N@...").
func (t ArgType) Size() int {
	switch t {
	case Int8, Uint8, Bool:
		return 1
	case Int16, Uint16:
		return 2
	case Int32, Uint32:
		return 4
	case Int64, Uint64, Pointer, String, Bytes:
		return 8
	}
	return 0
}

// Signed reports whether tracers should sign-extend the argument.
func (t ArgType) Signed() bool {
	switch t {
	case Int8, Int16, Int32, Int64:
		return true
	}
	return false
}

// ProbeSpec declares one probe.
type ProbeSpec struct {
	// Name is the probe's name, "request__start"; it is also the symbol
	// of the stub that fires it. A C identifier.
	Name string
	Args []ArgType
}

// ProviderSpec declares a provider and its probes: the data that both the
// runtime (Load) and usdtkit gen turn into a shared object.
type ProviderSpec struct {
	// Name is the provider, "myapp". A C identifier.
	Name   string
	Probes []ProbeSpec
}

// ErrSpec is wrapped by Validate's errors.
var ErrSpec = errors.New("invalid provider spec")

// Validate checks names (C identifiers, unique probes), argument types and
// counts (at most MaxArgs).
func (p *ProviderSpec) Validate() error {
	if !isIdent(p.Name) {
		return fmt.Errorf("provider name %q is not a C identifier: %w", p.Name, ErrSpec)
	}
	seen := make(map[string]bool, len(p.Probes))
	for _, pr := range p.Probes {
		if !isIdent(pr.Name) {
			return fmt.Errorf("provider %s: probe name %q is not a C identifier: %w", p.Name, pr.Name, ErrSpec)
		}
		if seen[pr.Name] {
			return fmt.Errorf("provider %s: probe %s declared twice: %w", p.Name, pr.Name, ErrSpec)
		}
		seen[pr.Name] = true
		if len(pr.Args) > MaxArgs {
			return fmt.Errorf("provider %s: probe %s has %d arguments, at most %d: %w", p.Name, pr.Name, len(pr.Args), MaxArgs, ErrSpec)
		}
		for i, a := range pr.Args {
			if a.Size() == 0 {
				return fmt.Errorf("provider %s: probe %s: argument %d has type %v: %w", p.Name, pr.Name, i, a, ErrSpec)
			}
		}
	}
	return nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// ParseProbeSpec parses a probe declared on the command line,
// "name:type,type,..." with the names of ArgType.String ("int64", "string",
// "pointer"); "name" and "name:" declare a probe without arguments. Errors
// wrap ErrSpec.
func ParseProbeSpec(s string) (ProbeSpec, error) {
	name, list, _ := strings.Cut(s, ":")
	if !isIdent(name) {
		return ProbeSpec{}, fmt.Errorf("probe %q: name %q is not a C identifier: %w", s, name, ErrSpec)
	}
	pr := ProbeSpec{Name: name}
	if list == "" {
		return pr, nil
	}
	types := strings.Split(list, ",")
	if len(types) > MaxArgs {
		return ProbeSpec{}, fmt.Errorf("probe %q: %d arguments, at most %d: %w", s, len(types), MaxArgs, ErrSpec)
	}
	for i, ts := range types {
		a := parseArgType(strings.TrimSpace(ts))
		if a == ArgInvalid {
			return ProbeSpec{}, fmt.Errorf("probe %q: argument %d: unknown type %q (want one of %s): %w",
				s, i, ts, strings.Join(argTypeNames[1:], ", "), ErrSpec)
		}
		pr.Args = append(pr.Args, a)
	}
	return pr, nil
}

func parseArgType(s string) ArgType {
	for i, n := range argTypeNames {
		if i > 0 && n == s {
			return ArgType(i)
		}
	}
	return ArgInvalid
}
