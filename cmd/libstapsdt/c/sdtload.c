// sdtload.c — writing and mapping a provider's object: what dynsdt.Load
// does for Go (dynsdt/provider.go, files.go, load.go), for the C library.
// The file names, directory rules, locks and reaping are dynsdt's, so that
// either reaps what the other left.

#define _GNU_SOURCE
#include "sdtload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define HOST_MACHINE SDT_EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE SDT_EM_AARCH64
#else
#define HOST_MACHINE 0
#endif

// The most directory entries one reap looks at (dynsdt's maxReapNames).
#define MAX_REAP_NAMES 4096

static int failf(char **msg, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(msg, fmt, ap) < 0)
    *msg = NULL;
  va_end(ap);
  return code;
}

static size_t page_size(void) {
  long pg = sysconf(_SC_PAGESIZE);
  return pg > 0 ? (size_t)pg : 4096;
}

static uint64_t align_down(uint64_t v, uint64_t a) { return v & ~(a - 1); }
static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

// resolve_site returns the site kind USDTKIT_SITE names, the 1-byte nop
// by default (dynsdt.ResolveSite and ChooseSite), or -1 for a bad value.
static int resolve_site(const char **bad) {
  static const char space[] = " \t\n\r\v\f";
  static const char *const names[] = {"auto", "nop", "nop5", "nop10"};
  const char *env = getenv("USDTKIT_SITE");
  if (env == NULL || env[0] == 0)
    return SDT_SITE_NOP; // unset or empty: the default
  const char *v = env + strspn(env, space);
  size_t len = strlen(v);
  while (len > 0 && strchr(space, v[len - 1]) != NULL)
    len--;
  for (int i = 0; i < 4; i++)
    if (strlen(names[i]) == len && strncmp(v, names[i], len) == 0)
      return i == SDT_SITE_AUTO ? SDT_SITE_NOP : i;
  *bad = env;
  return -1;
}

// default_dir returns dynsdt's default directory for object files,
// malloc'd: $XDG_RUNTIME_DIR/usdtkit, else usdtkit-<euid> in $TMPDIR or
// /tmp.
static char *default_dir(void) {
  char *dir = NULL;
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  if (xdg != NULL && xdg[0] == '/') {
    if (asprintf(&dir, "%s/usdtkit", xdg) < 0)
      return NULL;
    return dir;
  }
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == 0)
    tmp = "/tmp";
  if (asprintf(&dir, "%s/usdtkit-%u", tmp, (unsigned)geteuid()) < 0)
    return NULL;
  return dir;
}

// open_dir opens the default directory for object files, creating it with
// mode 0700, and checks on the open descriptor that it is ours and private
// (dynsdt's openDir). Returns the descriptor, or -1 with *msg set.
static int open_dir(const char *dir, int mkdir_it, char **msg) {
  if (mkdir_it && mkdir(dir, 0700) != 0 && errno != EEXIST) {
    failf(msg, 0, "create %s: %s", dir, strerror(errno));
    return -1;
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    failf(msg, 0, "open %s: %s", dir, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    failf(msg, 0, "stat %s: %s", dir, strerror(errno));
  } else if (st.st_uid != geteuid()) {
    failf(msg, 0, "%s is owned by uid %u, not %u: directory is not private", dir, (unsigned)st.st_uid,
          (unsigned)geteuid());
  } else if ((st.st_mode & 077) != 0) {
    failf(msg, 0, "%s has mode %#o, want 0700: directory is not private", dir, (unsigned)(st.st_mode & 0777));
  } else {
    return fd;
  }
  close(fd);
  return -1;
}

// parse_name reports whether name is one dynsdt's objectName makes:
// "<identifier>-<pid>-<16 hex>.so".
static int parse_name(const char *name) {
  size_t len = strlen(name);
  if (len < 3 || strcmp(name + len - 3, ".so") != 0)
    return 0;
  const char *dash1 = strchr(name, '-');
  if (dash1 == NULL || dash1 == name)
    return 0;
  for (const char *c = name; c < dash1; c++) {
    int ok = *c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (c > name && *c >= '0' && *c <= '9');
    if (!ok)
      return 0;
  }
  const char *pid = dash1 + 1, *dash2 = strchr(pid, '-');
  if (dash2 == NULL || dash2 == pid || *pid == '0' || dash2 - pid > 10)
    return 0;
  for (const char *c = pid; c < dash2; c++)
    if (*c < '0' || *c > '9')
      return 0;
  const char *hex = dash2 + 1;
  if (name + len - 3 - hex != 16)
    return 0;
  for (const char *c = hex; c < name + len - 3; c++)
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
      return 0;
  return 1;
}

// reap_file removes name if it is a regular file of ours whose lock no
// process holds.
static void reap_file(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && flock(fd, LOCK_EX | LOCK_NB) == 0)
    unlinkat(dirfd, name, 0);
  close(fd);
}

static void reap_dir(int dirfd) {
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return;
  }
  struct dirent *e;
  for (int seen = 0; seen < MAX_REAP_NAMES && (e = readdir(d)) != NULL; seen++)
    if (parse_name(e->d_name))
      reap_file(dirfd, e->d_name);
  closedir(d);
}

void sdt_reap(void) {
  char *dir = default_dir(), *msg = NULL;
  if (dir == NULL)
    return;
  int fd = open_dir(dir, 0, &msg);
  if (fd >= 0) {
    reap_dir(fd);
    close(fd);
  }
  free(msg);
  free(dir);
}

static int write_all(int fd, const unsigned char *b, size_t n) {
  for (size_t off = 0; off < n;) {
    ssize_t w = pwrite(fd, b + off, n - off, (off_t)off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return -1;
    if (w == 0) {
      errno = EIO;
      return -1;
    }
    off += (size_t)w;
  }
  return 0;
}

// random_hex fills s with 16 random hex digits and a NUL.
static void random_hex(char s[17]) {
  unsigned char r[8];
  ssize_t got = getrandom(r, sizeof r, GRND_NONBLOCK);
  if (got != (ssize_t)sizeof r) {
    // Early boot: unpredictable enough for a name that O_EXCL guards.
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid() << 32;
    for (int i = 0; i < 8; i++)
      r[i] = (unsigned char)(v >> (8 * i));
  }
  for (int i = 0; i < 8; i++)
    snprintf(s + 2 * i, 3, "%02x", r[i]);
}

// same_file reports whether name in dirfd is the file open as fd.
static int same_file(int dirfd, const char *name, int fd) {
  struct stat have, want;
  return fstat(fd, &want) == 0 && fstatat(dirfd, name, &have, AT_SYMLINK_NOFOLLOW) == 0 &&
         have.st_dev == want.st_dev && have.st_ino == want.st_ino;
}

// create_file writes obj to a new file in the default directory, locked
// (a shared flock tells reapers it is in use), as dynsdt's createFile.
static int create_file(const char *provider, const struct sdt_object *obj, struct sdt_loaded *out, char **msg) {
  char *dir = default_dir();
  if (dir == NULL)
    return failf(msg, SDT_LOAD_NOMEM, "out of memory");
  int dirfd = open_dir(dir, 1, msg);
  if (dirfd < 0) {
    free(dir);
    return SDT_LOAD_TMP;
  }
  reap_dir(dirfd);
  for (int try = 0; try < 8; try++) {
    char hex[17], *name = NULL;
    random_hex(hex);
    if (asprintf(&name, "%s-%d-%s.so", provider, (int)getpid(), hex) < 0) {
      close(dirfd);
      free(dir);
      return failf(msg, SDT_LOAD_NOMEM, "out of memory");
    }
    int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
      free(name);
      continue;
    }
    if (fd < 0) {
      int code = failf(msg, SDT_LOAD_TMP, "%s: create %s: %s", dir, name, strerror(errno));
      free(name);
      close(dirfd);
      free(dir);
      return code;
    }
    if (flock(fd, LOCK_SH | LOCK_NB) != 0 || !same_file(dirfd, name, fd)) {
      // Another process reaped the file before we locked it.
      close(fd);
      free(name);
      continue;
    }
    if (write_all(fd, obj->bytes, obj->size) != 0) {
      int code = failf(msg, SDT_LOAD_TMP, "%s: write %s: %s", dir, name, strerror(errno));
      unlinkat(dirfd, name, 0);
      close(fd);
      free(name);
      close(dirfd);
      free(dir);
      return code;
    }
    out->fd = fd;
    out->dirfd = dirfd;
    out->file = name;
    free(dir);
    return SDT_LOAD_OK;
  }
  close(dirfd);
  int code = failf(msg, SDT_LOAD_TMP, "%s: no free name for provider %s's object", dir, provider);
  free(dir);
  return code;
}

// create_memfd writes obj to a new sealed memfd, as dynsdt's createMemfd.
static int create_memfd(const char *provider, const struct sdt_object *obj, struct sdt_loaded *out, char **msg) {
  char *name = NULL;
  if (asprintf(&name, "%s.so", provider) < 0)
    return failf(msg, SDT_LOAD_NOMEM, "out of memory");
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  free(name);
  if (fd < 0)
    return failf(msg, SDT_LOAD_TMP, "memfd_create: %s", strerror(errno));
  if (write_all(fd, obj->bytes, obj->size) != 0) {
    int code = failf(msg, SDT_LOAD_TMP, "write memfd: %s", strerror(errno));
    close(fd);
    return code;
  }
  // Nobody may change the object under the tracers' feet; the mappings
  // are private, so the kernel still writes breakpoints into our copy.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) != 0) {
    int code = failf(msg, SDT_LOAD_TMP, "seal memfd: %s", strerror(errno));
    close(fd);
    return code;
  }
  out->fd = fd;
  return SDT_LOAD_OK;
}

static int retire_range(struct sdt_range *r, char **msg);

// layout computes each segment's page range and the span; the object's
// segments have no bss (memsz == filesz), which this checks.
static int layout(const struct sdt_object *obj, size_t pg, uint64_t start[], uint64_t end[], size_t *span) {
  uint64_t prev = 0;
  for (int i = 0; i < SDT_NSEGMENTS; i++) {
    const struct sdt_segment *s = &obj->segs[i];
    if (s->filesz != s->memsz || s->off % pg != s->vaddr % pg || s->off + s->filesz > obj->size)
      return -1;
    start[i] = align_down(s->vaddr, pg);
    end[i] = align_up(s->vaddr + s->memsz, pg);
    if (start[i] < prev)
      return -1;
    prev = end[i];
  }
  *span = (size_t)prev;
  return 0;
}

int sdt_load(const char *provider, const struct sdt_probe_spec *probes, int n, int memfd, struct sdt_range *reuse,
             struct sdt_loaded *out, struct sdt_object *obj, char **msg) {
  *msg = NULL;
  memset(out, 0, sizeof *out);
  out->fd = out->dirfd = -1;
  memset(obj, 0, sizeof *obj);
  if (HOST_MACHINE == 0)
    return failf(msg, SDT_LOAD_ELF, "load provider %s: this architecture is not supported", provider);
  const char *bad = NULL;
  int site = resolve_site(&bad);
  if (site < 0)
    return failf(msg, SDT_LOAD_ELF, "load provider %s: USDTKIT_SITE: site \"%s\": not a site kind (auto, nop, nop5, nop10)",
                 provider, bad);
  int code = sdt_build(provider, probes, n, HOST_MACHINE, site, obj, msg);
  if (code == SDT_BUILD_NOMEM)
    return SDT_LOAD_NOMEM;
  if (code != SDT_BUILD_OK)
    return SDT_LOAD_ELF;

  size_t pg = page_size();
  uint64_t start[SDT_NSEGMENTS], end[SDT_NSEGMENTS];
  size_t span;
  if (layout(obj, pg, start, end, &span) != 0) {
    code = failf(msg, SDT_LOAD_ELF, "load provider %s: the object's segments do not fit %zu-byte pages", provider, pg);
    goto fail;
  }
  // The executable segment (the second): its pages and bytes, for retiring.
  size_t text_off = (size_t)start[1], text_size = (size_t)(end[1] - start[1]);
  unsigned char *text = malloc(text_size);
  if (text == NULL) {
    code = failf(msg, SDT_LOAD_NOMEM, "load provider %s: out of memory", provider);
    goto fail;
  }
  memset(text, 0, text_size);
  memcpy(text + (obj->segs[1].vaddr - start[1]), obj->bytes + obj->segs[1].off, obj->segs[1].filesz);

  code = memfd ? create_memfd(provider, obj, out, msg) : create_file(provider, obj, out, msg);
  if (code != SDT_LOAD_OK && !memfd) {
    // Anyone may create usdtkit-<euid> in /tmp before us, as another
    // user's directory, a symbolic link or with mode 0777: that must not
    // stop every load.
    char *ferr = *msg;
    *msg = NULL;
    code = create_memfd(provider, obj, out, msg);
    if (code != SDT_LOAD_OK) {
      char *merr = *msg;
      failf(msg, code, "%s; memfd instead: %s", ferr ? ferr : "", merr ? merr : "");
      free(merr);
    }
    free(ferr);
  }
  if (code != SDT_LOAD_OK) {
    free(text);
    goto fail;
  }
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", out->fd);
  ssize_t plen = readlink(link, path, sizeof path - 1);
  if (plen < 0) {
    code = failf(msg, SDT_LOAD_OPEN, "load provider %s: readlink %s: %s", provider, link, strerror(errno));
    free(text);
    goto fail_file;
  }
  path[plen] = 0;
  if ((out->path = strdup(path)) == NULL) {
    code = failf(msg, SDT_LOAD_NOMEM, "load provider %s: out of memory", provider);
    free(text);
    goto fail_file;
  }

  // Map over the provider's retired range when the new image fits it and
  // covers its stub pages (a probeFire racing with an earlier unload may
  // still read there); else reserve a new range, so that the segments
  // keep their distances and nothing else lands between them.
  struct sdt_range *r = NULL;
  int fresh = 0;
  if (reuse != NULL && span <= reuse->span && text_off == reuse->text_off && text_size >= reuse->text_size) {
    r = reuse;
  } else {
    r = calloc(1, sizeof *r);
    if (r == NULL) {
      code = failf(msg, SDT_LOAD_NOMEM, "load provider %s: out of memory", provider);
      free(text);
      goto fail_file;
    }
    void *base = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
      code = failf(msg, SDT_LOAD_OPEN, "load provider %s: reserve %zu bytes: %s", provider, span, strerror(errno));
      free(r);
      free(text);
      goto fail_file;
    }
    r->base = base;
    r->span = span;
    fresh = 1;
  }
  for (int i = 0; i < SDT_NSEGMENTS; i++) {
    const struct sdt_segment *s = &obj->segs[i];
    void *at = r->base + start[i];
    if (mmap(at, (size_t)(end[i] - start[i]), s->prot, MAP_PRIVATE | MAP_FIXED, out->fd,
             (off_t)(s->off - (s->vaddr - start[i]))) == MAP_FAILED) {
      code = failf(msg, SDT_LOAD_OPEN, "load provider %s: map segment %d: %s", provider, i, strerror(errno));
      if (fresh) {
        munmap(r->base, r->span);
        free(r);
      } else {
        // Retire the reused range again (r->text is still its stubs'):
        // stubs that return for a probeFire racing with this.
        char *rmsg = NULL;
        retire_range(r, &rmsg);
        free(rmsg);
      }
      free(text);
      goto fail_file;
    }
  }
  free(r->text);
  r->text = text;
  r->text_off = text_off;
  r->text_size = text_size;
  out->range = r;
  return SDT_LOAD_OK;

fail_file:
  if (out->file != NULL && same_file(out->dirfd, out->file, out->fd))
    unlinkat(out->dirfd, out->file, 0);
  if (out->fd >= 0)
    close(out->fd);
  if (out->dirfd >= 0)
    close(out->dirfd);
  free(out->file);
  free(out->path);
  memset(out, 0, sizeof *out);
  out->fd = out->dirfd = -1;
fail:
  sdt_object_free(obj);
  return code;
}

// retire_range replaces the range's image by anonymous memory: the stub
// pages by a read+execute copy of r->text, the rest by inaccessible pages.
// The copy is prepared elsewhere and moved over the stubs with mremap,
// which replaces the pages at once: at no moment is a stub unmapped or not
// executable.
static int retire_range(struct sdt_range *r, char **msg) {
  void *tmp = mmap(NULL, r->text_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (tmp == MAP_FAILED)
    return failf(msg, -1, "copy stubs: %s", strerror(errno));
  memcpy(tmp, r->text, r->text_size);
  if (mprotect(tmp, r->text_size, PROT_READ | PROT_EXEC) != 0 ||
      mremap(tmp, r->text_size, r->text_size, MREMAP_MAYMOVE | MREMAP_FIXED, r->base + r->text_off) == MAP_FAILED) {
    munmap(tmp, r->text_size);
    return failf(msg, -1, "replace stubs: %s", strerror(errno));
  }
  size_t after = r->text_off + r->text_size;
  if ((r->text_off > 0 &&
       mmap(r->base, r->text_off, PROT_NONE, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) ==
           MAP_FAILED) ||
      (r->span > after && mmap(r->base + after, r->span - after, PROT_NONE,
                               MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) == MAP_FAILED))
    return failf(msg, -1, "unmap object: %s", strerror(errno));
  return 0;
}

int sdt_retire(struct sdt_loaded *l, int owner, char **msg) {
  *msg = NULL;
  int ret = 0;
  if (l->range != NULL)
    ret = retire_range(l->range, msg);
  if (owner && l->file != NULL) {
    if (!same_file(l->dirfd, l->file, l->fd)) {
      if (ret == 0)
        ret = failf(msg, -1, "remove %s: the name now refers to another file", l->file);
    } else if (unlinkat(l->dirfd, l->file, 0) != 0 && ret == 0) {
      ret = failf(msg, -1, "remove %s: %s", l->file, strerror(errno));
    }
  }
  if (l->fd >= 0)
    close(l->fd);
  if (l->dirfd >= 0)
    close(l->dirfd);
  free(l->file);
  free(l->path);
  l->range = NULL;
  l->file = l->path = NULL;
  l->fd = l->dirfd = -1;
  return ret;
}

void sdt_range_free(struct sdt_range *r) {
  if (r == NULL)
    return;
  munmap(r->base, r->span);
  free(r->text);
  free(r);
}
