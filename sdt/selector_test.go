package sdt

import "testing"

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in      string
		want    Selector
		wantErr bool
	}{
		{"usdt:/usr/bin/python3.11:python:function__entry", Selector{"/usr/bin/python3.11", "python", "function__entry"}, false},
		{"usdt:*:python:function__*", Selector{"*", "python", "function__*"}, false},
		{"U:libc:setjmp", Selector{Path: "libc", Name: "setjmp"}, false},
		{"usdt::hotspot:*", Selector{"", "hotspot", "*"}, false},
		{"python:gc__start", Selector{Provider: "python", Name: "gc__start"}, false},
		{"usdt:a", Selector{}, true},
		{"usdt:a:b:c:d", Selector{}, true},
		{"a:b:c", Selector{}, true},
		{"usdt:x:[:y", Selector{}, true},
		// Escapes as listings print them: bytes, a quoted metacharacter,
		// a colon inside a name; \\ stays a glob escape.
		{`usdt:/tmp/a\x01b:p\x80:n\x3an`, Selector{"/tmp/a\x01b", "p\x80", "n:n"}, false},
		{`p:star\x2a`, Selector{Provider: "p", Name: `star\*`}, false},
		{`p:back\\slash`, Selector{Provider: "p", Name: `back\\slash`}, false},
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

func TestSelectorMatchProbe(t *testing.T) {
	tests := []struct {
		sel            Selector
		provider, name string
		want           bool
	}{
		{Selector{}, "python", "line", true},
		{Selector{Provider: "python", Name: "function__*"}, "python", "function__entry", true},
		{Selector{Provider: "python", Name: "function__*"}, "python", "line", false},
		{Selector{Provider: "hot*", Name: "*"}, "hotspot", "gc__begin", true},
		{Selector{Provider: "hot*", Name: "*"}, "python", "gc__start", false},
		{Selector{Name: "gc__[sd]*"}, "python", "gc__done", true},
	}
	for _, tt := range tests {
		if have := tt.sel.MatchProbe(tt.provider, tt.name); have != tt.want {
			t.Errorf("%v.MatchProbe(%q, %q) = %v, want %v", tt.sel, tt.provider, tt.name, have, tt.want)
		}
	}
}
