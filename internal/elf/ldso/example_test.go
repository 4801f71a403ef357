package ldso

import (
	"fmt"
)

func ExampleParseCache() {
	// A cache as ldconfig -c new writes it; see buildCache in cache_test.go.
	b := buildCache(formatNew, []Entry{
		{Name: "libz.so.1", Path: "/usr/lib/x86_64-linux-gnu/libz.so.1", Flags: 0x0303},
		{Name: "libz.so.1", Path: "/usr/lib/aarch64-linux-gnu/libz.so.1", Flags: 0x0a03},
	})
	entries, err := ParseCache(b)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range entries {
		fmt.Printf("%s (%v) => %s\n", e.Name, e.Flags, e.Path)
	}
	// Output:
	// libz.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libz.so.1
	// libz.so.1 (libc6,AArch64) => /usr/lib/aarch64-linux-gnu/libz.so.1
}

func ExampleFind() {
	// Resolve libc inside the root of process 1234, e.g. a container.
	path, err := Find("c", &FindOptions{Root: "/proc/1234/root"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(path) // e.g. /proc/1234/root/usr/lib/x86_64-linux-gnu/libc.so.6
}
