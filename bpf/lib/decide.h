/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A packet's decision on its key's state (the algorithms: include/sluice/
 * algo.h, compiled on both sides): what they are given (struct decision),
 * the share of a fleet-wide limit this box holds, and what an admitted
 * packet of a fleet policy cost, recorded for the fleet agent to push.
 */
#ifndef SLUICE_BPF_DECIDE_H
#define SLUICE_BPF_DECIDE_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <sluice/sluice.h>
#include <sluice/algo.h>

#include "shared.h"

/* How much of a policy's limit this box holds (struct sluice_fleet). */
struct share {
	__u32 fleet; /* a fleet policy: decide on the share */
	__u32 mult; /* costs x mult: N while the fleet is not synced */
	__u32 div; /* burst / div: N */
	__u32 record; /* synced: record the usage for the agent to push */
};

/* What a decision is given, and what it answers besides its verdict. */
struct decision {
	const struct sluice_policy *p;
	__u64 now; /* ticks */
	__u64 max_wait; /* ticks: the fq horizon (sluice_tc), ~0: none */
	__u64 used[2]; /* out: what an admitted packet of a bucket policy cost */
	__u64 wrote[2]; /* out: ... the TATs its charges wrote (sluice_bucket_admit_to()) */
	__u64 depart; /* out: its departure, in ticks (sluice_tc) */
	struct share sh;
	__u32 len; /* bytes */
	__u32 pkts; /* packets: GSO segments at tc, 1 at XDP */
	int v; /* out: the verdict, when a key table decided (keytab.h) */
	/* out, sluice_tc's: a token/leaky bucket policy gave the packet a
	 * departure (depart, taken at now); under dry-run, to be counted and
	 * not applied; the departure would reach the fq horizon: dropped (or
	 * would be) */
	__u8 shaped, dry, horizon;
};

static __always_inline void fleet_share(const struct sluice_policy *p, struct share *sh, __u64 now)
{
	__u32 zero = 0, n;
	struct sluice_fleet *f;

	/* sh is zeroed by the caller: nothing to write for a box's own policy. */
	if (!(p->flags & SLUICE_POLICY_FLEET) || p->algo > SLUICE_ALGO_LEAKY_BUCKET)
		return;
	sh->fleet = 1;
	sh->mult = sh->div = 1;
	f = bpf_map_lookup_elem(&sluice_fleet, &zero);
	if (!f)
		return;
	/* Only what is admitted under the whole rate is the fleet's to know:
	 * what a box admits on its own (no agent, Redis failing: rate/N, or
	 * the whole limit of a fleet of unknown size) is never charged later,
	 * so it is not recorded. */
	sh->record = now < SLUICE_READ(f->ok_until);
	n = SLUICE_READ(f->live);
	if (n <= 1)
		return;
	/* Whatever the map holds: the share's arithmetic is sized for this. */
	if (n > SLUICE_FLEET_MAX_BOXES)
		n = SLUICE_FLEET_MAX_BOXES;
	sh->div = n;
	if (!sh->record)
		sh->mult = n;
}

/*
 * A window policy's verdict under a shaper (it meters), as a global function:
 * the verifier checks it once, on its arguments' types, instead of walking
 * the limiter's algorithms again in every state that reaches a shaper's
 * decision (on kernel 6.18 about 167,000 of sluice_tc's 390,000 verified
 * instructions, LRU table). Only window policies on a shaper pay the call;
 * a shaper's buckets decide inline. The pointers may be NULL as far as the
 * verifier knows, hence the check.
 */
__noinline int shaper_meter(const struct sluice_policy *p, __u64 *s0, __u64 *s1, __u64 now,
			    __u32 len)
{
	if (!p || !s0 || !s1)
		return SLUICE_CONTENDED;
	return sluice_admit_at(p, s0, s1, now, len);
}

/*
 * A bucket or window policy's verdict on the state words s0, s1: a limiter's,
 * or under `shape` (a compile-time constant: the XDP program has none of
 * this) a shaper's, with a departure (d->depart) and the fq horizon
 * (d->max_wait) refused before any charge. Window algorithms on a shaper
 * decide as a limiter's: they meter.
 */
static __always_inline int decide(struct decision *d, __u64 *s0, __u64 *s1, const int shape)
{
	const struct sluice_policy *p = d->p;
	const struct share *sh = &d->sh;

	if (shape && p->algo <= SLUICE_ALGO_LEAKY_BUCKET)
		return sluice_bucket_shape_to(p, s0, s1, d->now, d->len, d->pkts,
					      sh->fleet ? sh->mult : 1, sh->fleet ? sh->div : 1,
					      d->max_wait, d->used, &d->depart, d->wrote);
	if (shape) {
		int v = shaper_meter(p, s0, s1, d->now, d->len);

		/* The verdicts a window gives, as constants again (the call
		 * returns a number the verifier knows nothing of). */
		if (v == SLUICE_PASS)
			return SLUICE_PASS;
		if (v == SLUICE_DROP)
			return SLUICE_DROP;
		return v == SLUICE_RETRY ? SLUICE_RETRY : SLUICE_CONTENDED;
	}
	if (sh->fleet)
		return sluice_bucket_admit_to(p, s0, s1, d->now, d->len, sh->mult, sh->div, d->used,
					      d->wrote);
	/* sluice_admit_at()'s switch. A bucket's charges are kept in d (here,
	 * on a fleet's share and on a shaper's too): a second key that refuses
	 * the packet gives them back (--also-rate). */
	switch (p->algo) {
	case SLUICE_ALGO_TOKEN_BUCKET:
	case SLUICE_ALGO_LEAKY_BUCKET:
		return sluice_bucket_admit_to(p, s0, s1, d->now, d->len, 1, 1, d->used, d->wrote);
	case SLUICE_ALGO_SLIDING_WINDOW:
		return sluice_sliding_window_at(s0, s1, d->now, p->window, p->window_limit);
	case SLUICE_ALGO_FIXED_WINDOW:
		return sluice_fixed_window(s0, d->now, p->window, p->window_limit);
	}
	return SLUICE_PASS; /* sliding-log keys live in sluice_logs */
}

/* A fleet key's first usage: 0, added to (a value from .rodata, off the
 * stack of the global function that records a second key's). */
const volatile struct sluice_fleet_use fleet_use_zero = {};

/* What an admitted packet of a fleet policy cost, for the agent to push
 * (used0 packets, used1 bytes, in ticks of the whole limit). Aggregate
 * buckets (new keys over --new-keys) stay local. */
static __always_inline void fleet_record(const struct sluice_key *key, __u64 used0, __u64 used1)
{
	struct sluice_fleet_use *u;

	if (key->tag & SLUICE_TAG_AGGREGATE)
		return;
	u = bpf_map_lookup_elem(&sluice_fleet_use, key);
	if (!u) {
		int err = (int)bpf_map_update_elem(&sluice_fleet_use, key,
						   (void *)&fleet_use_zero, BPF_NOEXIST);

		if (err && err != -EEXIST)
			return;
		u = bpf_map_lookup_elem(&sluice_fleet_use, key);
		if (!u)
			return;
	}
	if (used0)
		__sync_fetch_and_add(&u->used[0], used0);
	if (used1)
		__sync_fetch_and_add(&u->used[1], used1);
}

#endif /* SLUICE_BPF_DECIDE_H */
