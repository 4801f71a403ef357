package uprobe

import (
	"errors"
	"testing"
)

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in      string
		want    Selector
		wantErr bool
	}{
		{"uprobe:/usr/bin/python3.11:main", Selector{Path: "/usr/bin/python3.11", Func: "main"}, false},
		{"u:libc:mall*", Selector{Path: "libc", Func: "mall*"}, false},
		{"uretprobe:libc:malloc", Selector{Path: "libc", Func: "malloc", Return: true}, false},
		{"ur:libc:malloc", Selector{Path: "libc", Func: "malloc", Return: true}, false},
		{"uprobe:libstdc++:std::thread::detach*", Selector{Path: "libstdc++", Func: "std::thread::detach*"}, false},
		{"uprobe:./bin:main.(*Server).handle", Selector{Path: "./bin", Func: "main.(*Server).handle"}, false},
		{"uprobe:libc", Selector{}, true},
		{"uprobe:libc:", Selector{}, true},
		{"kprobe:libc:malloc", Selector{}, true},
		{"uprobe:libc:[", Selector{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			have, err := ParseSelector(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if have != tt.want {
				t.Errorf("have %+v, want %+v", have, tt.want)
			}
		})
	}
}

func TestSelectorMatchSymbol(t *testing.T) {
	detach := Symbol{Name: "_ZNSt6thread6detachEv", Demangled: "std::thread::detach()"}
	malloc := Symbol{Name: "malloc"}
	tests := []struct {
		sel  Selector
		sym  Symbol
		want bool
	}{
		{Selector{Func: "mall*"}, malloc, true},
		{Selector{Func: "free"}, malloc, false},
		{Selector{Func: "_ZNSt6thread*"}, detach, true},
		{Selector{Func: "std::thread::detach*"}, detach, true},
		{Selector{Func: "std::*"}, malloc, false},
		{Selector{Func: "*"}, malloc, true},
		{Selector{Func: "main.Map"}, Symbol{Name: "main.Map[go.shape.int]"}, true},
		{Selector{Func: "main.Map[go.shape.int]"}, Symbol{Name: "main.Map[go.shape.int]"}, true},
		{Selector{Func: "main.M*"}, Symbol{Name: "main.Map[go.shape.int]"}, true},
		{Selector{Func: "main.Ma"}, Symbol{Name: "main.Map[go.shape.int]"}, false},
	}
	for _, tt := range tests {
		if have := tt.sel.MatchSymbol(&tt.sym); have != tt.want {
			t.Errorf("%v.MatchSymbol(%s) = %v, want %v", tt.sel, tt.sym.DisplayName(), have, tt.want)
		}
	}
}

func TestListErrors(t *testing.T) {
	if _, err := List(nil); !errors.Is(err, ErrNoTarget) {
		t.Errorf("no target: err = %v, want ErrNoTarget", err)
	}
	if _, err := List(&ListOptions{Paths: []string{"libno-such-lib-xyz"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown library: err = %v, want ErrNotFound", err)
	}
}
