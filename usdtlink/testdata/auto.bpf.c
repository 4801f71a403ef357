// libbpf-style auto-attach sections for TestAttachCollection: TARGET is the
// path of the operands program, given with -DTARGET='"..."'. BPF_USDT
// handlers store arguments in "seen"; the bare SEC("usdt") program must not
// be attached by AttachCollection.
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __s64);
} seen SEC(".maps");

static __always_inline void put(__u32 k, long v)
{
	bpf_map_update_elem(&seen, &k, &v, BPF_ANY);
}

SEC("usdt/" TARGET ":t:rip")
int BPF_USDT(on_rip, long a0, long a1)
{
	put(0, a0);
	put(1, a1);
	return 0;
}

SEC("usdt/" TARGET ":t:consts")
int BPF_USDT(on_consts, int a0)
{
	put(2, a0 + bpf_usdt_cookie(ctx));
	return 0;
}

SEC("usdt")
int manual(struct pt_regs *ctx)
{
	put(3, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
