/*
 * hostile.c — the library inside hosts that are hard on it (issue 24's
 * item 3). Each mode prints one line starting with "ok" and exits 0, or
 * says what went wrong and exits 1; a crash or a hang fails the test.
 *
 *   sigprof N    a SIGPROF profiler at 0.5 ms (handler without SA_ONSTACK,
 *                as C's default, gperftools and stackprof install it) while
 *                N load/fire/unload cycles run
 *   sigloop N    SIGUSR1, SIGHUP, SIGWINCH and SIGURG handlers (no
 *                SA_ONSTACK, as libuv and Ruby's trap) and a thread
 *                sending them in a loop, during N cycles
 *   cycles N     N load/unload cycles of one provider, then N/20 of
 *                init/load/unload/destroy: /proc/self/maps has the lines
 *                it started with after each, and never more than a few
 *                more in between
 *   ulimit MB    address space limited to MB MiB: loads a provider of
 *                1000 probes
 *   pidns        a provider loaded, then a child in a new PID namespace
 *                (PID 1 there, as after unshare -pf) fires it, unloads
 *                its copy and loads its own; the parent's still works
 *   threads N    N threads each load, fire and unload their own provider
 *                200 times, while the main thread fires a shared one
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libstapsdt.h"

static volatile sig_atomic_t signals;

static void handler(int sig) {
  (void)sig;
  signals++;
}

static void install(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler; /* no SA_ONSTACK, no SA_RESTART */
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, NULL) != 0) {
    perror("sigaction");
    exit(1);
  }
}

/* cycle loads, fires, checks and unloads a provider of a few probes. */
static int cycle(int i, int memfd) {
  char name[32];
  snprintf(name, sizeof name, "host%d", i % 7);
  SDTProvider_t *p = providerInit(name);
  if (p == NULL)
    return -1;
  if (!memfd)
    providerUseMemfd(p, memfd_disabled);
  SDTProbe_t *a = providerAddProbe(p, "a", 2, int64, uint32);
  SDTProbe_t *b = providerAddProbe(p, "b", 0);
  if (a == NULL || b == NULL || providerLoad(p) != 0) {
    fprintf(stderr, "load: %s\n", p->error ? p->error : "?");
    providerDestroy(p);
    return -1;
  }
  probeFire(a, (int64_t)i, (uint32_t)i);
  (probeFire)(b);
  if ((probeIsEnabled)(a) != 0 || probeIsEnabled(b) != 0) {
    fprintf(stderr, "enabled without a tracer\n");
    return -1;
  }
  if (providerUnload(p) != 0) {
    fprintf(stderr, "unload: %s\n", p->error ? p->error : "?");
    return -1;
  }
  probeFire(a, (int64_t)i, (uint32_t)i);
  providerDestroy(p);
  return 0;
}

static int maps_lines(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (f == NULL)
    return -1;
  int n = 0, c;
  while ((c = getc(f)) != EOF)
    n += c == '\n';
  fclose(f);
  return n;
}

static volatile int stop;

static void *sender(void *arg) {
  (void)arg;
  static const int sigs[] = {SIGUSR1, SIGHUP, SIGWINCH, SIGURG};
  for (unsigned i = 0; !stop; i++)
    kill(getpid(), sigs[i % 4]);
  return NULL;
}

static int cycles(int n) {
  int before = maps_lines(), most = before;
  SDTProvider_t *p = providerInit("cyc");
  SDTProbe_t *a = providerAddProbe(p, "a", 1, int64);
  for (int i = 0; i < n; i++) {
    if (providerLoad(p) != 0) {
      printf("load %d: %s\n", i, p->error);
      return 1;
    }
    probeFire(a, (int64_t)i);
    if (providerUnload(p) != 0) {
      printf("unload %d: %s\n", i, p->error);
      return 1;
    }
    if (i % 1000 == 0) {
      int m = maps_lines();
      most = m > most ? m : most;
    }
  }
  providerDestroy(p);
  int after1 = maps_lines();
  for (int i = 0; i < n / 20; i++) {
    if (cycle(i, 1) != 0)
      return 1;
    if (i % 100 == 0) {
      int m = maps_lines();
      most = m > most ? m : most;
    }
  }
  int after2 = maps_lines();
  if (after1 != before || after2 != before || most > before + 8) {
    printf("maps: %d before, %d after load/unload cycles, %d after init..destroy cycles, at most %d\n", before,
           after1, after2, most);
    return 1;
  }
  printf("ok maps %d, at most %d\n", before, most);
  return 0;
}

static int pidns(void) {
  SDTProvider_t *p = providerInit("nsprov");
  providerUseMemfd(p, memfd_disabled);
  SDTProbe_t *a = providerAddProbe(p, "a", 1, int64);
  if (providerLoad(p) != 0) {
    printf("load: %s\n", p->error);
    return 1;
  }
  char *path = strdup(p->_filename);
  if (unshare(CLONE_NEWPID) != 0) {
    printf("unshare: %s\n", strerror(errno));
    return 1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    if (getpid() != 1)
      _exit(3);
    probeFire(a, (int64_t)1);
    if (providerUnload(p) != 0)
      _exit(4);
    providerDestroy(p);
    for (int i = 0; i < 100; i++)
      if (cycle(i, i % 2) != 0)
        _exit(5);
    _exit(0);
  }
  alarm(20);
  int st;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    printf("child: status %#x\n", st);
    return 1;
  }
  if (access(path, F_OK) != 0) {
    printf("the child removed the parent's object %s\n", path);
    return 1;
  }
  probeFire(a, (int64_t)2);
  if (providerUnload(p) != 0 || access(path, F_OK) == 0) {
    printf("unload: %s; %s still there: %d\n", p->error ? p->error : "", path, access(path, F_OK) == 0);
    return 1;
  }
  providerDestroy(p);
  printf("ok\n");
  return 0;
}

static SDTProbe_t *shared;

static void *loader(void *arg) {
  intptr_t id = (intptr_t)arg;
  char name[32];
  snprintf(name, sizeof name, "thr%d", (int)id);
  for (int i = 0; i < 200; i++) {
    SDTProvider_t *p = providerInit(name);
    SDTProbe_t *a = providerAddProbe(p, "a", 1, int64);
    if (providerLoad(p) != 0)
      return (void *)1;
    probeFire(a, (int64_t)i);
    probeFire(shared, (int64_t)i);
    if (providerUnload(p) != 0)
      return (void *)1;
    providerDestroy(p);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  const char *mode = argv[1];
  int n = argc > 2 ? atoi(argv[2]) : 0;
  if (strcmp(mode, "sigprof") == 0) {
    install(SIGPROF);
    struct itimerval it = {{0, 500}, {0, 500}};
    setitimer(ITIMER_PROF, &it, NULL);
    for (int i = 0; i < n; i++)
      if (cycle(i, i % 2) != 0)
        return 1;
    if (signals == 0) {
      printf("no SIGPROF arrived\n");
      return 1;
    }
    printf("ok %d signals\n", (int)signals);
    return 0;
  }
  if (strcmp(mode, "sigloop") == 0) {
    install(SIGUSR1);
    install(SIGHUP);
    install(SIGWINCH);
    install(SIGURG);
    pthread_t th;
    pthread_create(&th, NULL, sender, NULL);
    int bad = 0;
    for (int i = 0; i < n && !bad; i++)
      bad = cycle(i, i % 2) != 0;
    stop = 1;
    pthread_join(th, NULL);
    if (bad)
      return 1;
    printf("ok %d signals\n", (int)signals);
    return 0;
  }
  if (strcmp(mode, "cycles") == 0)
    return cycles(n);
  if (strcmp(mode, "ulimit") == 0) {
    struct rlimit rl = {(rlim_t)n << 20, (rlim_t)n << 20};
    if (setrlimit(RLIMIT_AS, &rl) != 0) {
      perror("setrlimit");
      return 1;
    }
    SDTProvider_t *p = providerInit("big");
    for (int i = 0; i < 1000; i++) {
      char name[16];
      snprintf(name, sizeof name, "p%d", i);
      providerAddProbe(p, name, 3, int64, uint32, int8);
    }
    if (providerLoad(p) != 0) {
      printf("load: %s\n", p->error);
      return 1;
    }
    if (providerUnload(p) != 0)
      return 1;
    providerDestroy(p);
    printf("ok\n");
    return 0;
  }
  if (strcmp(mode, "pidns") == 0)
    return pidns();
  if (strcmp(mode, "threads") == 0) {
    SDTProvider_t *sp = providerInit("shared");
    shared = providerAddProbe(sp, "s", 1, int64);
    if (providerLoad(sp) != 0)
      return 1;
    pthread_t th[64];
    if (n > 64)
      n = 64;
    for (intptr_t i = 0; i < n; i++)
      pthread_create(&th[i], NULL, loader, (void *)i);
    int bad = 0;
    for (int i = 0; i < n; i++) {
      void *r;
      pthread_join(th[i], &r);
      bad |= r != NULL;
    }
    providerDestroy(sp);
    if (bad)
      return 1;
    printf("ok\n");
    return 0;
  }
  return 2;
}
