package elfnotes

import (
	"errors"
	"fmt"
)

// ErrNoSegment is wrapped by [File.AddrToOffset] when no PT_LOAD segment
// holds file bytes for the address: it lies in no segment, in the
// zero-filled tail of one (.bss), or the file is a separate debug file whose
// segments carry no data. [File.OffsetToAddr] wraps it when no PT_LOAD
// segment holds the file offset.
var ErrNoSegment = errors.New("no PT_LOAD segment with file data contains the address")

// ErrNotELF is wrapped by the *FormatError of [NewFile] and [Open] when the
// data does not start with the ELF magic number: the file is something else
// altogether rather than a damaged ELF file.
var ErrNotELF = errors.New("not an ELF file")

// A FormatError reports malformed ELF or note data. Off is the byte offset in
// the file (or, for [ParseStapsdt], in the descriptor) where the problem was
// found, so that readelf or xxd can confirm it. Val, when not nil, is the
// offending value.
type FormatError struct {
	Off int64
	Msg string
	Val any
	// Err is a sentinel the error refines ([ErrNotELF]), or nil.
	Err error
}

// Unwrap returns e.Err.
func (e *FormatError) Unwrap() error { return e.Err }

func (e *FormatError) Error() string {
	msg := e.Msg
	if e.Val != nil {
		msg += fmt.Sprintf(" '%v'", e.Val)
	}
	return msg + fmt.Sprintf(" at byte %#x", e.Off)
}

func formatErr(off int64, msg string, val any) error {
	return &FormatError{Off: off, Msg: msg, Val: val}
}

// ErrLimit is wrapped by the *FormatError warning that reports a file with
// more notes, or more bytes of notes, than the package reads ([MaxNotes],
// [MaxNoteBytes]).
var ErrLimit = errors.New("limit on notes reached")
