/* sdtelf.h — the provider object writer of the C library: the same bytes
 * as dynsdt.BuildWith (Go) for the same provider, machine and site kind
 * (TestBuilderMatchesDynsdt and FuzzBuilderMatchesDynsdt compare them).
 * Not installed. */
#ifndef USDTKIT_SDTELF_H
#define USDTKIT_SDTELF_H

#include <stddef.h>
#include <stdint.h>

#define SDT_MAX_ARGS 12

/* Machines (e_machine values). */
#define SDT_EM_X86_64 62
#define SDT_EM_AARCH64 183

/* Site kinds, numbered as dynsdt.Site. */
enum sdt_site { SDT_SITE_AUTO = 0, SDT_SITE_NOP = 1, SDT_SITE_NOP5 = 2, SDT_SITE_NOP10 = 3 };

/* One probe: its name and its argument types as libstapsdt's ArgType_t
 * values (the size in bytes, negative when signed). */
struct sdt_probe_spec {
  const char *name;
  int argc;
  int types[SDT_MAX_ARGS];
};

/* One PT_LOAD segment, as dynsdt.Segment. */
struct sdt_segment {
  uint64_t off, vaddr, filesz, memsz, align;
  int prot; /* PROT_READ, PROT_WRITE, PROT_EXEC bits */
};

#define SDT_NSEGMENTS 3

/* A built object. Addresses are relative to the load base and equal the
 * file offsets. stubs[i] is probe i's site, the 4 bytes before it a copy
 * of its first 4 bytes; sems[i] its 2-byte semaphore. */
struct sdt_object {
  unsigned char *bytes;
  size_t size;
  int site;
  uint64_t *stubs;
  uint64_t *sems;
  struct sdt_segment segs[SDT_NSEGMENTS];
};

/* Error kinds of sdt_build. */
enum sdt_build_error {
  SDT_BUILD_OK = 0,
  SDT_BUILD_SPEC = 1,    /* an invalid provider: dynsdt's ErrSpec */
  SDT_BUILD_MACHINE = 2, /* an unsupported machine */
  SDT_BUILD_SITE = 3,    /* an unknown site kind */
  SDT_BUILD_NOMEM = 4,
};

/* sdt_build writes the object of provider with n probes for machine m and
 * site kind site (SDT_SITE_AUTO: dynsdt's choice for any kernel, the
 * 1-byte nop; arm64 has one kind). On success it fills *obj, which
 * sdt_object_free releases. On failure it returns the error kind and, if
 * msg is not NULL, a malloc'd sentence in *msg (NULL when out of
 * memory). */
int sdt_build(const char *provider, const struct sdt_probe_spec *probes, int n, int m, int site,
              struct sdt_object *obj, char **msg);

void sdt_object_free(struct sdt_object *obj);

#endif
