package postlink_test

import (
	"fmt"
	"os"

	"github.com/usdtkit/usdtkit/dynsdt/postlink"
)

// Bytes leaves an executable without static probes as it is.
func ExampleBytes() {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	_, res, err := postlink.Bytes(data, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println("probes:", len(res.Probes), "changed:", res.Changed)
	// Output: probes: 0 changed: false
}
