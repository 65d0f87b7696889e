// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice: the fleet agent's two programs. The agent (user/sluice/fleet.c)
 * runs them through BPF_PROG_TEST_RUN on the pinned maps of the limiter,
 * so that every change to a map value is an atomic operation in the kernel,
 * as the datapath makes its own: a value written from userspace would
 * replace the whole LRU element and lose what the datapath added meanwhile.
 *
 * collect: every key of a fleet policy with usage not yet pushed, into
 *          sluice_fleet_io (sluice_fleet.io_n records).
 * apply:   for the first io_n records, take off what was pushed (usage
 *          added since stays for the next sync), and raise the key's local
 *          bucket to the fleet's: TAT = max(TAT, now + debt). Only ever
 *          forward: a fold can refuse packets, never admit one.
 *
 * On the set-associative table (rodata table_sets, lib/sets.h) apply finds
 * the key's way, or claims one for a key evicted here, through sets_find()
 * as the datapath does. A way apply claims gets the key's prefix length and
 * no window in its meta (fleet policies are token and leaky buckets only)
 * and always SLUICE_WAY_AUX: the record does not say whether the policy has
 * a byte limit, and a way without the flag hides its byte TAT from
 * eviction, which would then take a held key's way as if it were free. With
 * the flag and no byte limit the second clock stays 0 and the way's free
 * time is its packet TAT, so the flag never understates it. A found way
 * that gets a byte debt without the flag (not one the datapath claims) gets
 * it too, before the byte TAT is raised. A way whose first state word is
 * SLUICE_FROZEN is being handed to another key: its record is skipped,
 * nothing written (the fleet answers the debt again at the next sync).
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include <sluice/sluice.h>
#include <sluice/algo.h>
#include "lib/shared.h"
#include "lib/sets.h"

/* config.set_seed of the state (the set table's hash key): the agent sets it
 * before load, as table_sets and sets_n. */
const volatile __u64 set_seed = 0;

/* The agent's own (not pinned): as many records as sluice_fleet_use has keys. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_DEFAULT_FLEET_KEYS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_fleet_rec);
} sluice_fleet_io SEC(".maps");

struct bpf_map;

struct collect_ctx {
	__u32 n;
	__u32 more;
};

static long collect_one(struct bpf_map *map, struct sluice_key *key, struct sluice_fleet_use *u,
			struct collect_ctx *c)
{
	__u64 p = SLUICE_READ(u->used[0]), b = SLUICE_READ(u->used[1]);
	struct sluice_fleet_rec *r;
	__u32 idx = c->n;

	if (!(p | b))
		return 0;
	r = bpf_map_lookup_elem(&sluice_fleet_io, &idx);
	if (!r) {
		c->more++;
		return 0;
	}
	__builtin_memcpy(&r->key, key, sizeof(r->key));
	r->used[0] = p;
	r->used[1] = b;
	r->debt[0] = r->debt[1] = 0;
	c->n++;
	return 0;
}

SEC("xdp")
int sluice_fleet_collect(struct xdp_md *ctx)
{
	struct collect_ctx c = {};
	struct sluice_fleet *f;
	__u32 zero = 0;

	f = bpf_map_lookup_elem(&sluice_fleet, &zero);
	if (!f)
		return XDP_ABORTED;
	bpf_for_each_map_elem(&sluice_fleet_use, collect_one, &c, 0);
	f->io_n = c.n;
	f->io_more = c.more;
	return XDP_PASS;
}

/* *v -= x, not below 0 (an element the LRU reused since the collect). */
static __always_inline void take(__u64 *v, __u64 x)
{
	int i;

	for (i = 0; i < SLUICE_CAS_TRIES && x; i++) {
		__u64 old = SLUICE_READ(*v);

		if (sluice_cas(v, old, old > x ? old - x : 0))
			return;
	}
}

/* The TAT a debt folds to: now + debt, kept below the sentinels of algo.h
 * (SLUICE_FRESH and up), which the datapath reads as a full bucket. */
static __always_inline __u64 fold_tat(__u64 now, __u64 debt)
{
	return debt < SLUICE_FRESH - 1 - now ? now + debt : SLUICE_FRESH - 1;
}

/*
 * *tat = max(*tat, floor). -1, nothing written, when it reads SLUICE_FROZEN:
 * the set table's way is being claimed by another key (the LRU table never
 * holds that value). SLUICE_FRESH, a way claimed for a key not charged yet,
 * is a full bucket (algo.h): below every floor.
 */
static __always_inline int raise_tat(__u64 *tat, __u64 floor)
{
	int i;

	for (i = 0; i < SLUICE_CAS_TRIES; i++) {
		__u64 old = SLUICE_READ(*tat);

		if (old == SLUICE_FROZEN)
			return -1;
		if ((old >= floor && old != SLUICE_FRESH) || sluice_cas(tat, old, floor))
			return 0;
	}
	return 0;
}

struct apply_ctx {
	__u64 now;
};

/* A record's debt on the set table (see the top). */
static __always_inline void apply_sets(struct sluice_fleet_rec *r, __u64 now)
{
	struct sets_req q = {
		.seed = set_seed,
		.now = now,
		.create = 1,
		.flags = SLUICE_WAY_AUX, /* window 0: a bucket */
	};
	struct sluice_way *w;
	struct way_ref wr;
	__u64 id;
	int g;

	g = sets_find(&r->key, &q);
	if (g != SETS_FOUND && g != SETS_CLAIMED)
		return; /* contended: the next sync brings the debt again */
	if (sets_ref(r->key.family, q.loc, &wr))
		return;
	if (r->debt[0] && raise_tat(wr.s0, fold_tat(now, r->debt[0])))
		return;
	/* Frozen since (or before, with no packet debt): the byte TAT may
	 * already be the next key's. */
	if (!r->debt[1] || SLUICE_READ(*wr.s0) == SLUICE_FROZEN)
		return;
	w = (struct sluice_way *)((char *)wr.s0 - __builtin_offsetof(struct sluice_way, s0));
	id = SLUICE_READ(w->ident);
	if ((id & (__u64)SLUICE_WAY_LIVE << 32) &&
	    !(id & (__u64)(SLUICE_WAY_BUSY | SLUICE_WAY_AUX) << 32))
		sluice_cas(&w->ident, id, id | (__u64)SLUICE_WAY_AUX << 32);
	raise_tat(&wr.x->s1, fold_tat(now, r->debt[1]));
}

static long apply_one(__u32 i, struct apply_ctx *a)
{
	struct sluice_fleet_rec *r = bpf_map_lookup_elem(&sluice_fleet_io, &i);
	struct sluice_fleet_use *u;
	struct sluice_bucket *b;
	int j;

	if (!r)
		return 1;
	u = bpf_map_lookup_elem(&sluice_fleet_use, &r->key);
	if (u) {
		take(&u->used[0], r->used[0]);
		take(&u->used[1], r->used[1]);
	}
	if (!(r->debt[0] | r->debt[1]))
		return 0;
	/* The agent bounds each debt by what the fleet could have spent
	 * (user/sluice/fleet_bound.c); whatever the record holds, now + debt
	 * must not wrap into the past, which would fold nothing. */
	for (j = 0; j < 2; j++)
		if (r->debt[j] > SLUICE_MAX_TOLERANCE)
			r->debt[j] = SLUICE_MAX_TOLERANCE;
	if (table_sets) {
		apply_sets(r, a->now);
		return 0;
	}
	b = bpf_map_lookup_elem(&sluice_buckets, &r->key);
	if (!b) {
		/* Evicted here, spent elsewhere: a bucket as full as the fleet's. */
		struct sluice_bucket nb = {};

		for (j = 0; j < 2; j++)
			nb.s[j] = r->debt[j] ? fold_tat(a->now, r->debt[j]) : 0;
		if (!(int)bpf_map_update_elem(&sluice_buckets, &r->key, &nb, BPF_NOEXIST))
			return 0;
		b = bpf_map_lookup_elem(&sluice_buckets, &r->key);
		if (!b)
			return 0;
	}
	for (j = 0; j < 2; j++)
		if (r->debt[j])
			raise_tat(&b->s[j], fold_tat(a->now, r->debt[j]));
	return 0;
}

SEC("xdp")
int sluice_fleet_apply(struct xdp_md *ctx)
{
	struct apply_ctx a = { .now = now_ticks() };
	struct sluice_fleet *f;
	__u32 zero = 0;

	f = bpf_map_lookup_elem(&sluice_fleet, &zero);
	if (!f)
		return XDP_ABORTED;
	bpf_loop(SLUICE_READ(f->io_n), apply_one, &a, 0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
