package dynsdt

// fireVariants are the ways tests call fire: directly, and from frames of
// both alignments, so that both fire0 and fire8 run.
func fireVariants() map[string]func(*Probe, *uint64, int) {
	return map[string]func(*Probe, *uint64, int){"fire": fire, "frame24": fireFrame24, "frame32": fireFrame32}
}
