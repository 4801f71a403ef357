package elfnotes

import "testing"

const libjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"

// BenchmarkLibjvm lists the SDT probes of OpenJDK's libjvm.so (hundreds, in a
// file of tens of MB).
// /open is the floor: Open and Close alone. /SDTProbes adds reading the
// note sections and decoding the probes; compare it with /open in the same
// run, and with `readelf -n` (see the package report) outside Go.
func BenchmarkLibjvm(b *testing.B) {
	requireFile(b, libjvm)
	b.Run("open", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, err := Open(libjvm)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("SDTProbes", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			f, err := Open(libjvm)
			if err != nil {
				b.Fatal(err)
			}
			probes, err := f.SDTProbes()
			if err != nil {
				b.Fatal(err)
			}
			n = len(probes)
			f.Close()
		}
		if n == 0 {
			b.Fatal("no probes")
		}
	})
}
