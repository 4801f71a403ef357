// Package libstapsdt holds no Go code. Its C sources (c/) build
// libstapsdt.so.0 (make libstapsdt): a drop-in for libstapsdt, the run-time
// USDT library that the probe bindings of Python, Node, Ruby and Lua call.
// The Go files are its tests.
//
// Programs and bindings built against libstapsdt load it unchanged.
// libstapsdt.h declares the same functions, enum values and struct
// layouts; TestABI checks them. The object it writes is byte for byte the
// one dynsdt.Build writes; TestBuilderMatchesDynsdt checks that.
//
// Rules for callers:
//   - Up to 12 arguments. Names must be C identifiers, unique in the
//     provider; providerLoad fails with elfCreationError otherwise.
//   - Every function is safe from many threads. probeFire and
//     probeIsEnabled take no lock and may race with providerLoad and
//     providerUnload, not with providerDestroy.
//
// docs/probes.md describes the library, its inline checks, its lifetime
// and how it differs from libstapsdt.
package libstapsdt
