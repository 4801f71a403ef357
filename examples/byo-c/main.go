// Command byo-c attaches a BPF program written in C against libbpf's
// <bpf/usdt.bpf.h> to a USDT probe with usdtlink. byo_x86_bpfel.o is
// committed, so building needs no clang. It prints one line per hit: the
// cookie, the argument count and the arguments.
//
//	byo-c [-p PID] [-s N] TARGET PROVIDER:NAME
//
// TARGET is a file, a library short name ("libc"), or "" with -p. -s N
// reads argument N as a string.
package main

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -type event byo byo.bpf.c -- -I/usr/include/x86_64-linux-gnu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/cilium/ebpf/ringbuf"

	"github.com/usdtkit/usdtkit/usdtlink"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "byo-c:", err)
		os.Exit(1)
	}
}

func run() error {
	pid := flag.Int("p", 0, "process to trace")
	str := flag.Int("s", -1, "argument to read as a string")
	flag.Parse()
	if flag.NArg() != 2 {
		return errors.New("usage: byo-c [-p PID] [-s N] TARGET PROVIDER:NAME")
	}
	provider, name, ok := strings.Cut(flag.Arg(1), ":")
	if !ok {
		return fmt.Errorf("%q is not PROVIDER:NAME", flag.Arg(1))
	}

	// bpf2go embeds the object; usdtlink's loader makes usdt.bpf.h's
	// objects loadable by cilium/ebpf (weak maps, LINUX_HAS_BPF_COOKIE).
	spec, err := usdtlink.LoadCollectionSpecFromReader(bytes.NewReader(_ByoBytes))
	if err != nil {
		return err
	}
	var objs byoObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return err
	}
	defer objs.Close()

	link, err := usdtlink.Attach(objs.Handle, objs.BpfUsdtSpecs, flag.Arg(0), provider, name,
		&usdtlink.Options{PID: *pid, Cookie: uint64(*str + 1)})
	if err != nil {
		return err
	}
	defer link.Close()
	fmt.Printf("attached %d sites\n", link.Sites())

	rd, err := ringbuf.NewReader(objs.Events)
	if err != nil {
		return err
	}
	defer rd.Close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; rd.Close() }()

	for {
		rec, err := rd.Read()
		if errors.Is(err, ringbuf.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		var e byoEvent
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.NativeEndian, &e); err != nil {
			return err
		}
		fmt.Print(format(&e))
	}
}

// format prints an event: "cookie C args N: A0 A1 ... [str S]".
func format(e *byoEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cookie %d args %d:", e.Cookie, e.Cnt)
	for i := 0; i < int(e.Cnt) && i < len(e.Args); i++ {
		fmt.Fprintf(&b, " %d", e.Args[i])
	}
	if e.Str[0] != 0 {
		var s []byte
		for _, c := range e.Str {
			if c == 0 {
				break
			}
			s = append(s, byte(c))
		}
		fmt.Fprintf(&b, " str %q", s)
	}
	b.WriteByte('\n')
	return b.String()
}
