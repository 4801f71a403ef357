// Package gen writes what usdtkit gen writes for a provider of package
// dynsdt: Go code, a C header, the shared object as a file, and the Go
// code and assembly of static probes; and it reads the declarations they
// are made from, DTrace provider (.d) files.
//
// # Model
//
//	.d file → ParseD ┐
//	dynsdt.ParseProbeSpec ┴→ dynsdt.ProviderSpec → Files → WriteFiles
//	    Files: dynsdt.BuildWith (PROVIDER.so), Header (PROVIDER.h), Go (PROVIDER.go)
//	    Files with Options.Static: Static (Go, stubs, StaticTable) → go build → dynsdt/postlink
//
// The generated Go code imports package dynsdt, the run-time library,
// and not this one: a program that declares probes links no generator.
// Static probes carry a StaticTable in the program's data, which the
// post-link step (package dynsdt/postlink) reads with ParseStaticTable.
//
// # Errors
//
// Generators' errors wrap dynsdt.ErrSpec for a spec they refuse;
// ParseD's syntax and type errors are *ParseError with the line and
// column; ParseStaticTable's errors wrap ErrStaticTable; WriteFiles
// refuses to replace a non-regular file with ErrNotRegularFile.
//
// # Concurrency
//
// Every function is safe for concurrent use; none keeps state.
package gen
