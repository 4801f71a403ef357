package main

import (
	"strings"
	"testing"
)

// syntax26Programs are programs in bpftrace 0.26's syntax that 0.17 lacks,
// each with the whole output bpftrace documents for it (the expectations
// of its runtime tests for the same constructs).
var syntax26Programs = []struct {
	name string
	src  string
	want string
}{
	// begin and end, bpftrace's spelling since 0.23, with a predicate.
	{"begin_end", `begin { printf("hi\n"); } begin /0/ { printf("never\n"); } end { printf("bye\n"); } begin { exit(); }`, "hi\nbye\n"},
	// probe names the spelling as written.
	{"begin_probe", `begin { printf("%s\n", probe); exit(); }`, "begin\n"},
	// interval with bpftrace's us and hz units.
	{"interval_us", `interval:us:1000 { @n++; if (@n == 3) { printf("%d\n", @n); exit(); } } end { clear(@n); }`, "3\n"},
	{"interval_hz", `i:hz:200 { printf("%s\n", probe); exit(); }`, "interval:hz:200\n"},
	// Durations: integers of nanoseconds, in expressions and as an
	// interval's period.
	{"duration_values", `begin { print(1ms); print(2ns + 5us); printf("%d %d\n", 1s / 1ms, (uint64)100ms); exit(); }`, "1000000\n5002\n1000 100000000\n"},
	// let: a block's variable, 0 until assigned, hiding nothing; the
	// two programs of bpftrace's variable scope tests.
	{"let_scope", `begin { if (1) { $x = 1; } if (1) { let $x; if ($x) { $x = 5; } print($x); } exit(); }`, "0\n"},
	{"let_late", `begin { @a[1] = 1; if (1) { $x = 1; print(("a", $x)); } let $x; if (0) { $x = 3; } print(("c", $x)); clear(@a); exit(); }`, "(a, 1)\n(c, 0)\n"},
	// The same as bpftrace's scripts write them, if without parentheses.
	{"let_scope_script", "begin\n{\n  if 1 {\n    $x = 1;\n  }\n\n  if 1 {\n    let $x;\n    if $x {\n      $x = 5;\n    }\n    print($x);\n  }\n  exit();\n}\n", "0\n"},
	{"let_typed", `begin { let $a: int8 = (int8)200; let $b: uint16 = (uint16)-1; let $c = "str"; let $d: uint64; $d += 5; printf("%d %d %s %d\n", $a, $b, $c, $d); exit(); }`, "-56 65535 str 5\n"},
	{"let_loop", `begin { $i = 0; while ($i < 3) { let $n; if ($i == 0) { $n = 7; } printf("%d ", $n); $i++; } printf("\n"); exit(); }`, "7 0 0 \n"},
	// config blocks: maps printed at exit by default, and not with
	// print_maps_on_exit off.
	{"config_maps_default", `begin { @["test"] = count(); @test = 1; exit(); }`, "\n\n@[test]: 1\n@test: 1\n"},
	{"config_no_maps", `config = { print_maps_on_exit=0 } begin { @["test"] = count(); @test = 1; printf("x\n"); exit(); }`, "x\n"},
	{"interval_duration", `interval:10ms { @n++; if (@n == 2) { printf("%s %d\n", probe, @n); exit(); } } end { clear(@n); }`, "interval:us:10000 2\n"},
}

// TestProgramSyntax26 runs each of syntax26Programs and compares its
// output with what bpftrace 0.26 prints, but for the blank lines before
// the maps at exit, which its tests do not look at.
func TestProgramSyntax26(t *testing.T) {
	for _, tt := range syntax26Programs {
		t.Run(tt.name, func(t *testing.T) {
			have := strings.TrimRight(runProgramCLI(t, "trace", "-e", tt.src), "\n") + "\n"
			if have != tt.want {
				t.Errorf("output\nhave %q\nwant %q", have, tt.want)
			}
		})
	}
}
