package features

// Implemented in site_amd64.s.
func nop5Site()
func nop1Site()
func nop5SiteAddr() uintptr
func nop1SiteAddr() uintptr

// codeSite is a function of this process whose first instruction is a
// probe site.
type codeSite struct {
	call func()
	addr uint64
}

// sites returns a function starting with a 5-byte nop and one starting with
// a 1-byte nop; ok is false on hosts without them.
func sites() (nop5, nop1 codeSite, ok bool) {
	return codeSite{nop5Site, uint64(nop5SiteAddr())}, codeSite{nop1Site, uint64(nop1SiteAddr())}, true
}
