// Package btgen generates BPF for a checked btlang.Program and its sites.
// It returns an ebpf.CollectionSpec and the metadata user space needs to
// read the maps and records back.
//
//	btlang.Program (checked) ──Support──► *Plan ──Generate──► *Program{Spec, Blocks, Maps, Printfs}
//
// Support refuses what cannot be generated yet, with "file:line:col: … is
// not supported yet"; it never compiles a program to something else.
// Generate raises only the kernel's limits and the sites' (an argument a
// site lacks). Program.Listing prints the BPF; TestGolden keeps it for the
// language corpus.
//
// Generate keeps no state and is safe for concurrent use. A Program is
// plain data. docs/architecture.md ("Code generation") describes the
// programs, maps, records and stacks.
package btgen
