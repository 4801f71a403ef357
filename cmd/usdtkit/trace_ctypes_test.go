package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// buildCTypesTarget compiles testdata/ctypes.c (see its comment).
func buildCTypesTarget(t *testing.T) string {
	t.Helper()
	gcc := testutil.RequireTool(t, "gcc")
	out := filepath.Join(t.TempDir(), "ctypes")
	if b, err := exec.Command(gcc, "-O0", "-g", "-o", out, "testdata/ctypes.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

// cTypesDefs are testdata/ctypes.c's types as a program declares them.
const cTypesDefs = `struct inner { int16_t a; uint8_t b[3]; }
struct rec { int32_t id; char name[8]; struct inner in; int32_t grid[2][3]; int32_t *ptrs[2];
	struct rec *next; uint32_t lo:4, mid:8, hi:20; int8_t neg:3;
	union { uint32_t u; int16_t s[2]; } un; uint64_t big; }
`

// TestProgramCTypes runs programs that define C types and read the
// target's structs through them, under bpftrace 0.17 and usdtkit with -c,
// and compares what they print. BIN is the target's path; every program
// sees one call of visit(r, arr, pp).
func TestProgramCTypes(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	bin := buildCTypesTarget(t)
	for _, tc := range []struct {
		name, prog string
		json       bool
		// want is what both print; bpftrace's output is checked too.
		want string
	}{
		{name: "fields", prog: `uprobe:BIN:visit { $r = (struct rec *)arg0; printf("%d %s %d %d %d %d %d\n", $r->id, $r->name, $r->in.a, $r->in.b[2], $r->grid[1][2], *$r->ptrs[1], $r->ptrs[0][0]); }`,
			want: "-7 eightchr -300 250 22 -20 -40\n\n\n"},
		{name: "bit-fields and unions", prog: `uprobe:BIN:visit { $r = (struct rec *)arg0; printf("%d %d %d %u %d %d %lu\n", $r->lo, $r->mid, $r->hi, $r->un.u, $r->un.s[0], $r->un.s[1], $r->big); }`,
			want: "9 200 1000000 4294836227 3 -2 1099511627776\n\n\n"},
		{name: "pointer chains", prog: `uprobe:BIN:visit { $r = (struct rec *)arg0; $pp = (struct rec **)arg2; printf("%d %s %d %s %d\n", $r->next->id, $r->next->name, (*$pp)->id, $pp[0]->name, (*(struct rec *)arg0).in.a); }`,
			want: "2 second 2 second -300\n\n\n"},
		{name: "pointer arithmetic", prog: `uprobe:BIN:visit { $a = (int32 *)arg1; $r = (struct rec *)arg0; printf("%d %d %d %lu %lu\n", *($a + 2), $a[3], *(1 + $a), (uint64)($a + 3) - arg1, (uint64)($r + 1) - arg0); }`,
			want: "30 -40 -20 12 96\n\n\n"},
		{name: "pointers in maps", prog: `BEGIN { @a = (int16 *)32; @a++; @b = (int32 *)32; @b -= 6; @c = (struct rec *)1024; @c--; @d = (uint8 **)8; @d += 2; exit(); }`,
			want: "\n\n@a: 34\n@b: 8\n@c: 928\n@d: 24\n"},
		{name: "pointer increments", prog: `uprobe:BIN:visit { $a = (int32 *)arg1; printf("%d %d %d\n", *($a++), *$a, *(++$a)); @p = (int16 *)32; @q = @p++; @r = ++@p; }`,
			want: "10 -20 30\n\n\n@p: 36\n@q: 32\n@r: 36\n"},
		{name: "maps", prog: `uprobe:BIN:visit { $r = (struct rec *)arg0; @in = $r->in; @grid = $r->grid; @k[$r->grid[1], $r->in.a] = count(); @row[$r->grid[0]] = $r->grid[1]; @name = $r->name; @v[$r->next->name] = $r->in; @id = @v["second"].b[2]; }`,
			want: "\n\n@grid: [[-3,-2,1],[6,13,22]]\n@id: 250\n@in: { .a = -300, .b = [1,2,250] }\n@k[[6,13,22], -300]: 1\n@name: eightchr\n@row[[-3,-2,1]]: [6,13,22]\n@v[second]: { .a = -300, .b = [1,2,250] }\n"},
		{name: "print", prog: `uprobe:BIN:visit { $r = (struct rec *)arg0; print($r->in); print($r->grid); $in = $r->in; print($in); print($in.b); }`,
			want: "{ .a = -300, .b = [1,2,250] }\n[[-3,-2,1],[6,13,22]]\n{ .a = -300, .b = [1,2,250] }\n[1,2,250]\n\n\n"},
		{name: "json", json: true, prog: `uprobe:BIN:visit { $r = (struct rec *)arg0; print($r->in); print($r->grid); @in = $r->in; @k[$r->grid[0]] = 1; }`,
			want: "{\"type\": \"value\", \"data\": { \"a\": -300, \"b\": [1,2,250] }}\n{\"type\": \"value\", \"data\": [[-3,-2,1],[6,13,22]]}\n\n\n" +
				"{\"type\": \"map\", \"data\": {\"@in\": { \"a\": -300, \"b\": [1,2,250] }}}\n{\"type\": \"map\", \"data\": {\"@k\": {\"[-3,-2,1]\": 1}}}\n"},
		{name: "tuples", prog: `uprobe:BIN:visit { $r = (struct rec *)arg0; $t = ((int8)-1, $r->name, $r->in, ((int16)7, "x")); print($t); @t = (1, $r->grid[0]); @s = ("hello", 0); @s = ("hi", (int64)$t.3.0); printf("%d %s\n", $t.0, $t.1); printf("%d %s %d\n", $t.3.0, $t.3.1, sizeof($t)); }`,
			want: "(-1, eightchr, { .a = -300, .b = [1,2,250] }, (7, x))\n-1 eightchr\n7 x 20\n\n\n@s: (hi, 7)\n@t: (1, [-3,-2,1])\n"},
		{name: "tuples json", json: true, prog: `uprobe:BIN:visit { $r = (struct rec *)arg0; print((1, $r->in, "a\"b")); @t = (1, $r->grid[0], ("x", 2)); }`,
			want: "{\"type\": \"value\", \"data\": [1,{ \"a\": -300, \"b\": [1,2,250] },\"a\\\"b\"]}\n\n\n{\"type\": \"map\", \"data\": {\"@t\": [1,[-3,-2,1],[\"x\",2]]}}\n"},
		{name: "tuples of pointers", prog: `uprobe:BIN:visit { @u = ((int32 *)16, 2); $p = (struct rec *)arg0; print(((int16 *)16 + 2, 3, $p == (struct rec *)arg0)); }`,
			want: "(20, 3, 1)\n\n\n@u: (16, 2)\n"},
		{name: "sizeof", prog: `uprobe:BIN:visit { $r = (struct rec *)arg0; printf("%d %d %d %d %d %d\n", sizeof(struct rec), sizeof(struct inner), sizeof($r->grid), sizeof($r->un), sizeof($r->name), sizeof($r->in.b[0])); }`,
			want: "96 6 24 4 8 1\n\n\n"},
		{name: "array comparison", prog: `uprobe:BIN:visit { $r = (struct rec *)arg0; $in = $r->in; printf("%d %d %d %d\n", $r->grid[0] == $r->grid[1], $r->grid[0] != $r->grid[1], $r->grid[1] == $r->grid[1], $in.b[1]); }`,
			want: "0 1 1 2\n\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := cTypesDefs + strings.ReplaceAll(tc.prog, "BIN", bin)
			btArgs, usArgs := []string{"-c", bin}, []string{"trace", "-c", bin}
			if tc.json {
				btArgs, usArgs = append(btArgs, "-f", "json"), append(usArgs, "-o", "json")
			}
			theirs := runBpftrace(t, bpftrace, append(btArgs, "-e", prog)...)
			if tc.json {
				theirs = strings.TrimPrefix(theirs, "{\"type\": \"attached_probes\", \"data\": {\"probes\": 1}}\n")
			}
			ours := runProgramCLI(t, append(usArgs, "-e", prog)...)
			if ours != theirs {
				t.Errorf("output differs:\n--- have\n%s\n--- want (bpftrace)\n%s", ours, theirs)
			}
			if theirs != tc.want {
				t.Errorf("bpftrace printed\n%q\nwant\n%q", theirs, tc.want)
			}
		})
	}
	t.Run("variable index", func(t *testing.T) {
		// bpftrace 0.17 takes only literal indices ("The array index
		// operator [] only accepts literal integer indices"); usdtkit
		// takes any integer into what a pointer reaches.
		prog := cTypesDefs + strings.ReplaceAll(`uprobe:BIN:visit { $r = (struct rec *)arg0; $i = 1; $j = 2; $a = (int32 *)arg1; printf("%d %d %d %d\n", $r->grid[$i][$j], $a[$i + 2], $r->in.b[$j], $r->ptrs[$i - 1][0]); }`, "BIN", bin)
		if ours, want := runProgramCLI(t, "trace", "-c", bin, "-e", prog), "22 -40 250 -40\n\n\n"; ours != want {
			t.Errorf("have\n%q\nwant\n%q", ours, want)
		}
	})
	t.Run("differences", func(t *testing.T) {
		// Where bpftrace 0.17 is wrong: it reads a signed bit-field as
		// unsigned (-3 in 3 bits prints 5), and prints a uint8 of an
		// array in a struct in a map key as signed (250 prints -6).
		// usdtkit prints the values the target stored.
		prog := cTypesDefs + strings.ReplaceAll(`uprobe:BIN:visit { $r = (struct rec *)arg0; printf("%d\n", $r->neg); @k[$r->in] = 1; }`, "BIN", bin)
		theirs := runBpftrace(t, bpftrace, "-c", bin, "-e", prog)
		ours := runProgramCLI(t, "trace", "-c", bin, "-e", prog)
		if want := "5\n\n\n@k[{.a=-300,.b=[1,2,-6]}]: 1\n"; theirs != want {
			t.Errorf("bpftrace printed\n%q\nwant\n%q", theirs, want)
		}
		if want := "-3\n\n\n@k[{.a=-300,.b=[1,2,250]}]: 1\n"; ours != want {
			t.Errorf("have\n%q\nwant\n%q", ours, want)
		}
	})
}
