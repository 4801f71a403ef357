// Package postlink is the post-link step of static Go probes (usdtkit gen
// --static). It finds the probe tables and stubs in a linked Go executable
// and adds the NT_STAPSDT notes tracers read. Tracers then see the probes
// by path, before the program runs.
//
// Entry points: File rewrites a file in place; Bytes works on its
// contents. Options.Site sets the x86-64 stubs' kind of probe site.
// Result says what was found and changed.
//
// Rules for callers:
//   - Only 64-bit little-endian x86-64 and arm64 executables are
//     processed. On error the file is left unchanged.
//   - Nothing the program loads moves; only the file grows. Running the
//     step twice changes nothing.
//   - A probe whose function is never called has no stub and no note
//     (Result.Missing).
//
// docs/probes.md ("Static probes") describes the step.
package postlink
