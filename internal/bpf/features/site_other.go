//go:build !amd64

package features

// codeSite is a function of this process whose first instruction is a
// probe site.
type codeSite struct {
	call func()
	addr uint64
}

// sites has no nop5 sites to offer: only x86-64 optimizes them.
func sites() (nop5, nop1 codeSite, ok bool) {
	return codeSite{}, codeSite{}, false
}
