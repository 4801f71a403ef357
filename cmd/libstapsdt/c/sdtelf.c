// sdtelf.c — the provider object writer: dynsdt.BuildWith's layout, byte
// for byte (see dynsdt/object.go and "The shared object" in dynsdt's
// package documentation for why each part is there). Sections, in file
// order: .hash .dynsym .dynstr .stapsdt.base (first PT_LOAD, with the
// headers), .text (second), .dynamic .probes (third), .note.stapsdt (not
// loaded), .shstrtab, then the section headers. Every loaded section's
// address equals its file offset.

#define _GNU_SOURCE
#include "sdtelf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

// ELF constants used here.
enum {
  ET_DYN = 3,
  SHT_PROGBITS = 1,
  SHT_STRTAB = 3,
  SHT_HASH = 5,
  SHT_DYNAMIC = 6,
  SHT_NOTE = 7,
  SHT_DYNSYM = 11,
  SHF_WRITE = 1,
  SHF_ALLOC = 2,
  SHF_EXECINSTR = 4,
  PT_LOAD = 1,
  PT_DYNAMIC = 2,
  PT_GNU_STACK = 0x6474e551,
  PF_X = 1,
  PF_W = 2,
  PF_R = 4,
  DT_NULL = 0,
  DT_HASH = 4,
  DT_STRTAB = 5,
  DT_SYMTAB = 6,
  DT_STRSZ = 10,
  DT_SYMENT = 11,
  DT_SONAME = 14,
  STB_GLOBAL = 1,
  STT_OBJECT = 1,
  STT_FUNC = 2,
  NT_STAPSDT = 3,
};

enum {
  EHDR_SIZE = 64,
  PHDR_SIZE = 56,
  SHDR_SIZE = 64,
  SYM_SIZE = 24,
  DYN_SIZE = 16,
  NUM_PROGS = 5,
  NUM_DYN = 7,
  NUM_SECS = 8, // without the null section and .shstrtab
  STUB_ALIGN = 16,
  // The most probes sdt_build takes: far more than any provider has, and
  // low enough that no size below overflows 32 bits where ELF needs it.
  MAX_PROBES = 1 << 22,
  // Section indexes, as dynsdt's secHash...secNote.
  SEC_HASH = 1,
  SEC_DYNSYM,
  SEC_DYNSTR,
  SEC_BASE,
  SEC_TEXT,
  SEC_DYNAMIC,
  SEC_PROBES,
  SEC_NOTE,
};

static const char sem_suffix[] = "_semaphore";
static const char fire_suffix[] = "_fire";

// Stubs by site kind; see dynsdt/object_x86.go and object_aarch64.go.
static const unsigned char stub_x86_nop[] = {0x90, 0x41, 0x5b, 0x41, 0xff, 0xe3};
static const unsigned char stub_x86_nop5[] = {0x0f, 0x1f, 0x44, 0x00, 0x00, 0x41, 0x5b, 0x41, 0xff, 0xe3};
static const unsigned char stub_x86_nop10[] = {0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc3};
static const unsigned char stub_arm64[] = {0x1f, 0x20, 0x03, 0xd5, 0xc0, 0x03, 0x5f, 0xd6};

// buf is a growing byte buffer; oom is set once an append failed.
struct buf {
  unsigned char *p;
  size_t len, cap;
  int oom;
};

static int buf_grow(struct buf *b, size_t more) {
  if (b->oom)
    return 0;
  if (b->cap - b->len >= more)
    return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len < more) {
    if (cap > (size_t)-1 / 2) {
      b->oom = 1;
      return 0;
    }
    cap *= 2;
  }
  unsigned char *p = realloc(b->p, cap);
  if (p == NULL) {
    b->oom = 1;
    return 0;
  }
  b->p = p;
  b->cap = cap;
  return 1;
}

static void buf_put(struct buf *b, const void *s, size_t n) {
  if (n == 0 || !buf_grow(b, n))
    return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void buf_str(struct buf *b, const char *s) { buf_put(b, s, strlen(s)); }
static void buf_byte(struct buf *b, unsigned char c) { buf_put(b, &c, 1); }

static void buf_u32(struct buf *b, uint32_t v) {
  unsigned char le[4] = {v, v >> 8, v >> 16, v >> 24};
  buf_put(b, le, 4);
}

static void buf_u64(struct buf *b, uint64_t v) {
  buf_u32(b, (uint32_t)v);
  buf_u32(b, (uint32_t)(v >> 32));
}

static void buf_int(struct buf *b, long v) {
  char s[24];
  int n = snprintf(s, sizeof s, "%ld", v);
  buf_put(b, s, (size_t)n);
}

static void put16(unsigned char *p, uint16_t v) {
  p[0] = v;
  p[1] = v >> 8;
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = v;
  p[1] = v >> 8;
  p[2] = v >> 16;
  p[3] = v >> 24;
}

static void put64(unsigned char *p, uint64_t v) {
  put32(p, (uint32_t)v);
  put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

// sysv_hash continues the System V ABI's ELF hash from state h over s.
static uint32_t sysv_hash(uint32_t h, const char *s) {
  for (; *s; s++) {
    h = (h << 4) + (unsigned char)*s;
    uint32_t g = h & 0xf0000000u;
    h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

// is_ident reports whether s is a C identifier in ASCII (dynsdt's isIdent).
static int is_ident(const char *s) {
  if (s == NULL || *s == 0)
    return 0;
  for (const char *c = s; *c; c++) {
    if (*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'))
      continue;
    if (*c >= '0' && *c <= '9' && c > s)
      continue;
    return 0;
  }
  return 1;
}

static int valid_type(int t) {
  switch (t) {
  case 1: case -1: case 2: case -2: case 4: case -4: case 8: case -8:
    return 1;
  }
  return 0;
}

static int fail(char **msg, int code, const char *fmt, ...) {
  if (msg != NULL) {
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(msg, fmt, ap) < 0)
      *msg = NULL;
    va_end(ap);
  }
  return code;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// validate applies dynsdt's ProviderSpec.Validate and Build's checks.
static int validate(const char *provider, const struct sdt_probe_spec *probes, int n, char **msg) {
  if (n < 0 || (n > 0 && probes == NULL))
    return fail(msg, SDT_BUILD_SPEC, "provider %s: %d probes", provider ? provider : "", n);
  if (!is_ident(provider))
    return fail(msg, SDT_BUILD_SPEC, "provider name \"%s\" is not a C identifier", provider ? provider : "");
  for (int i = 0; i < n; i++) {
    const struct sdt_probe_spec *p = &probes[i];
    if (!is_ident(p->name))
      return fail(msg, SDT_BUILD_SPEC, "provider %s: probe name \"%s\" is not a C identifier", provider,
                  p->name ? p->name : "");
    if (p->argc < 0 || p->argc > SDT_MAX_ARGS)
      return fail(msg, SDT_BUILD_SPEC, "provider %s: probe %s has %d arguments, at most %d", provider, p->name,
                  p->argc, SDT_MAX_ARGS);
    for (int j = 0; j < p->argc; j++)
      if (!valid_type(p->types[j]))
        return fail(msg, SDT_BUILD_SPEC, "provider %s: probe %s: argument %d has type %d", provider, p->name, j,
                    p->types[j]);
  }
  if (n <= 0)
    return fail(msg, SDT_BUILD_SPEC, "provider %s has no probes", provider);
  if (n > MAX_PROBES)
    return fail(msg, SDT_BUILD_SPEC, "provider %s has %d probes, at most %d", provider, n, MAX_PROBES);
  const char **names = malloc((size_t)n * sizeof *names);
  if (names == NULL)
    return fail(msg, SDT_BUILD_NOMEM, "provider %s: out of memory", provider);
  for (int i = 0; i < n; i++)
    names[i] = probes[i].name;
  qsort(names, (size_t)n, sizeof *names, cmp_name);
  for (int i = 1; i < n; i++) {
    if (strcmp(names[i - 1], names[i]) == 0) {
      int code = fail(msg, SDT_BUILD_SPEC, "provider %s: probe %s declared twice", provider, names[i]);
      free(names);
      return code;
    }
  }
  free(names);
  return SDT_BUILD_OK;
}

// The x86-64 argument registers by size: 8, 4, 2, 1 bytes.
static const char *const regs_x86[6][4] = {
    {"rdi", "edi", "di", "dil"}, {"rsi", "esi", "si", "sil"}, {"rdx", "edx", "dx", "dl"},
    {"rcx", "ecx", "cx", "cl"},  {"r8", "r8d", "r8w", "r8b"}, {"r9", "r9d", "r9w", "r9b"},
};

// append_arg appends the spec of argument i of type t (an ArgType_t).
static void append_arg(struct buf *b, int m, int i, int t) {
  int size = t < 0 ? -t : t;
  if (t < 0)
    buf_byte(b, '-');
  buf_int(b, size);
  buf_byte(b, '@');
  if (m == SDT_EM_X86_64) {
    if (i < 6) {
      int alias = size == 8 ? 0 : size == 4 ? 1 : size == 2 ? 2 : 3;
      buf_byte(b, '%');
      buf_str(b, regs_x86[i][alias]);
      return;
    }
    buf_int(b, 8L * (i - 6 + 1));
    buf_str(b, "(%rsp)");
    return;
  }
  if (i < 8) {
    buf_byte(b, 'x');
    buf_int(b, i);
  } else if (i == 8) {
    buf_str(b, "[sp]");
  } else {
    buf_str(b, "[sp, ");
    buf_int(b, 8L * (i - 8));
    buf_byte(b, ']');
  }
}

static int same_args(const struct sdt_probe_spec *a, const struct sdt_probe_spec *b) {
  if (a->argc != b->argc)
    return 0;
  for (int j = 0; j < a->argc; j++)
    if (a->types[j] != b->types[j])
      return 0;
  return 1;
}

// section is one section header's fields.
struct section {
  const char *name;
  uint32_t type;
  uint64_t flags, addr, off, size;
  uint32_t link, info;
  uint64_t align, entsize;
};

static void put_section(unsigned char *at, uint32_t name, const struct section *s) {
  put32(at, name);
  put32(at + 4, s->type);
  put64(at + 8, s->flags);
  put64(at + 16, s->addr);
  put64(at + 24, s->off);
  put64(at + 32, s->size);
  put32(at + 40, s->link);
  put32(at + 44, s->info);
  put64(at + 48, s->align);
  put64(at + 56, s->entsize);
}

static void put_prog(unsigned char *at, uint32_t type, uint32_t flags, uint64_t off, uint64_t vaddr, uint64_t filesz,
                     uint64_t memsz, uint64_t align) {
  put32(at, type);
  put32(at + 4, flags);
  put64(at + 8, off);
  put64(at + 16, vaddr);
  put64(at + 24, vaddr);
  put64(at + 32, filesz);
  put64(at + 40, memsz);
  put64(at + 48, align);
}

void sdt_object_free(struct sdt_object *obj) {
  if (obj == NULL)
    return;
  free(obj->bytes);
  free(obj->stubs);
  free(obj->sems);
  memset(obj, 0, sizeof *obj);
}

int sdt_build(const char *provider, const struct sdt_probe_spec *probes, int n, int m, int site,
              struct sdt_object *obj, char **msg) {
  if (msg != NULL)
    *msg = NULL;
  memset(obj, 0, sizeof *obj);
  if (site == SDT_SITE_AUTO)
    site = SDT_SITE_NOP;
  if (site < SDT_SITE_AUTO || site > SDT_SITE_NOP10)
    return fail(msg, SDT_BUILD_SITE, "site kind %d: not a site kind (auto, nop, nop5, nop10)", site);
  uint64_t page;
  const unsigned char *stub;
  size_t stublen;
  unsigned char fill;
  if (m == SDT_EM_X86_64) {
    page = 0x1000;
    fill = 0xcc;
    stub = site == SDT_SITE_NOP5 ? stub_x86_nop5 : site == SDT_SITE_NOP10 ? stub_x86_nop10 : stub_x86_nop;
    stublen = site == SDT_SITE_NOP5 ? sizeof stub_x86_nop5 : site == SDT_SITE_NOP10 ? sizeof stub_x86_nop10
                                                                                     : sizeof stub_x86_nop;
  } else if (m == SDT_EM_AARCH64) {
    site = SDT_SITE_NOP;
    page = 0x10000;
    fill = 0;
    stub = stub_arm64;
    stublen = sizeof stub_arm64;
  } else {
    return fail(msg, SDT_BUILD_MACHINE, "build provider %s for machine %d: unsupported machine", provider, m);
  }
  int code = validate(provider, probes, n, msg);
  if (code != SDT_BUILD_OK)
    return code;

  struct buf dynstr = {0}, notes = {0}, args = {0}, shstr = {0};
  uint32_t *name_off = malloc(2 * (size_t)n * sizeof *name_off);
  uint32_t *name_hash = malloc(2 * (size_t)n * sizeof *name_hash);
  obj->stubs = malloc((size_t)n * sizeof *obj->stubs);
  obj->sems = malloc((size_t)n * sizeof *obj->sems);
  obj->site = site;
  unsigned char *out = NULL;
  if (!name_off || !name_hash || !obj->stubs || !obj->sems)
    goto nomem;

  // .dynstr: the soname, then per probe its semaphore's and stub's names.
  size_t plen = strlen(provider);
  buf_byte(&dynstr, 0);
  buf_str(&dynstr, provider);
  buf_str(&dynstr, ".so");
  buf_byte(&dynstr, 0);
  uint32_t prov_hash = sysv_hash(sysv_hash(0, provider), "_");
  for (int i = 0; i < n; i++) {
    uint32_t prefix = sysv_hash(prov_hash, probes[i].name);
    name_off[2 * i] = (uint32_t)dynstr.len;
    name_hash[2 * i] = sysv_hash(prefix, sem_suffix);
    buf_put(&dynstr, provider, plen);
    buf_byte(&dynstr, '_');
    buf_str(&dynstr, probes[i].name);
    buf_put(&dynstr, sem_suffix, sizeof sem_suffix); // with its NUL
    name_off[2 * i + 1] = (uint32_t)dynstr.len;
    name_hash[2 * i + 1] = sysv_hash(prefix, fire_suffix);
    buf_put(&dynstr, provider, plen);
    buf_byte(&dynstr, '_');
    buf_str(&dynstr, probes[i].name);
    buf_put(&dynstr, fire_suffix, sizeof fire_suffix);
  }
  if (dynstr.oom)
    goto nomem;

  // Layout, as dynsdt's.
  uint64_t nsym = 1 + 2 * (uint64_t)n;
  uint64_t nbucket = nsym / 2 + 1;
  uint64_t hash_size = 4 * (2 + nbucket + nsym);
  uint64_t hash_addr = align_up(EHDR_SIZE + NUM_PROGS * PHDR_SIZE, 8);
  uint64_t dynsym_addr = align_up(hash_addr + hash_size, 8);
  uint64_t dynstr_addr = dynsym_addr + nsym * SYM_SIZE;
  uint64_t base_addr = dynstr_addr + dynstr.len;
  uint64_t r_end = base_addr + 1;
  uint64_t text_addr = align_up(r_end, page);
  uint64_t text_size = (uint64_t)n * STUB_ALIGN;
  uint64_t dynamic_addr = align_up(text_addr + text_size, page);
  uint64_t probes_addr = dynamic_addr + NUM_DYN * DYN_SIZE;
  uint64_t probes_size = 2 * (uint64_t)n;
  uint64_t data_end = probes_addr + probes_size;

  for (int i = 0; i < n; i++) {
    obj->stubs[i] = text_addr + (uint64_t)i * STUB_ALIGN + 4;
    obj->sems[i] = probes_addr + 2 * (uint64_t)i;
  }

  // .note.stapsdt: a note per probe; argument specs repeat the previous
  // probe's when the types do.
  for (int i = 0; i < n; i++) {
    const struct sdt_probe_spec *p = &probes[i];
    if (i == 0 || !same_args(p, &probes[i - 1])) {
      args.len = 0;
      for (int j = 0; j < p->argc; j++) {
        if (j > 0)
          buf_byte(&args, ' ');
        append_arg(&args, m, j, p->types[j]);
      }
    }
    size_t descsz = 3 * 8 + plen + 1 + strlen(p->name) + 1 + args.len + 1;
    buf_u32(&notes, 8);
    buf_u32(&notes, (uint32_t)descsz);
    buf_u32(&notes, NT_STAPSDT);
    buf_put(&notes, "stapsdt", 8);
    buf_u64(&notes, obj->stubs[i]);
    buf_u64(&notes, base_addr);
    buf_u64(&notes, obj->sems[i]);
    buf_put(&notes, provider, plen + 1);
    buf_put(&notes, p->name, strlen(p->name) + 1);
    buf_put(&notes, args.p ? args.p : (const unsigned char *)"", args.len);
    buf_byte(&notes, 0);
    for (; descsz % 4 != 0; descsz++)
      buf_byte(&notes, 0);
  }
  if (notes.oom || args.oom)
    goto nomem;

  struct section secs[NUM_SECS + 1] = {
      [SEC_HASH] = {".hash", SHT_HASH, SHF_ALLOC, hash_addr, hash_addr, hash_size, SEC_DYNSYM, 0, 8, 4},
      [SEC_DYNSYM] = {".dynsym", SHT_DYNSYM, SHF_ALLOC, dynsym_addr, dynsym_addr, nsym * SYM_SIZE, SEC_DYNSTR, 1, 8,
                      SYM_SIZE},
      [SEC_DYNSTR] = {".dynstr", SHT_STRTAB, SHF_ALLOC, dynstr_addr, dynstr_addr, dynstr.len, 0, 0, 1, 0},
      [SEC_BASE] = {".stapsdt.base", SHT_PROGBITS, SHF_ALLOC, base_addr, base_addr, 1, 0, 0, 1, 0},
      [SEC_TEXT] = {".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, text_addr, text_addr, text_size, 0, 0,
                    STUB_ALIGN, 0},
      [SEC_DYNAMIC] = {".dynamic", SHT_DYNAMIC, SHF_ALLOC | SHF_WRITE, dynamic_addr, dynamic_addr,
                       NUM_DYN * DYN_SIZE, SEC_DYNSTR, 0, 8, DYN_SIZE},
      [SEC_PROBES] = {".probes", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, probes_addr, probes_addr, probes_size, 0, 0, 2,
                      0},
      [SEC_NOTE] = {".note.stapsdt", SHT_NOTE, 0, 0, align_up(data_end, 4), notes.len, 0, 0, 4, 0},
  };
  uint32_t shname[NUM_SECS + 2];
  buf_byte(&shstr, 0);
  for (int s = 1; s <= NUM_SECS; s++) {
    shname[s] = (uint32_t)shstr.len;
    buf_put(&shstr, secs[s].name, strlen(secs[s].name) + 1);
  }
  shname[NUM_SECS + 1] = (uint32_t)shstr.len;
  buf_put(&shstr, ".shstrtab", sizeof ".shstrtab");
  if (shstr.oom)
    goto nomem;
  uint64_t shstr_off = secs[SEC_NOTE].off + notes.len;
  uint64_t shoff = align_up(shstr_off + shstr.len, 8);
  uint64_t size = shoff + (NUM_SECS + 2) * SHDR_SIZE;
  out = calloc(1, size);
  if (out == NULL)
    goto nomem;

  // ELF header.
  memcpy(out, "\x7f" "ELF", 4);
  out[4] = 2; // ELFCLASS64
  out[5] = 1; // ELFDATA2LSB
  out[6] = 1; // EV_CURRENT
  put16(out + 16, ET_DYN);
  put16(out + 18, (uint16_t)m);
  put32(out + 20, 1);
  put64(out + 24, 0);
  put64(out + 32, EHDR_SIZE);
  put64(out + 40, shoff);
  put16(out + 52, EHDR_SIZE);
  put16(out + 54, PHDR_SIZE);
  put16(out + 56, NUM_PROGS);
  put16(out + 58, SHDR_SIZE);
  put16(out + 60, NUM_SECS + 2);
  put16(out + 62, NUM_SECS + 1);

  // Program headers.
  uint64_t data_size = data_end - dynamic_addr;
  unsigned char *ph = out + EHDR_SIZE;
  put_prog(ph, PT_LOAD, PF_R, 0, 0, r_end, r_end, page);
  put_prog(ph + PHDR_SIZE, PT_LOAD, PF_R | PF_X, text_addr, text_addr, text_size, text_size, page);
  put_prog(ph + 2 * PHDR_SIZE, PT_LOAD, PF_R | PF_W, dynamic_addr, dynamic_addr, data_size, data_size, page);
  put_prog(ph + 3 * PHDR_SIZE, PT_DYNAMIC, PF_R | PF_W, dynamic_addr, dynamic_addr, NUM_DYN * DYN_SIZE,
           NUM_DYN * DYN_SIZE, 8);
  put_prog(ph + 4 * PHDR_SIZE, PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0, 16);

  // .hash: chains list each bucket's symbols in index order.
  unsigned char *hash = out + hash_addr;
  put32(hash, (uint32_t)nbucket);
  put32(hash + 4, (uint32_t)nsym);
  unsigned char *buckets = hash + 8, *chains = hash + 8 + 4 * nbucket;
  for (uint64_t sym = nsym - 1; sym >= 1; sym--) {
    unsigned char *bucket = buckets + 4 * (name_hash[sym - 1] % (uint32_t)nbucket);
    put32(chains + 4 * sym, get32(bucket));
    put32(bucket, (uint32_t)sym);
  }

  // .dynsym: the null symbol, then per probe its semaphore and its stub.
  for (int i = 0; i < n; i++) {
    unsigned char *sem = out + dynsym_addr + (1 + 2 * (uint64_t)i) * SYM_SIZE, *fn = sem + SYM_SIZE;
    put32(sem, name_off[2 * i]);
    sem[4] = STB_GLOBAL << 4 | STT_OBJECT;
    put16(sem + 6, SEC_PROBES);
    put64(sem + 8, obj->sems[i]);
    put64(sem + 16, 2);
    put32(fn, name_off[2 * i + 1]);
    fn[4] = STB_GLOBAL << 4 | STT_FUNC;
    put16(fn + 6, SEC_TEXT);
    put64(fn + 8, obj->stubs[i]);
    put64(fn + 16, stublen);
  }
  memcpy(out + dynstr_addr, dynstr.p, dynstr.len);
  // .stapsdt.base is one zero byte, already there.

  // .text: per slot, the copy of the stub's first 4 bytes, the stub, fill.
  for (int i = 0; i < n; i++) {
    unsigned char *slot = out + text_addr + (uint64_t)i * STUB_ALIGN;
    memcpy(slot, stub, 4);
    memcpy(slot + 4, stub, stublen);
    memset(slot + 4 + stublen, fill, STUB_ALIGN - 4 - stublen);
  }

  // .dynamic.
  const uint64_t dyn[NUM_DYN][2] = {
      {DT_HASH, hash_addr}, {DT_STRTAB, dynstr_addr}, {DT_SYMTAB, dynsym_addr}, {DT_STRSZ, dynstr.len},
      {DT_SYMENT, SYM_SIZE}, {DT_SONAME, 1},          {DT_NULL, 0},
  };
  for (int d = 0; d < NUM_DYN; d++) {
    put64(out + dynamic_addr + 16 * d, dyn[d][0]);
    put64(out + dynamic_addr + 16 * d + 8, dyn[d][1]);
  }
  // .probes: the semaphores, zero.
  memcpy(out + secs[SEC_NOTE].off, notes.p, notes.len);
  memcpy(out + shstr_off, shstr.p, shstr.len);
  // Section headers: 0 stays SHT_NULL.
  for (int s = 1; s <= NUM_SECS; s++)
    put_section(out + shoff + (uint64_t)s * SHDR_SIZE, shname[s], &secs[s]);
  struct section shstrtab = {".shstrtab", SHT_STRTAB, 0, 0, shstr_off, shstr.len, 0, 0, 1, 0};
  put_section(out + shoff + (uint64_t)(NUM_SECS + 1) * SHDR_SIZE, shname[NUM_SECS + 1], &shstrtab);

  obj->bytes = out;
  obj->size = size;
  obj->segs[0] = (struct sdt_segment){0, 0, r_end, r_end, page, PROT_READ};
  obj->segs[1] = (struct sdt_segment){text_addr, text_addr, text_size, text_size, page, PROT_READ | PROT_EXEC};
  obj->segs[2] = (struct sdt_segment){dynamic_addr, dynamic_addr, data_size, data_size, page, PROT_READ | PROT_WRITE};
  free(name_off);
  free(name_hash);
  free(dynstr.p);
  free(notes.p);
  free(args.p);
  free(shstr.p);
  return SDT_BUILD_OK;

nomem:
  free(out);
  free(name_off);
  free(name_hash);
  free(dynstr.p);
  free(notes.p);
  free(args.p);
  free(shstr.p);
  sdt_object_free(obj);
  return fail(msg, SDT_BUILD_NOMEM, "build provider %s: out of memory", provider);
}
