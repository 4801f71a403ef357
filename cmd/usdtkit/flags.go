package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/internal/proc/launch"
)

// pidFlag is -p PID: a process ID above 0, given at most once.
type pidFlag struct {
	pid *int
	set bool
}

func (p *pidFlag) String() string {
	if p.pid == nil || *p.pid == 0 {
		return ""
	}
	return strconv.Itoa(*p.pid)
}

func (p *pidFlag) Type() string { return "PID" }

func (p *pidFlag) Set(s string) error {
	if p.set {
		return fmt.Errorf("-p is given twice: one process per run for now (several are planned)")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return fmt.Errorf("want a process ID above 0 (leave -p out to use every process that maps the file)")
	}
	*p.pid, p.set = n, true
	return nil
}

// pidsFlag is a repeatable -p PID: process IDs above 0.
type pidsFlag struct {
	pids *[]int
}

func (p *pidsFlag) String() string {
	if p.pids == nil {
		return ""
	}
	s := make([]string, len(*p.pids))
	for i, pid := range *p.pids {
		s[i] = strconv.Itoa(pid)
	}
	return strings.Join(s, ",")
}

func (p *pidsFlag) Type() string { return "PID" }

// Set reads one -p of trace, bpftrace's flag: a value it refuses is
// refused with its error line, word for word.
func (p *pidsFlag) Set(s string) error {
	n, err := parseBpftracePID(s)
	if err != nil {
		return err
	}
	*p.pids = append(*p.pids, n)
	return nil
}

// bpftracePIDMax is the largest PID bpftrace accepts (the kernel's
// PID_MAX_LIMIT on 64-bit machines).
const bpftracePIDMax = 4 * 1024 * 1024

// parseBpftracePID reads a PID as bpftrace's -p does: a decimal number
// (C's strtol: leading blanks and a sign allowed, nothing after) from 1
// to bpftracePIDMax.
func parseBpftracePID(s string) (int, error) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	digits := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(t, "+"), "-"), "0123456789")
	n, err := strconv.ParseInt(strings.TrimPrefix(t, "+"), 10, 64)
	switch {
	case t == "" || digits != "" || errors.Is(err, strconv.ErrSyntax):
		return 0, &bpftraceError{msg: fmt.Sprintf("ERROR: pid '%s' is not a valid decimal number", s)}
	case err != nil:
		return 0, &bpftraceError{msg: fmt.Sprintf("ERROR: pid '%s' outside of integer range", s)}
	case n < 1 || n > bpftracePIDMax:
		return 0, &bpftraceError{msg: fmt.Sprintf("ERROR: pid '%s' out of valid pid range [1,%d] (leave -p out to trace every process that maps the file)", s, bpftracePIDMax)}
	}
	return int(n), nil
}

// processOf returns the process that -p's PID names: a thread's ID
// (/proc/TID, as top -H shows it) means its process, which is said on
// stderr. A PID that does not exist is returned as it is, for the library
// to report.
func processOf(pid int, stderr io.Writer, verb string) int {
	if pid == 0 {
		return 0
	}
	tgid, err := launch.ThreadGroup(pid)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "usdtkit: warning: %v\n", err)
		}
		return pid
	}
	if tgid != pid {
		fmt.Fprintf(stderr, "usdtkit: %d is a thread of process %d; %s %d\n", pid, tgid, verb, tgid)
	}
	return tgid
}
