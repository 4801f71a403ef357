package trace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/trace"
)

// TestReadProgram: a program file is a regular file of bounded size; a
// symlink to /dev/zero, a FIFO nobody writes, a directory and a file past
// MaxProgramSize are refused at once, with ErrProgramFile.
func TestReadProgram(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.bt")
	if err := os.WriteFile(good, []byte("BEGIN { exit(); }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.bt")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.bt")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.bt")
	if err := os.WriteFile(big, []byte(strings.Repeat("/* */", trace.MaxProgramSize/5+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		wantErr    bool
	}{
		{"regular", good, false},
		{"symlink to /dev/zero", zero, true},
		{"FIFO", fifo, true},
		{"directory", dir, true},
		{"too large", big, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			src, err := trace.ReadProgram(tt.path)
			if tt.wantErr {
				if !errors.Is(err, trace.ErrProgramFile) {
					t.Errorf("ReadProgram = %d bytes, %v; want ErrProgramFile", len(src), err)
				}
			} else if err != nil || src != "BEGIN { exit(); }\n" {
				t.Errorf("ReadProgram = %q, %v", src, err)
			}
			// Not a timing claim: a read that waited on the FIFO or read
			// /dev/zero would not return at all.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("ReadProgram took %v", d)
			}
		})
	}
}

// TestReadProgramFrom: standard input as a program (bpftrace's "-") is
// read to its end, and refused past MaxProgramSize.
func TestReadProgramFrom(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{"program", "BEGIN { exit(); }\n", false},
		{"empty", "", false},
		{"too large", strings.Repeat("/* */", trace.MaxProgramSize/5+1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := trace.ReadProgramFrom(strings.NewReader(tt.in))
			switch {
			case tt.wantErr && !errors.Is(err, trace.ErrProgramFile):
				t.Errorf("ReadProgramFrom = %d bytes, %v; want ErrProgramFile", len(src), err)
			case !tt.wantErr && (err != nil || src != tt.in):
				t.Errorf("ReadProgramFrom = %q, %v; want %q", src, err, tt.in)
			}
		})
	}
}
