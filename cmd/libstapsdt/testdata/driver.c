/*
 * driver.c — a program written against libstapsdt's API that the tests
 * link against the library (gcc -O2 driver.c -lstapsdt -lpthread) and
 * drive through stdin, one command a line, each answered by its output
 * lines and "done" (the protocol of internal/testutil.Tracee).
 *
 * Provider "cprov": probes n1..n12, where nK has K arguments whose types
 * cycle through int8, uint8, int16, uint16, int32, uint32, int64, uint64
 * and whose values are VAL(K, j) below (libstapsdt_test.go computes the
 * same); "str" (uint64 string, int32); "seq" (int64 thread, int64 i).
 * Provider "cmark": "mark" (int64), never unloaded.
 * STAPSDT_MEMFD=0 in the environment loads both with memfd_disabled.
 * "race" fires seq from 4 threads while unloading and loading cprov.
 * "eval" fires n1 through expressions and prints how often each ran.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libstapsdt.h"

#define VI8(K, j) (int)(int8_t)(-(j)-1 - (K))
#define VU8(K, j) (int)(uint8_t)(200 + (K) + (j))
#define VI16(K, j) (int)(int16_t)(-(1000 * (K) + (j)))
#define VU16(K, j) (int)(uint16_t)(60000 + (K)*10 + (j))
#define VI32(K, j) (int32_t)(-(100000 * (K) + (j)))
#define VU32(K, j) (uint32_t)(4000000000u + (K)*10 + (j))
#define VI64(K, j) (int64_t)(-(1LL << 40) - (K)*10 - (j))
#define VU64(K, j) (uint64_t)((1ULL << 63) + (K)*10 + (j))
#define A0(K) VI8(K, 0)
#define A1(K) VU8(K, 1)
#define A2(K) VI16(K, 2)
#define A3(K) VU16(K, 3)
#define A4(K) VI32(K, 4)
#define A5(K) VU32(K, 5)
#define A6(K) VI64(K, 6)
#define A7(K) VU64(K, 7)
#define A8(K) VI8(K, 8)
#define A9(K) VU8(K, 9)
#define A10(K) VI16(K, 10)
#define A11(K) VU16(K, 11)

static const ArgType_t cycle[8] = {int8, uint8, int16, uint16, int32, uint32, int64, uint64};

static SDTProvider_t *prov, *marker;
static SDTProbe_t *n[13], *str, *seq, *mark;

#define THREADS 8
#define PER_THREAD 1000

static void *firer(void *arg) {
  int64_t id = (int64_t)(intptr_t)arg;
  for (int64_t i = 0; i < PER_THREAD; i++)
    probeFire(seq, id, i);
  return NULL;
}

static volatile int stop;
static uint64_t fires;

static void *racer(void *arg) {
  int64_t id = (int64_t)(intptr_t)arg;
  for (int64_t i = 0; !stop; i++) {
    probeFire(seq, id, i);
    if (probeIsEnabled(n[1]) > 1)
      abort();
    __atomic_add_fetch(&fires, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

/* race fires seq from 4 threads while the provider is unloaded and loaded
 * again 20 times, each time after the threads fired 1000 more times. */
static int race(void) {
  pthread_t th[4];
  stop = 0;
  for (intptr_t i = 0; i < 4; i++)
    pthread_create(&th[i], NULL, racer, (void *)i);
  int bad = 0;
  for (int c = 0; c < 20; c++) {
    uint64_t until = __atomic_load_n(&fires, __ATOMIC_RELAXED) + 1000;
    while (__atomic_load_n(&fires, __ATOMIC_RELAXED) < until)
      ;
    bad |= providerUnload(prov) != 0;
    bad |= providerLoad(prov) != 0;
  }
  stop = 1;
  for (int i = 0; i < 4; i++)
    pthread_join(th[i], NULL);
  return bad;
}

static void fire_all(void) {
  probeFire(n[1], A0(1));
  probeFire(n[2], A0(2), A1(2));
  probeFire(n[3], A0(3), A1(3), A2(3));
  probeFire(n[4], A0(4), A1(4), A2(4), A3(4));
  probeFire(n[5], A0(5), A1(5), A2(5), A3(5), A4(5));
  probeFire(n[6], A0(6), A1(6), A2(6), A3(6), A4(6), A5(6));
  probeFire(n[7], A0(7), A1(7), A2(7), A3(7), A4(7), A5(7), A6(7));
  probeFire(n[8], A0(8), A1(8), A2(8), A3(8), A4(8), A5(8), A6(8), A7(8));
  probeFire(n[9], A0(9), A1(9), A2(9), A3(9), A4(9), A5(9), A6(9), A7(9), A8(9));
  probeFire(n[10], A0(10), A1(10), A2(10), A3(10), A4(10), A5(10), A6(10), A7(10), A8(10), A9(10));
  probeFire(n[11], A0(11), A1(11), A2(11), A3(11), A4(11), A5(11), A6(11), A7(11), A8(11), A9(11),
            A10(11));
  probeFire(n[12], A0(12), A1(12), A2(12), A3(12), A4(12), A5(12), A6(12), A7(12), A8(12), A9(12),
            A10(12), A11(12));
  probeFire(str, (uint64_t)(uintptr_t) "hello from C", -42);
}

static SDTProbe_t *add(SDTProvider_t *p, const char *name, int argc, const ArgType_t *t) {
  SDTProbe_t *pr;
  switch (argc) {
#define T(i) t[i]
  case 1: pr = providerAddProbe(p, name, 1, T(0)); break;
  case 2: pr = providerAddProbe(p, name, 2, T(0), T(1)); break;
  case 3: pr = providerAddProbe(p, name, 3, T(0), T(1), T(2)); break;
  case 4: pr = providerAddProbe(p, name, 4, T(0), T(1), T(2), T(3)); break;
  case 5: pr = providerAddProbe(p, name, 5, T(0), T(1), T(2), T(3), T(4)); break;
  case 6: pr = providerAddProbe(p, name, 6, T(0), T(1), T(2), T(3), T(4), T(5)); break;
  case 7: pr = providerAddProbe(p, name, 7, T(0), T(1), T(2), T(3), T(4), T(5), T(6)); break;
  case 8: pr = providerAddProbe(p, name, 8, T(0), T(1), T(2), T(3), T(4), T(5), T(6), T(7)); break;
  case 9: pr = providerAddProbe(p, name, 9, T(0), T(1), T(2), T(3), T(4), T(5), T(6), T(7), T(8)); break;
  case 10:
    pr = providerAddProbe(p, name, 10, T(0), T(1), T(2), T(3), T(4), T(5), T(6), T(7), T(8), T(9));
    break;
  case 11:
    pr = providerAddProbe(p, name, 11, T(0), T(1), T(2), T(3), T(4), T(5), T(6), T(7), T(8), T(9), T(10));
    break;
  default:
    pr = providerAddProbe(p, name, 12, T(0), T(1), T(2), T(3), T(4), T(5), T(6), T(7), T(8), T(9), T(10),
                          T(11));
    break;
#undef T
  }
  if (pr == NULL) {
    fprintf(stderr, "add %s: %s\n", name, p->error);
    exit(1);
  }
  return pr;
}

/* eval counts what "eval" evaluates: probeFire(probe_expr(), arg_expr())
 * fires n1 with 7; libstapsdt.h's macro evaluates the probe once and the
 * argument only when n1 is traced, the function both always. */
static SDTProvider_t *kid;
static SDTProbe_t *kprobe;

static int evals_probe, evals_arg;
static SDTProbe_t *probe_expr(void) {
  evals_probe++;
  return n[1];
}
static int arg_expr(void) {
  evals_arg++;
  return 7;
}

int main(void) {
  const char *m = getenv("STAPSDT_MEMFD");
  int memfd = !(m && strcmp(m, "0") == 0);
  prov = providerInit("cprov");
  marker = providerInit("cmark");
  if (!memfd) {
    providerUseMemfd(prov, memfd_disabled);
    providerUseMemfd(marker, memfd_disabled);
  }
  ArgType_t types[12];
  for (int i = 0; i < 12; i++)
    types[i] = cycle[i % 8];
  for (int k = 1; k <= 12; k++) {
    char name[8];
    snprintf(name, sizeof name, "n%d", k);
    n[k] = add(prov, name, k, types);
  }
  str = providerAddProbe(prov, "str", 2, uint64, int32);
  seq = providerAddProbe(prov, "seq", 2, int64, int64);
  mark = providerAddProbe(marker, "mark", 1, int64);
  if (!str || !seq || !mark || providerLoad(prov) != 0 || providerLoad(marker) != 0) {
    fprintf(stderr, "load: %s %s\n", prov->error ? prov->error : "", marker->error ? marker->error : "");
    return 1;
  }
  /* A NULL probe (providerAddProbe failed) is a no-op. */
  probeFire(NULL, 1);
  if (probeIsEnabled(NULL) != 0)
    return 1;
  char line[64];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = 0;
    if (strcmp(line, "fire") == 0) {
      fire_all();
    } else if (strcmp(line, "eval") == 0) {
      evals_probe = evals_arg = 0;
      probeFire(probe_expr(), arg_expr());
      printf("eval %d %d\n", evals_probe, evals_arg);
    } else if (strncmp(line, "mark ", 5) == 0) {
      probeFire(mark, (int64_t)atoll(line + 5));
    } else if (strcmp(line, "enabled") == 0) {
      for (int k = 1; k <= 12; k++)
        printf("%d ", probeIsEnabled(n[k]));
      printf("%d %d\n", probeIsEnabled(str), probeIsEnabled(seq));
    } else if (strcmp(line, "fork") == 0) {
      /* The child takes over the command loop until "exit". */
      pid_t pid = fork();
      if (pid == 0) {
        printf("child %d\n", (int)getpid());
      } else {
        int st;
        waitpid(pid, &st, 0);
        printf("child %d exit %d\n", (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
      }
    } else if (strcmp(line, "exit") == 0) {
      /* In a child: unloads its copy of the mappings; the parent's file
       * (with memfd_disabled) stays. */
      if (providerUnload(prov) != 0)
        _exit(2);
      providerDestroy(prov);
      fflush(stdout);
      _exit(0);
    } else if (strcmp(line, "threads") == 0) {
      pthread_t th[THREADS];
      for (intptr_t i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, firer, (void *)i);
      for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    } else if (strcmp(line, "thirteen") == 0) {
      SDTProbe_t *p = providerAddProbe(prov, "n13", 13, int8, int8, int8, int8, int8, int8, int8, int8, int8,
                                       int8, int8, int8, int8);
      printf("%s %d %s\n", p == NULL ? "refused" : "accepted", (int)prov->errno, prov->error);
    } else if (strcmp(line, "newload") == 0) {
      /* A new provider, kept until "kiddestroy"; also in a child. */
      kid = providerInit("kid");
      kprobe = providerAddProbe(kid, "k", 1, int64);
      int r = providerLoad(kid);
      printf("newload %d %s\n", r, r ? kid->error : "");
    } else if (strcmp(line, "kidfire") == 0) {
      probeFire(kprobe, (int64_t)42);
    } else if (strcmp(line, "kiddestroy") == 0) {
      providerDestroy(kid);
      kid = NULL;
      kprobe = NULL;
    } else if (strcmp(line, "load") == 0) {
      printf("load %d\n", providerLoad(prov));
    } else if (strcmp(line, "race") == 0) {
      printf("race %s\n", race() ? "failed" : "ok");
    } else if (strcmp(line, "unload") == 0) {
      printf("unload %d\n", providerUnload(prov));
    } else if (strcmp(line, "path") == 0) {
      printf("%s\n", prov->_filename ? prov->_filename : "(none)");
    }
    printf("done\n");
    fflush(stdout);
  }
  providerDestroy(prov);
  providerDestroy(marker);
  return 0;
}
