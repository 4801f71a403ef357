/*
 * libstapsdt.h — the C API of usdtkit's libstapsdt-compatible library.
 *
 * Functions, types, enum values and the layouts of the public structs are
 * those of libstapsdt 0.1 (github.com/linux-usdt/libstapsdt), so programs
 * and bindings built against that library's header run unchanged. What
 * differs is documented in cmd/libstapsdt/doc.go and README.md: up to
 * MAX_ARGUMENTS_EXTENDED (12) arguments, a kernel-counted semaphore per
 * probe, error codes past sharedLibraryCloseError, and probeFire after
 * providerUnload doing nothing.
 */
#ifndef _LIBSTAPSDT_H
#define _LIBSTAPSDT_H

#ifdef __cplusplus
extern "C" {
#endif

/* The size of SDTProbe_t.argFmt, as in libstapsdt: argument types past the
 * sixth are kept by the library, not in the struct. */
#define MAX_ARGUMENTS 6
/* The most arguments a probe may have here. */
#define MAX_ARGUMENTS_EXTENDED 12

typedef enum {
  noError                 = -1,
  elfCreationError        = 0,
  tmpCreationError        = 1,
  sharedLibraryOpenError  = 2,
  symbolLoadingError      = 3,
  sharedLibraryCloseError = 4,
  /* usdtkit: providerAddProbe got a bad argument count or type. */
  probeArgumentError      = 5,
  /* usdtkit: out of memory. */
  outOfMemoryError        = 6,
} SDTError_t;

typedef enum {
  noarg = 0,
  uint8 = 1,
  int8 = -1,
  uint16 = 2,
  int16 = -2,
  uint32 = 4,
  int32 = -4,
  uint64 = 8,
  int64 = -8,
} ArgType_t;

typedef enum {
  memfd_disabled = 0,
  memfd_enabled = 1,
} MemFDOption_t;

struct SDTProvider;

typedef struct SDTProbe {
  char *name;
  /* The first MAX_ARGUMENTS argument types, noarg past argCount. */
  ArgType_t argFmt[MAX_ARGUMENTS];
  /* The probe's site while loaded, NULL otherwise: the 4 bytes before it
   * hold a copy of the site's first 4 bytes as loaded, which no tracer
   * changes; the inline probeFire and probeIsEnabled below compare the
   * two. Do not call it or write it. */
  void *_fire;
  struct SDTProvider *provider;
  int argCount;
} SDTProbe_t;

typedef struct SDTProbeList_ {
  SDTProbe_t probe;
  struct SDTProbeList_ *next;
} SDTProbeList_t;

typedef struct SDTProvider {
  char *name;
  /* The probes, the last added first. */
  SDTProbeList_t *probes;
  /* libstapsdt names this field errno; <errno.h> makes that name a macro,
   * so it has that name only where the macro is not defined yet. */
#if defined(errno)
  SDTError_t sdterrno;
#else
  SDTError_t errno;
#endif
  /* The last error's message, or NULL; owned by the provider. */
  char *error;

  // private
  void *_handle;
  char *_filename;
  int _memfd;
  MemFDOption_t _use_memfd;
} SDTProvider_t;

/* providerInit returns a new provider, or NULL when out of memory. */
SDTProvider_t *providerInit(const char *name);

/* providerUseMemfd chooses, before providerLoad, whether the probes' object
 * lives in a memfd (memfd_enabled, the default: nothing on disk; kept open,
 * close-on-exec, until providerUnload, so that bpftrace -p and tplist -p
 * find it in /proc/PID/fd and usdtkit in /proc/PID/map_files) or in a file
 * in a private directory (memfd_disabled: removed at unload and reaped
 * after a crash). Returns 1, or 0 if the provider is loaded. */
int providerUseMemfd(SDTProvider_t *provider, const MemFDOption_t use_memfd);

/* providerAddProbe adds a probe with argCount (0 to 12) arguments of the
 * ArgType_t values that follow. It returns NULL and sets provider->error
 * for a bad count or type. A probe added while the provider is loaded
 * fires once the provider is unloaded and loaded again. */
SDTProbe_t *providerAddProbe(SDTProvider_t *provider, const char *name, int argCount, ...);

/* providerLoad maps the provider's probes into the process. Returns 0, or
 * -1 with provider->error set. Loading a loaded provider does nothing. */
int providerLoad(SDTProvider_t *provider);

/* providerUnload removes the probes from tracers' view; probeFire on them
 * then does nothing. Returns 0, or -1 with provider->error set. */
int providerUnload(SDTProvider_t *provider);

/* providerDestroy unloads the provider and frees it and its probes. No
 * other thread may use them any more. */
void providerDestroy(SDTProvider_t *provider);

/* probeFire passes its arguments, read as the probe's declared types
 * (uint64/int64 for pointers and strings), to the tracers attached to the
 * probe. Safe from any thread, and in a child after fork(); a NULL probe
 * does nothing. */
void probeFire(SDTProbe_t *probe, ...);

/* probeIsEnabled returns 1 while a tracer is attached to the probe, 0
 * otherwise, when the provider is not loaded and for a NULL probe. */
int probeIsEnabled(SDTProbe_t *probe);

/*
 * Fast paths (usdtkit). With GCC or Clang on x86-64 and arm64, probeFire
 * and probeIsEnabled are also macros that make the untraced check in the
 * caller, two dependent loads and no call: probe->_fire, then the 8 bytes
 * from 4 before the probe's site: the copy of the site's first 4 bytes
 * that the library wrote there, then the site itself, which every uprobe
 * changes (int3 or a call to the kernel's trampoline on x86-64, BRK on
 * arm64). Only a traced probe calls the library's probeFire, which checks
 * again. A probe that is not loaded has _fire NULL; after providerUnload
 * the site stays mapped until providerDestroy, so a check racing with an
 * unload reads it safely. The site's kind (1-, 5- or 10-byte nop on
 * x86-64, chosen when the provider loads; see USDTKIT_SITE in the README)
 * does not matter to the check.
 *
 * The macro probeFire evaluates its probe argument once and its other
 * arguments only when the probe is traced, as a sys/sdt.h probe guarded
 * by its semaphore would: do not rely on their side effects. Write
 * (probeFire)(probe, ...) or (probeIsEnabled)(probe) to call the
 * functions themselves, or define LIBSTAPSDT_NO_INLINE before including
 * this header to turn the macros off. Programs built with the macros need
 * this library; programs built against libstapsdt's own header call the
 * functions and need nothing more.
 */
#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__GNUC__) && !defined(LIBSTAPSDT_NO_INLINE)
#define LIBSTAPSDT_INLINE_CHECK 1
/* libstapsdt_traced_ reports whether probe, not NULL, is loaded and traced.
 * The load of the site's bytes depends on the load of its address, which
 * orders the two on every architecture this header names; the 8 bytes are
 * aligned, so they are read in one access. */
static __inline__ int libstapsdt_traced_(const SDTProbe_t *probe) {
  const unsigned char *site = (const unsigned char *)__atomic_load_n(&probe->_fire, __ATOMIC_RELAXED);
  if (__builtin_expect(site == 0, 0))
    return 0;
  unsigned long long w = __atomic_load_n((const unsigned long long *)(const void *)(site - 4), __ATOMIC_RELAXED);
  return (unsigned int)w != (unsigned int)(w >> 32);
}

static __inline__ int libstapsdt_is_enabled_(const SDTProbe_t *probe) {
  if (__builtin_expect(probe == 0, 0))
    return 0;
  return libstapsdt_traced_(probe);
}

#define probeIsEnabled(probe) libstapsdt_is_enabled_(probe)
#define probeFire(probe, ...)                                                            \
  __extension__({                                                                        \
    SDTProbe_t *libstapsdt_p_ = (probe);                                                 \
    if (__builtin_expect(libstapsdt_is_enabled_(libstapsdt_p_), 0))                        \
      (probeFire)(libstapsdt_p_, ##__VA_ARGS__);                                         \
    (void)0;                                                                             \
  })
#endif

#ifdef __cplusplus
}
#endif

#endif
