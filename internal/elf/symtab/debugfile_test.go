package symtab

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
)

func TestParseDebuglink(t *testing.T) {
	le := binary.LittleEndian
	tests := []struct {
		name    string
		in      []byte
		want    string
		crc     uint32
		wantErr bool
	}{
		{"padded", append([]byte("ab.debug\x00\x00\x00\x00"), 1, 2, 3, 4), "ab.debug", 0x04030201, false},
		{"no padding needed", append([]byte("abc\x00"), 4, 3, 2, 1), "abc", 0x01020304, false},
		{"no CRC", []byte("abc\x00"), "", 0, true},
		{"no NUL", []byte("abcdefgh"), "", 0, true},
		{"empty name", []byte("\x00\x00\x00\x00\x01\x02\x03\x04"), "", 0, true},
		{"directory", append([]byte("../x\x00\x00\x00\x00"), 1, 2, 3, 4), "", 0, true},
		{"dot dot", append([]byte("..\x00\x00"), 1, 2, 3, 4), "", 0, true},
		{"too large", make([]byte, maxDebuglink+1), "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, crc, err := ParseDebuglink(tt.in, le)
			var fe *elfnotes.FormatError
			if tt.wantErr != (err != nil) || (err != nil && !errors.As(err, &fe)) {
				t.Fatalf("err = %v, want a FormatError: %v", err, tt.wantErr)
			}
			if name != tt.want || crc != tt.crc {
				t.Errorf("have %q %#x, want %q %#x", name, crc, tt.want, tt.crc)
			}
		})
	}
}

// FuzzParseDebuglink checks that no input panics ParseDebuglink, that it
// returns a plain file name or a FormatError within the input, never both.
// Seeds: testdata/debuglink*.bin.
func FuzzParseDebuglink(f *testing.F) {
	files, err := filepath.Glob("testdata/debuglink*.bin")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata/debuglink*.bin (%v)", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		name, crc, err := ParseDebuglink(data, binary.LittleEndian)
		if err != nil {
			var fe *elfnotes.FormatError
			if !errors.As(err, &fe) || fe.Off < 0 || fe.Off > int64(len(data)) {
				t.Fatalf("err = %v, want a FormatError inside the input", err)
			}
			if name != "" || crc != 0 {
				t.Fatalf("error %v with result %q %#x", err, name, crc)
			}
			return
		}
		if name == "" || filepath.Base(name) != name || name == ".." {
			t.Fatalf("name %q is not a plain file name", name)
		}
	})
}
