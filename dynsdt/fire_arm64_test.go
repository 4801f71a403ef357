package dynsdt

// fireVariants are the ways tests call fire; arm64 SP is always 16-byte
// aligned, so there is one.
func fireVariants() map[string]func(*Probe, *uint64, int) {
	return map[string]func(*Probe, *uint64, int){"fire": fire}
}
