//go:build !amd64

package btrun

func fire(token uint64) {}

func fireAddr() uintptr { return 0 }
