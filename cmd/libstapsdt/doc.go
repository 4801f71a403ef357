// Package libstapsdt holds no Go code: its C sources (c/) are
// libstapsdt.so.0 (make libstapsdt), a C library with the API and ABI of
// libstapsdt (github.com/linux-usdt/libstapsdt), the run-time USDT library
// that the probe bindings of Python (python-stapsdt), Node, Ruby, Lua and
// others call. Programs and bindings built against libstapsdt's header
// load it unchanged; libstapsdt.h here declares the same functions, enum
// values and struct layouts (checked by a test with _Static_assert against
// the offsets of libstapsdt 0.1's header). The Go files are its tests.
//
// Like libstapsdt it is plain C: it starts no thread, installs no signal
// handler and reserves nothing when loaded, so it lives in any host
// (profilers' SIGPROF handlers, libuv, Ruby, small address-space limits,
// PID namespaces: TestHostileHosts). An earlier version was Go built with
// -buildmode=c-shared and carried the Go runtime into its hosts, which
// crashed in each of those cases.
//
// # Model
//
// Providers and probes are C memory that the C entry points (c/stapsdt.c)
// own: providerInit and providerAddProbe allocate the public structs
// (SDTProvider_t, SDTProbeList_t nodes with their SDTProbe_t) inside larger
// private ones. providerLoad builds the provider's object (c/sdtelf.c),
// writes it to a memfd (the default, memfd_enabled; open until unload, as
// libstapsdt keeps it, for bcc's tools to find) or to a file in dynsdt's
// private directory (memfd_disabled; removed at unload, reaped after a
// crash, by this library or by dynsdt and usdtkit, which share the names
// and the locks), and maps it into the process as the dynamic loader would
// (c/sdtload.c). The object writer follows dynsdt.BuildWith byte for byte:
// one ELF design, whose description is dynsdt's package documentation.
// TestBuilderMatchesDynsdt and FuzzBuilderMatchesDynsdt compare the two
// writers' output for the same providers (testdata/build.c serves the C
// one to the Go test).
//
//	providerLoad: build (sdtelf.c) → memfd or file → map (sdtload.c) → addresses
//	probeFire: load the site; traced → call the stub with the args
//	probeFire (macro, in the program): load _fire and the site; traced → probeFire
//
// On x86-64 probeFire is assembly (a C variadic function stores all
// argument registers before its first statement): untraced it returns
// after the check; traced with up to 6 arguments it moves them down one
// register and jumps to the stub; with more it jumps to C with the
// arguments untouched. Elsewhere it is C. probeIsEnabled is one load of
// the probe site compared with the word built there, as dynsdt's
// Probe.Enabled: every uprobe changes the site, whether or not its tracer
// counts the semaphore, and the site stays readable after providerUnload
// (the semaphore's page does not). The semaphore is still there and
// counted by the kernel (uprobe ref_ctr_offset) for tracers that read it.
// probeFire makes the same check and returns when untraced; traced, it
// reads argCount arguments of the declared types (ArgType_t; strings and
// pointers are passed as uint64, as python-stapsdt does), extends them to
// 64 bits and calls the stub with 12 integer arguments, which puts them
// where the note's argument specs say: rdi, rsi, rdx, rcx, r8, r9, then
// 8-byte stack slots from 8(%rsp) at the stub's entry on x86-64; x0-x7,
// then [sp] on arm64. A probe of up to 6 arguments (all in registers)
// calls it with 6 as its last act, which the compiler makes a jump: the
// stub returns straight to probeFire's caller, one return fewer after the
// trap.
//
// # Inline checks
//
// Programs compiled against this libstapsdt.h (GCC or Clang, x86-64 or
// arm64) do the untraced check themselves: probeFire and probeIsEnabled
// are also function-like macros that load SDTProbe_t's private _fire,
// which the library sets to the probe site while loaded (NULL
// otherwise), then the 8 aligned bytes from 4 before the site: dynsdt
// writes a copy of each stub's first 4 bytes there, which no uprobe
// changes, and the check compares it with the site's. So the check holds
// whatever kind of site the provider was loaded with (see "Sites"). Two
// dependent loads, no call; only a traced probe calls the exported
// probeFire, which checks again as above. providerUnload stores NULL in
// _fire; a check racing with it reads the old site, which stays mapped
// (its retired copy holds the original bytes) until providerDestroy, so it
// never faults and reports untraced. The macro evaluates the probe
// expression once and the probe's arguments only when traced, as a
// semaphore-guarded sys/sdt.h probe does. (probeFire)(probe, ...) and
// (probeIsEnabled)(probe) call the functions; LIBSTAPSDT_NO_INLINE turns
// the macros off. Programs and bindings built against libstapsdt's header
// (and ctypes) call the exported functions and see no change: the struct
// layouts are libstapsdt's (TestABI), and _fire was already private.
//
// # Sites
//
// providerLoad chooses the kind of probe site as dynsdt.Load does (on
// x86-64 the 1-byte nop, whose stub returns without ret, as cheap traced
// as a sys/sdt.h probe in the caller's body) unless the USDTKIT_SITE
// environment variable names one: nop, nop5 (what the kernel's 6.18 uprobe
// optimization turns into a call) or nop10 (the form later kernels
// optimize; 6.18 cannot probe it). Programs built with an older
// libstapsdt.h, whose check compared the site with the nop5's first word,
// see a nop site as traced and call probeFire, which checks again: still
// correct, one call dearer untraced.
//
// # Differences from libstapsdt
//
// Up to 12 arguments (MAX_ARGUMENTS_EXTENDED); argFmt keeps libstapsdt's 6
// entries and the rest live in the private part of the probe. A 13th
// argument, or a value that is not an ArgType_t, makes providerAddProbe
// return NULL with provider->error set (probeArgumentError), instead of
// writing past argFmt. Each probe has a semaphore counted by the kernel.
// The site's kind suits the kernel (see "Sites"): traced, a probeFire
// costs what a sys/sdt.h probe in the caller's body costs, where
// libstapsdt's trap in a called function costs ~1.3x that. Nothing is left in /tmp after a crash. probeFire after
// providerUnload does nothing; probes added while loaded fire after the
// next unload and load. The probe list, as libstapsdt's, has the last
// added probe first; the object declares the probes in the order added.
// Provider and probe names must be C identifiers, unique within the
// provider (dynsdt's rule: probe names become symbols); providerLoad
// fails with elfCreationError otherwise, where libstapsdt took any name.
// provider->errno is named sdterrno where <errno.h> was included before
// the header (errno is a macro there, which libstapsdt's header breaks on).
//
// # Lifetime
//
// providerUnload retires the object in place: the stub pages become an
// anonymous copy holding the original bytes and the rest inaccessible
// pages, so a probeFire racing with providerUnload calls a stub that
// returns, and later ones see an unloaded probe and return. The address
// range stays reserved until providerDestroy, which unmaps it; no thread
// may use the provider or its probes once providerDestroy is called. A
// later providerLoad of the same provider maps its new object over that
// range when the new image fits it with the stubs in the same pages (the
// same probes: always), so load/unload cycles end with the mappings they
// started with.
//
// # fork and PID namespaces
//
// A child after fork() has the parent's mappings, descriptors and probe
// structs: it fires and checks the probes its parent loaded, and tracers
// attached to the child see them. It loads providers of its own as any
// process does. Unloading an inherited provider retires the child's copy
// of the mappings and closes its copies of the descriptors, but never
// removes the parent's file: the library tells an inherited provider by
// the loading process's PID and a count of fork()s (pthread_atfork),
// since a child in a new PID namespace may have its parent's PID.
//
// # Testing
//
// lib_test.go builds the library as make libstapsdt does and links C
// programs against it: testdata/abi.c holds libstapsdt's layouts as
// _Static_asserts and uses the macros (compiled as C99, C11, GNU C17, and
// the header as C++11, by gcc and clang); testdata/driver.c, written
// against libstapsdt's API, is built with the inline macros and with
// LIBSTAPSDT_NO_INLINE and traced by usdtkit's tracer (every type, 1 to
// 12 arguments, strings, semaphores, threads, fork, unload) and by
// bpftrace and tplist-bpfcc; testdata/trap.c checks the arm64 build under
// qemu-user with a BRK written over the site; testdata/bench.c is
// BenchmarkC: the exported functions and the macros against an empty C
// call, providerLoad, and the traced fire against sys/sdt.h probes, with
// the BPF programs' run time per hit from the kernel's BPF stats and the
// site forms (1-byte nop with ret or pop/jmp, 5-byte nop) alone.
// examples/python-stapsdt drives the library from Python.
//
// # Symbols
//
// libstapsdt.map, the linker's version script, exports libstapsdt's eight
// functions and nothing else: the library's internal functions (sdt_*)
// stay local, so that no program can interpose them.
//
// # Concurrency
//
// Every function is safe from many threads on different providers;
// providerAddProbe, providerLoad, providerUnload and providerUseMemfd lock
// the provider. probeFire and probeIsEnabled take no lock and may race
// with providerLoad and providerUnload, not with providerDestroy.
package libstapsdt
