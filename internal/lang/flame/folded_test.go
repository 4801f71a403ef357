package flame_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/flame"
)

func folded(t *testing.T, samples []flame.Sample) string {
	t.Helper()
	var b bytes.Buffer
	if err := flame.Write(&b, flame.Folded, samples, nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteFolded(t *testing.T) {
	tests := []struct {
		name    string
		samples []flame.Sample
		want    string
	}{
		{"demo", demo(), `gosrv;runtime.main;main.main;main.work;main.add 15
server;__libc_start_call_main;main;level1;LHello:::run 7
server;__libc_start_call_main;main;level1;[libc.so.6+0x12345] 8
server;__libc_start_call_main;main;level1;level2;level3;leaf 20
server;__libc_start_call_main;main;level1;level2;level3;leaf;malloc 40
server;__libc_start_call_main;main;level1;level2;std::vector<int, std::allocator<int> >::push_back(int const&) 10
`},
		{"merged", []flame.Sample{
			{Frames: []flame.Frame{fr("b"), fr("a")}, Count: 2},
			{Frames: []flame.Frame{fr("b"), fr("a")}, Count: 3},
			{Frames: []flame.Frame{fr("a")}, Count: 1},
		}, "a 1\na;b 5\n"},
		{"escaped", []flame.Sample{
			{Frames: []flame.Frame{{Symbol: "x;y\nz\tw\n"}, {Symbol: " a b"}}, Count: 1, Root: "r;1"},
			{Frames: []flame.Frame{{Symbol: "\n\t "}}, Count: 2},
		}, "[unknown] 2\nr:1;a b;x:y z w 1\n"},
		{"unknown", []flame.Sample{
			{Frames: []flame.Frame{{Addr: 0xdead}, {Object: "[vdso]", Offset: 0x10}, {Object: "/x/lib.so (deleted)", Offset: 0xa}}, Count: 1},
		}, "[lib.so+0xa];[vdso+0x10];0xdead 1\n"},
		{"skipped", []flame.Sample{{Count: 5}, {Frames: []flame.Frame{fr("a")}}}, ""},
		{"root only", []flame.Sample{{Root: "idle", Count: 4}}, "idle 4\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if have := folded(t, tt.samples); have != tt.want {
				t.Errorf("have\n%s\nwant\n%s", have, tt.want)
			}
		})
	}
}

func TestParseFolded(t *testing.T) {
	in := "main;work;leaf 3\r\n\nmain;a b(int) 2\nmain\t7\n"
	got, err := flame.ParseFolded(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []flame.Sample{
		{Frames: []flame.Frame{{Symbol: "leaf"}, {Symbol: "work"}, {Symbol: "main"}}, Count: 3},
		{Frames: []flame.Frame{{Symbol: "a b(int)"}, {Symbol: "main"}}, Count: 2},
		{Frames: []flame.Frame{{Symbol: "main"}}, Count: 7},
	}
	if len(got) != len(want) {
		t.Fatalf("have %d samples, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if have, want := folded(t, got[i:i+1]), folded(t, want[i:i+1]); have != want {
			t.Errorf("sample %d: have %q, want %q", i, have, want)
		}
	}
	// Write∘Parse is the identity on WriteFolded's output.
	out := folded(t, demo())
	back, err := flame.ParseFolded(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if have := folded(t, back); have != out {
		t.Errorf("round trip: have\n%s\nwant\n%s", have, out)
	}
}

func TestParseFoldedErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		off      int64
	}{
		{"no count", "a;b\n", 1, 0},
		{"bad count", "ok 1\na;b x\n", 2, 5},
		{"negative", "a -1\n", 1, 0},
		{"empty frame", "a;;b 1\n", 1, 0},
		{"empty stack", " 1\n", 1, 0},
		{"too long", "a 1\n" + strings.Repeat("x", flame.MaxFoldedLine+1) + " 1\n", 2, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := flame.ParseFolded(strings.NewReader(tt.in))
			var fe *flame.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("have %v, want a *FormatError", err)
			}
			if fe.Line != tt.line || fe.Off != tt.off {
				t.Errorf("have line %d byte %d, want line %d byte %d (%v)", fe.Line, fe.Off, tt.line, tt.off, err)
			}
			if s != nil {
				t.Errorf("have samples %v with an error", s)
			}
		})
	}
}

func TestWriteFormat(t *testing.T) {
	var b bytes.Buffer
	err := flame.Write(&b, "svg", demo(), nil)
	if !errors.Is(err, flame.ErrFormat) || b.Len() != 0 {
		t.Errorf("have %v and %d bytes, want ErrFormat and nothing written", err, b.Len())
	}
	for _, f := range flame.Formats() {
		g, err := flame.ParseFormat(string(f))
		if err != nil || g != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, g, err)
		}
		b.Reset()
		if err := flame.Write(&b, f, demo(), nil); err != nil || b.Len() == 0 {
			t.Errorf("Write(%s): %v, %d bytes", f, err, b.Len())
		}
	}
	if _, err := flame.ParseFormat("flame.html"); !errors.Is(err, flame.ErrFormat) {
		t.Errorf("ParseFormat(flame.html): have %v, want ErrFormat", err)
	}
}
