package uprobe

import (
	"reflect"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestFunctionsReadsNamedObjectsOnly maps a good library and a truncated
// one into a process: Functions and List with a selector naming the good
// library read that library only, so the truncated one, which a listing
// of every object skips with a warning, gives none.
func TestFunctionsReadsNamedObjectsOnly(t *testing.T) {
	mapper, good, _ := testutil.StartGoodAndTruncated(t, "int good(int x) { return x + 1; }\n")
	pid := mapper.Process.Pid

	var warnings []error
	warn := func(err error) { warnings = append(warnings, err) }
	if _, err := List(&ListOptions{PID: pid, Warn: warn}); err != nil || len(warnings) != 1 {
		t.Fatalf("every object: %v, warnings %v; want one for the truncated library", err, warnings)
	}
	warnings = nil
	fns, err := Functions(&ListOptions{PID: pid, Warn: warn, Selectors: []Selector{{Path: "libgood", Func: "good"}}})
	if err != nil || len(fns) != 1 || fns[0].Path != good || len(warnings) != 0 {
		t.Errorf("Functions uprobe:libgood:good: %v, %d functions, warnings %v; want good in %s, no warning", err, len(fns), warnings, good)
	}
	warnings = nil
	objs, err := List(&ListOptions{PID: pid, Warn: warn, Selectors: []Selector{{Path: "libgood"}}})
	if err != nil || len(objs) != 1 || objs[0].Path != good || len(warnings) != 0 {
		t.Errorf("List uprobe:libgood:*: %v, %d objects, warnings %v; want %s alone, no warning", err, len(objs), warnings, good)
	}
}

// TestFunctionsOf checks that looking selectors up in objects listed once
// gives what Functions gives for each, in libc (aliases deduplicated,
// globs, offsets, returns).
func TestFunctionsOf(t *testing.T) {
	objs, err := List(&ListOptions{Selectors: []Selector{{Path: "libc"}}})
	if err != nil || len(objs) != 1 {
		t.Fatalf("List libc: %v, %d objects", err, len(objs))
	}
	for _, sel := range []Selector{
		{Path: "libc", Func: "malloc"},
		{Path: "libc", Func: "str*cmp"},
		{Path: "libc", Func: "free", Offset: 4},
		{Path: "libc", Func: "calloc", Return: true},
		{Path: "libc", Func: "no_such_function_7"},
	} {
		t.Run(sel.String(), func(t *testing.T) {
			want, err := Functions(&ListOptions{Selectors: []Selector{sel}})
			if err != nil {
				t.Fatal(err)
			}
			have := FunctionsOf(objs, []Selector{sel})
			if !reflect.DeepEqual(have, want) {
				t.Errorf("have %d functions %v, want %d %v", len(have), have, len(want), want)
			}
			if sel.Func != "no_such_function_7" && len(have) == 0 {
				t.Errorf("no function: the test needs libc to have %s", sel.Func)
			}
		})
	}
}
