package elfnotes

import (
	"bytes"
	"errors"
	"testing"
)

func TestNewFileNotELF(t *testing.T) {
	tests := []struct {
		name   string
		data   []byte
		notELF bool
	}{
		{"text", []byte("#!/bin/sh\necho hi\n"), true},
		{"empty", nil, true},
		{"short magic", []byte("\x7fEL"), true},
		{"truncated ident", []byte("\x7fELF\x02"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewFile(bytes.NewReader(tt.data))
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want *FormatError", err)
			}
			if have := errors.Is(err, ErrNotELF); have != tt.notELF {
				t.Errorf("errors.Is(%v, ErrNotELF) = %v, want %v", err, have, tt.notELF)
			}
		})
	}
}
