package elfnotes

import (
	"debug/elf"
	"os"
	"runtime"
	"testing"
)

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

// BenchmarkNoteMemory reads the notes of real files with SDT probes and
// reports the bytes allocated per read as ratios: B/notebyte to the size
// of their note sections, B/filebyte to the size of the file. Run with
// -benchmem; the ratios are what the commit messages compare.
func BenchmarkNoteMemory(b *testing.B) {
	for _, path := range []string{libjvm, "/usr/bin/python3.11"} {
		b.Run(path[len(path)-len("python3.11"):], func(b *testing.B) {
			requireFile(b, path)
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			f, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var noteBytes uint64
			for _, s := range f.Sections {
				if s.Type == elf.SHT_NOTE {
					noteBytes += s.Size
				}
			}
			for _, read := range []struct {
				name string
				fn   func() error
			}{
				{"SDTProbes", func() error { _, err := f.SDTProbes(); return err }},
				{"Notes", func() error { _, err := f.Notes(); return err }},
			} {
				b.Run(read.name, func(b *testing.B) {
					b.ReportAllocs()
					var before, after runtimeMem
					before.read()
					for b.Loop() {
						if err := read.fn(); err != nil {
							b.Fatal(err)
						}
					}
					after.read()
					per := float64(after.total-before.total) / float64(b.N)
					b.ReportMetric(per/float64(noteBytes), "B/notebyte")
					b.ReportMetric(per/float64(fi.Size()), "B/filebyte")
				})
			}
		})
	}
}

type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}
