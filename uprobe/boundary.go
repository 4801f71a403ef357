package uprobe

import (
	"errors"
	"fmt"
	"io"

	"github.com/usdtkit/usdtkit/internal/elf/insn"
)

// ErrNotBoundary is wrapped by CheckBoundary for a site inside a function
// (FUNC+OFFSET, 0xADDR) that is not the start of an instruction: a uprobe
// there would overwrite part of an instruction and change what the program
// does.
var ErrNotBoundary = errors.New("not an instruction boundary")

// maxDecode bounds the code CheckBoundary reads and decodes.
const maxDecode = 1 << 20

// CheckBoundary returns an error wrapping ErrNotBoundary when fn's site is
// inside an instruction, naming the boundaries around it. The function's
// code is decoded from its first byte (see package insn), read from file,
// the object the tracer opened once and attaches through.
func (fn *Function) CheckBoundary(file io.ReaderAt) error {
	if fn.Delta == 0 {
		return nil
	}
	n := fn.Delta + insn.MaxX86Len
	if fn.Symbol.Size != 0 {
		n = min(n, fn.Symbol.Size)
	}
	// A symbol of unknown size bounds nothing: decode at most maxDecode
	// bytes rather than as many as the offset the user typed.
	if n > maxDecode {
		return fmt.Errorf("%s in %s: offset %d is too far from the symbol's start to check that it starts an instruction (at most %d)", fn.Name(), fn.Path, fn.Delta, maxDecode-insn.MaxX86Len)
	}
	code := make([]byte, n)
	k, err := file.ReadAt(code, int64(fn.Symbol.Offset))
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s in %s: read code: %w", fn.Name(), fn.Path, err)
	}
	ok, prev, next, err := insn.Boundary(fn.Machine, code[:k], fn.Delta)
	if err != nil {
		return fmt.Errorf("%s in %s: cannot tell whether offset %d starts an instruction: %w", fn.Name(), fn.Path, fn.Delta, err)
	}
	if ok {
		return nil
	}
	name := fn.Symbol.DisplayName()
	return fmt.Errorf("%s in %s: %w (the nearest are %s+%d and %s+%d)", fn.Name(), fn.Path, ErrNotBoundary, name, prev, name, next)
}
