/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The datapath's counters that sluice_stats has no room for (struct
 * sluice_xstats), and the penalty box of --penalty (struct sluice_box):
 * both optional maps, which attach adds to a state pinned without them.
 *
 * The box, by the key of the bucket (its policy's tag included): a key of a
 * policy with a penalty that goes over its limit is boxed (box_key()) until
 * now + the penalty; while box_held() finds it, the pipeline refuses its
 * packets without reading its bucket.
 */
#ifndef SLUICE_BPF_XSTATS_H
#define SLUICE_BPF_XSTATS_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <errno.h>
#include <sluice/sluice.h>
#include <sluice/algo.h> /* SLUICE_READ */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_xstats);
} sluice_xstats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_PENALTY_KEYS);
	__type(key, struct sluice_key);
	__type(value, struct sluice_box);
} sluice_penalty SEC(".maps");

/* A box that holds nothing (until 0), in .rodata: what a new box is made of. */
const volatile struct sluice_box sluice_box_empty = {};
const volatile __u32 sluice_key_zero = 0;

/* This CPU's counters (NULL cannot happen: an array always has entry 0). */
static __always_inline struct sluice_xstats *xstats(void)
{
	/* The key from .rodata, not the stack (see sluice_box_empty). */
	return bpf_map_lookup_elem(&sluice_xstats, (void *)&sluice_key_zero);
}

/* Does p box its keys (--penalty)? Three byte loads: a policy without a
 * penalty never looks in the box. */
static __always_inline int box_on(const struct sluice_policy *p)
{
	return p->penalty[0] | p->penalty[1] | p->penalty[2];
}

/* key's box while it holds at now (ticks: now_ticks()'s clock), else NULL. */
static __always_inline struct sluice_box *box_held(const struct sluice_key *key, __u64 now)
{
	struct sluice_box *b = bpf_map_lookup_elem(&sluice_penalty, key);

	return b && (__s64)(SLUICE_READ(b->until) - now) > 0 ? b : NULL;
}

/*
 * Box key for ds tenths of a second from now, and count it in penalties
 * once: a key that several CPUs refuse at once is boxed by one of them. A
 * key never boxed gets an empty box first (BPF_NOEXIST: a CPU that loses
 * the race finds it there); a box that is empty or has run out is filled by
 * the one CPU whose compare-and-swap of `until` wins. Its refused count goes on from the box
 * before (a flush or an eviction starts it at 0). An aggregate key (a new
 * source past --new-keys, charged to its prefix) is never boxed: the box is
 * asked for the source's own key, and a source is boxed for going over its
 * own limit.
 */
static __always_inline void box_key(const struct sluice_key *key, __u64 now, __u32 ds)
{
	__u64 until = now + ((ds * SLUICE_PENALTY_NS_PER_DS) << SLUICE_TICK_SHIFT), old;
	struct sluice_xstats *xs;
	struct sluice_box *b;

	if (key->tag & SLUICE_TAG_AGGREGATE)
		return;
	b = bpf_map_lookup_elem(&sluice_penalty, key);
	if (!b) {
		/* Created empty (until 0: not boxed) from the read-only zero
		 * box, not from the stack: sluice_tc's frame and its call's
		 * must stay within 512 bytes on 6.1. A CPU that loses the race
		 * to create it finds the winner's. */
		int err = (int)bpf_map_update_elem(&sluice_penalty, key, (void *)&sluice_box_empty,
						   BPF_NOEXIST);

		/* An int, tested as one (the upper half of r0 is not
		 * -EEXIST's on every kernel). */
		if (err && err != -EEXIST)
			return;
		b = bpf_map_lookup_elem(&sluice_penalty, key);
		if (!b)
			return;
	}
	old = SLUICE_READ(b->until);
	if ((__s64)(old - now) > 0 || __sync_val_compare_and_swap(&b->until, old, until) != old)
		return; /* boxed already, or just now by another CPU */
	xs = xstats();
	if (xs)
		xs->penalties++;
}

#endif /* SLUICE_BPF_XSTATS_H */
