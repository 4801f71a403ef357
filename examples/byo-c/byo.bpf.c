//go:build ignore

// A BPF program written against libbpf's <bpf/usdt.bpf.h>, loaded with
// cilium/ebpf through bpf2go (see main.go) and attached with usdtlink. Each
// hit of the probe sends the arguments usdt.bpf.h reads to user space.
//
// usdtlink's tests compile the same file with clang (against the installed
// header, and with -DUSDT_SIB against usdtlink/testdata/usdt_sib.bpf.h, a
// stand-in for libbpf 1.7's layout) and also load it with libbpf itself
// (usdtlink/testdata/libbpf_loader.c).
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
// usdt.bpf.h defines its maps __weak, and cilium/ebpf (bpf2go included)
// refuses references to weak maps; in a single object weak means nothing,
// so define it away. (usdtlink.LoadCollectionSpec also rewrites weak maps,
// for objects built without this; usdtlink's tests build with KEEP_WEAK.)
#ifndef KEEP_WEAK
#undef __weak
#define __weak
#endif
#ifdef USDT_SIB
#include "usdt_sib.bpf.h"
#else
#include <bpf/usdt.bpf.h>
#endif

#define NARGS 12

struct event {
	__u64 cookie;
	__s64 cnt;
	__s64 args[NARGS];
	__s32 rc[NARGS];
	char str[32];
};

// Puts struct event into BTF, for bpf2go -type event.
const struct event *unused_event __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

// The user's cookie (usdtlink.Options.Cookie): 0, or 1 + the argument to
// read a string from.
SEC("usdt")
int handle(struct pt_regs *ctx)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return 0;
	__builtin_memset(e, 0, sizeof(*e));
	e->cookie = bpf_usdt_cookie(ctx);
	e->cnt = bpf_usdt_arg_cnt(ctx);
	for (int i = 0; i < NARGS; i++) {
		long v = 0;
		e->rc[i] = bpf_usdt_arg(ctx, i, &v);
		e->args[i] = v;
	}
	if (e->cookie > 0 && e->cookie <= NARGS) {
		long p = 0;
		if (bpf_usdt_arg(ctx, e->cookie - 1, &p) == 0)
			bpf_probe_read_user_str(e->str, sizeof(e->str), (void *)p);
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
