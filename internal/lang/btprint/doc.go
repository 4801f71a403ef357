// Package btprint prints trace results as text: bpftrace-style
// histograms, and everything a bpftrace program prints (maps, printf,
// time, print), in text or `-f json`, byte for byte as bpftrace 0.17
// prints it.
//
// It knows nothing of probes or BPF, so every tracer shares it.
//
// # bpftrace output
//
// A program's maps are read from the kernel into a [Map]: a name, key
// fields ([layout.KeyField]: 64-bit integers, strings, stacks), an aggregation
// ([Agg]) and entries ([MapEntry]) holding the value summed over CPUs —
// an integer, a string, avg/stats' count and total, or hist/lhist bucket
// counts indexed by [layout.HistIndex] and [layout.LinearRange.Index]. The printers
// never change a Map and never fail:
//
//   - [AppendMap] is print(@m[, top[, div]]); [AppendMaps] is what
//     SIGUSR1 prints: every map by name; [AppendExit] is what bpftrace
//     prints after exit(): "\n\n", then AppendMaps.
//   - [AppendPrintf] is printf's output, its format parsed once by
//     package printf.
//   - [AppendTime] is time(); [AppendValue] print() of a non-map value;
//     [AppendAttached] and [AppendLost] bpftrace's other lines.
//
// Sorting follows bpftrace: maps of integers (count, sum, min, max, int)
// by value, hist and lhist by total count, avg and stats by average, other
// maps by key (integers unsigned, strings byte-wise). bpftrace breaks ties
// between equal integer values by the kernel's hash order, which varies
// from run to run; here such ties come in key order. Other ties come in
// bpftrace's own order, which stdSort reproduces from libstdc++.
//
// usdtkit prints the right value where bpftrace 0.17 prints a wrong one:
// max() of negative values and min() of values from 2^32 (which bpftrace
// never stores), hist() values from 2^32 (all in bucket [2G, 4G) there),
// JSON hist bounds from 2^31 (an int overflow there), and non-ASCII bytes
// in JSON strings (kept as UTF-8; bpftrace writes "\uffffffc3"). The
// tests compare every printer with the installed bpftrace on the programs
// of testdata/bpftrace, printf with C's snprintf and the tie order with
// libstdc++'s std::sort.
//
// Sources: bpftrace v0.17.0 src/output.cpp (drawing, JSON), src/bpftrace.cpp
// (print_map*, sort_by_key, printf arguments), src/format_string.cpp and
// src/printf.h (verb pattern, per-verb snprintf), src/mapkey.cpp (keys),
// src/utils.cpp (min_value), src/main.cpp (the "\n\n" before maps at exit);
// glibc's printf and strftime in the C locale.
//
// Usage, after exit():
//
//	m := &btprint.Map{Name: "@", Keys: []btprint.KeyField{{Kind: btprint.KeyString, Size: 16}}, Agg: btprint.AggCount}
//	for each kernel key k with per-CPU counts c: m.Entries = append(m.Entries,
//		btprint.MapEntry{Key: []btprint.Key{{Str: comm(k)}}, Value: sum(c)})
//	os.Stdout.Write(btprint.AppendExit(nil, []*btprint.Map{m}, btprint.OutputText))
package btprint
