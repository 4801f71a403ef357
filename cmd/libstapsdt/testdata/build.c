// build.c — a test driver for the C object writer (c/sdtelf.c): it reads
// provider specs from stdin and writes what sdt_build makes of them to
// stdout, for builder_test.go to compare with dynsdt.BuildWith.
//
// All integers are little-endian. A request: machine, site, the provider
// name (u32 length, bytes), the probe count, then per probe its name and
// its argument count and types (i32 each). A reply: u32 result; for 0 the
// object size and bytes, the site kind, per probe its stub and semaphore
// (u64), and per segment off, vaddr, filesz, memsz, align (u64) and prot
// (u32); otherwise the message (u32 length, bytes).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdtelf.h"

static int get(void *p, size_t n) { return fread(p, 1, n, stdin) == n; }

static int get32(uint32_t *v) {
  unsigned char b[4];
  if (!get(b, 4))
    return 0;
  *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  return 1;
}

static char *getstr(void) {
  uint32_t n;
  if (!get32(&n) || n > 1 << 20)
    return NULL;
  char *s = calloc(1, n + 1);
  if (s == NULL || !get(s, n)) {
    free(s);
    return NULL;
  }
  return s;
}

static void put32(uint32_t v) {
  unsigned char b[4] = {v, v >> 8, v >> 16, v >> 24};
  fwrite(b, 1, 4, stdout);
}

static void put64(uint64_t v) {
  put32((uint32_t)v);
  put32((uint32_t)(v >> 32));
}

int main(void) {
  for (;;) {
    uint32_t m, site, n;
    if (!get32(&m))
      return 0;
    char *provider = NULL;
    if (!get32(&site) || (provider = getstr()) == NULL || !get32(&n) || n > 1 << 20)
      return 2;
    struct sdt_probe_spec *probes = calloc(n ? n : 1, sizeof *probes);
    if (probes == NULL)
      return 2;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t argc;
      if ((probes[i].name = getstr()) == NULL || !get32(&argc) || argc > 64)
        return 2;
      probes[i].argc = (int)argc;
      for (uint32_t j = 0; j < argc; j++) {
        uint32_t t;
        if (!get32(&t))
          return 2;
        if (j < SDT_MAX_ARGS)
          probes[i].types[j] = (int32_t)t;
      }
    }
    struct sdt_object obj;
    char *msg = NULL;
    int code = sdt_build(provider, probes, (int)n, (int)m, (int)(int32_t)site, &obj, &msg);
    put32((uint32_t)code);
    if (code == SDT_BUILD_OK) {
      put32((uint32_t)obj.size);
      fwrite(obj.bytes, 1, obj.size, stdout);
      put32((uint32_t)obj.site);
      for (uint32_t i = 0; i < n; i++) {
        put64(obj.stubs[i]);
        put64(obj.sems[i]);
      }
      for (int s = 0; s < SDT_NSEGMENTS; s++) {
        const struct sdt_segment *g = &obj.segs[s];
        put64(g->off);
        put64(g->vaddr);
        put64(g->filesz);
        put64(g->memsz);
        put64(g->align);
        put32((uint32_t)g->prot);
      }
      sdt_object_free(&obj);
    } else {
      const char *s = msg ? msg : "";
      put32((uint32_t)strlen(s));
      fwrite(s, 1, strlen(s), stdout);
      free(msg);
    }
    fflush(stdout);
    for (uint32_t i = 0; i < n; i++)
      free((char *)probes[i].name);
    free(probes);
    free(provider);
  }
}
