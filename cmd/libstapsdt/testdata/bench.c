/*
 * bench.c — times the library from C for BenchmarkC (lib_test.go). Each
 * command line "OP N" runs OP N times and prints the nanoseconds per
 * operation by the program's own clock, then "done":
 *
 *   floor   a call to an empty non-inlined function with 4 arguments
 *   fire0   (probeFire)(zero)               bench:zero, no arguments, the
 *           exported function, as programs built against libstapsdt's
 *           header and bindings call it
 *   fire3   (probeFire)(three, i, 2, 3)     bench:three (uint64, int32, uint64)
 *   enabled (probeIsEnabled)(three)
 *   ifire0, ifire3, ienabled: the same through libstapsdt.h's macros,
 *           which check inline and call the library only when traced
 *   load1   sink = (a volatile 2-byte word != 0): one load in the same
 *           loop, what a sys/sdt.h semaphore check costs at least
 *   sdt3    DTRACE_PROBE3(benchsdt, three, i, 2, 3), a sys/sdt.h probe
 *   sdtf3   the same probe (benchsdt:func) in a non-inlined function of
 *           its own, as libstapsdt's and this library's sites are
 *   nop1f3, nop5f3: a call to an assembly function whose first
 *           instruction is the site of a hand-written stapsdt note
 *           (benchsdt:nop1, benchsdt:nop5; arguments in rdi, esi, rdx),
 *           a 1-byte nop (as sys/sdt.h writes; the kernel traps on int3
 *           and emulates the nop) or the 5-byte nop this library's stubs
 *           have (which Linux 6.18 turns into a call to its trampoline),
 *           then ret: the site forms side by side, alike in all else
 *   nop1jf3 as nop1f3, but the function returns by "pop %r11; jmp *%r11",
 *           not ret, as dynsdt's 1-byte nop stub (benchsdt:nop1j)
 *   nop1m3  as nop1f3 with the 1-byte nop after a first instruction (mov):
 *           a site inside a function, not at its entry (benchsdt:nop1m)
 *   nop1l, nop5l: the 1-byte and the 5-byte nop site in the loop's body
 *           (benchsdt:nop1l, benchsdt:nop5l; no arguments)
 *   load    providerInit, 1000 providerAddProbe and providerLoad of a new
 *           provider, N times; prints the nanoseconds of providerLoad alone
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <time.h>

#include "libstapsdt.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) void empty(void *p, uint64_t a, uint64_t b, uint64_t c) {
  __asm__ volatile("" ::"r"(p), "r"(a), "r"(b), "r"(c));
}

static volatile int sink;
static volatile unsigned short word;

__attribute__((noinline)) void sdt_func(uint64_t a, uint32_t b, uint64_t c) {
  DTRACE_PROBE3(benchsdt, func, a, b, c);
}

/* site_stub(NAME, PRE, NOP) defines the function NAME##_stub: PRE, NOP,
 * then ret, with a stapsdt note for benchsdt:NAME at NOP, as sys/sdt.h
 * lays it out. */
#define site_stub(NAME, PRE, NOP)                                                   \
  __asm__(".ifndef _.stapsdt.base\n"                                           \
          ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n" \
          ".weak _.stapsdt.base\n"                                             \
          ".hidden _.stapsdt.base\n"                                           \
          "_.stapsdt.base: .space 1\n"                                         \
          ".size _.stapsdt.base, 1\n"                                          \
          ".popsection\n"                                                      \
          ".endif\n"                                                           \
          ".text\n"                                                            \
          ".globl " #NAME "_stub\n"                                            \
          ".type " #NAME "_stub, @function\n"                                  \
          ".p2align 4\n" #NAME "_stub:\n" PRE "\n"                             \
          "990: " NOP "\n"                                                     \
          "  ret\n"                                                            \
          ".size " #NAME "_stub, .-" #NAME "_stub\n"                            \
          ".pushsection .note.stapsdt,\"?\",\"note\"\n"                          \
          ".balign 4\n"                                                        \
          ".4byte 992f-991f, 994f-993f, 3\n"                                   \
          "991: .asciz \"stapsdt\"\n"                                          \
          "992: .balign 4\n"                                                   \
          "993: .8byte 990b\n"                                                 \
          ".8byte _.stapsdt.base\n"                                            \
          ".8byte 0\n"                                                         \
          ".asciz \"benchsdt\"\n"                                              \
          ".asciz \"" #NAME "\"\n"                                              \
          ".asciz \"8@%rdi -4@%esi 8@%rdx\"\n"                                  \
          "994: .balign 4\n"                                                   \
          ".popsection\n");                                                    \
  void NAME##_stub(uint64_t, uint32_t, uint64_t)

/* site_inline(NAME, NOP) is NOP in the caller's code, with a stapsdt note
 * for benchsdt:NAME (no arguments) at it. */
#define site_inline(NAME, NOP)                                                 \
  __asm__ volatile("990: " NOP "\n"                                            \
                   ".pushsection .note.stapsdt,\"?\",\"note\"\n"                 \
                   ".balign 4\n"                                               \
                   ".4byte 992f-991f, 994f-993f, 3\n"                          \
                   "991: .asciz \"stapsdt\"\n"                                 \
                   "992: .balign 4\n"                                          \
                   "993: .8byte 990b\n"                                        \
                   ".8byte _.stapsdt.base\n"                                   \
                   ".8byte 0\n"                                                \
                   ".asciz \"benchsdt\"\n"                                     \
                   ".asciz \"" #NAME "\"\n"                                     \
                   ".asciz \"\"\n"                                              \
                   "994: .balign 4\n"                                          \
                   ".popsection\n")

site_stub(nop1, "", "nop");
site_stub(nop1m, "mov %rdi, %rax", "nop");
site_stub(nop5, "", ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00"); /* nopl 0x0(%rax,%rax,1) */
/* The 1-byte nop leaving by pop/jmp, as dynsdt's nop stub (the ret the
 * macro appends is never reached). */
site_stub(nop1j, "", "nop\n  pop %r11\n  jmp *%r11");

int main(void) {
  SDTProvider_t *prov = providerInit("bench");
  SDTProbe_t *zero = providerAddProbe(prov, "zero", 0);
  SDTProbe_t *three = providerAddProbe(prov, "three", 3, uint64, int32, uint64);
  if (providerLoad(prov) != 0) {
    fprintf(stderr, "load: %s\n", prov->error);
    return 1;
  }
  char line[64], op[16];
  while (fgets(line, sizeof line, stdin)) {
    long n = 0;
    if (sscanf(line, "%15s %ld", op, &n) != 2 || n <= 0) {
      fprintf(stderr, "bad command %s", line);
      return 1;
    }
    double t0 = now(), load = 0;
    if (strcmp(op, "floor") == 0) {
      for (long i = 0; i < n; i++)
        empty(three, i, 2, 3);
    } else if (strcmp(op, "fire0") == 0) {
      for (long i = 0; i < n; i++)
        (probeFire)(zero);
    } else if (strcmp(op, "fire3") == 0) {
      for (long i = 0; i < n; i++)
        (probeFire)(three, (uint64_t)i, 2, (uint64_t)3);
    } else if (strcmp(op, "enabled") == 0) {
      for (long i = 0; i < n; i++)
        sink = (probeIsEnabled)(three);
    } else if (strcmp(op, "load1") == 0) {
      for (long i = 0; i < n; i++)
        sink = word != 0;
    } else if (strcmp(op, "ifire0") == 0) {
      for (long i = 0; i < n; i++)
        probeFire(zero);
    } else if (strcmp(op, "ifire3") == 0) {
      for (long i = 0; i < n; i++)
        probeFire(three, (uint64_t)i, 2, (uint64_t)3);
    } else if (strcmp(op, "ienabled") == 0) {
      for (long i = 0; i < n; i++)
        sink = probeIsEnabled(three);
    } else if (strcmp(op, "sdt3") == 0) {
      for (long i = 0; i < n; i++)
        DTRACE_PROBE3(benchsdt, three, (uint64_t)i, 2, (uint64_t)3);
    } else if (strcmp(op, "sdtf3") == 0) {
      for (long i = 0; i < n; i++)
        sdt_func((uint64_t)i, 2, 3);
    } else if (strcmp(op, "nop1f3") == 0) {
      for (long i = 0; i < n; i++)
        nop1_stub((uint64_t)i, 2, 3);
    } else if (strcmp(op, "nop1m3") == 0) {
      for (long i = 0; i < n; i++)
        nop1m_stub((uint64_t)i, 2, 3);
    } else if (strcmp(op, "nop1l") == 0) {
      for (long i = 0; i < n; i++)
        site_inline(nop1l, "nop");
    } else if (strcmp(op, "nop5l") == 0) {
      for (long i = 0; i < n; i++)
        site_inline(nop5l, ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00");
    } else if (strcmp(op, "nop5f3") == 0) {
      for (long i = 0; i < n; i++)
        nop5_stub((uint64_t)i, 2, 3);
    } else if (strcmp(op, "nop1jf3") == 0) {
      for (long i = 0; i < n; i++)
        nop1j_stub((uint64_t)i, 2, 3);
    } else if (strcmp(op, "load") == 0) {
      for (long r = 0; r < n; r++) {
        SDTProvider_t *big = providerInit("big");
        char name[16];
        for (int i = 0; i < 1000; i++) {
          snprintf(name, sizeof name, "p%d", i);
          providerAddProbe(big, name, 2, uint64, int32);
        }
        double t1 = now();
        if (providerLoad(big) != 0) {
          fprintf(stderr, "load: %s\n", big->error);
          return 1;
        }
        load += now() - t1;
        providerDestroy(big);
      }
    } else {
      fprintf(stderr, "bad command %s", line);
      return 1;
    }
    printf("%.3f\ndone\n", (strcmp(op, "load") == 0 ? load : now() - t0) / n);
    fflush(stdout);
  }
  providerDestroy(prov);
  return 0;
}
