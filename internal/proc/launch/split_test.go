package launch

import (
	"errors"
	"slices"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"ls -l", []string{"ls", "-l"}},
		{"  a\t b\n", []string{"a", "b"}},
		{`python3.11 -c "import gc; gc.collect()"`, []string{"python3.11", "-c", "import gc; gc.collect()"}},
		{`echo 'a "b" c'`, []string{"echo", `a "b" c`}},
		{`echo "a \"b\" \$x \n"`, []string{"echo", `a "b" $x \n`}},
		{`a\ b c`, []string{"a b", "c"}},
		{`x''y ""`, []string{"xy", ""}},
		{"", nil},
	}
	for _, tt := range tests {
		have, err := SplitCommand(tt.in)
		if err != nil || !slices.Equal(have, tt.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tt.in, have, err, tt.want)
		}
	}
	for _, in := range []string{`'open`, `"open`, `trailing\`} {
		if _, err := SplitCommand(in); !errors.Is(err, ErrCommandSyntax) {
			t.Errorf("SplitCommand(%q): err = %v, want ErrCommandSyntax", in, err)
		}
	}
}

func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{`a "b c" 'd'`, `x\ y`, `"\""`, `'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitCommand(s)
		if err != nil && words != nil {
			t.Fatalf("error %v with words %q", err, words)
		}
	})
}
