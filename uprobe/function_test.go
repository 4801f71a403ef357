package uprobe

import (
	"testing"
)

func TestParseSelectorForms(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Selector
		str  string
	}{
		{"func", "uprobe:libc:malloc", Selector{Path: "libc", Func: "malloc"}, "uprobe:libc:malloc"},
		{"func+dec", "u:/bin/x:main+16", Selector{Path: "/bin/x", Func: "main", Offset: 16}, "uprobe:/bin/x:main+16"},
		{"func+hex", "u:/bin/x:main+0x10", Selector{Path: "/bin/x", Func: "main", Offset: 16}, "uprobe:/bin/x:main+16"},
		{"operator+", "u:x:operator+", Selector{Path: "x", Func: "operator+"}, "uprobe:x:operator+"},
		{"addr", "uprobe:/bin/x:0x401136", Selector{Path: "/bin/x", Func: "0x401136", Address: 0x401136}, "uprobe:/bin/x:0x401136"},
		{"ret", "ur:libc:mall*", Selector{Path: "libc", Func: "mall*", Return: true}, "uretprobe:libc:mall*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := ParseSelector(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if have != tt.want {
				t.Errorf("have %+v, want %+v", have, tt.want)
			}
			if s := have.String(); s != tt.str {
				t.Errorf("String: have %q, want %q", s, tt.str)
			}
		})
	}
	for _, bad := range []string{"uprobe:x:0xzz", "uprobe:x:0x0", "ur:x:0x1000", "ur:x:f+4"} {
		if _, err := ParseSelector(bad); err == nil {
			t.Errorf("%q: have no error", bad)
		}
	}
}

func TestSelectorMatchAddress(t *testing.T) {
	sel := Selector{Func: "0x1010", Address: 0x1010}
	tests := []struct {
		name string
		sym  Symbol
		want bool
	}{
		{"inside", Symbol{Name: "f", Value: 0x1000, Size: 0x20}, true},
		{"start", Symbol{Name: "g", Value: 0x1010}, true},
		{"past end", Symbol{Name: "h", Value: 0x1000, Size: 0x10}, false},
		{"after", Symbol{Name: "i", Value: 0x1011, Size: 4}, false},
	}
	for _, tt := range tests {
		if have := sel.MatchSymbol(&tt.sym); have != tt.want {
			t.Errorf("%s: have %v, want %v", tt.name, have, tt.want)
		}
	}
}

func TestFunctionSite(t *testing.T) {
	sym := Symbol{Name: "_Z1fi", Demangled: "f(int)", Value: 0x401000, Offset: 0x1000, Size: 0x40}
	tests := []struct {
		name    string
		fn      Function
		want    string
		wantOff uint64
		wantErr bool
	}{
		{"entry", Function{Symbol: sym}, "uprobe:f(int)", 0x1000, false},
		{"offset", Function{Symbol: sym, Delta: 8}, "uprobe:f(int)+8", 0x1008, false},
		{"return", Function{Symbol: sym, Return: true}, "uretprobe:f(int)", 0x1000, false},
		{"past end", Function{Symbol: sym, Delta: 0x40}, "uprobe:f(int)+64", 0, true},
		{"no file bytes", Function{Symbol: Symbol{Name: "g", Value: 0x10}}, "uprobe:g", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if have := tt.fn.Name(); have != tt.want {
				t.Errorf("Name: have %q, want %q", have, tt.want)
			}
			off, err := tt.fn.FileOffset()
			if (err != nil) != tt.wantErr || off != tt.wantOff {
				t.Errorf("FileOffset: have %#x, %v; want %#x, error %v", off, err, tt.wantOff, tt.wantErr)
			}
		})
	}
}
