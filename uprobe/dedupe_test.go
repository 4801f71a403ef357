package uprobe

import (
	"debug/elf"
	"slices"
	"testing"
)

// TestDedupeSites checks that one site is kept per address and kind, with
// the preferred name, whatever the order of the symbols.
func TestDedupeSites(t *testing.T) {
	fn := func(name string, value, delta uint64, bind elf.SymBind, version string, ret bool) Function {
		return Function{OpenPath: "/lib/libc.so.6", Symbol: Symbol{Name: name, Value: value, Bind: bind, Version: version}, Delta: delta, Return: ret}
	}
	tests := []struct {
		name string
		in   []Function
		want []string // Name() of each kept site
	}{
		{"alias", []Function{
			fn("__libc_malloc", 0x10, 0, elf.STB_GLOBAL, "GLIBC_2.2.5", false),
			fn("malloc", 0x10, 0, elf.STB_GLOBAL, "GLIBC_2.2.5", false),
		}, []string{"uprobe:malloc"}},
		{"global over local", []Function{
			fn("f", 0x10, 0, elf.STB_LOCAL, "", false),
			fn("g_long_name", 0x10, 0, elf.STB_GLOBAL, "", false),
		}, []string{"uprobe:g_long_name"}},
		{"weak over local", []Function{
			fn("a", 0x10, 0, elf.STB_LOCAL, "", false),
			fn("w", 0x10, 0, elf.STB_WEAK, "", false),
		}, []string{"uprobe:w"}},
		{"unversioned", []Function{
			fn("f", 0x10, 0, elf.STB_GLOBAL, "V1", false),
			fn("g", 0x10, 0, elf.STB_GLOBAL, "", false),
		}, []string{"uprobe:g"}},
		{"innermost symbol", []Function{
			fn("outer", 0x10, 8, elf.STB_GLOBAL, "", false),
			fn("inner", 0x18, 0, elf.STB_LOCAL, "", false),
		}, []string{"uprobe:inner"}},
		{"entry and return stay", []Function{
			fn("f", 0x10, 0, elf.STB_GLOBAL, "", false),
			fn("f", 0x10, 0, elf.STB_GLOBAL, "", true),
		}, []string{"uprobe:f", "uretprobe:f"}},
		{"byte order last", []Function{
			fn("b", 0x10, 0, elf.STB_GLOBAL, "", false),
			fn("a", 0x10, 0, elf.STB_GLOBAL, "", false),
		}, []string{"uprobe:a"}},
		{"distinct addresses", []Function{
			fn("a", 0x10, 0, elf.STB_GLOBAL, "", false),
			fn("b", 0x20, 0, elf.STB_GLOBAL, "", false),
		}, []string{"uprobe:a", "uprobe:b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, in := range [][]Function{slices.Clone(tt.in), reversed(tt.in)} {
				var have []string
				for _, f := range dedupeSites(in) {
					have = append(have, f.Name())
				}
				// Order follows the input; the kept names do not.
				slices.Sort(have)
				if !slices.Equal(have, tt.want) {
					t.Errorf("dedupeSites(%v) = %v, want %v", names(in), have, tt.want)
				}
			}
		})
	}
}

func names(fns []Function) []string {
	var s []string
	for _, f := range fns {
		s = append(s, f.Name())
	}
	return s
}

func reversed(fns []Function) []Function {
	r := slices.Clone(fns)
	slices.Reverse(r)
	return r
}
