// The C entry points of the library: libstapsdt's API. Providers and
// probes are C memory; providerLoad builds, writes and maps the object
// (sdtelf.c, sdtload.c); probeFire and probeIsEnabled check the probe
// site. Plain C: no runtime, no threads, no signal handlers. See doc.go.

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The library defines the functions the header's macros stand for.
#define LIBSTAPSDT_NO_INLINE
#include "libstapsdt.h"
#include "sdtload.h"

// <errno.h> came first, so the header named the field sdterrno.
#define SDT_ERRNO(p) ((p)->sdterrno)

// probe_node is a probe as the library allocates it: the public list node
// first, so that an SDTProbe_t * is a probe_node *.
struct probe_node {
  SDTProbeList_t pub;
  // The declared types and count; the public copies may be written by
  // the program, these are what probeFire reads.
  int types[MAX_ARGUMENTS_EXTENDED];
  int argc;
  // site is the probe site probeFire and probeIsEnabled load, compared
  // with orig: untraced, it holds orig. When not loaded it points to
  // idle, which holds orig too (both 0 before the first load), so that
  // the fast check alone sends an unloaded probe home; a site that is
  // &idle means not loaded, whatever idle and orig read while a first
  // load writes them. Loads and stores are atomic; the store that
  // publishes a new site is a release, so that orig and stub are seen
  // before it.
  const uint32_t *site;
  uint32_t orig;
  uint32_t idle;
  // stub is the function at site: calling it with the probe's arguments
  // in the C calling convention is the probe hit.
  uintptr_t stub;
};

// provider_node is a provider as the library allocates it.
struct provider_node {
  SDTProvider_t pub;
  pthread_mutex_t mu;
  int loaded;
  // The loaded object, while loaded.
  struct sdt_loaded obj;
  // The address ranges this provider mapped objects in: they stay
  // mapped, retired, until providerDestroy, for a probeFire racing with
  // providerUnload. A new load maps over the last one when it fits, so
  // that load/unload cycles do not add mappings.
  struct sdt_range **ranges;
  int nranges;
  // Who loaded it: the process (and fork generation, see fork_gen) that
  // owns the object's file. A child after fork() has the mappings and the
  // descriptors but must not remove its parent's file.
  pid_t load_pid;
  unsigned long load_gen;
};

// fork_gen counts the fork()s that made this process from the one that
// loaded the library: a child in a new PID namespace may have the PID of
// its ancestor.
static unsigned long fork_gen;

static void forked(void) { fork_gen++; }

__attribute__((constructor)) static void init(void) { pthread_atfork(NULL, NULL, forked); }

static int owns(struct provider_node *pn) { return pn->load_gen == fork_gen && pn->load_pid == getpid(); }

// set_error replaces the provider's error; msg is malloc'd or NULL.
static void set_error(SDTProvider_t *p, SDTError_t code, char *msg) {
  free(p->error);
  SDT_ERRNO(p) = code;
  p->error = msg;
}

static void set_errorf(SDTProvider_t *p, SDTError_t code, const char *fmt, ...) {
  char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&msg, fmt, ap) < 0)
    msg = NULL;
  va_end(ap);
  set_error(p, code, msg);
}

SDTProvider_t *providerInit(const char *name) {
  if (name == NULL)
    return NULL;
  struct provider_node *n = calloc(1, sizeof *n);
  if (n == NULL)
    return NULL;
  n->pub.name = strdup(name);
  if (n->pub.name == NULL || pthread_mutex_init(&n->mu, NULL) != 0) {
    free(n->pub.name);
    free(n);
    return NULL;
  }
  SDT_ERRNO(&n->pub) = noError;
  n->pub._memfd = -1;
  n->pub._use_memfd = memfd_enabled;
  return &n->pub;
}

int providerUseMemfd(SDTProvider_t *provider, const MemFDOption_t use_memfd) {
  struct provider_node *n = (struct provider_node *)provider;
  if (n == NULL)
    return 0;
  pthread_mutex_lock(&n->mu);
  int ok = !n->loaded;
  if (ok)
    n->pub._use_memfd = use_memfd == memfd_disabled ? memfd_disabled : memfd_enabled;
  pthread_mutex_unlock(&n->mu);
  return ok;
}

static int valid_type(int t) {
  switch (t) {
  case uint8: case int8: case uint16: case int16:
  case uint32: case int32: case uint64: case int64:
    return 1;
  }
  return 0;
}

SDTProbe_t *providerAddProbe(SDTProvider_t *provider, const char *name, int argCount, ...) {
  struct provider_node *pn = (struct provider_node *)provider;
  if (pn == NULL)
    return NULL;
  pthread_mutex_lock(&pn->mu);
  struct probe_node *n = NULL;
  if (name == NULL) {
    set_errorf(provider, probeArgumentError, "probe without a name");
    goto out;
  }
  if (argCount < 0 || argCount > MAX_ARGUMENTS_EXTENDED) {
    set_errorf(provider, probeArgumentError, "probe %s: %d arguments, at most %d", name, argCount,
               MAX_ARGUMENTS_EXTENDED);
    goto out;
  }
  int types[MAX_ARGUMENTS_EXTENDED] = {0};
  va_list ap;
  va_start(ap, argCount);
  for (int i = 0; i < argCount; i++)
    types[i] = va_arg(ap, int);
  va_end(ap);
  for (int i = 0; i < argCount; i++) {
    if (!valid_type(types[i])) {
      set_errorf(provider, probeArgumentError, "probe %s: argument %d has type %d, not an ArgType_t", name,
                 i, types[i]);
      goto out;
    }
  }
  n = calloc(1, sizeof *n);
  if (n == NULL || (n->pub.probe.name = strdup(name)) == NULL) {
    free(n);
    n = NULL;
    set_errorf(provider, outOfMemoryError, "probe %s: out of memory", name);
    goto out;
  }
  memcpy(n->types, types, sizeof types);
  n->argc = argCount;
  for (int i = 0; i < MAX_ARGUMENTS && i < argCount; i++)
    n->pub.probe.argFmt[i] = (ArgType_t)types[i];
  n->pub.probe.argCount = argCount;
  n->pub.probe.provider = provider;
  n->site = &n->idle;
  n->pub.next = provider->probes;
  provider->probes = &n->pub;
out:
  pthread_mutex_unlock(&pn->mu);
  return n ? &n->pub.probe : NULL;
}

static int load_locked(struct provider_node *pn) {
  SDTProvider_t *p = &pn->pub;
  if (pn->loaded)
    return 0;
  int count = 0;
  for (SDTProbeList_t *l = p->probes; l; l = l->next)
    count++;
  struct probe_node **nodes = calloc(count ? count : 1, sizeof *nodes);
  struct sdt_probe_spec *specs = calloc(count ? count : 1, sizeof *specs);
  struct sdt_range **ranges = realloc(pn->ranges, (pn->nranges + 1) * sizeof *ranges);
  if (ranges != NULL)
    pn->ranges = ranges;
  int ret = -1;
  if (!nodes || !specs || !ranges) {
    set_errorf(p, outOfMemoryError, "provider %s: out of memory", p->name);
    goto out;
  }
  // In the order the probes were added: the list has the last first.
  int i = count;
  for (SDTProbeList_t *l = p->probes; l; l = l->next) {
    struct probe_node *n = (struct probe_node *)l;
    i--;
    nodes[i] = n;
    specs[i].name = n->pub.probe.name;
    specs[i].argc = n->argc;
    memcpy(specs[i].types, n->types, sizeof n->types);
  }
  struct sdt_range *reuse = pn->nranges > 0 ? pn->ranges[pn->nranges - 1] : NULL;
  struct sdt_object obj;
  char *msg = NULL;
  int code = sdt_load(p->name, specs, count, p->_use_memfd == memfd_enabled, reuse, &pn->obj, &obj, &msg);
  if (code != SDT_LOAD_OK) {
    set_error(p, (SDTError_t)code, msg);
    goto out;
  }
  if (pn->obj.range != reuse)
    pn->ranges[pn->nranges++] = pn->obj.range;
  uintptr_t base = (uintptr_t)pn->obj.range->base;
  for (i = 0; i < count; i++) {
    struct probe_node *n = nodes[i];
    uintptr_t stub = base + (uintptr_t)obj.stubs[i];
    uint32_t orig;
    memcpy(&orig, obj.bytes + obj.stubs[i], sizeof orig); // the file offset equals the address
    __atomic_store_n(&n->orig, orig, __ATOMIC_RELAXED);
    __atomic_store_n(&n->idle, orig, __ATOMIC_RELAXED);
    __atomic_store_n(&n->stub, stub, __ATOMIC_RELAXED);
    __atomic_store_n(&n->site, (const uint32_t *)stub, __ATOMIC_RELEASE);
    // What the header's inline check loads: the site, now mapped, with
    // the copy of its first word before it.
    __atomic_store_n(&n->pub.probe._fire, (void *)stub, __ATOMIC_RELEASE);
  }
  sdt_object_free(&obj);
  free(p->_filename);
  p->_filename = strdup(pn->obj.path);
  p->_handle = pn->obj.range->base;
  p->_memfd = pn->obj.file == NULL ? pn->obj.fd : -1;
  pn->load_pid = getpid();
  pn->load_gen = fork_gen;
  pn->loaded = 1;
  ret = 0;
out:
  free(nodes);
  free(specs);
  return ret;
}

int providerLoad(SDTProvider_t *provider) {
  struct provider_node *pn = (struct provider_node *)provider;
  if (pn == NULL)
    return -1;
  pthread_mutex_lock(&pn->mu);
  int ret = load_locked(pn);
  pthread_mutex_unlock(&pn->mu);
  return ret;
}

static int unload_locked(struct provider_node *pn) {
  SDTProvider_t *p = &pn->pub;
  if (!pn->loaded)
    return 0;
  pn->loaded = 0;
  p->_handle = NULL;
  p->_memfd = -1;
  free(p->_filename);
  p->_filename = NULL;
  for (SDTProbeList_t *l = p->probes; l; l = l->next) {
    struct probe_node *n = (struct probe_node *)l;
    // The header's inline check and probeFire now report untraced; one
    // racing with these stores reads a site that stays mapped, retired
    // to the original bytes, until providerDestroy.
    __atomic_store_n(&n->pub.probe._fire, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&n->site, &n->idle, __ATOMIC_RELEASE);
  }
  char *msg = NULL;
  if (sdt_retire(&pn->obj, owns(pn), &msg) != 0) {
    set_error(p, sharedLibraryCloseError, msg);
    return -1;
  }
  return 0;
}

int providerUnload(SDTProvider_t *provider) {
  struct provider_node *pn = (struct provider_node *)provider;
  if (pn == NULL)
    return -1;
  pthread_mutex_lock(&pn->mu);
  int ret = unload_locked(pn);
  pthread_mutex_unlock(&pn->mu);
  return ret;
}

void providerDestroy(SDTProvider_t *provider) {
  struct provider_node *pn = (struct provider_node *)provider;
  if (pn == NULL)
    return;
  pthread_mutex_lock(&pn->mu);
  unload_locked(pn);
  for (int i = 0; i < pn->nranges; i++)
    sdt_range_free(pn->ranges[i]);
  free(pn->ranges);
  pthread_mutex_unlock(&pn->mu);
  SDTProbeList_t *next;
  for (SDTProbeList_t *l = provider->probes; l; l = next) {
    next = l->next;
    free(l->probe.name);
    free(l);
  }
  pthread_mutex_destroy(&pn->mu);
  free(provider->name);
  free(provider->error);
  free(provider->_filename);
  free(pn);
}

// untraced reports whether site, loaded from n->site with acquire
// semantics, shows no tracer, or n is not loaded.
static inline int untraced(struct probe_node *n, const uint32_t *site) {
  return __atomic_load_n(site, __ATOMIC_RELAXED) == __atomic_load_n(&n->orig, __ATOMIC_RELAXED) ||
         site == &n->idle;
}

typedef void (*stub12)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                       uint64_t, uint64_t, uint64_t, uint64_t);

typedef void (*stub6)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

// fire_slow reads the arguments as their declared types, extended to 64
// bits as the C calling convention would leave them, and calls the stub:
// the arguments land where the note's specs say (registers first, then
// 8-byte stack slots). Up to 6 arguments, all in registers on both
// architectures, the stub is called with 6 and the call is the last thing
// done, so the compiler can jump to it (one return fewer after the trap).
static inline __attribute__((always_inline)) void fire_slow(struct probe_node *n, va_list ap) {
  uint64_t a[MAX_ARGUMENTS_EXTENDED] = {0};
  for (int i = 0; i < n->argc; i++) {
    switch (n->types[i]) {
    case int8: a[i] = (uint64_t)(int64_t)(int8_t)va_arg(ap, int); break;
    case uint8: a[i] = (uint8_t)va_arg(ap, unsigned int); break;
    case int16: a[i] = (uint64_t)(int64_t)(int16_t)va_arg(ap, int); break;
    case uint16: a[i] = (uint16_t)va_arg(ap, unsigned int); break;
    case int32: a[i] = (uint64_t)(int64_t)va_arg(ap, int32_t); break;
    case uint32: a[i] = va_arg(ap, uint32_t); break;
    default: a[i] = va_arg(ap, uint64_t); break;
    }
  }
  uintptr_t stub = __atomic_load_n(&n->stub, __ATOMIC_RELAXED);
  if (n->argc <= 6) {
    ((stub6)stub)(a[0], a[1], a[2], a[3], a[4], a[5]);
    return;
  }
  ((stub12)stub)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]);
}

// probe_fire_traced is probeFire past its fast check, with the same
// arguments. It loads the site again, with acquire semantics: a racing
// providerLoad may have published a new site whose orig and stub the fast
// check did not order its loads with. A probe whose site is its idle
// word is not loaded, whatever orig and idle read during a first load.
__attribute__((visibility("hidden"), used)) void probe_fire_traced(SDTProbe_t *probe, ...) {
  struct probe_node *n = (struct probe_node *)probe;
  const uint32_t *site = __atomic_load_n(&n->site, __ATOMIC_ACQUIRE);
  if (untraced(n, site))
    return;
  va_list ap;
  va_start(ap, probe);
  fire_slow(n, ap);
  va_end(ap);
}

#if defined(__x86_64__)
// On x86-64 probeFire is the check alone, in assembly: a C variadic
// function stores the six argument registers (and, with %al set, eight
// vector registers) before its first statement. Untraced, the site holds
// its original bytes (every uprobe changes them: int3, or a call to the
// kernel's trampoline) and probeFire returns. Traced (or with a site that
// is the idle word: not loaded, returns), a probe of up to 6 arguments
// has them in rsi..r9 and 8(%rsp): probeFire moves them down one register
// (rdi..r9, where the note's specs read them: each spec reads its
// argument's size in low bytes, as the caller left them) and jumps to the
// stub, which returns to probeFire's caller. More arguments go to
// probe_fire_traced, with the registers untouched. x86 loads are ordered,
// so the plain loads are acquire loads (see probe_fire_traced).
#define PROBE_ARGC_OFF 112
#define PROBE_SITE_OFF 120
#define PROBE_ORIG_OFF 128
#define PROBE_IDLE_OFF 132
#define PROBE_STUB_OFF 136
_Static_assert(offsetof(struct probe_node, argc) == PROBE_ARGC_OFF, "probe_node.argc");
_Static_assert(offsetof(struct probe_node, site) == PROBE_SITE_OFF, "probe_node.site");
_Static_assert(offsetof(struct probe_node, orig) == PROBE_ORIG_OFF, "probe_node.orig");
_Static_assert(offsetof(struct probe_node, idle) == PROBE_IDLE_OFF, "probe_node.idle");
_Static_assert(offsetof(struct probe_node, stub) == PROBE_STUB_OFF, "probe_node.stub");
#define STR_(x) #x
#define STR(x) STR_(x)
__asm__(".text\n"
        ".globl probeFire\n"
        ".type probeFire, @function\n"
        ".p2align 4\n"
        "probeFire:\n"
        "  .cfi_startproc\n"
        "  testq %rdi, %rdi\n"
        "  jz 1f\n"
        "  movq " STR(PROBE_SITE_OFF) "(%rdi), %r10\n"
        "  movl (%r10), %r11d\n"
        "  cmpl " STR(PROBE_ORIG_OFF) "(%rdi), %r11d\n"
        "  jne 2f\n"
        "1:\n"
        "  ret\n"
        "2:\n"
        "  leaq " STR(PROBE_IDLE_OFF) "(%rdi), %r11\n"
        "  cmpq %r11, %r10\n"
        "  je 1b\n"
        "  movl " STR(PROBE_ARGC_OFF) "(%rdi), %r11d\n"
        "  cmpl $6, %r11d\n"
        "  ja probe_fire_traced\n"
        "  movq " STR(PROBE_STUB_OFF) "(%rdi), %rax\n"
        "  movq %rsi, %rdi\n"
        "  movq %rdx, %rsi\n"
        "  movq %rcx, %rdx\n"
        "  movq %r8, %rcx\n"
        "  movq %r9, %r8\n"
        "  jb 3f\n"
        "  movq 8(%rsp), %r9\n"
        "3:\n"
        "  jmp *%rax\n"
        "  .cfi_endproc\n"
        ".size probeFire, .-probeFire\n");
#else
void probeFire(SDTProbe_t *probe, ...) {
  struct probe_node *n = (struct probe_node *)probe;
  if (n == NULL)
    return;
  const uint32_t *site = __atomic_load_n(&n->site, __ATOMIC_ACQUIRE);
  // Untraced, the site holds its original bytes: every uprobe changes
  // them (a call to the kernel's trampoline, BRK).
  if (__builtin_expect(untraced(n, site), 1))
    return;
  va_list ap;
  va_start(ap, probe);
  fire_slow(n, ap);
  va_end(ap);
}
#endif

int probeIsEnabled(SDTProbe_t *probe) {
  struct probe_node *n = (struct probe_node *)probe;
  if (n == NULL)
    return 0;
  const uint32_t *site = __atomic_load_n(&n->site, __ATOMIC_ACQUIRE);
  return !untraced(n, site);
}
