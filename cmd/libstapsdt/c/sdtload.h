/* sdtload.h — writing a provider's object to a memfd or a private file
 * and mapping it as the dynamic loader would, as dynsdt.Load does. Not
 * installed. */
#ifndef USDTKIT_SDTLOAD_H
#define USDTKIT_SDTLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "sdtelf.h"

/* A reserved address range holding one object's image, and, once
 * retired, a copy of its stubs. */
struct sdt_range {
  unsigned char *base;
  size_t span;
  /* The executable page range and its bytes as built (for retiring). */
  size_t text_off, text_size;
  unsigned char *text;
};

/* What one load holds. */
struct sdt_loaded {
  struct sdt_range *range; /* owned by the caller's list of ranges */
  int fd;                  /* the memfd or the file, holding its lock; -1 */
  int dirfd;               /* the file's directory; -1 */
  char *file;              /* the file's name in dirfd, or NULL */
  char *path;              /* the object's path as /proc/PID/maps shows it */
};

/* The load result kinds, as SDTError_t values. */
#define SDT_LOAD_OK (-1)
#define SDT_LOAD_ELF 0 /* elfCreationError */
#define SDT_LOAD_TMP 1 /* tmpCreationError */
#define SDT_LOAD_OPEN 2 /* sharedLibraryOpenError */
#define SDT_LOAD_NOMEM 6 /* outOfMemoryError */

/* sdt_load builds the provider's object for this machine and the site kind
 * USDTKIT_SITE names (else the 1-byte nop), writes it to a sealed memfd
 * (memfd != 0) or a new file in the private directory (falling back to a
 * memfd when that directory cannot be used), and maps it. It maps over
 * reuse (a retired range of the same provider) when the new image fits
 * it with its stubs at the same place; otherwise it reserves a new range.
 * On success it fills *out and *obj (the caller frees obj with
 * sdt_object_free) and returns SDT_LOAD_OK; otherwise an error kind with
 * a malloc'd message in *msg. */
int sdt_load(const char *provider, const struct sdt_probe_spec *probes, int n, int memfd, struct sdt_range *reuse,
             struct sdt_loaded *out, struct sdt_object *obj, char **msg);

/* sdt_retire replaces the image by anonymous memory that tracers do not
 * see: the stub pages by a read+execute copy of the stubs as built, the
 * rest by inaccessible pages, so that a probeFire racing with it still
 * calls a stub that returns. With owner set (the loading process, not a
 * child after fork) it also removes the object's file. It closes the
 * descriptors and frees what out holds but the range. Returns 0, or -1
 * with a malloc'd message in *msg. */
int sdt_retire(struct sdt_loaded *l, int owner, char **msg);

/* sdt_range_free unmaps a range and frees it. */
void sdt_range_free(struct sdt_range *r);

/* sdt_reap removes the object files that ended processes left in the
 * default directory (those whose lock nobody holds), as dynsdt.Reap. */
void sdt_reap(void);

#endif
