package flame_test

import (
	"fmt"
	"os"

	"github.com/usdtkit/usdtkit/internal/lang/flame"
)

// Frames are listed leaf first; Root, if set, becomes the first folded
// frame. Identical stacks are merged and lines sorted.
func ExampleWrite() {
	libc := "/usr/lib/x86_64-linux-gnu/libc.so.6"
	samples := []flame.Sample{
		{Root: "server", Count: 3, Frames: []flame.Frame{{Symbol: "malloc", Object: libc}, {Symbol: "parse"}, {Symbol: "main"}}},
		{Root: "server", Count: 2, Frames: []flame.Frame{{Object: libc, Offset: 0x11f3a0}, {Symbol: "main"}}},
		{Root: "server", Count: 1, Frames: []flame.Frame{{Symbol: "malloc", Object: libc}, {Symbol: "parse"}, {Symbol: "main"}}},
	}
	if err := flame.Write(os.Stdout, flame.Folded, samples, nil); err != nil {
		fmt.Println(err)
	}
	// Output:
	// server;main;[libc.so.6+0x11f3a0] 2
	// server;main;parse;malloc 4
}
