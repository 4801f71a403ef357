package btlang

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseProbe(t *testing.T) {
	tests := []struct {
		src  string
		want Probe
	}{
		{"BEGIN", Probe{Kind: ProbeBegin}},
		{"END", Probe{Kind: ProbeEnd}},
		{"usdt:/usr/bin/python3:python:line", Probe{Kind: ProbeUSDT, Path: "/usr/bin/python3", Provider: "python", Name: "line"}},
		{"usdt:/usr/bin/python3:line", Probe{Kind: ProbeUSDT, Path: "/usr/bin/python3", Name: "line"}},
		{"usdt::python:line", Probe{Kind: ProbeUSDT, Provider: "python", Name: "line"}},
		{"U:./app:p:*", Probe{Kind: ProbeUSDT, Path: "./app", Provider: "p", Name: "*"}},
		{"uprobe:libc:malloc", Probe{Kind: ProbeUprobe, Path: "libc", Name: "malloc"}},
		{"u:libc:mall?c", Probe{Kind: ProbeUprobe, Path: "libc", Name: "mall?c"}},
		{"uprobe:libc:malloc+16", Probe{Kind: ProbeUprobe, Path: "libc", Name: "malloc", Offset: 16}},
		{"uprobe:libc:malloc+0x10", Probe{Kind: ProbeUprobe, Path: "libc", Name: "malloc", Offset: 16}},
		{`uprobe:./app:"main.(*Server).Handle"`, Probe{Kind: ProbeUprobe, Path: "./app", Name: "main.(*Server).Handle"}},
		{`uprobe:./app:main.(*Server).Handle`, Probe{Kind: ProbeUprobe, Path: "./app", Name: "main.(*Server).Handle"}},
		{`ur::main.(*Server[go.shape.int]).Get`, Probe{Kind: ProbeUretprobe, Name: "main.(*Server[go.shape.int]).Get"}},
		{`uprobe:./app:"ns::f(int)"+4`, Probe{Kind: ProbeUprobe, Path: "./app", Name: "ns::f(int)", Offset: 4}},
		{`uprobe:"/opt/my app/bin":"a+b"`, Probe{Kind: ProbeUprobe, Path: "/opt/my app/bin", Name: "a+b"}},
		{"uprobe:/bin/x:a[12]", Probe{Kind: ProbeUprobe, Path: "/bin/x", Name: "a[12]"}},
		{"ur:/bin/bash:readline", Probe{Kind: ProbeUretprobe, Path: "/bin/bash", Name: "readline"}},
		{"interval:s:5", Probe{Kind: ProbeInterval, Unit: "s", Period: 5}},
		{"i:ms:100", Probe{Kind: ProbeInterval, Unit: "ms", Period: 100}},
		{"profile:hz:99", Probe{Kind: ProbeProfile, Unit: "hz", Period: 99}},
		{"p:us:250", Probe{Kind: ProbeProfile, Unit: "us", Period: 250}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			prog, err := Parse("stdin", []byte(tt.src+" { }"))
			if err != nil {
				t.Fatal(err)
			}
			have := *prog.Blocks[0].Probes[0]
			if have.At != (Pos{"stdin", 1, 1}) {
				t.Errorf("position %v, want stdin:1:1", have.At)
			}
			have.At = Pos{}
			if !reflect.DeepEqual(have, tt.want) {
				t.Errorf("have %+v\nwant %+v", have, tt.want)
			}
			again, err := Parse("stdin", []byte(have.String()+" { }"))
			if err != nil {
				t.Fatalf("String %q does not parse: %v", have.String(), err)
			}
			back := *again.Blocks[0].Probes[0]
			back.At = Pos{}
			if !reflect.DeepEqual(back, tt.want) {
				t.Errorf("String %q parses to %+v", have.String(), back)
			}
		})
	}
}

func TestLiterals(t *testing.T) {
	tests := []struct {
		src  string
		want Expr
	}{
		{"42", &IntLit{Val: 42}},
		{"0x2A", &IntLit{Val: 42}},
		{"052", &IntLit{Val: 42}},
		{"0", &IntLit{Val: 0}},
		{"1_000", &IntLit{Val: 1000}},
		{"4e2", &IntLit{Val: 400}},
		{"18446744073709551615", &IntLit{Val: 1<<64 - 1}},
		// Durations, in nanoseconds (bpftrace 0.21 and later).
		{"2ns", &IntLit{Val: 2}},
		{"5us", &IntLit{Val: 5000}},
		{"100ms", &IntLit{Val: 100_000_000}},
		{"1s", &IntLit{Val: 1_000_000_000}},
		{"1m", &IntLit{Val: 60_000_000_000}},
		{"1h", &IntLit{Val: 3_600_000_000_000}},
		{"1d", &IntLit{Val: 86_400_000_000_000}},
		{"1_000ms", &IntLit{Val: 1_000_000_000}},
		{"1e3us", &IntLit{Val: 1_000_000}},
		{"0x1d", &IntLit{Val: 29}},
		{`"a\tb\n\\\"\x41\101\0"`, &StrLit{Val: "a\tb\n\\\"AA\x00"}},
		{`-1`, &Unary{Op: "-", X: &IntLit{Val: 1}}},
		{"1 - -1", &Binary{Op: "-", X: &IntLit{Val: 1}, Y: &Unary{Op: "-", X: &IntLit{Val: 1}}}},
		{"1 + 2 * 3", &Binary{Op: "+", X: &IntLit{Val: 1}, Y: &Binary{Op: "*", X: &IntLit{Val: 2}, Y: &IntLit{Val: 3}}}},
		{"1 - 2 - 3", &Binary{Op: "-", X: &Binary{Op: "-", X: &IntLit{Val: 1}, Y: &IntLit{Val: 2}}, Y: &IntLit{Val: 3}}},
		{"1 == 2 < 3", &Binary{Op: "==", X: &IntLit{Val: 1}, Y: &Binary{Op: "<", X: &IntLit{Val: 2}, Y: &IntLit{Val: 3}}}},
		{"1 | 2 ^ 3 & 4", &Binary{Op: "|", X: &IntLit{Val: 1}, Y: &Binary{Op: "^", X: &IntLit{Val: 2}, Y: &Binary{Op: "&", X: &IntLit{Val: 3}, Y: &IntLit{Val: 4}}}}},
		{"1 || 2 && 3", &Binary{Op: "||", X: &IntLit{Val: 1}, Y: &Binary{Op: "&&", X: &IntLit{Val: 2}, Y: &IntLit{Val: 3}}}},
		{"1 ? 2 : 3 ? 4 : 5", &Ternary{Cond: &IntLit{Val: 1}, Then: &IntLit{Val: 2}, Else: &Ternary{Cond: &IntLit{Val: 3}, Then: &IntLit{Val: 4}, Else: &IntLit{Val: 5}}}},
		{"(1, \"a\").1", &TupleIndex{X: &Tuple{Elems: []Expr{&IntLit{Val: 1}, &StrLit{Val: "a"}}}, Index: 1}},
		{"args.n", &ArgField{Name: "n"}},
		{"args->n", &ArgField{Name: "n", Arrow: true}},
		{"args.s.hits", &ArgField{Name: "s.hits"}},
		{"args.s->next->hits + 1", &Binary{Op: "+", X: &ArgField{Name: "s.next.hits"}, Y: &IntLit{Val: 1}}},
		{"arg11", &Builtin{Name: "arg11", Arg: 11}},
		{"ustack", &Builtin{Name: "ustack", Arg: -1}},
		{"@m[1, $x]", &MapRef{Name: "@m", Keys: []Expr{&IntLit{Val: 1}, &Var{Name: "$x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			prog, err := Parse("stdin", []byte("BEGIN { $v = "+tt.src+" }"))
			if err != nil {
				t.Fatal(err)
			}
			have := prog.Blocks[0].Body[0].(*Assign).Value
			stripPos(reflect.ValueOf(have))
			if !reflect.DeepEqual(have, tt.want) {
				t.Errorf("have %s (%#v)\nwant %s", ExprString(have), have, ExprString(tt.want))
			}
		})
	}
}

func TestErrorPositions(t *testing.T) {
	src := "BEGIN {\n\t@x = 1;\n\t@x = \"s\";\n\t$y = $z;\n}\n"
	_, err := Compile("prog.bt", []byte(src), nil)
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v is not an ErrorList", err)
	}
	want := "prog.bt:3:2: map @x holds int64; it cannot also be assigned string[2]\nprog.bt:4:7: $z is used before it is assigned"
	if err.Error() != want {
		t.Errorf("have\n%v\nwant\n%s", err, want)
	}
	var first *Error
	if !errors.As(err, &first) || first.Pos != (Pos{"prog.bt", 3, 2}) {
		t.Errorf("errors.As *Error: %v", first)
	}
}

func TestInspect(t *testing.T) {
	prog, err := Compile("stdin", []byte(`uprobe:libc:malloc /pid/ { if (arg0 > 1) { @[comm] = count(); } else { printf("%d\n", -arg0); } }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	Inspect(prog.Blocks[0], func(n Node) bool {
		kinds = append(kinds, reflect.TypeOf(n).Elem().Name())
		return true
	})
	want := []string{"ProbeBlock", "Probe", "Builtin", "If", "Binary", "Builtin", "IntLit",
		"Assign", "MapRef", "Builtin", "Call", "ExprStmt", "Call", "StrLit", "Unary", "Builtin"}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("have %v\nwant %v", kinds, want)
	}
}

func TestCheckOptions(t *testing.T) {
	prog, err := Parse("stdin", []byte(`uprobe:libc:open { @ = str(arg0); }`))
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(prog, &CheckOptions{StrLen: 2000}); err == nil {
		t.Error("StrLen 2000 accepted")
	}
	if err := Check(prog, &CheckOptions{StrLen: 128}); err != nil {
		t.Fatal(err)
	}
	if have := prog.Maps[0].Value.String(); have != "string[128]" {
		t.Errorf("map value %s, want string[128]", have)
	}
}

// TestParseExpr checks the fragments' entry points: names with
// ExprOptions.Names, lists, and an error for what follows an expression.
func TestParseExpr(t *testing.T) {
	tests := []struct {
		src   string
		names bool
		list  bool
		want  string // the expressions printed, "|" between; "" for an error
	}{
		{"arg1 >= 0x10", false, false, "arg1 >= 16"},
		{`str(arg0) != "a\x01"`, false, false, `str(arg0) != "a\001"`},
		{"n > 3", true, false, "args.n > 3"},
		{"s.hits >= -1", true, false, "args.s.hits >= (-1)"},
		{"pid", true, false, "args.pid"},
		{"str(arg0)", true, false, "str(arg0)"},
		{"n > 3", false, false, ""},
		{"arg0 ~ 1", false, false, ""},
		{"arg0, arg1", false, false, ""},
		{`"%s %d", path, n`, true, true, `"%s %d"|args.path|args.n`},
		{`"%d",`, false, true, ""},
		{"", false, false, ""},
	}
	for _, tt := range tests {
		opts := &ExprOptions{Names: tt.names}
		var es []Expr
		var err error
		if tt.list {
			es, err = ParseExprList("f", tt.src, opts)
		} else {
			var e Expr
			if e, err = ParseExpr("f", tt.src, opts); err == nil {
				es = []Expr{e}
			}
		}
		if tt.want == "" {
			var e *Error
			if !errors.As(err, &e) || e.Pos.File != "f" || e.Pos.Line != 1 {
				t.Errorf("%q: error %v, want an *Error at f:1", tt.src, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		have := ""
		for i, e := range es {
			if i > 0 {
				have += "|"
			}
			have += ExprString(e)
		}
		if have != tt.want {
			t.Errorf("%q: have %s, want %s", tt.src, have, tt.want)
		}
	}
}

// TestDurationErrors: a duration that overflows or has a unit bpftrace
// does not know is an error at the literal.
func TestDurationErrors(t *testing.T) {
	for _, src := range []string{"10000000000m", "1x", "5sec", "1ms_", "0x10ms2"} {
		_, err := Parse("stdin", []byte("begin { print("+src+"); }"))
		var list ErrorList
		if !errors.As(err, &list) || list[0].Pos.Col != 15 {
			t.Errorf("%s: have %v, want an error at 1:15", src, err)
		}
	}
}
