// Package gen writes what usdtkit gen writes for a dynsdt provider: Go
// code, a C header, the shared object as a file, and the Go code and
// assembly of static probes. It also reads DTrace provider (.d) files.
//
//	.d file ──ParseD──► dynsdt.ProviderSpec ──Files──► WriteFiles
//
// Generated code imports dynsdt, never gen, so a program with probes links
// no generator. Static probes keep a StaticTable in the program's data;
// package dynsdt/postlink reads it with ParseStaticTable.
//
// Errors: a refused spec wraps dynsdt.ErrSpec; a .d syntax or type error
// is a *ParseError with line and column; a bad table wraps
// ErrStaticTable; WriteFiles will not replace a non-regular file
// (ErrNotRegularFile). Every function is safe for concurrent use.
//
// docs/probes.md shows the command and the generated API.
package gen
