package unwind

import "errors"

var errTruncated = errors.New("truncated operand")

// operands reads the operands of DWARF expressions and CFA programs:
// LEB128 numbers and fixed-size little-endian constants (the byte order
// of the machines we unwind). Reads past the end fail with errTruncated.
type operands struct {
	b   []byte
	pos int
}

func (o *operands) done() bool { return o.pos >= len(o.b) }

func (o *operands) byte() (byte, error) {
	if o.pos >= len(o.b) {
		return 0, errTruncated
	}
	o.pos++
	return o.b[o.pos-1], nil
}

// leb reads a LEB128 number: its low 64 bits, the number of bits it
// has and its last byte (whose 0x40 is a signed number's sign).
func (o *operands) leb() (v uint64, shift uint, last byte, err error) {
	for o.pos < len(o.b) {
		b := o.b[o.pos]
		o.pos++
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			return v, shift, b, nil
		}
	}
	return 0, 0, 0, errTruncated
}

func (o *operands) uleb() (uint64, error) {
	v, _, _, err := o.leb()
	return v, err
}

func (o *operands) sleb() (int64, error) {
	v, shift, last, err := o.leb()
	if err != nil {
		return 0, err
	}
	if shift < 64 && last&0x40 != 0 {
		v |= ^uint64(0) << shift
	}
	return int64(v), nil
}

// fixed reads a size-byte constant, sign-extended when signed.
func (o *operands) fixed(size int, signed bool) (uint64, error) {
	if len(o.b)-o.pos < size {
		return 0, errTruncated
	}
	var v uint64
	for i := size - 1; i >= 0; i-- {
		v = v<<8 | uint64(o.b[o.pos+i])
	}
	o.pos += size
	if signed && size < 8 {
		sh := uint(64 - 8*size)
		v = uint64(int64(v<<sh) >> sh)
	}
	return v, nil
}

// block reads a ULEB128 length and that many bytes.
func (o *operands) block() ([]byte, error) {
	n, err := o.uleb()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(o.b)-o.pos) {
		return nil, errTruncated
	}
	b := o.b[o.pos : o.pos+int(n)]
	o.pos += int(n)
	return b, nil
}
