/* Test stand-in for libbpf 1.7's <bpf/usdt.bpf.h>, written for usdtlink's
 * tests (Debian 12 ships libbpf 1.1, whose header predates the SIB layout).
 * It declares the maps and helpers with the names, types and struct layout
 * libbpf 1.7 uses: struct __bpf_usdt_arg_spec with the 8-bit arg_type, the
 * 12-bit idx_reg_off and 4-bit scale_bitshift, 24 bytes; cookies only. */
#ifndef USDT_SIB_BPF_H
#define USDT_SIB_BPF_H

#include <linux/errno.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

enum __bpf_usdt_arg_type {
	BPF_USDT_ARG_CONST,
	BPF_USDT_ARG_REG,
	BPF_USDT_ARG_REG_DEREF,
	BPF_USDT_ARG_SIB,
};

struct __bpf_usdt_arg_spec {
	__u64 val_off;
	enum __bpf_usdt_arg_type arg_type: 8;
	__u16 idx_reg_off: 12;
	__u16 scale_bitshift: 4;
	__u8 __reserved: 8;
	short reg_off;
	bool arg_signed;
	char arg_bitshift;
};

#define BPF_USDT_MAX_ARG_CNT 12
struct __bpf_usdt_spec {
	struct __bpf_usdt_arg_spec args[BPF_USDT_MAX_ARG_CNT];
	__u64 usdt_cookie;
	short arg_cnt;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, int);
	__type(value, struct __bpf_usdt_spec);
} __bpf_usdt_specs SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, long);
	__type(value, __u32);
} __bpf_usdt_ip_to_spec_id SEC(".maps") __weak;

static __always_inline struct __bpf_usdt_spec *usdt_spec_of(struct pt_regs *ctx)
{
	int id = bpf_get_attach_cookie(ctx);

	return bpf_map_lookup_elem(&__bpf_usdt_specs, &id);
}

__weak __hidden int bpf_usdt_arg_cnt(struct pt_regs *ctx)
{
	struct __bpf_usdt_spec *s = usdt_spec_of(ctx);

	return s ? s->arg_cnt : -ESRCH;
}

__weak __hidden long bpf_usdt_cookie(struct pt_regs *ctx)
{
	struct __bpf_usdt_spec *s = usdt_spec_of(ctx);

	return s ? s->usdt_cookie : 0;
}

__weak __hidden int bpf_usdt_arg(struct pt_regs *ctx, __u64 n, long *res)
{
	struct __bpf_usdt_spec *s = usdt_spec_of(ctx);
	struct __bpf_usdt_arg_spec *a;
	unsigned long v = 0, idx = 0;
	long err = 0;

	*res = 0;
	if (!s)
		return -ESRCH;
	if (n >= BPF_USDT_MAX_ARG_CNT || n >= s->arg_cnt)
		return -ENOENT;
	a = &s->args[n];
	switch (a->arg_type) {
	case BPF_USDT_ARG_CONST:
		v = a->val_off;
		break;
	case BPF_USDT_ARG_REG:
		err = bpf_probe_read_kernel(&v, sizeof(v), (void *)ctx + a->reg_off);
		break;
	case BPF_USDT_ARG_REG_DEREF:
		err = bpf_probe_read_kernel(&v, sizeof(v), (void *)ctx + a->reg_off);
		if (!err)
			err = bpf_probe_read_user(&v, sizeof(v), (void *)(v + a->val_off));
		break;
	case BPF_USDT_ARG_SIB:
		err = bpf_probe_read_kernel(&v, sizeof(v), (void *)ctx + a->reg_off);
		if (!err)
			err = bpf_probe_read_kernel(&idx, sizeof(idx), (void *)ctx + a->idx_reg_off);
		if (!err)
			err = bpf_probe_read_user(&v, sizeof(v), (void *)(v + (idx << a->scale_bitshift) + a->val_off));
		break;
	default:
		return -EINVAL;
	}
	if (err)
		return err;
	v <<= a->arg_bitshift;
	if (a->arg_signed)
		v = ((long)v) >> a->arg_bitshift;
	else
		v >>= a->arg_bitshift;
	*res = v;
	return 0;
}
#endif
