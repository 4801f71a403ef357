package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// builtinPrograms run alone, without a target, under bpftrace 0.17 and
// usdtkit, whose outputs must be equal. FILE is a file the test writes
// (fileText) and json marks a program run with -f json / -o json.
var builtinPrograms = []struct {
	name   string
	src    string
	unsafe bool
	json   bool
	env    []string
	// stderr: the program's errors on stderr are compared too.
	stderr bool
	params []string
}{
	{name: "cat", src: `BEGIN { cat("FILE"); exit(); }`},
	{name: "cat format", src: `BEGIN { $d = "FILE"; cat("%s%s", $d, ""); cat("%s-%d", "FILE", 1); exit(); }`},
	{name: "cat bytes max", src: `BEGIN { cat("FILE"); exit(); }`, env: []string{"BPFTRACE_CAT_BYTES_MAX=3"}},
	{name: "cat missing", src: `BEGIN { cat("FILE.none"); printf("after\n"); exit(); }`, stderr: true},
	{name: "cat json", src: `BEGIN { cat("FILE"); cat("FILE.none"); exit(); }`, json: true},
	{name: "system", src: `BEGIN { system("echo %d %s; echo two", 1, "x"); system("printf 'no newline'"); exit(); }`, unsafe: true},
	{name: "username cgroup", src: `BEGIN { printf("%s|%8s|%d\n", username, username, cgroup); print(username); @c[cgroup] = count(); exit(); }`},
	{name: "ternary statement", src: `BEGIN { $x = 3; $x > 2 ? printf("yes\n") : printf("no\n"); $x > 5 ? printf("%d\n", $x) : print($x + 1); exit(); }`},
	{name: "positional string from byte K", src: `BEGIN { printf("%s|%s|%s\n", str($1 + 1), str($1 + 5), str($2 + 0)); exit(); }`, params: []string{"hello", "x"}},
	{name: "++ and -- as expressions", src: `BEGIN { $x = 10; @m = 5; printf("%d %d %d %d\n", $x++, ++$x, $x--, --$x); printf("%d %d %d\n", @m--, --@m, @k[1]++ + ++@k[1]); $i = 0; while ($i < 10) { @avg = avg($i++); } @last = $i; exit(); }`},
	{name: "buffers", src: `BEGIN { $a = buf("hi", 2); $b = buf("bye\001\n", 6); @m[buf("ok_key", 8), 1] = count(); @v = buf("value", 3); @h[buf("k", 2)] = hist(5); printf("%r|%rx|%rh|%r\n", $a, $b, $b, @v); $c = $b; printf("%d %d %d %d\n", $a == $a, $a != $b, $c == $b, $c != $a); $n = 4; @runtime = buf("abcdef", $n); exit(); }`},
	{name: "buffers json", src: `BEGIN { @m[buf("ok_key", 8)] = 1; @v = buf("a\tb", 3); exit(); }`, json: true},
	{name: "strcontains of literals", src: `BEGIN { if (strcontains("abc", "a")) { printf("OK\n"); } printf("%d %d %d %d\n", strcontains("abc", "bc"), strcontains("abc", "x"), strcontains("abc", ""), strcontains("", "a")); exit(); }`},
	// (The formats print hours at most: both tools estimate the boot
	// time, a few microseconds apart.)
	{name: "strftime", src: `BEGIN { $ts = strftime("%Y-%m-%d %H", nsecs); printf("%s|%s\n", $ts, strftime("%j %Y", 0)); print($ts); @k[strftime("%y/%m", nsecs)] = 1; @v[1] = $ts; @t = (1, strftime("%d", 86400000000000)); exit(); }`},
	// (bpftrace 0.17 writes a map's strftime() value in JSON unquoted,
	// and print()s it so too, which usdtkit does not: "2026", not 2026.)
	{name: "strftime json", src: `BEGIN { @k[strftime("%y/%m", nsecs)] = 1; exit(); }`, json: true},
	{name: "ntop pton", src: `BEGIN { printf("IP: %s, %s, %s, %s\n", ntop(1), ntop(0x0100007f), ntop(0xffff0000), ntop(0x0000ffff)); printf("%s|%s|%s\n", ntop(2, pton("127.0.0.1")), ntop(10, pton("::1")), ntop(10, pton("fe80::1:2"))); print(ntop(2, pton("10.1.2.3"))); exit() }`},
	{name: "usym values", src: `BEGIN { @ = usym(1); @a = @; @b[2] = usym(16); exit(); }`},
	{name: "tuples", src: tupleProgram},
	{name: "tuples json", src: tupleProgram, json: true},
	{name: "system json", src: `BEGIN { system("echo \"a\" b"); exit(); }`, unsafe: true, json: true},
}

// tupleProgram uses tuples in variables, map values (keyed and not, a
// string element that grows), print(), fields of fields and reads
// back from a map.
const tupleProgram = `BEGIN {
	$t = (1, (int8)-2, "str", (5, "x\"y"));
	print($t);
	printf("%d %d %s %d %s\n", $t.0, $t.1, $t.2, $t.3.0, $t.3.1);
	@m = $t;
	@n[3] = (1, "ab");
	@n[4] = (-7, "a longer one");
	@k = @m.3.1;
	@i = @m.3.0 + @n[4].0;
	@c = @n[3];
	print(((int32)-100, (uint8)300, "", ("nested", (1, 2))));
	exit();
}`

// fileText is what FILE holds: several lines, a tab and a quote for JSON.
const fileText = "first line\n\tsecond \"line\"\nthird\n"

func TestBuiltinsAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte(fileText), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file+"-1", []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range builtinPrograms {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.ReplaceAll(tt.src, "FILE", file)
			var btArgs, usArgs []string
			if tt.unsafe {
				btArgs, usArgs = append(btArgs, "--unsafe"), append(usArgs, "--unsafe")
			}
			if tt.json {
				btArgs, usArgs = append(btArgs, "-f", "json"), append(usArgs, "-o", "json")
			}
			for _, kv := range tt.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			btArgs, usArgs = append(btArgs, "-e", src), append(usArgs, "-e", src)
			if tt.params != nil {
				btArgs = append(append(btArgs, "--"), tt.params...)
				usArgs = append(append(usArgs, "--"), tt.params...)
			}
			theirs, theirErr := runBpftraceErr(t, bpftrace, btArgs...)
			run := startTrace(t, append([]string{"trace"}, usArgs...)...)
			code, ours, ourErr := run.wait(t)
			if code != 0 {
				t.Fatalf("usdtkit: exit %d: %s", code, ourErr)
			}
			if tt.json {
				theirs = dropLines(theirs, `{"type": "attached_probes"`)
			}
			if strings.TrimSpace(theirs) == "" {
				t.Errorf("bpftrace printed nothing")
			}
			if ours != theirs {
				t.Errorf("stdout differs:\n--- have\n%q\n--- want (bpftrace)\n%q", ours, theirs)
			}
			if tt.stderr {
				ourErr = dropLines(ourErr, "Tracing ")
				theirErr = dropLines(theirErr, "ERROR: Unknown error -1: couldn't set RLIMIT_MEMLOCK")
				if ourErr != theirErr {
					t.Errorf("stderr differs:\n--- have\n%q\n--- want (bpftrace)\n%q", ourErr, theirErr)
				}
			}
		})
	}
}

// dropLines returns s without the lines that start with prefix.
func dropLines(s, prefix string) string {
	var b strings.Builder
	for l := range strings.Lines(s) {
		if !strings.HasPrefix(l, prefix) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// runBpftraceErr runs bpftrace and returns its stdout without its
// "Attaching" line, and its stderr.
func runBpftraceErr(t *testing.T, bpftrace string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bpftrace, args...)
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bpftrace: %v\n%s", err, errb.String())
	}
	return dropLines(string(out), "Attaching "), errb.String()
}
