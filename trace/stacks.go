package trace

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/usdtkit/usdtkit/internal/lang/layout"
	"github.com/usdtkit/usdtkit/internal/stacks/symbolize"
)

// Frame is one symbolized frame of a user stack.
type Frame struct {
	// Addr is the instruction pointer (frame 0) or a return address.
	Addr uint64
	// Object is the file the address is in, as the process's maps name
	// it; "" for anonymous memory. Offset is Addr's offset in it.
	Object string
	Offset uint64
	// Symbol is the function (C++ demangled), "" if unknown; SymOffset
	// is Addr's offset from its start.
	Symbol    string
	SymOffset uint64
	// File and Line are the source position where known (Go, DWARF).
	File string
	Line int
	// Inlined marks a function inlined into the next frame's.
	Inlined bool
}

// MarshalJSON writes f as an object with stable keys, as usdtkit's JSON
// output gives frames: "address" ("0x" and hex), "object",
// "object_offset", "symbol", "offset" (SymOffset), "file", "line" and
// "inlined"; "" and 0 where unknown.
func (f Frame) MarshalJSON() ([]byte, error) {
	return json.Marshal(symbolize.Frame(f).JSON())
}

// StackCount is one entry of a map keyed by a stack (@[ustack] =
// count(), sum() or an integer): the stack and the entry's value.
type StackCount struct {
	// Map is the map's name, "@" for the anonymous map.
	Map string
	// PID is the process the stack is of.
	PID int
	// Frames are innermost first; empty when the stack was lost.
	Frames []Frame
	// Keys are the entry's other key fields as bpftrace prints them
	// (@[ustack, comm]: the comm), in key order.
	Keys []string
	// Value is the count, sum or integer, summed over CPUs.
	Value uint64
}

// Stacks returns, for flame graphs and profiles, every entry of the
// program's maps keyed by a stack, with each stack symbolized (with the
// mappings each process had when first seen, so stacks of processes that
// have exited keep their names). Call it after Run, before Close. A map
// key with several stacks gives its first.
func (t *Tracer) Stacks() ([]StackCount, error) {
	if t.r == nil {
		return nil, fmt.Errorf("stacks: tracer closed")
	}
	counts, err := t.r.StackCounts()
	if err != nil {
		return nil, fmt.Errorf("stacks: %w", err)
	}
	out := make([]StackCount, 0, len(counts))
	for _, c := range counts {
		sc := StackCount{Map: c.Map, PID: c.PID, Value: c.Value, Frames: make([]Frame, len(c.Frames))}
		for i, f := range c.Frames {
			sc.Frames[i] = Frame(f)
		}
		first := true
		for i, k := range c.Keys {
			if c.KeyKinds[i] == layout.KeyStack && first {
				first = false
				continue
			}
			if c.KeyKinds[i] == layout.KeyInt {
				sc.Keys = append(sc.Keys, strconv.FormatInt(k.Int, 10))
			} else {
				sc.Keys = append(sc.Keys, k.Str)
			}
		}
		out = append(out, sc)
	}
	return out, nil
}

// UnwindMethod says how often printf'd stacks were unwound through an
// object with a method: "cfi" (the object's call frame information) or
// "fp" (its frame pointers, for code without CFI such as JIT code).
type UnwindMethod struct {
	Object string // the object's path; "" for anonymous memory
	Method string
	Frames int
}

// UnwindMethods returns how printf'd stacks, and map keys with
// CompileOptions.Unwind UnwindCFI, were unwound so far, per object and
// method (for a verbose report), sorted by object and method. Map keys
// walked in the program (UnwindCFIBPF, UnwindFP) are not counted.
func (t *Tracer) UnwindMethods() []UnwindMethod {
	if t.r == nil {
		return nil
	}
	var out []UnwindMethod
	for _, m := range t.r.UnwindMethods() {
		out = append(out, UnwindMethod(m))
	}
	return out
}
