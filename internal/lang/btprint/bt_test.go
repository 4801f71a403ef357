package btprint

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/lang/layout"
	"github.com/usdtkit/usdtkit/internal/lang/printf"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// Arg is a printf argument, in these tables.
type Arg = printf.Arg

var update = flag.Bool("update", false, "rewrite testdata/bpftrace/*.txt and *.json from the installed bpftrace")

// btCase is one bpftrace program whose BEGIN fills maps with constants
// (or calls printf) and exits, and the same data in this package's model.
type btCase struct {
	name string
	prog string // the body of BEGIN, before exit()
	// render is what the case prints after bpftrace's "Attaching" line.
	render func(out Output) []byte
	// ties marks maps whose equal values bpftrace prints in the kernel's
	// hash order, which changes from run to run: lines compare as sets.
	ties bool
}

func exitMaps(maps ...*Map) func(Output) []byte {
	return func(out Output) []byte { return AppendExit(nil, maps, out) }
}

func ki(v int64) Key  { return Key{Int: v} }
func ks(s string) Key { return Key{Str: s} }

var (
	intKey = []layout.KeyField{{Kind: layout.KeyInt}}
	strKey = []layout.KeyField{{Kind: layout.KeyString, Size: 64}}
)

func scalar(name string, agg Agg, e MapEntry) *Map {
	return &Map{Name: name, Agg: agg, Entries: []MapEntry{e}, Signed: true}
}

func val(v int64, key ...Key) MapEntry { return MapEntry{Key: key, Value: uint64(v)} }

func str(s string, key ...Key) MapEntry { return MapEntry{Key: key, Str: s} }

func avgOf(key []Key, vals ...int64) MapEntry {
	e := MapEntry{Key: key, Count: int64(len(vals))}
	for _, v := range vals {
		e.Total += v
	}
	return e
}

func histOf(key []Key, vals ...int64) MapEntry {
	e := MapEntry{Key: key, Buckets: make([]uint64, layout.HistBucketsBT)}
	for _, v := range vals {
		e.Buckets[layout.HistIndex(v)]++
	}
	return e
}

func lhistOf(r layout.LinearRange, key []Key, vals ...int64) MapEntry {
	e := MapEntry{Key: key, Buckets: make([]uint64, r.Buckets())}
	for _, v := range vals {
		e.Buckets[r.Index(v)]++
	}
	return e
}

func keys(k ...Key) []Key { return k }

// printfs renders printf calls, then the exit output with maps.
func printfs(calls []printfCall, maps ...*Map) func(Output) []byte {
	return func(out Output) []byte {
		var b []byte
		for _, c := range calls {
			p, err := printf.Parse(c.format)
			if err != nil {
				return []byte(err.Error())
			}
			b = AppendPrintf(b, p, c.args, out)
		}
		return AppendExit(b, maps, out)
	}
}

type printfCall struct {
	format string
	args   []printf.Arg
}

func ints(v ...int64) []printf.Arg {
	a := make([]printf.Arg, len(v))
	for i := range v {
		a[i] = printf.Arg{Int: v[i]}
	}
	return a
}

func repeat(stmt string, n int) string { return strings.Repeat(stmt+"; ", n) }

var btCases = []btCase{
	{name: "count_int_keys", prog: `@a[1] = count(); @a[2] = count(); @a[2] = count(); @a[3] = count(); @a[3] = count(); @a[3] = count();`,
		render: exitMaps(&Map{Name: "@a", Keys: intKey, Agg: AggCount, Entries: []MapEntry{val(3, ki(3)), val(1, ki(1)), val(2, ki(2))}})},
	{name: "count_scalar", prog: repeat("@c = count()", 3),
		render: exitMaps(&Map{Name: "@c", Agg: AggCount, Entries: []MapEntry{val(3)}})},
	{name: "count_ties", ties: true, prog: `@a[1] = count(); @a[2] = count(); @a[3] = count(); @a[4] = count(); @a[4] = count();`,
		render: exitMaps(&Map{Name: "@a", Keys: intKey, Agg: AggCount, Entries: []MapEntry{val(1, ki(3)), val(1, ki(1)), val(2, ki(4)), val(1, ki(2))}})},
	{name: "count_negative_keys", prog: `@a[-1] = count(); @a[-5] = count(); @a[-5] = count(); @a[0] = count(); @a[0] = count(); @a[0] = count();`,
		render: exitMaps(&Map{Name: "@a", Keys: intKey, Agg: AggCount, Entries: []MapEntry{val(1, ki(-1)), val(2, ki(-5)), val(3, ki(0))}})},
	{name: "sum_negative", prog: `@s[1] = sum(-5); @s[2] = sum(10); @s[3] = sum(-20); @s[3] = sum(1);`,
		render: exitMaps(&Map{Name: "@s", Keys: intKey, Agg: AggSum, Signed: true, Entries: []MapEntry{val(-5, ki(1)), val(10, ki(2)), val(-19, ki(3))}})},
	{name: "sum_huge", prog: `@s = sum(9223372036854775807); @t = sum(5000000000); @t = sum(5000000000);`,
		render: exitMaps(scalar("@s", AggSum, val(9223372036854775807)), scalar("@t", AggSum, val(10000000000)))},
	{name: "int_scalars", prog: `@x = 5; @y = -3; @z = 9223372036854775807; @w = -9223372036854775807 - 1; @v = 0;`,
		render: exitMaps(scalar("@x", AggInt, val(5)), scalar("@y", AggInt, val(-3)), scalar("@z", AggInt, val(9223372036854775807)),
			scalar("@w", AggInt, val(-9223372036854775808)), scalar("@v", AggInt, val(0)))},
	{name: "int_keyed_sorted_by_value", prog: `@v[1] = -5; @v[2] = 7; @v[3] = 0; @v[4] = -100; @v[5] = 100000000000;`,
		render: exitMaps(&Map{Name: "@v", Keys: intKey, Agg: AggInt, Signed: true, Entries: []MapEntry{
			val(-5, ki(1)), val(7, ki(2)), val(0, ki(3)), val(-100, ki(4)), val(100000000000, ki(5))}})},
	{name: "int_unsigned_key_wide", prog: `@a[(uint32)4294967295] = 1; @a[(uint8)255] = 2; @a[(int8)-1] = 3; @a[(uint16)65535] = 4;`,
		render: exitMaps(&Map{Name: "@a", Keys: intKey, Agg: AggInt, Signed: true, Entries: []MapEntry{
			val(1, ki(4294967295)), val(2, ki(255)), val(3, ki(-1)), val(4, ki(65535))}})},
	{name: "min_max", prog: `@n = min(-5); @o = min(3); @o = min(7); @p = max(4); @p = max(-3); @q = min(-1); @q = min(-7); @s = max(5000000000); @t = min(0); @u = max(0);`,
		render: exitMaps(scalar("@n", AggMin, val(-5)), scalar("@o", AggMin, val(3)), scalar("@p", AggMax, val(4)),
			scalar("@q", AggMin, val(-7)), scalar("@s", AggMax, val(5000000000)), scalar("@t", AggMin, val(0)), scalar("@u", AggMax, val(0)))},
	{name: "min_max_keyed", prog: `@m[1] = max(10); @m[2] = max(3); @m[3] = max(30); @n["a"] = min(9); @n["b"] = min(-2); @n["c"] = min(4);`,
		render: exitMaps(&Map{Name: "@m", Keys: intKey, Agg: AggMax, Entries: []MapEntry{val(10, ki(1)), val(3, ki(2)), val(30, ki(3))}},
			&Map{Name: "@n", Keys: strKey, Agg: AggMin, Entries: []MapEntry{val(9, ks("a")), val(-2, ks("b")), val(4, ks("c"))}})},
	{name: "avg_rounding", prog: `@a = avg(-7); @a = avg(2); @b = avg(7); @b = avg(2); @c[1] = avg(10); @c[2] = avg(-10); @c[3] = avg(-1); @c[3] = avg(0);`,
		render: exitMaps(&Map{Name: "@a", Agg: AggAvg, Entries: []MapEntry{avgOf(nil, -7, 2)}}, &Map{Name: "@b", Agg: AggAvg, Entries: []MapEntry{avgOf(nil, 7, 2)}},
			&Map{Name: "@c", Keys: intKey, Agg: AggAvg, Entries: []MapEntry{avgOf(keys(ki(1)), 10), avgOf(keys(ki(2)), -10), avgOf(keys(ki(3)), -1, 0)}})},
	{name: "stats", prog: `@s = stats(10); @s = stats(3); @t[1] = stats(-1); @t[1] = stats(-2); @t[2] = stats(5); @t[3] = stats(1000000000000);`,
		render: exitMaps(&Map{Name: "@s", Agg: AggStats, Entries: []MapEntry{avgOf(nil, 10, 3)}},
			&Map{Name: "@t", Keys: intKey, Agg: AggStats, Entries: []MapEntry{avgOf(keys(ki(2)), 5), avgOf(keys(ki(1)), -1, -2), avgOf(keys(ki(3)), 1000000000000)}})},
	{name: "hist_basic", prog: `@h = hist(0); @h = hist(5); @h = hist(1000000);`,
		render: exitMaps(&Map{Name: "@h", Agg: AggHist, Entries: []MapEntry{histOf(nil, 0, 5, 1000000)}})},
	{name: "hist_small_and_negative", prog: `@h = hist(0); @h = hist(1); @h = hist(1); @h = hist(-1); @h = hist(-100); @h = hist(2); @h = hist(3); @h = hist(3);`,
		render: exitMaps(&Map{Name: "@h", Agg: AggHist, Entries: []MapEntry{histOf(nil, 0, 1, 1, -1, -100, 2, 3, 3)}})},
	{name: "hist_only_negative", prog: `@h = hist(-3);`,
		render: exitMaps(&Map{Name: "@h", Agg: AggHist, Entries: []MapEntry{histOf(nil, -3)}})},
	{name: "hist_2g", prog: `@h = hist(2147483648); @h = hist(4294967295); @h = hist(1073741824);`,
		render: exitMaps(&Map{Name: "@h", Agg: AggHist, Entries: []MapEntry{histOf(nil, 2147483648, 4294967295, 1073741824)}})},
	{name: "hist_bars", prog: repeat("@h = hist(1)", 3) + repeat("@h = hist(2)", 7) + repeat("@h = hist(4)", 11) + repeat("@h = hist(8)", 9) + repeat("@h = hist(1024)", 13),
		render: func(out Output) []byte {
			e := MapEntry{Buckets: make([]uint64, layout.HistBucketsBT)}
			e.Buckets[layout.HistIndex(1)], e.Buckets[layout.HistIndex(2)], e.Buckets[layout.HistIndex(4)], e.Buckets[layout.HistIndex(8)], e.Buckets[layout.HistIndex(1024)] = 3, 7, 11, 9, 13
			return AppendExit(nil, []*Map{{Name: "@h", Agg: AggHist, Entries: []MapEntry{e}}}, out)
		}},
	{name: "hist_keyed", prog: `@h[1] = hist(1); @h[2] = hist(2); @h[2] = hist(100); @h[3] = hist(4); @h[3] = hist(5); @h[3] = hist(6);`,
		render: exitMaps(&Map{Name: "@h", Keys: intKey, Agg: AggHist, Entries: []MapEntry{
			histOf(keys(ki(3)), 4, 5, 6), histOf(keys(ki(1)), 1), histOf(keys(ki(2)), 2, 100)}})},
	{name: "hist_keyed_string", prog: `@h["bash"] = hist(10); @h["python"] = hist(20); @h["python"] = hist(3000); @h["go"] = hist(0);`,
		render: exitMaps(&Map{Name: "@h", Keys: strKey, Agg: AggHist, Entries: []MapEntry{
			histOf(keys(ks("bash")), 10), histOf(keys(ks("python")), 20, 3000), histOf(keys(ks("go")), 0)}})},
	{name: "hist_ties_20_keys", prog: func() string {
		var b strings.Builder
		for k := 1; k <= 20; k++ {
			b.WriteString("@h[" + strconv.Itoa(k*37%23) + "] = hist(" + strconv.Itoa(k) + "); ")
		}
		return b.String()
	}(), render: func(out Output) []byte {
		m := &Map{Name: "@h", Keys: intKey, Agg: AggHist}
		for k := 1; k <= 20; k++ {
			m.Entries = append(m.Entries, histOf(keys(ki(int64(k*37%23))), int64(k)))
		}
		return AppendExit(nil, []*Map{m}, out)
	}},
	{name: "hist_ties_keys_bytes_order", prog: `@h[256] = hist(1); @h[1] = hist(1); @h[2] = hist(1); @h[-1] = hist(1); @h[511] = hist(1);`,
		render: exitMaps(&Map{Name: "@h", Keys: intKey, Agg: AggHist, Entries: []MapEntry{
			histOf(keys(ki(256)), 1), histOf(keys(ki(1)), 1), histOf(keys(ki(2)), 1), histOf(keys(ki(-1)), 1), histOf(keys(ki(511)), 1)}})},
	{name: "stats_ties_20_keys", prog: func() string {
		var b strings.Builder
		for k := 1; k <= 20; k++ {
			b.WriteString("@s[" + strconv.Itoa(k*7%20) + "] = avg(" + strconv.Itoa(k%3) + "); ")
		}
		return b.String()
	}(), render: func(out Output) []byte {
		m := &Map{Name: "@s", Keys: intKey, Agg: AggAvg}
		for k := 1; k <= 20; k++ {
			m.Entries = append(m.Entries, avgOf(keys(ki(int64(k*7%20))), int64(k%3)))
		}
		return AppendExit(nil, []*Map{m}, out)
	}},
	{name: "lhist_basic", prog: `@l = lhist(15, 0, 100, 10); @l = lhist(25, 0, 100, 10); @l = lhist(55, 0, 100, 10); @l = lhist(59, 0, 100, 10);`,
		render: exitMaps(&Map{Name: "@l", Agg: AggLhist, Lhist: layout.LinearRange{Min: 0, Max: 100, Step: 10}, Entries: []MapEntry{lhistOf(layout.LinearRange{Min: 0, Max: 100, Step: 10}, nil, 15, 25, 55, 59)}})},
	{name: "lhist_below_above", prog: `@l = lhist(-5, 0, 100, 10); @l = lhist(150, 0, 100, 10); @l = lhist(100, 0, 100, 10); @l = lhist(50, 0, 100, 10);`,
		render: exitMaps(&Map{Name: "@l", Agg: AggLhist, Lhist: layout.LinearRange{Min: 0, Max: 100, Step: 10}, Entries: []MapEntry{lhistOf(layout.LinearRange{Min: 0, Max: 100, Step: 10}, nil, -5, 150, 100, 50)}})},
	{name: "lhist_min_offset", prog: `@l = lhist(7, 5, 20, 5); @l = lhist(4, 5, 20, 5); @l = lhist(19, 5, 20, 5);`,
		render: exitMaps(&Map{Name: "@l", Agg: AggLhist, Lhist: layout.LinearRange{Min: 5, Max: 20, Step: 5}, Entries: []MapEntry{lhistOf(layout.LinearRange{Min: 5, Max: 20, Step: 5}, nil, 7, 4, 19)}})},
	{name: "lhist_k_m_labels", prog: `@k = lhist(1500, 0, 4096, 1024); @k = lhist(5000, 0, 4096, 1024); @m = lhist(1048576, 0, 3145728, 1048576); @m = lhist(2097152, 0, 3145728, 1048576);`,
		render: exitMaps(&Map{Name: "@k", Agg: AggLhist, Lhist: layout.LinearRange{Min: 0, Max: 4096, Step: 1024}, Entries: []MapEntry{lhistOf(layout.LinearRange{Min: 0, Max: 4096, Step: 1024}, nil, 1500, 5000)}},
			&Map{Name: "@m", Agg: AggLhist, Lhist: layout.LinearRange{Min: 0, Max: 3145728, Step: 1048576}, Entries: []MapEntry{lhistOf(layout.LinearRange{Min: 0, Max: 3145728, Step: 1048576}, nil, 1048576, 2097152)}})},
	{name: "lhist_keyed", prog: `@l["a"] = lhist(3, 0, 10, 1); @l["b"] = lhist(3, 0, 10, 1); @l["b"] = lhist(9, 0, 10, 1);`,
		render: exitMaps(&Map{Name: "@l", Keys: strKey, Agg: AggLhist, Lhist: layout.LinearRange{Min: 0, Max: 10, Step: 1}, Entries: []MapEntry{
			lhistOf(layout.LinearRange{Min: 0, Max: 10, Step: 1}, keys(ks("b")), 3, 9), lhistOf(layout.LinearRange{Min: 0, Max: 10, Step: 1}, keys(ks("a")), 3)}})},
	{name: "string_keys", prog: `@s["abc"] = count(); @s[""] = count(); @s[""] = count(); @s["a b"] = count(); @s["a b"] = count(); @s["a b"] = count(); ` +
		`@s["123456789012345678901234567890123456789012345678901234567890123"] = count(); ` + repeat(`@s["123456789012345678901234567890123456789012345678901234567890123"] = count()`, 3),
		render: exitMaps(&Map{Name: "@s", Keys: strKey, Agg: AggCount, Entries: []MapEntry{
			val(1, ks("abc")), val(2, ks("")), val(3, ks("a b")), val(4, ks("123456789012345678901234567890123456789012345678901234567890123"))}})},
	{name: "string_keys_escapes", prog: `@s["q\"uote"] = 1; @s["tab\there"] = 2; @s["nl\nx"] = 3; @s["back\\slash"] = 4; @s["ctl\x01"] = 5;`,
		render: exitMaps(&Map{Name: "@s", Keys: strKey, Agg: AggInt, Signed: true, Entries: []MapEntry{
			val(1, ks("q\"uote")), val(2, ks("tab\there")), val(3, ks("nl\nx")), val(4, ks("back\\slash")), val(5, ks("ctl\x01"))}})},
	{name: "tuple_keys", prog: `@t[1, "a"] = count(); @t[2, "b"] = count(); @t[2, "b"] = count(); @t[1, "b"] = count(); @t[1, "b"] = count(); @t[1, "b"] = count();`,
		render: exitMaps(&Map{Name: "@t", Keys: []layout.KeyField{{Kind: layout.KeyInt}, {Kind: layout.KeyString, Size: 64}}, Agg: AggCount, Entries: []MapEntry{
			val(1, ki(1), ks("a")), val(2, ki(2), ks("b")), val(3, ki(1), ks("b"))}})},
	{name: "multi_int_keys_string_values", prog: `@m[1, 2] = "x"; @m[2, 1] = "y"; @m[1, 1] = "z"; @m[-1, 0] = "neg"; @m[0, 5] = "zero";`,
		render: exitMaps(&Map{Name: "@m", Keys: []layout.KeyField{{Kind: layout.KeyInt}, {Kind: layout.KeyInt}}, Agg: AggString, Entries: []MapEntry{
			str("x", ki(1), ki(2)), str("y", ki(2), ki(1)), str("z", ki(1), ki(1)), str("neg", ki(-1), ki(0)), str("zero", ki(0), ki(5))}})},
	{name: "string_values_by_string_key", prog: `@s["b"] = "hello"; @s["a"] = "with \"quotes\""; @s["ab"] = ""; @v = "scalar";`,
		render: exitMaps(&Map{Name: "@s", Keys: strKey, Agg: AggString, Entries: []MapEntry{
			str("hello", ks("b")), str("with \"quotes\"", ks("a")), str("", ks("ab"))}}, scalar("@v", AggString, str("scalar")))},
	{name: "many_maps_order", prog: `@z = 1; @b = 2; @a = 3; @ = 4; @A = 5; @_x = 6; @a1 = 7; @y[1] = 8;`,
		render: exitMaps(scalar("@z", AggInt, val(1)), scalar("@b", AggInt, val(2)), scalar("@a", AggInt, val(3)), scalar("@", AggInt, val(4)),
			scalar("@A", AggInt, val(5)), scalar("@_x", AggInt, val(6)), scalar("@a1", AggInt, val(7)),
			&Map{Name: "@y", Keys: intKey, Agg: AggInt, Signed: true, Entries: []MapEntry{val(8, ki(1))}})},
	{name: "mixed_maps", prog: `@a[1] = count(); @h = hist(5); @l = lhist(15, 0, 100, 10); @s = stats(10); @s = stats(3); @v = avg(4);`,
		render: exitMaps(&Map{Name: "@a", Keys: intKey, Agg: AggCount, Entries: []MapEntry{val(1, ki(1))}},
			&Map{Name: "@h", Agg: AggHist, Entries: []MapEntry{histOf(nil, 5)}},
			&Map{Name: "@l", Agg: AggLhist, Lhist: layout.LinearRange{Min: 0, Max: 100, Step: 10}, Entries: []MapEntry{lhistOf(layout.LinearRange{Min: 0, Max: 100, Step: 10}, nil, 15)}},
			&Map{Name: "@s", Agg: AggStats, Entries: []MapEntry{avgOf(nil, 10, 3)}},
			&Map{Name: "@v", Agg: AggAvg, Entries: []MapEntry{avgOf(nil, 4)}})},
	{name: "empty_maps", prog: `@c[1] = count(); delete(@c[1]); @h[1] = hist(1); delete(@h[1]); @v[1] = 5; delete(@v[1]);`,
		render: exitMaps(&Map{Name: "@c", Keys: intKey, Agg: AggCount}, &Map{Name: "@h", Keys: intKey, Agg: AggHist},
			&Map{Name: "@v", Keys: intKey, Agg: AggInt, Signed: true})},
	{name: "zeroed_maps", prog: `@c[1] = count(); @c[2] = count(); @h = hist(3); @s = stats(3); @m = min(4); @a = avg(5); zero(@c); zero(@h); zero(@s); zero(@m); zero(@a);`,
		render: exitMaps(&Map{Name: "@c", Keys: intKey, Agg: AggCount, Entries: []MapEntry{val(0, ki(1)), val(0, ki(2))}},
			&Map{Name: "@h", Agg: AggHist, Entries: []MapEntry{{Buckets: make([]uint64, layout.HistBucketsBT)}}},
			&Map{Name: "@s", Agg: AggStats, Entries: []MapEntry{{}}}, &Map{Name: "@m", Agg: AggMin, Entries: []MapEntry{val(0)}},
			&Map{Name: "@a", Agg: AggAvg, Entries: []MapEntry{{}}}), ties: true},
	// clear() runs in user space after BEGIN: it also deletes @c[3].
	{name: "cleared_maps", prog: `@c[1] = count(); @h[2] = hist(3); @s[1] = stats(2); clear(@c); clear(@h); clear(@s); @c[3] = count();`,
		render: exitMaps(&Map{Name: "@c", Keys: intKey, Agg: AggCount}, &Map{Name: "@h", Keys: intKey, Agg: AggHist}, &Map{Name: "@s", Keys: intKey, Agg: AggStats})},
	{name: "print_top_div", prog: `@a[1] = sum(1); @a[2] = sum(20); @a[3] = sum(35); @a[4] = sum(47); print(@a, 2); print(@a, 0, 10); print(@a, 2, 10); print(@a, 9);`,
		render: func(out Output) []byte {
			m := &Map{Name: "@a", Keys: intKey, Agg: AggSum, Signed: true, Entries: []MapEntry{val(1, ki(1)), val(20, ki(2)), val(35, ki(3)), val(47, ki(4))}}
			b := AppendMap(nil, m, out, &PrintOptions{Top: 2})
			b = AppendMap(b, m, out, &PrintOptions{Div: 10})
			b = AppendMap(b, m, out, &PrintOptions{Top: 2, Div: 10})
			b = AppendMap(b, m, out, &PrintOptions{Top: 9})
			return AppendExit(b, []*Map{m}, out)
		}},
	{name: "print_hist_top_div", prog: `@h[1] = hist(1); @h[2] = hist(2); @h[2] = hist(2); @h[2] = hist(3); @h[3] = hist(7); @h[3] = hist(8); print(@h, 1); print(@h, 0, 2); @l = lhist(3, 0, 10, 2); @l = lhist(3, 0, 10, 2); print(@l, 0, 2);`,
		render: func(out Output) []byte {
			h := &Map{Name: "@h", Keys: intKey, Agg: AggHist, Entries: []MapEntry{histOf(keys(ki(1)), 1), histOf(keys(ki(2)), 2, 2, 3), histOf(keys(ki(3)), 7, 8)}}
			l := &Map{Name: "@l", Agg: AggLhist, Lhist: layout.LinearRange{Min: 0, Max: 10, Step: 2}, Entries: []MapEntry{lhistOf(layout.LinearRange{Min: 0, Max: 10, Step: 2}, nil, 3, 3)}}
			b := AppendMap(nil, h, out, &PrintOptions{Top: 1})
			b = AppendMap(b, h, out, &PrintOptions{Div: 2})
			b = AppendMap(b, l, out, &PrintOptions{Div: 2})
			return AppendExit(b, []*Map{h, l}, out)
		}},
	{name: "print_avg_stats_top_div", prog: `@v[1] = avg(10); @v[2] = avg(25); @v[3] = avg(-40); print(@v, 2, 3); @s[1] = stats(10); @s[2] = stats(20); print(@s, 1, 3);`,
		render: func(out Output) []byte {
			v := &Map{Name: "@v", Keys: intKey, Agg: AggAvg, Entries: []MapEntry{avgOf(keys(ki(1)), 10), avgOf(keys(ki(2)), 25), avgOf(keys(ki(3)), -40)}}
			s := &Map{Name: "@s", Keys: intKey, Agg: AggStats, Entries: []MapEntry{avgOf(keys(ki(1)), 10), avgOf(keys(ki(2)), 20)}}
			b := AppendMap(nil, v, out, &PrintOptions{Top: 2, Div: 3})
			b = AppendMap(b, s, out, &PrintOptions{Top: 1, Div: 3})
			return AppendExit(b, []*Map{v, s}, out)
		}},
	{name: "print_scalar_and_string", prog: `@x = 42; @s["k"] = "v"; print(@x); print(@s);`,
		render: func(out Output) []byte {
			x := scalar("@x", AggInt, val(42))
			s := &Map{Name: "@s", Keys: strKey, Agg: AggString, Entries: []MapEntry{str("v", ks("k"))}}
			b := AppendMap(nil, x, out, nil)
			b = AppendMap(b, s, out, nil)
			return AppendExit(b, []*Map{x, s}, out)
		}},
	// bpftrace 0.17 drops max() samples below 0 and min() samples of 2^32
	// and more (its min stores 0xffffffff-v); usdtkit keeps them.
	{name: "min_max_bpftrace_drops", prog: `@m = max(-5); @n = min(5000000000); @o[1] = max(-2); @o[2] = max(3);`,
		render: exitMaps(scalar("@m", AggMax, val(-5)), scalar("@n", AggMin, val(5000000000)),
			&Map{Name: "@o", Keys: intKey, Agg: AggMax, Entries: []MapEntry{val(-2, ki(1)), val(3, ki(2))}})},
	// bpftrace 0.17 escapes bytes >= 0x80 in JSON as "\uffffffc3";
	// usdtkit keeps valid UTF-8.
	{name: "json_utf8", prog: `@s["é"] = 1; printf("%s|\n", "ü");`,
		render: printfs([]printfCall{{"%s|\n", []Arg{{Str: "ü"}}}}, &Map{Name: "@s", Keys: strKey, Agg: AggInt, Signed: true, Entries: []MapEntry{val(1, ks("é"))}})},
	// time() formats the wall clock: these formats do not depend on it.
	{name: "time_literal", prog: `time("lit %% x\n"); time("%n%t|\n"); time("%Q\n"); printf("after\n");`,
		render: func(out Output) []byte {
			b := AppendTime(nil, "lit %% x\n", time.Now(), out)
			b = AppendTime(b, "%n%t|\n", time.Now(), out)
			b = AppendTime(b, "%Q\n", time.Now(), out)
			return append(b, printfs([]printfCall{{"after\n", nil}})(out)...)
		}},
	{name: "print_values", prog: `print(5); print(-5); print("a \"b\""); print((1, "x", -2)); print(((1, 2), "y")); print((uint64)18446744073709551615); $t = (3, "z"); print($t);`,
		render: func(out Output) []byte {
			i := func(v int64) Value { return Value{Kind: ValueInt, Int: v, Signed: true} }
			s := func(v string) Value { return Value{Kind: ValueString, Str: v} }
			tup := func(e ...Value) Value { return Value{Kind: ValueTuple, Elems: e} }
			var b []byte
			for _, v := range []Value{i(5), i(-5), s(`a "b"`), tup(i(1), s("x"), i(-2)), tup(tup(i(1), i(2)), s("y")),
				{Kind: ValueInt, Int: -1}, tup(i(3), s("z"))} {
				b = AppendValue(b, v, out)
			}
			return AppendExit(b, nil, out)
		}},
	{name: "hist_ties_string_keys", prog: `@h["b"] = hist(1); @h["a"] = hist(2); @h["ab"] = hist(3); @h[""] = hist(4); @h["B"] = hist(5); @h["b"] = hist(6); @h["zz"] = hist(1); @h["zz"] = hist(1);`,
		render: exitMaps(&Map{Name: "@h", Keys: strKey, Agg: AggHist, Entries: []MapEntry{
			histOf(keys(ks("b")), 1, 6), histOf(keys(ks("a")), 2), histOf(keys(ks("ab")), 3), histOf(keys(ks("")), 4), histOf(keys(ks("B")), 5), histOf(keys(ks("zz")), 1, 1)}})},
	{name: "avg_ties_tuple_keys", prog: `@a[2, "x"] = avg(3); @a[1, "y"] = avg(3); @a[1, "x"] = avg(3); @a[256, "a"] = avg(3); @a[0, "b"] = avg(1); @a[0, "b"] = avg(6);`,
		render: exitMaps(&Map{Name: "@a", Keys: []layout.KeyField{{Kind: layout.KeyInt}, {Kind: layout.KeyString, Size: 64}}, Agg: AggAvg, Entries: []MapEntry{
			avgOf(keys(ki(2), ks("x")), 3), avgOf(keys(ki(1), ks("y")), 3), avgOf(keys(ki(1), ks("x")), 3), avgOf(keys(ki(256), ks("a")), 3), avgOf(keys(ki(0), ks("b")), 1, 6)}})},
	{name: "sum_unsigned", prog: `@u[1] = sum((uint64)18446744073709551615); @u[2] = sum((uint64)5); @u[3] = sum((uint64)9223372036854775808);`,
		render: exitMaps(&Map{Name: "@u", Keys: intKey, Agg: AggSum, Entries: []MapEntry{
			{Key: keys(ki(1)), Value: 18446744073709551615}, {Key: keys(ki(2)), Value: 5}, {Key: keys(ki(3)), Value: 9223372036854775808}}})},
	{name: "printf_long_string", prog: `printf("[%5s][%-70s][%.63s]\n", "123456789012345678901234567890123456789012345678901234567890123", "abc", "123456789012345678901234567890123456789012345678901234567890123");`,
		render: printfs([]printfCall{{"[%5s][%-70s][%.63s]\n", []Arg{{Str: "123456789012345678901234567890123456789012345678901234567890123"}, {Str: "abc"}, {Str: "123456789012345678901234567890123456789012345678901234567890123"}}}})},
	{name: "int_widths", prog: `@x = (int8)-1; @y = (uint8)255; @z = (int32)-5; @w = (uint32)4294967295; @v = (int16)-300;`,
		render: func(out Output) []byte {
			w := func(name string, bits int, signed bool, v int64) *Map {
				return &Map{Name: name, Agg: AggInt, Bits: bits, Signed: signed, Entries: []MapEntry{val(v)}}
			}
			return AppendExit(nil, []*Map{w("@x", 8, true, -1), w("@y", 8, false, 255), w("@z", 32, true, -5), w("@w", 32, false, -1), w("@v", 16, true, -300)}, out)
		}},
	{name: "printf_int_verbs", prog: `printf("%d|%u|%x|%X|%o|%c|%p\n", -1, -1, -1, -1, -1, 65, 0); printf("%d %u %x %o\n", 42, 42, 42, 42);`,
		render: printfs([]printfCall{{"%d|%u|%x|%X|%o|%c|%p\n", ints(-1, -1, -1, -1, -1, 65, 0)}, {"%d %u %x %o\n", ints(42, 42, 42, 42)}})},
	{name: "printf_lengths", prog: `printf("%ld|%lu|%lld|%llu|%hhd|%hd|%lx|%hhu|%hu|%hhx|%ho|%jd|%zu|%td\n", -1, -1, -1, -1, -1, -1, -1, 300, 70000, -1, -1, -2, -3, -4); printf("%d %x %ld %u\n", 5000000000, 5000000000, 5000000000, 5000000000);`,
		render: printfs([]printfCall{{"%ld|%lu|%lld|%llu|%hhd|%hd|%lx|%hhu|%hu|%hhx|%ho|%jd|%zu|%td\n", ints(-1, -1, -1, -1, -1, -1, -1, 300, 70000, -1, -1, -2, -3, -4)},
			{"%d %x %ld %u\n", ints(5000000000, 5000000000, 5000000000, 5000000000)}})},
	{name: "printf_widths", prog: `printf("[%5d][%-5d][%05d][%.3d][%5.3d][%.0d][%5.0d][%08.3d][%-08d][%05d][%3d]\n", 42, 42, 42, 42, 42, 0, 0, 7, -7, -42, 123456);`,
		render: printfs([]printfCall{{"[%5d][%-5d][%05d][%.3d][%5.3d][%.0d][%5.0d][%08.3d][%-08d][%05d][%3d]\n", ints(42, 42, 42, 42, 42, 0, 0, 7, -7, -42, 123456)}})},
	{name: "printf_strings", prog: `printf("[%s][%10s][%-10s][%.2s][%5.1s][%05s][%.10s][%s]\n", "abc", "abc", "abc", "abc", "abc", "ab", "abc", "");`,
		render: printfs([]printfCall{{"[%s][%10s][%-10s][%.2s][%5.1s][%05s][%.10s][%s]\n", []Arg{{Str: "abc"}, {Str: "abc"}, {Str: "abc"}, {Str: "abc"}, {Str: "abc"}, {Str: "ab"}, {Str: "abc"}, {Str: ""}}}})},
	{name: "printf_percent", prog: `printf("100%%\n"); printf("%d%%\n", 5); printf("%%%d|%%d\n", 1, 2); printf("no verbs\n");`,
		render: printfs([]printfCall{{"100%%\n", nil}, {"%d%%\n", ints(5)}, {"%%%d|%%d\n", ints(1, 2)}, {"no verbs\n", nil}})},
	{name: "printf_pointer", prog: `printf("[%p][%016p][%-8p|][%.8p][%8p][%hhp][%lp]\n", 4096, 4096, 4096, 4096, 0, 4096, -1);`,
		render: printfs([]printfCall{{"[%p][%016p][%-8p|][%.8p][%8p][%hhp][%lp]\n", ints(4096, 4096, 4096, 4096, 0, 4096, -1)}})},
	{name: "printf_char", prog: `printf("[%c][%5c][%-3c][%05c][%c]\n", 65, 66, 67, 68, 321); printf("a%cb|%d\n", 0, 5);`,
		render: printfs([]printfCall{{"[%c][%5c][%-3c][%05c][%c]\n", ints(65, 66, 67, 68, 321)}, {"a%cb|%d\n", ints(0, 5)}})},
	{name: "printf_escapes", prog: `printf("a\tb\\c\"d\n"); printf("%s\t%d\r\n", "x\"y", 1); printf("ctl\x01\n");`,
		render: printfs([]printfCall{{"a\tb\\c\"d\n", nil}, {"%s\t%d\r\n", []Arg{{Str: "x\"y"}, {Int: 1}}}, {"ctl\x01\n", nil}})},
	{name: "printf_and_maps", prog: `printf("start %s\n", "x"); @a[1] = count(); printf("end\n");`,
		render: printfs([]printfCall{{"start %s\n", []Arg{{Str: "x"}}}, {"end\n", nil}}, &Map{Name: "@a", Keys: intKey, Agg: AggCount, Entries: []MapEntry{val(1, ki(1))}})},
}

// runBpftrace runs a case's program and returns its stdout without the
// first line ("Attaching 1 probe..." or its JSON form).
func runBpftrace(t *testing.T, bpftrace string, c btCase, out Output) []byte {
	t.Helper()
	args := []string{"-e", "BEGIN { " + c.prog + " exit(); }"}
	if out == OutputJSON {
		args = append([]string{"-f", "json"}, args...)
	}
	stdout, err := testutil.RunBpftrace(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, ok := bytes.Cut(stdout, []byte("\n"))
	if want := AppendAttached(nil, 1, out); !ok || string(first)+"\n" != string(want) {
		t.Fatalf("bpftrace %q: first line %q, want %q", args, first, want)
	}
	return rest
}

func goldenPath(c btCase, out Output) string {
	ext := ".txt"
	if out == OutputJSON {
		ext = ".json"
	}
	return filepath.Join("testdata", "bpftrace", c.name+ext)
}

// wantPath holds usdtkit's expected output where it deliberately differs
// from bpftrace 0.17 (see the file's README).
func wantPath(c btCase, out Output) string {
	return strings.TrimSuffix(goldenPath(c, out), filepath.Ext(goldenPath(c, out))) + ".usdtkit" + filepath.Ext(goldenPath(c, out))
}

// sameOutput compares outputs byte for byte, or as sorted lines for cases
// with ties.
func sameOutput(c btCase, have, want []byte) bool {
	if !c.ties {
		return bytes.Equal(have, want)
	}
	// JSON puts a map on one line: compare its ", "-separated pieces.
	split := func(b []byte) []string {
		return strings.Split(strings.NewReplacer(", ", "\n", "{", "\n{\n", "}", "\n}\n").Replace(string(b)), "\n")
	}
	h, w := split(have), split(want)
	slices.Sort(h)
	slices.Sort(w)
	return slices.Equal(h, w)
}

// TestPrintBpftraceGolden compares the printers with bpftrace 0.17's
// output kept in testdata/bpftrace (or, where usdtkit prints the right
// value bpftrace gets wrong, with the .usdtkit file beside it).
func TestPrintBpftraceGolden(t *testing.T) {
	if len(btCases) < 40 {
		t.Fatalf("%d cases, want at least 40", len(btCases))
	}
	for _, c := range btCases {
		for _, out := range []Output{OutputText, OutputJSON} {
			t.Run(c.name+map[Output]string{OutputText: "/text", OutputJSON: "/json"}[out], func(t *testing.T) {
				want, err := os.ReadFile(wantPath(c, out))
				if errors.Is(err, os.ErrNotExist) {
					want, err = os.ReadFile(goldenPath(c, out))
				}
				if err != nil {
					t.Fatal(err)
				}
				have := c.render(out)
				if !sameOutput(c, have, want) {
					t.Errorf("have:\n%s\nwant:\n%s", have, want)
				}
			})
		}
	}
}

// TestBpftraceGoldenCurrent runs every case under the installed bpftrace
// and checks that it still prints the golden files (-update rewrites
// them).
func TestBpftraceGoldenCurrent(t *testing.T) {
	testutil.RequireRoot(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	for _, c := range btCases {
		for _, out := range []Output{OutputText, OutputJSON} {
			t.Run(c.name+map[Output]string{OutputText: "/text", OutputJSON: "/json"}[out], func(t *testing.T) {
				have := runBpftrace(t, bpftrace, c, out)
				if *update {
					if err := os.WriteFile(goldenPath(c, out), have, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(goldenPath(c, out))
				if err != nil {
					t.Fatal(err)
				}
				if !sameOutput(c, have, want) {
					t.Errorf("bpftrace printed:\n%s\ngolden:\n%s", have, want)
				}
			})
		}
	}
}

// mapFromBytes builds a map of kind agg with nkeys key fields from fuzz
// data: every value, length and bucket comes from b.
func mapFromBytes(agg Agg, nkeys uint8, b []byte) *Map {
	next := func() byte {
		if len(b) == 0 {
			return 0
		}
		c := b[0]
		b = b[1:]
		return c
	}
	num := func() int64 {
		var v int64
		for range 8 {
			v = v<<8 | int64(next())
		}
		return v
	}
	m := &Map{Name: "@" + string(b[:min(len(b), 3)]), Agg: agg}
	m.Signed = next()&1 == 1
	m.Bits = 8 << (next() % 5)
	m.Lhist = layout.LinearRange{Min: num() % 2000, Max: num() % 5000, Step: num() % 300}
	for range nkeys % 4 {
		m.Keys = append(m.Keys, layout.KeyField{Kind: layout.KeyKind(next() % 4), Size: int(next() % 70)})
	}
	// str takes its length from b, then up to that many bytes that follow
	// (in one expression, b[:min(len(b), int(next()))], Go may take len(b)
	// before next() shortens b, and slice past the end).
	str := func(mod byte) string {
		c := next()
		n := min(len(b), int(c%mod))
		return string(b[:n])
	}
	for len(b) > 0 {
		e := MapEntry{Value: uint64(num()), Count: num(), Total: num()}
		e.Str = str(8)
		for range len(m.Keys) {
			k := Key{Int: num()}
			k.Str = str(10)
			e.Key = append(e.Key, k)
		}
		for range next() % 80 {
			e.Buckets = append(e.Buckets, uint64(num()))
		}
		m.Entries = append(m.Entries, e)
	}
	return m
}

// FuzzAppendMap prints maps of any shape and content: no panic, and
// every JSON line is valid JSON.
func FuzzAppendMap(f *testing.F) {
	f.Add(uint8(AggCount), uint8(1), []byte("\x01\x02\x03abc\x00\x00\x00\x00\x00\x00\x00\x05"))
	f.Add(uint8(AggHist), uint8(2), []byte("\xff\xfe\x80\x00\x01\x10\x20\x30\x40\x50\x60\x70\x80\x90"))
	f.Add(uint8(AggLhist), uint8(0), []byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x64\x00\x00\x00\x00\x00\x00\x00\x0a\x07"))
	f.Add(uint8(AggStats), uint8(3), []byte("é\"\\\n\x01"))
	f.Fuzz(func(t *testing.T, agg, nkeys uint8, b []byte) {
		m := mapFromBytes(Agg(agg%11), nkeys, b)
		for _, opts := range []*PrintOptions{nil, {Top: int(nkeys % 3), Div: uint32(agg)}} {
			AppendMap(nil, m, OutputText, opts)
			for _, line := range strings.Split(string(AppendMap(nil, m, OutputJSON, opts)), "\n") {
				if line != "" && !json.Valid([]byte(line)) {
					t.Fatalf("invalid JSON: %s", line)
				}
			}
		}
	})
}

func TestHistLabels(t *testing.T) {
	for i, want := range map[int]string{0: "(..., 0)", 1: "[0]", 2: "[1]", 3: "[2, 4)", 12: "[1K, 2K)", 33: "[2G, 4G)",
		42: "[1T, 2T)", 52: "[1024T, 2048T)", 64: "[4194304T, 8388608T)"} {
		if have := histLabelBT(i); have != want {
			t.Errorf("histLabelBT(%d) = %q, want %q", i, have, want)
		}
	}
	// A label wider than its 16 columns and a count wider than 8 get no
	// padding, as with C++'s setw: they touch.
	e := MapEntry{Buckets: make([]uint64, layout.HistBucketsBT)}
	e.Buckets[64] = 123456789012
	want := "@h: \n[4194304T, 8388608T)123456789012 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n"
	if have := string(AppendMap(nil, &Map{Name: "@h", Agg: AggHist, Entries: []MapEntry{e}}, OutputText, nil)); have != want {
		t.Errorf("have %q, want %q", have, want)
	}
	if have, want := string(AppendLost(nil, 3, OutputText)), "Lost 3 events\n"; have != want {
		t.Errorf("AppendLost = %q, want %q", have, want)
	}
	if have, want := string(AppendLost(nil, 3, OutputJSON)), `{"type": "lost_events", "data": {"events": 3}}`+"\n"; have != want {
		t.Errorf("AppendLost = %q, want %q", have, want)
	}
}
