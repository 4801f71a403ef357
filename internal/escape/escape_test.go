package escape

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"function__entry", "function__entry"},
		{"caf\u00e9", "caf\u00e9"},
		{"a\x80b", `a\x80b`},
		{"tab\there", `tab\x09here`},
		{"esc\x1b[31m", `esc\x1b[31m`},
		{"del\x7f", `del\x7f`},
		{`back\slash`, `back\\slash`},
		{"c1\u0085", `c1\xc2\x85`},
		{"repl\uFFFD", `repl\xef\xbf\xbd`},
		{"", ""},
	}
	for _, tt := range tests {
		if have := Name(tt.in); have != tt.want {
			t.Errorf("Name(%q) = %q, want %q", tt.in, have, tt.want)
		}
		if have := Literal(Name(tt.in)); have != tt.in {
			t.Errorf("Literal(Name(%q)) = %q", tt.in, have)
		}
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, name string
		match         bool
	}{
		{`a\x80b`, "a\x80b", true},
		{`a\x80b`, "a\x81b", false},
		{`a\x80*`, "a\x80bcd", true},
		{`star\x2a`, "star*", true},
		{`star\x2a`, "starry", false},
		{`q\x3f`, "q?", true},
		{`q\x3f`, "qx", false},
		{`back\\slash`, `back\slash`, true},
		{`\\x41`, `\x41`, true},
		{`\\x41`, "A", false},
		{`\*`, "*", true},
		{`\x4`, "x4", true}, // not an escape: path.Match's \x
		{`colon\x3aname`, "colon:name", true},
	}
	for _, tt := range tests {
		ok, err := path.Match(Glob(tt.pattern), tt.name)
		if ok != tt.match || err != nil {
			t.Errorf("Match(Glob(%q) = %q, %q) = %v, %v; want %v", tt.pattern, Glob(tt.pattern), tt.name, ok, err, tt.match)
		}
	}
}

// FuzzRoundTrip: an escaped name prints as valid, printable UTF-8, reads
// back to itself, and as a selector glob selects itself (unless it holds
// glob metacharacters, which print as they are).
func FuzzRoundTrip(f *testing.F) {
	seeds, err := filepath.Glob("testdata/fuzz/FuzzRoundTrip/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/FuzzRoundTrip: %v", err)
	}
	for _, p := range seeds {
		if _, err := os.Stat(p); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := Name(s)
		if !clean(e) && !printable(e) {
			t.Errorf("Name(%q) = %q has unprintable runes", s, e)
		}
		if have := Literal(e); have != s {
			t.Errorf("Literal(Name(%q)) = %q", s, have)
		}
		// Glob metacharacters print as they are; a selector quotes them.
		if strings.ContainsAny(s, `*?[]`) {
			return
		}
		if ok, err := path.Match(Glob(e), s); !ok || err != nil {
			t.Errorf("Match(Glob(Name(%q)) = %q) = %v, %v", s, Glob(e), ok, err)
		}
	})
}

func printable(s string) bool {
	for _, r := range s {
		if r == '\uFFFD' || !isPrint(r) {
			return false
		}
	}
	return true
}

func isPrint(r rune) bool { return r >= 0x20 && r != 0x7f && (r < 0x80 || r > 0x9f) }

func TestControl(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"tab\tand\nnewline", "tab\tand\nnewline"},
		{"\x1b[2Jwiped", `\x1b[2Jwiped`},
		{"bell\a cr\r del\x7f", `bell\x07 cr\x0d del\x7f`},
		{"csi \u009b31m", `csi \xc2\x9b31m`},
		{"back\\slash, é, \xff", "back\\slash, é, \xff"},
		{"\u00a0 is printable", "\u00a0 is printable"},
	}
	for _, tt := range tests {
		if have := Control(tt.in); have != tt.want {
			t.Errorf("Control(%q) = %q, want %q", tt.in, have, tt.want)
		}
	}
}

// FuzzControl: Control's output holds no control character a terminal
// acts on, and text without one is returned as it is.
func FuzzControl(f *testing.F) {
	for _, s := range []string{"", "a\x1bb", "\xc2\x9b", "\xc2", "\t\n\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Control(s)
		if i := firstControl(out); i >= 0 {
			t.Fatalf("Control(%q) = %q keeps a control character at %d", s, out, i)
		}
		if firstControl(s) < 0 && out != s {
			t.Fatalf("Control(%q) = %q changed text without controls", s, out)
		}
	})
}
