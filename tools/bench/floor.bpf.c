// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The key table's floor (issue 13): the least a per-source limiter can do
 * per packet, measured in the same rounds as sluice's two tables.
 *
 *   floor_parse  parse the frame's source as sluice does (lib/parse.h), pass
 *   floor_hot    that, then one array lookup at a cheap hash of the address,
 *                compare the slot's key, read the clock, one CAS on a u64
 *   floor_rand   floor_hot with a random source per packet (the low 32 bits
 *                of the address, as sluice's bench_vary_keys writes them)
 *                into the whole array: 1M slots of 64 bytes, a cache miss
 *   floor_sip    floor_hot with the sets table's hash (SipHash-1-3 of the
 *                key, sluice_key_hash()) in place of the cheap one: what the
 *                hash alone adds to the floor
 *   floor_drop   floor_hot as a receiver's XDP program (make bench part e2e,
 *                `sluice-bench xdp attach IF floor`): the same work, then the
 *                verdict of a limiter dropping a flood, XDP_DROP
 *
 * No counters: every packet's verdict is XDP_PASS (floor_drop: XDP_DROP) when
 * the CAS landed and XDP_ABORTED when anything failed, so the last packet of a
 * run says the path was taken (the bench checks it). A veth counts both
 * XDP_DROP and XDP_ABORTED in xdp_drops.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <sluice/sets.h>
#include "lib/parse.h"

#define FLOOR_SLOTS (1U << 20)

struct floor_slot {
	__u32 key; /* the address folded to 32 bits */
	__u32 pad;
	__u64 tat; /* the CAS target: a bucket's clock */
	__u64 rest[6]; /* to 64 bytes: one cache line a slot */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FLOOR_SLOTS);
	__type(key, __u32);
	__type(value, struct floor_slot);
} floor_table SEC(".maps");

/* The address folded to one word (IPv4: itself). */
static __always_inline __u32 fold(const __u8 *addr, __u8 family)
{
	const __u32 *w = (const __u32 *)addr;

	return family == 4 ? w[0] : w[0] ^ w[1] ^ w[2] ^ w[3];
}

static __always_inline int floor_run(struct xdp_md *ctx, int mode)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	__u8 addr[16] __attribute__((aligned(8))) = {};
	struct floor_slot *s;
	__u8 family = 0;
	__u32 a, idx;
	__u64 now, old;

	if (parse_source(data, data_end, &family, addr) != PARSE_OK)
		return XDP_ABORTED;
	if (!mode)
		return XDP_PASS;
	if (mode == 2) {
		__u32 r = bpf_get_prandom_u32();

		if (family == 4)
			__builtin_memcpy(&addr[0], &r, 4);
		else
			__builtin_memcpy(&addr[12], &r, 4);
	}
	a = fold(addr, family);
	if (mode == 3) {
		struct sluice_key k = { .family = family, .prefixlen = family == 4 ? 32 : 128 };

		__builtin_memcpy(k.addr, addr, 16);
		idx = (__u32)sluice_key_hash(0x0123456789abcdefULL, &k) >> 12;
	} else {
		idx = (a * 0x9e3779b1U) >> 12; /* Fibonacci hashing to 20 bits */
	}
	s = bpf_map_lookup_elem(&floor_table, &idx);
	if (!s)
		return XDP_ABORTED;
	if (s->key != a)
		s->key = a; /* a new key takes the slot */
	now = bpf_ktime_get_ns();
	old = s->tat;
	if (__sync_val_compare_and_swap(&s->tat, old, (old > now ? old : now) + 1) != old)
		return XDP_ABORTED;
	return XDP_PASS;
}

SEC("xdp")
int floor_parse(struct xdp_md *ctx)
{
	return floor_run(ctx, 0);
}

SEC("xdp")
int floor_hot(struct xdp_md *ctx)
{
	return floor_run(ctx, 1);
}

SEC("xdp")
int floor_rand(struct xdp_md *ctx)
{
	return floor_run(ctx, 2);
}

SEC("xdp")
int floor_sip(struct xdp_md *ctx)
{
	return floor_run(ctx, 3);
}

SEC("xdp")
int floor_drop(struct xdp_md *ctx)
{
	return floor_run(ctx, 1) == XDP_PASS ? XDP_DROP : XDP_ABORTED;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
