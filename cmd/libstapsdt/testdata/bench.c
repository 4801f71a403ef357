/*
 * bench.c — times the library from C for BenchmarkC (lib_test.go). Each
 * command line "OP N" runs OP N times and prints the nanoseconds per
 * operation by the program's own clock, then "done":
 *
 *   floor   a call to an empty non-inlined function with 4 arguments
 *   fire0   probeFire(zero)                 bench:zero, no arguments
 *   fire3   probeFire(three, i, 2, 3)       bench:three (uint64, int32, uint64)
 *   enabled probeIsEnabled(three)
 *   sdt3    DTRACE_PROBE3(benchsdt, three, i, 2, 3), a sys/sdt.h probe
 *   sdtf3   the same probe (benchsdt:func) in a non-inlined function of
 *           its own, as libstapsdt's and this library's sites are
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

__attribute__((noinline)) void sdt_func(uint64_t a, uint32_t b, uint64_t c) {
  DTRACE_PROBE3(benchsdt, func, a, b, c);
}

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
        probeFire(zero);
    } else if (strcmp(op, "fire3") == 0) {
      for (long i = 0; i < n; i++)
        probeFire(three, (uint64_t)i, 2, (uint64_t)3);
    } else if (strcmp(op, "enabled") == 0) {
      for (long i = 0; i < n; i++)
        sink = probeIsEnabled(three);
    } else if (strcmp(op, "sdt3") == 0) {
      for (long i = 0; i < n; i++)
        DTRACE_PROBE3(benchsdt, three, (uint64_t)i, 2, (uint64_t)3);
    } else if (strcmp(op, "sdtf3") == 0) {
      for (long i = 0; i < n; i++)
        sdt_func((uint64_t)i, 2, 3);
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
