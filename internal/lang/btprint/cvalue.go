package btprint

import (
	"encoding/binary"
	"strconv"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/lang/layout"
)

// cStyle is one of the three ways bpftrace 0.17 prints a struct, union or
// array: as a value ({ .a = 1, .b = [1,2] }), in a key ({.a=1,.b=[1,2]}),
// in JSON ({ "a": 1, "b": [1,2] }).
type cStyle uint8

const (
	cText cStyle = iota
	cKey
	cJSON
)

// AppendCKey appends the C value b, laid out as v says, as bpftrace
// prints it in a map's key: {.m=2,.n=3}, [1,2,3,4].
func AppendCKey(dst []byte, v *layout.CValue, b []byte) []byte {
	return appendC(dst, v, b, cKey)
}

// appendC appends the value of v's layout in b (zeros past its end).
func appendC(dst []byte, v *layout.CValue, b []byte, style cStyle) []byte {
	if v == nil {
		return dst
	}
	switch v.Kind {
	case layout.CInt, layout.CPtr:
		u := cUint(b, 0, v.Size)
		if v.Kind == layout.CInt && v.Signed {
			shift := 64 - 8*uint(v.Size)
			return strconv.AppendInt(dst, int64(u<<shift)>>shift, 10)
		}
		return strconv.AppendUint(dst, u, 10)
	case layout.CString:
		s := b[:min(len(b), v.Size)]
		for i, c := range s {
			if c == 0 {
				s = s[:i]
				break
			}
		}
		if style == cJSON {
			dst = append(dst, '"')
			dst = appendJSONEscaped(dst, string(s))
			return append(dst, '"')
		}
		return append(dst, escape.Control(string(s))...)
	case layout.CArray:
		dst = append(dst, '[')
		if v.Elem != nil {
			for i := range v.Len {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendC(dst, v.Elem, cSlice(b, i*v.Elem.Size, v.Elem.Size), style)
			}
		}
		return append(dst, ']')
	case layout.CRecord:
		open, sep, eq, end := "{ ", ", ", " = ", " }"
		switch style {
		case cKey:
			open, sep, eq, end = "{", ",", "=", "}"
		case cJSON:
			eq = ": "
		}
		dst = append(dst, open...)
		for i, f := range v.Fields {
			if i > 0 {
				dst = append(dst, sep...)
			}
			if style == cJSON {
				dst = append(dst, '"')
				dst = appendJSONEscaped(dst, f.Name)
				dst = append(dst, '"')
			} else {
				dst = append(dst, '.')
				dst = append(dst, f.Name...)
			}
			dst = append(dst, eq...)
			if f.Bits > 0 && f.Value != nil {
				u := cUint(b, f.Off, f.Value.Size) << (64 - uint(f.BitOff+f.Bits))
				if f.Value.Signed {
					dst = strconv.AppendInt(dst, int64(u)>>(64-uint(f.Bits)), 10)
				} else {
					dst = strconv.AppendUint(dst, u>>(64-uint(f.Bits)), 10)
				}
				continue
			}
			if f.Value != nil {
				dst = appendC(dst, f.Value, cSlice(b, f.Off, f.Value.Size), style)
			}
		}
		return append(dst, end...)
	}
	return dst
}

// cSlice returns b[off:off+n], cut to what b holds.
func cSlice(b []byte, off, n int) []byte {
	if off >= len(b) {
		return nil
	}
	return b[off:min(len(b), off+n)]
}

// cUint reads the unsigned integer of size bytes at off in b, zeros past
// b's end, little endian as the traced processes (x86-64, arm64) store it.
func cUint(b []byte, off, size int) uint64 {
	var buf [8]byte
	copy(buf[:min(size, 8)], cSlice(b, off, size))
	return binary.LittleEndian.Uint64(buf[:])
}
