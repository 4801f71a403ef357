package main

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/elf/ldso"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// The workloads print nothing: a tracer's lines and the -c command's
// share stdout, and could be cut into each other.

// tlsClient makes three TLS handshakes with a local server that does not
// speak TLS: each calls libssl's SSL_do_handshake, which fails.
const tlsClient = `import socket, ssl, threading
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen()
def serve():
    for _ in range(3):
        c, _ = srv.accept()
        c.sendall(b"not tls\r\n\r\n")
        c.close()
threading.Thread(target=serve, daemon=True).start()
ctx = ssl.create_default_context()
for _ in range(3):
    s = socket.create_connection(srv.getsockname())
    try:
        ctx.wrap_socket(s, server_hostname="localhost")
    except (ssl.SSLError, OSError):
        pass
`

// resolver resolves localhost with getaddrinfo.
const resolver = `import socket
socket.getaddrinfo("localhost", 80)
`

// threadStarter starts and joins one thread (pthread_create).
const threadStarter = `import threading
t = threading.Thread(target=lambda: None)
t.start()
t.join()
`

// userSpaceTool tells a .bt tool that traces user space only: it has a
// uprobe, uretprobe or usdt probe and no kernel probe.
var (
	userProbeRE   = regexp.MustCompile(`(?m)^\s*(uprobe|uretprobe|usdt|u|ur|U):`)
	kernelProbeRE = regexp.MustCompile(`(?m)^\s*(kprobe|kretprobe|tracepoint|rawtracepoint|kfunc|kretfunc|fentry|fexit|software|hardware|k|kr|t|f|fr|s|h):`)
)

// debTool is how TestDebianToolsAgainstBpftrace runs one tool: the -c
// command and its stdin, the lines of output it compares (normalize), and
// lines bpftrace must print, so that two empty outputs cannot pass.
type debTool struct {
	command   func(t *testing.T) string
	stdin     string
	normalize func(out string) []string
	want      []string
	ourWant   []string // in usdtkit's output, where it is righter than bpftrace 0.17
	// refusedUnless, when it returns a reason, is why usdtkit refuses
	// the tool with the sentence refusal: a difference from bpftrace
	// that the test states.
	refusedUnless func(t *testing.T) (refusal string)
}

// TestDebianToolsAgainstBpftrace runs every user-space tool that Debian's
// bpftrace package ships, unchanged from the package, with `usdtkit trace
// -c CMD FILE.bt` and `bpftrace -c CMD FILE.bt` on the same workload, and
// compares what they print, leaving out times, PIDs and latencies. A new
// user-space tool in the package fails the test until it has a case.
func TestDebianToolsAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	dpkg := testutil.RequireTool(t, "dpkg-query")
	py := testutil.RequireFile(t, testutil.Python311)
	bin := usdtkitBin(t)
	list, err := exec.Command(dpkg, "-L", "bpftrace").Output()
	if err != nil {
		t.Fatalf("dpkg-query -L bpftrace: %v", err)
	}
	script := func(name, src string) func(t *testing.T) string {
		return func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			return py + " " + path
		}
	}
	tools := map[string]debTool{
		"bashreadline": {
			command: func(t *testing.T) string { return testutil.RequireFile(t, "/bin/bash") + " --norc -i" },
			stdin:   "echo hi there >/dev/null\nexit\n",
			// TIME PID COMMAND
			normalize: fields(`^\d\d:\d\d:\d\d\s+\d+\s+(.*)$`, "$1", ""),
			want:      []string{"echo hi there >/dev/null", "exit"},
		},
		"gethostlatency": {
			command: script("resolve.py", resolver),
			// TIME PID COMM LATms HOST; the library's functions of
			// every process, in bpftrace's -c trace.
			normalize: fields(`^\d\d:\d\d:\d\d\s+\d+\s+(\S+)\s+\d+\s+(.*)$`, "$1 $2", "python3.11 "),
			want:      []string{"python3.11 localhost"},
		},
		"sslsnoop": {
			command: script("tls.py", tlsClient),
			// TIME(us) TID COMM LAT(us) RET FUNC
			normalize: fields(`^\d+\s+\d+\s+(\S+)\s+\d+\s+(-?\d+)\s+(\S+)$`, "$1 $2 $3", "python3.11 "),
			want:      []string{"python3.11 -1 SSL_do_handshake"},
		},
		"ssllatency": {
			command: script("tls.py", tlsClient),
			// The maps' names and counts: bpftrace 0.17 prints their
			// func keys of a -c trace as bare addresses, and the
			// latencies differ between two runs.
			normalize: fields(`^@(\w+)\[[^\]]*\]: count (\d+),`, "@$1 count $2", ""),
			want:      []string{"@statF count 3"},
			ourWant:   []string{"@statF[SSL_do_handshake]: count 3,"},
		},
		"threadsnoop": {
			command: script("thread.py", threadStarter),
			// TIME(ms) PID COMM FUNC
			normalize: fields(`^\d+\s+\d+\s+(\S+)\s+(\S+)$`, "$1 $2", "python3.11 "),
			refusedUnless: func(t *testing.T) string {
				// Since glibc 2.34, libpthread.so.0 is a stub and
				// pthread_create is libc's: bpftrace 0.17 then
				// attaches no uprobe and prints nothing, usdtkit says
				// why.
				path, err := ldso.Find("libpthread", nil)
				if err != nil {
					t.Fatalf("libpthread: %v", err)
				}
				if hasSymbol(t, path, "pthread_create") {
					return ""
				}
				return "uprobe:libpthread:pthread_create: matches nothing"
			},
			want: []string{"python3.11 "},
		},
	}
	found := 0
	for _, path := range strings.Fields(string(list)) {
		if !strings.HasSuffix(path, ".bt") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !userProbeRE.Match(src) || kernelProbeRE.Match(src) {
			continue
		}
		found++
		name := strings.TrimSuffix(filepath.Base(path), ".bt")
		tool, ok := tools[name]
		if !ok {
			t.Errorf("Debian's %s traces user space and has no case here", path)
			continue
		}
		t.Run(name, func(t *testing.T) {
			command := tool.command(t)
			theirOut, _, err := runTool(t, tool.stdin, bpftrace, "-c", command, path)
			if err != nil {
				t.Fatalf("bpftrace: %v", err)
			}
			ourOut, ourErr, err := runTool(t, tool.stdin, bin, "trace", "-c", command, path)
			theirs := tool.normalize(theirOut)
			if tool.refusedUnless != nil {
				if refusal := tool.refusedUnless(t); refusal != "" {
					if err == nil || !strings.Contains(ourErr, refusal) {
						t.Errorf("usdtkit: %v, stderr %q; want it to fail with %q", err, ourErr, refusal)
					}
					if len(theirs) != 0 {
						t.Errorf("bpftrace printed %q; want nothing", theirs)
					}
					return
				}
			}
			if err != nil {
				t.Fatalf("usdtkit: %v\n%s", err, ourErr)
			}
			ours := tool.normalize(ourOut)
			if !sameLines(ours, theirs) {
				t.Errorf("have %q\nwant %q (bpftrace)\nusdtkit's stdout:\n%s\nbpftrace's:\n%s", ours, theirs, ourOut, theirOut)
			}
			for _, w := range tool.ourWant {
				if !strings.Contains(ourOut, w) {
					t.Errorf("usdtkit printed no %q:\n%s", w, ourOut)
				}
			}
			for _, w := range tool.want {
				if !slices.ContainsFunc(theirs, func(l string) bool {
					return strings.HasPrefix(l, w) || unresolvedRE.MatchString(l) && sameButAddress(w, l)
				}) {
					t.Errorf("bpftrace printed no %q: %q", w, theirs)
				}
			}
		})
	}
	if found < len(tools) {
		t.Errorf("found %d user-space tools in Debian's bpftrace package, want the %d this test knows", found, len(tools))
	}
}

// fields returns a normalizer: the lines of out that match re, each
// replaced by repl (regexp.Expand syntax), those that start with prefix
// only, sorted.
func fields(re, repl, prefix string) func(string) []string {
	rx := regexp.MustCompile(re)
	return func(out string) []string {
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			m := rx.FindStringSubmatchIndex(l)
			if m == nil {
				continue
			}
			v := string(rx.ExpandString(nil, repl, l, m))
			if strings.HasPrefix(v, prefix) {
				lines = append(lines, v)
			}
		}
		slices.Sort(lines)
		return lines
	}
}

// unresolvedRE is a line's last field where bpftrace printed an address
// for a symbol: bpftrace 0.17 names a func at print time, from the maps
// of the traced process, which under -c may have exited by then.
var unresolvedRE = regexp.MustCompile(` 0x[0-9a-f]+$`)

// sameLines reports whether ours and theirs hold the same lines, a line of
// theirs that ends in an address matching one of ours that is the same but
// for its last field.
func sameLines(ours, theirs []string) bool {
	if len(ours) != len(theirs) {
		return false
	}
	used := make([]bool, len(ours))
	// Whole lines first, so that an address cannot take a line that a
	// named one of theirs needs.
	var addressed []string
	for _, l := range theirs {
		if unresolvedRE.MatchString(l) {
			addressed = append(addressed, l)
			continue
		}
		if !take(ours, used, func(o string) bool { return o == l }) {
			return false
		}
	}
	for _, l := range addressed {
		if !take(ours, used, func(o string) bool { return sameButAddress(o, l) }) {
			return false
		}
	}
	return true
}

// take marks the first line of lines not yet used that match accepts, and
// reports whether there was one.
func take(lines []string, used []bool, match func(string) bool) bool {
	for i, l := range lines {
		if !used[i] && match(l) {
			used[i] = true
			return true
		}
	}
	return false
}

// sameButAddress reports whether line is theirs but for a last field that
// theirs printed as an address.
func sameButAddress(line, theirs string) bool {
	prefix := theirs[:strings.LastIndexByte(theirs, ' ')+1]
	return strings.HasPrefix(line, prefix) && !strings.Contains(line[len(prefix):], " ")
}

// runTool runs a tracer with stdin, for at most two minutes, and returns
// its stdout and stderr.
func runTool(t *testing.T, stdin, path string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	c := exec.CommandContext(ctx, path, args...)
	c.Stdin, c.Stdout, c.Stderr = strings.NewReader(stdin), &out, &errb
	err = c.Run()
	return out.String(), errb.String(), err
}

// hasSymbol reports whether the ELF file at path defines name.
func hasSymbol(t *testing.T, path, name string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, _ := read()
		for _, s := range syms {
			if (s.Name == name || strings.HasPrefix(s.Name, name+"@")) && s.Section != elf.SHN_UNDEF {
				return true
			}
		}
	}
	return false
}

func TestSameLines(t *testing.T) {
	for _, c := range []struct {
		ours, theirs []string
		want         bool
	}{
		{[]string{"p -1 f", "p -1 f"}, []string{"p -1 f", "p -1 f"}, true},
		{[]string{"p -1 f", "p -1 f"}, []string{"p -1 0x7f00", "p -1 f"}, true},
		{[]string{"p -1 f", "p 0 f"}, []string{"p -1 0x7f00", "p -1 f"}, false},
		{[]string{"p -1 f"}, []string{"p -1 f", "p -1 f"}, false},
		{[]string{"p -1 g"}, []string{"p -1 f"}, false},
		{[]string{"p -1 a b"}, []string{"p -1 0x10"}, false},
	} {
		if got := sameLines(c.ours, c.theirs); got != c.want {
			t.Errorf("sameLines(%q, %q) = %v, want %v", c.ours, c.theirs, got, c.want)
		}
	}
}
