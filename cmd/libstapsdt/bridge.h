/* bridge.h — what the C entry points (stapsdt.c) and the Go side (load.go)
 * of the library pass each other. Not installed. */
#ifndef USDTKIT_STAPSDT_BRIDGE_H
#define USDTKIT_STAPSDT_BRIDGE_H

#include <stdint.h>

/* A load request: the provider's probes in, their addresses out. */
struct usdtkit_load {
  const char *provider;
  int memfd;
  int nprobes;
  const char *const *names;   /* nprobes names */
  const int *argc;            /* nprobes argument counts, each <= 12 */
  const int *types;           /* nprobes * 12 ArgType_t values */
  /* Filled in by usdtkit_stapsdt_load on success: per probe, its stub
   * (the probe site) and the 4-byte word there as built. */
  uintptr_t *stubs;
  uint32_t *origs;
  /* The session that keeps every object this provider loaded mapped: 0
   * on the first load, which creates it. */
  uintptr_t session;
  /* The mapped object's path as /proc/PID/maps shows it, malloc'd. */
  char *path;
};

#endif
