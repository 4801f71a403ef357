/*
 * trap.c — an arm64 stand-in for a tracer, for TestArm64UnderQemu
 * (qemu-user has no uprobes): it writes BRK #0 over a probe's site, as a
 * uprobe does, catches the SIGTRAP, records x0-x7 and the first stack
 * slots at the stub's entry, and puts the original instruction back, so
 * that the stub then runs and returns. Prints "ok" or what differed, then
 * exits 0 or 1.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "libstapsdt.h"

static volatile uint32_t *trap_site;
static uint32_t trap_orig;
static uint64_t regs[8], stack[4];
static volatile int hits;

static void patch(volatile uint32_t *site, uint32_t insn) {
  uintptr_t page = (uintptr_t)site & ~(uintptr_t)(getpagesize() - 1);
  if (mprotect((void *)page, getpagesize(), PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
    perror("mprotect");
    exit(1);
  }
  *site = insn;
  __builtin___clear_cache((char *)site, (char *)site + 4);
  mprotect((void *)page, getpagesize(), PROT_READ | PROT_EXEC);
}

static void on_trap(int sig, siginfo_t *si, void *ctx) {
  ucontext_t *uc = ctx;
  (void)sig;
  (void)si;
  for (int i = 0; i < 8; i++)
    regs[i] = uc->uc_mcontext.regs[i];
  memcpy(stack, (void *)uc->uc_mcontext.sp, sizeof stack);
  hits++;
  patch(trap_site, trap_orig); /* pc stays at the site: the nop runs now */
}

static int failed;

static void expect(const char *what, uint64_t have, uint64_t want) {
  if (have != want) {
    printf("%s: have %#llx, want %#llx\n", what, (unsigned long long)have, (unsigned long long)want);
    failed = 1;
  }
}

int main(void) {
  struct sigaction sa = {0};
  sa.sa_sigaction = on_trap;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGTRAP, &sa, NULL);

  SDTProvider_t *p = providerInit("qtrap");
  SDTProbe_t *pr = providerAddProbe(p, "twelve", 12, int8, uint8, int16, uint16, int32, uint32, int64, uint64,
                                    int8, uint16, int32, uint64);
  SDTProbe_t *bad = providerAddProbe(p, "thirteen", 13, int8, int8, int8, int8, int8, int8, int8, int8, int8,
                                     int8, int8, int8, int8);
  if (!pr || bad) {
    printf("add: twelve %p, thirteen %p: %s\n", (void *)pr, (void *)bad, p->error);
    return 1;
  }
  if (providerLoad(p) != 0) {
    printf("load: %s\n", p->error);
    return 1;
  }
  expect("enabled before", probeIsEnabled(pr), 0);
  probeFire(pr, -1, 2, -3, 4, -5, 6u, (int64_t)-7, (uint64_t)8, -9, 10, -11, (uint64_t)12);
  expect("hits untraced", hits, 0);

  trap_site = (volatile uint32_t *)pr->_fire;
  trap_orig = *trap_site;
  patch(trap_site, 0xd4200000); /* BRK #0 */
  expect("enabled with BRK", probeIsEnabled(pr), 1);
  probeFire(pr, -1, 200, -300, 60000, -70000, 4000000000u, (int64_t)-(1LL << 40), (uint64_t)-1, -9, 65535,
            -11, (uint64_t)12);
  expect("hits traced", hits, 1);
  const uint64_t want[12] = {(uint64_t)-1,    200,          (uint64_t)-300,        60000,
                             (uint64_t)-70000, 4000000000u,  (uint64_t)-(1LL << 40), (uint64_t)-1,
                             (uint64_t)-9,    65535,        (uint64_t)-11,         12};
  char what[32];
  for (int i = 0; i < 8; i++) {
    snprintf(what, sizeof what, "x%d", i);
    expect(what, regs[i], want[i]);
  }
  for (int i = 0; i < 4; i++) {
    snprintf(what, sizeof what, "[sp, %d]", 8 * i);
    expect(what, stack[i], want[8 + i]);
  }
  expect("enabled after", probeIsEnabled(pr), 0);
  if (providerUnload(p) != 0)
    return 1;
  probeFire(pr, -1, 2, -3, 4, -5, 6u, (int64_t)-7, (uint64_t)8, -9, 10, -11, (uint64_t)12);
  providerDestroy(p);
  if (!failed)
    printf("ok\n");
  return failed;
}
