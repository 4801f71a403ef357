package symbolize

import (
	"encoding/json"
	"strconv"
)

// FrameJSON is a frame as usdtkit's JSON output gives it: one object with
// stable keys, every key present.
//
//	address        "0x…", the address in hex
//	object         Frame.Object ("" when unknown)
//	object_offset  Frame.Offset
//	symbol         Frame.Symbol ("" when unknown)
//	offset         Frame.SymOffset (0 when the symbol is unknown)
//	file, line     Frame.File and Frame.Line ("" and 0 when unknown)
//	inlined        Frame.Inlined
type FrameJSON struct {
	Address      string `json:"address"`
	Object       string `json:"object"`
	ObjectOffset uint64 `json:"object_offset"`
	Symbol       string `json:"symbol"`
	Offset       uint64 `json:"offset"`
	File         string `json:"file"`
	Line         int    `json:"line"`
	Inlined      bool   `json:"inlined"`
}

// JSON returns f as FrameJSON.
func (f Frame) JSON() FrameJSON {
	return FrameJSON{
		Address: "0x" + strconv.FormatUint(f.Addr, 16), Object: f.Object, ObjectOffset: f.Offset,
		Symbol: f.Symbol, Offset: f.SymOffset, File: f.File, Line: f.Line, Inlined: f.Inlined,
	}
}

// AppendJSON appends frames as a JSON array of FrameJSON objects,
// innermost first. Names that are not valid UTF-8 have their bad bytes
// replaced by U+FFFD, as encoding/json does.
func AppendJSON(dst []byte, frames []Frame) []byte {
	js := make([]FrameJSON, len(frames))
	for i, f := range frames {
		js[i] = f.JSON()
	}
	b, err := json.Marshal(js)
	if err != nil {
		// Marshal fails only for types it cannot encode; FrameJSON has
		// none.
		return append(dst, "[]"...)
	}
	return append(dst, b...)
}
