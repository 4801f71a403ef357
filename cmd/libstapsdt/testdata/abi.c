/*
 * abi.c — compiled (gcc -c) by TestABI: the layouts and values of
 * libstapsdt.h must be those of libstapsdt 0.1's src/libstapsdt.h, so that
 * programs and bindings built against that header (python-stapsdt reads
 * nothing but pointers; C code reads provider->error and probe->name) work
 * with this library. The numbers were read off libstapsdt's header
 * compiled with gcc for x86-64 (LP64; the same on arm64).
 */
#include <stddef.h>

#include "libstapsdt.h"

_Static_assert(sizeof(void *) == 8, "LP64 only");

_Static_assert(MAX_ARGUMENTS == 6, "MAX_ARGUMENTS");

_Static_assert(noError == -1 && elfCreationError == 0 && tmpCreationError == 1 &&
                   sharedLibraryOpenError == 2 && symbolLoadingError == 3 && sharedLibraryCloseError == 4,
               "SDTError_t");
_Static_assert(noarg == 0 && uint8 == 1 && int8 == -1 && uint16 == 2 && int16 == -2 && uint32 == 4 &&
                   int32 == -4 && uint64 == 8 && int64 == -8,
               "ArgType_t");
_Static_assert(memfd_disabled == 0 && memfd_enabled == 1, "MemFDOption_t");
_Static_assert(sizeof(ArgType_t) == 4 && sizeof(SDTError_t) == 4 && sizeof(MemFDOption_t) == 4, "enum sizes");

_Static_assert(sizeof(SDTProbe_t) == 56, "SDTProbe_t size");
_Static_assert(offsetof(SDTProbe_t, name) == 0, "SDTProbe_t.name");
_Static_assert(offsetof(SDTProbe_t, argFmt) == 8, "SDTProbe_t.argFmt");
_Static_assert(sizeof(((SDTProbe_t *)0)->argFmt) == 24, "SDTProbe_t.argFmt size");
_Static_assert(offsetof(SDTProbe_t, _fire) == 32, "SDTProbe_t._fire");
_Static_assert(offsetof(SDTProbe_t, provider) == 40, "SDTProbe_t.provider");
_Static_assert(offsetof(SDTProbe_t, argCount) == 48, "SDTProbe_t.argCount");

_Static_assert(sizeof(SDTProbeList_t) == 64, "SDTProbeList_t size");
_Static_assert(offsetof(SDTProbeList_t, probe) == 0, "SDTProbeList_t.probe");
_Static_assert(offsetof(SDTProbeList_t, next) == 56, "SDTProbeList_t.next");

_Static_assert(sizeof(SDTProvider_t) == 56, "SDTProvider_t size");
_Static_assert(offsetof(SDTProvider_t, name) == 0, "SDTProvider_t.name");
_Static_assert(offsetof(SDTProvider_t, probes) == 8, "SDTProvider_t.probes");
_Static_assert(offsetof(SDTProvider_t, errno) == 16, "SDTProvider_t.errno");
_Static_assert(offsetof(SDTProvider_t, error) == 24, "SDTProvider_t.error");
_Static_assert(offsetof(SDTProvider_t, _handle) == 32, "SDTProvider_t._handle");
_Static_assert(offsetof(SDTProvider_t, _filename) == 40, "SDTProvider_t._filename");
_Static_assert(offsetof(SDTProvider_t, _memfd) == 48, "SDTProvider_t._memfd");
_Static_assert(offsetof(SDTProvider_t, _use_memfd) == 52, "SDTProvider_t._use_memfd");

/* The prototypes, as libstapsdt declares them: assigning each function to
 * a pointer of libstapsdt's type fails to compile on any difference. */
SDTProvider_t *(*const check_init)(const char *) = providerInit;
int (*const check_memfd)(SDTProvider_t *, const MemFDOption_t) = providerUseMemfd;
SDTProbe_t *(*const check_add)(SDTProvider_t *, const char *, int, ...) = providerAddProbe;
int (*const check_load)(SDTProvider_t *) = providerLoad;
int (*const check_unload)(SDTProvider_t *) = providerUnload;
void (*const check_destroy)(SDTProvider_t *) = providerDestroy;
void (*const check_fire)(SDTProbe_t *, ...) = probeFire;
int (*const check_enabled)(SDTProbe_t *) = probeIsEnabled;

/* The header's macros compile in this standard; the parenthesized names
 * are the functions. */
int use_macros(SDTProbe_t *p) {
  probeFire(p);
  probeFire(p, 1, (unsigned long long)2);
  (probeFire)(p);
  (probeFire)(p, 1);
  return probeIsEnabled(p) + (probeIsEnabled)(p);
}
