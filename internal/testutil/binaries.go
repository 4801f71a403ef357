package testutil

// Real binaries with USDT notes that a fresh machine of ours has (.ci/run
// installs the packages that ship them). Tests cross-check them with tools we
// did not write.
const (
	// Python311 has 8 probes guarded by semaphores.
	Python311 = "/usr/bin/python3.11"
	// LibStdcxx has 3 probes (C++ exception handling).
	LibStdcxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
	// LibJVM is OpenJDK 17's HotSpot, with 531 probe notes.
	LibJVM = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
)
