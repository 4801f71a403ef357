package btlang

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckMaps(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // Map.String of prog.Maps, sorted by name
	}{
		{"hist by pid", `uprobe:libc:malloc { @[pid] = hist(arg1); }`, []string{"@[uint64] hist(uint64)"}},
		{"ustack count", `uprobe:libc:malloc { @[ustack] = count(); }`, []string{"@[ustack[127]] count()"}},
		{"tuple key", `uprobe:libc:malloc { @[comm, pid] = hist(arg0); }`, []string{"@[string[16], uint64] hist(uint64)"}},
		{"string keys widen", `BEGIN { @["a"] = 1; @["abcdef"] = 2; }`, []string{"@[string[7]] int64"}},
		{"str length", `uprobe:libc:open { @[str(arg0, 16)] = count(); @s = str(arg0); }`,
			[]string{"@[string[17]] count()", "@s string[64]"}},
		{"lhist", `BEGIN { @l = lhist(-1 + 3, 0, 100, 10); }`, []string{"@l lhist(int64, 0, 100, 10)"}},
		{"signed sum", `BEGIN { @s = sum(-5); }`, []string{"@s sum(int64)"}},
		{"unsigned sum wins", `BEGIN { @s = sum(-5); @s = sum(nsecs); }`, []string{"@s sum(uint64)"}},
		{"compound is unsigned", `BEGIN { @y += 2; @x++; }`, []string{"@x int64", "@y uint64"}},
		{"tuple value", `BEGIN { @t = (1, "ab", comm); }`, []string{"@t (int64,string[3],string[16])"}},
		{"probe and func", `uprobe:libc:malloc { @[probe, func] = count(); }`, []string{"@[probe, usym] count()"}},
		{"read before assign", "uretprobe:libc:read { @l = hist(nsecs - @s[tid]); }\nuprobe:libc:read { @s[tid] = nsecs; }",
			[]string{"@l hist(uint64)", "@s[uint64] uint64"}},
		// bpftrace -d 'BEGIN { @a = @b + 1; } END { @b = -1; }': @a is
		// typed when first assigned, from a @b not typed yet: uint64.
		{"map from map", "BEGIN { @a = @b + 1; } END { @b = -1; }", []string{"@a uint64", "@b int64"}},
		{"comparison", `BEGIN { @c = "a" == "b"; @d = 1 < 2; @e = pid < 2; @f = 1 && 0; }`,
			[]string{"@c uint64", "@d int64", "@e uint64", "@f int64"}},
		{"ternary strings", `BEGIN { @t = 1 ? "a" : "abc"; }`, []string{"@t string[4]"}},
		{"args by name", `uprobe:./goapp:main.handle { @[args.n] = sum(args.name); }`, []string{"@[int64] sum(uint64)"}},
		{"mixed signs", `BEGIN { @m = -1 * nsecs; @n = -1 * 2; }`, []string{"@m uint64", "@n int64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := Parse("stdin", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(prog, &CheckOptions{Probes: fakeProbes{}}); err != nil {
				t.Fatal(err)
			}
			var have []string
			for _, m := range prog.Maps {
				have = append(have, m.String())
			}
			if strings.Join(have, "; ") != strings.Join(tt.want, "; ") {
				t.Errorf("maps\nhave %q\nwant %q", have, tt.want)
			}
		})
	}
}

// TestCheckTypes checks the type Check records in each expression of a
// block's first statement's value.
func TestCheckTypes(t *testing.T) {
	tests := []struct{ src, want string }{
		{`BEGIN { $x = 1 + 2; }`, "int64"},
		{`BEGIN { $x = 18446744073709551615; }`, "int64"},
		{`BEGIN { $x = pid + 1; }`, "uint64"},
		{`BEGIN { $x = -pid; }`, "uint64"},
		{`BEGIN { $x = -1; }`, "int64"},
		{`BEGIN { $x = ~pid; }`, "uint64"},
		{`BEGIN { $x = !1; }`, "uint64"},
		{`BEGIN { $x = comm; }`, "string[16]"},
		{`BEGIN { $x = "abc"; }`, "string[4]"},
		{`BEGIN { $x = (1, "a").1; }`, "string[2]"},
		{`uprobe:libc:malloc { $x = ustack(3); }`, "ustack[3]"},
		{`uretprobe:libc:malloc { $x = retval; }`, "uint64"},
		{`uprobe:libc:malloc { $x = str(arg0, 1000); }`, "string[64]"},
		{`uprobe:libc:malloc { $x = 1 ? arg0 : -1; }`, "uint64"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			prog, err := Parse("stdin", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(prog, nil); err != nil {
				t.Fatal(err)
			}
			a := prog.Blocks[0].Body[0].(*Assign)
			if have := a.Value.Type().String(); have != tt.want {
				t.Errorf("type of %s: have %s, want %s", ExprString(a.Value), have, tt.want)
			}
			v := a.Target.(*Var)
			if v.Decl == nil || v.Decl != prog.Blocks[0].Vars[0] || v.Type().String() != tt.want {
				t.Errorf("variable %s: Decl %v, type %s", v.Name, v.Decl, v.Type())
			}
		})
	}
}

// TestCheckErrorList checks every error Check reports, not only the
// first: one mistake gives one error.
func TestCheckErrorList(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"map only printed", `END { print(@never); }`, "stdin:1:13: map @never is used but never assigned"},
		{"map read", `BEGIN { @x = @never + 1; }`, "stdin:1:14: map @never is read but never assigned"},
		{"map read twice", `BEGIN { @x = @never + 1; @y = @never; }`,
			"stdin:1:14: map @never is read but never assigned\nstdin:1:31: map @never is read but never assigned"},
		{"map read and printed", `BEGIN { printf("%d\n", @never); } END { clear(@never); }`,
			"stdin:1:24: map @never is read but never assigned"},
		{"long literal", `BEGIN { @x = "` + strings.Repeat("x", 100) + `"; @y = @x; }`,
			"stdin:1:14: a string literal holds at most 63 bytes, as in bpftrace; this one has 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := compile(tt.src)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("errors\nhave %s\nwant %s", err, tt.want)
			}
		})
	}
}

// TestLet checks let declarations with bpftrace 0.26's scoping: a let is
// the variable of its block from there on, no declaration may shadow a
// name in scope, and a declared integer type converts the value.
func TestLet(t *testing.T) {
	ok := []string{
		`begin { let $x; $x = 1; print($x); }`,
		`begin { let $x = 1; print($x); }`,
		`begin { let $x: int8 = 1; print($x); }`,
		`begin { let $x: uint16 = (uint16)-1; print($x); }`,
		`begin { let $x: uint64; $x = 7; $x += 1; print($x); }`,
		`begin { let $x = "a"; $x = "longer"; print($x); }`,
		`begin { if (pid) { let $x = 1; } $x = 2; print($x); }`,
		`begin { if (pid) { let $x = 1; } else { let $x = 1; } let $x = 1; print($x); }`,
		`begin { let $x = 1; } end { let $x = 2; }`,
		`begin { if (1) { $x = 1; } if (1) { let $x; if ($x) { $x = 5; } print($x); } }`,
		`begin { if (1) { $x = 1; print($x); } let $x; if (0) { $x = 3; } print($x); }`,
		`begin { let $x; }`,
		`begin { $y = 3; let $x = $y + 1; print($x); }`,
	}
	for _, src := range ok {
		if _, err := Compile("stdin", []byte(src), nil); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	bad := []struct{ src, pos string }{
		{`begin { let $x = 1; { let $x = 2 } }`, ""},
		{`begin { let $x = 1; if (1) { let $x = 2; } }`, "1:34"},
		{`begin { $x = 1; if (1) { let $x = 2; } }`, "1:30"},
		{`begin { let $x = 1; let $x = 2; }`, "1:25"},
		{`begin { let $a: uint16 = -1; }`, "1:27"},
		{`begin { let $a: uint8 = 10000000; }`, "1:25"},
		{`begin { let $a: int8; $a = 1; }`, "1:23"},
		{`begin { let $x; print($x); }`, "1:23"},
		{`begin { let $x = 1; $x = "s"; }`, "1:21"},
		{`begin { if (1) { let $x = 1; } print($x); }`, "1:38"},
		{`begin { let @a = hash(1); }`, "1:13"},
		{`begin { let $x: string = 1; }`, "1:17"},
	}
	for _, tt := range bad {
		_, err := Compile("stdin", []byte(tt.src), nil)
		var list ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%s: have %v, want an error", tt.src, err)
			continue
		}
		if pos := fmt.Sprintf("%d:%d", list[0].Pos.Line, list[0].Pos.Col); tt.pos != "" && pos != tt.pos {
			t.Errorf("%s: error at %s (%v), want %s", tt.src, pos, list[0], tt.pos)
		}
	}
}

// TestLetString: a declaration prints as it parses.
func TestLetString(t *testing.T) {
	src := `begin { let $a; let $b: int8 = 1; let $c: uint64 *; let $d = 2; }`
	prog, err := Parse("stdin", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("stdin", []byte(prog.String()))
	if err != nil {
		t.Fatalf("%s: %v", prog, err)
	}
	if have, want := again.String(), prog.String(); have != want {
		t.Errorf("printed again\nhave %s\nwant %s", have, want)
	}
	for _, want := range []string{"let $a;", "let $b: int8 = 1;", "let $c: uint64 *;", "let $d = 2\n"} {
		if !strings.Contains(prog.String(), want) {
			t.Errorf("%s: no %q", prog, want)
		}
	}
}

// TestConfig checks config blocks: where they may stand, their syntax,
// and the options usdtkit applies or refuses.
func TestConfig(t *testing.T) {
	prog, err := Compile("stdin", []byte(`config = { BPFTRACE_MAX_STRLEN = 16; print_maps_on_exit=0; Stack_Mode=perf; cat_bytes_max = 100 } begin { @s = str(arg0); @k[ustack] = count(); }`), nil)
	if err == nil {
		t.Fatalf("arg0 in begin compiled")
	}
	prog, err = Compile("stdin", []byte(`config = { BPFTRACE_MAX_STRLEN = 16; print_maps_on_exit=false; Stack_Mode=perf; cat_bytes_max = 100; } uprobe:/bin/sh:main { @s = str(arg0); @k[ustack] = count(); }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{StrLen: 16, NoExitMaps: true, StackPerf: true, CatBytesMax: 100}
	if prog.Settings != want {
		t.Errorf("settings: have %+v, want %+v", prog.Settings, want)
	}
	for _, m := range prog.Maps {
		switch m.Name {
		case "@s":
			if m.Value.Size != 16 {
				t.Errorf("@s: have %s, want string[16]", m.Value)
			}
		case "@k":
			if !m.Keys[0].Perf {
				t.Errorf("@k: have %s, want a perf stack", m.Keys[0])
			}
		}
	}
	if _, err := Compile("stdin", []byte(`config = { on_stack_limit = 0; show_debug_info = false; } begin { exit(); }`), nil); err != nil {
		t.Errorf("on_stack_limit, show_debug_info off: %v", err)
	}
	// The caller's string length (the environment's) wins.
	prog, err = Compile("stdin", []byte(`config = { max_strlen = 16 } uprobe:/bin/sh:main { @s = str(arg0); }`), &CheckOptions{StrLen: 32})
	if err != nil {
		t.Fatal(err)
	}
	if v := prog.Maps[0].Value; v.Size != 32 {
		t.Errorf("with StrLen 32: have %s", v)
	}
	again, err := Parse("stdin", []byte(prog.String()))
	if err != nil || again.String() != prog.String() {
		t.Errorf("%s printed parses as %v, %v", prog, again, err)
	}
	bad := []struct{ src, pos string }{
		{`config = { bad_config=raw } begin {}`, "1:12"},
		{`config = { kernel_build = 1 } begin {}`, "1:12"},
		{`config = { max_map_keys = 1 } begin {}`, "1:12"},
		{`config = { show_debug_info = 1 } begin {}`, "1:12"},
		{`config = { on_stack_limit = x } begin {}`, "1:12"},
		{`config = { stack_mode = raw } begin {}`, "1:12"},
		{`config = { max_strlen = "hello" } begin {}`, "1:12"},
		{`config = { print_maps_on_exit = 2 } begin {}`, "1:12"},
		{`begin {} config = { max_strlen = 8 }`, "1:10"},
		{`config { max_strlen = 8 } begin {}`, "1:8"},
		{`config = { max_strlen = 8 stack_mode = perf } begin {}`, "1:27"},
		{`config = { @a = 1 } begin {}`, "1:12"},
	}
	for _, tt := range bad {
		_, err := Compile("stdin", []byte(tt.src), nil)
		var list ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%s: have %v, want an error", tt.src, err)
			continue
		}
		if pos := fmt.Sprintf("%d:%d", list[0].Pos.Line, list[0].Pos.Col); pos != tt.pos {
			t.Errorf("%s: error at %s (%v), want %s", tt.src, pos, list[0], tt.pos)
		}
	}
}
