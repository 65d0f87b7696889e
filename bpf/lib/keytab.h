/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The datapath's key tables behind one call, as user/lib/keytab.c is for
 * userspace. keytab_state() finds a key's state, or makes one for a new key,
 * in the table its policy uses, and hands back the state words the algorithm
 * decides on and the key's drop counter (struct keytab_ref):
 *
 *   sliding log  sluice_logs: an LRU hash of struct sluice_log, its own table
 *   LRU          sluice_buckets (lib/shared.h): an LRU hash of struct
 *                sluice_bucket, one for both families
 *   sets         --table sets (table_sets): sluice_sets4/6, the
 *                set-associative table of lib/sets.h
 *
 * keytab_decide() then takes the decision on that state. A new key may first
 * have to pass the global new-key limit (new_key_over()). The LRU table
 * decides a new key's first packet itself, on a bucket of its own on the
 * stack, then publishes it with that packet paid for (KEYTAB_DECIDED, the
 * verdict in d->v).
 */
#ifndef SLUICE_BPF_KEYTAB_H
#define SLUICE_BPF_KEYTAB_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <errno.h>
#include <sluice/sluice.h>
#include <sluice/algo.h>

#include "parse.h"
#include "shared.h"
#include "sets.h"
#include "decide.h"
#include <sluice/l4.h>

/* Pinned under /sys/fs/bpf/sluice/<ifname>/ by the loader, as the others. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_DEFAULT_MAX_LOG_KEYS); /* --max-log-keys */
	__type(key, struct sluice_key);
	__type(value, struct sluice_log);
} sluice_logs SEC(".maps");

static const struct sluice_log zero_log;

/* Wide keys are on (--max-flows): a load-time knob, so that a state without
 * them verifies none of their code. */
const volatile __u8 wide_keys = 0;

/* Wide keys (--key src,dport|flow) on the LRU table: sized at attach
 * (--max-flows); a few entries in a state of the set table. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_FLOWS_OFF); /* --max-flows */
	__type(key, struct sluice_fkey);
	__type(value, struct sluice_bucket);
} sluice_flows SEC(".maps");

/*
 * A packet's wide key and its transport header, built here and not on the
 * stack: on 6.1 sluice_tc's frame has no room left for them (it and
 * sets_find()'s must fit 512 bytes). Per CPU, used within one run of the
 * program, which nothing on the same CPU interrupts (XDP in softirq, tc
 * egress with bottom halves off). Not pinned: each load has its own.
 */
struct keytab_scratch {
	struct sluice_fkey fk;
	struct sluice_l4 l4;
	/* a policy's second key (also_charge(), sluice.bpf.c) and its lookup
	 * in the set table: off the stack of a global function called from
	 * the XDP program, whose frames and sets_find()'s share 512 bytes */
	struct sluice_key ak;
	struct sets_req aq;
	struct sets_req q; /* the own key's lookup in the set table (keytab_sets()) */
	__u64 also_now, also_arg, also_share; /* ... its arguments, kept over calls */
	__u64 own_used[2], own_wrote[2]; /* ... the own key's charge, to give back */
	struct sluice_key own; /* ... and its key: 6.1 takes no argument's memory as a map key */
	__u64 also_wrote; /* ... the TAT its charge wrote */
	__u64 also_depart; /* ... on a shaper, the packet's turn in its queue */
	__u64 rng; /* sample_draw()'s state: 0 until this CPU's first draw */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct keytab_scratch);
} sluice_scratch SEC(".maps");

/*
 * A random draw for the sampled counts (count_key_drop()): xorshift64* on
 * this CPU's state in its scratch entry, seeded by the kernel's generator
 * at its first draw. Not bpf_get_prandom_u32() on every drop: a helper call
 * (and its return, through the kernel's return thunk where SRSO is
 * mitigated) cost about 10 ns a dropped packet here, a third of the drop
 * path over the pass path. What it samples is counts, not secrets: the
 * draw only has to be uniform and unrelated to the traffic.
 */
static __always_inline __u32 sample_draw(void)
{
	struct keytab_scratch *sc;
	__u32 zero = 0;
	__u64 x;

	sc = bpf_map_lookup_elem(&sluice_scratch, &zero);
	if (!sc)
		return 1; /* cannot happen: no sample */
	x = sc->rng;
	if (!x)
		x = (__u64)bpf_get_prandom_u32() << 1 | 1;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	sc->rng = x;
	return (__u32)((x * 0x2545f4914f6cdd1dULL) >> 32);
}

/*
 * The wide key of key (masked and tagged) for a policy keyed by `mode`
 * (SLUICE_KEY_SRC_DPORT or SLUICE_KEY_FLOW), in this CPU's scratch entry,
 * its other fields 0 until wide_key_parse() fills them; NULL when the entry
 * is missing (cannot happen).
 */
static __always_inline struct sluice_fkey *wide_key(const struct sluice_key *key, __u32 mode)
{
	struct keytab_scratch *sc;
	__u32 zero = 0;

	sc = bpf_map_lookup_elem(&sluice_scratch, &zero);
	if (!sc)
		return NULL;
	__builtin_memcpy(&sc->fk.k, key, sizeof(*key));
	__builtin_memset(sc->fk.dst, 0, sizeof(sc->fk) - sizeof(sc->fk.k));
	sc->fk.mode = (__u8)mode;
	return &sc->fk;
}

/*
 * The rest of this CPU's wide key (wide_key()), from the frame [data, end)
 * whose IP header is l3off bytes in: its protocol, ports and (flow) its
 * destination. A packet whose transport header could not be read (a
 * non-first fragment, a short or opaque header) keeps port 0.
 */
static __always_inline int wide_key_parse(void *data, void *end, __u32 l3off)
{
	struct keytab_scratch *sc;
	__u64 off = l3off;
	__u32 zero = 0;
	__u8 *ip;

	sc = bpf_map_lookup_elem(&sluice_scratch, &zero);
	if (!sc)
		return -1;
	SLUICE_OPAQUE(off);
	if (off > 64) /* Ethernet and VLAN tags: 22 bytes at most */
		return 0;
	ip = data + off;
	/* The bounds parse_ip() checked, again: only the offset came here. */
	if (sc->fk.k.family == 4) {
		if ((void *)(ip + 20) > end || (ip[0] & 0x0f) < 5 ||
		    (void *)(ip + (ip[0] & 0x0f) * 4) > end)
			return 0;
	} else if ((void *)(ip + 40) > end) {
		return 0;
	}
	sluice_l4_parse(ip, end, sc->fk.k.family, &sc->l4);
	sc->fk.proto = sc->l4.proto;
	sc->fk.dport = sc->l4.dport;
	if (sc->fk.mode == SLUICE_KEY_FLOW) {
		sc->fk.sport = sc->l4.sport;
		__builtin_memcpy(sc->fk.dst, sc->l4.dst, 16);
	}
	return 0;
}

/*
 * wide_key_parse() as a function of its own for each program: the verifier
 * walks the transport header's parse once, with any packet, not once for
 * every state the pipeline reaches it in (inlined, that product took
 * sluice_tc past 6.1's million instructions). It costs a call, on the
 * packets of wide-key policies only. The frame is read from the context:
 * a global function takes no packet pointer.
 */
__noinline int wide_key_xdp(struct xdp_md *ctx, __u32 l3off)
{
	if (!ctx)
		return -1;
	return wide_key_parse((void *)(long)ctx->data, (void *)(long)ctx->data_end, l3off);
}

__noinline int wide_key_tc(struct __sk_buff *skb, __u32 l3off)
{
	if (!skb)
		return -1;
	return wide_key_parse((void *)(long)skb->data, (void *)(long)skb->data_end, l3off);
}

/* sets_find() for a wide key (--key src,dport|flow), in sluice_setsf. A
 * function apart: its key is 48 bytes, and the verifier checks an argument
 * by its type's size. */
__noinline int sets_find_wide(const struct sluice_fkey *key, struct sets_req *q)
{
	int g;

	if (!key || !q)
		return SETS_CONTENDED;
	if (!q->hashed) {
		q->hash = sluice_fkey_hash(q->seed, key);
		q->hashed = 1;
	}
	q->loc = 0;
	q->way = 0;
	g = sets_get(&key->k, SETS_WIDE, q, 0);
	q->loc = q->loc << 2 | (q->way & 3);
	return g;
}

/* A wide key past the new-key limit: new_key_over() made fk->k its
 * aggregate's; the aggregate has no other field. */
static __always_inline void wide_key_aggregate(struct sluice_fkey *fk)
{
	__builtin_memset(fk->dst, 0, sizeof(*fk) - sizeof(fk->k));
}

enum keytab_result {
	KEYTAB_FOUND = 0, /* the key's state is in the keytab_ref: decide on it */
	KEYTAB_DECIDED = 1, /* a new LRU key, published decided: the verdict in d->v */
	KEYTAB_CONTENDED = 2, /* no way for the key now (sets): dropped as contended */
	KEYTAB_FAILED = 3, /* the table refused the key */
};

/* A key's state in its table. */
struct keytab_ref {
	__u64 *s0, *s1; /* a bucket's or a window's state words */
	struct sluice_log *log; /* ... or the sliding log */
	__u64 *dropped; /* the key's drop count (LRU hash, log) */
	__u32 *dropped32; /* ... or its way's, 32 bits (sets) */
};

/*
 * A source seen for the first time may first have to pass the global new-key
 * limit; past it the source is charged to its aggregate prefix's bucket, so a
 * flood of spoofed sources can neither evict heavy hitters for free nor
 * refill its own buckets by churning the table. Rewrites key to the
 * aggregate's and returns the aggregate's state when it exists already.
 */
static __always_inline int new_key_over(struct sluice_key *key, struct sluice_config *cfg,
					struct sluice_settings *set, struct sluice_stats *st,
					__u64 now)
{
	__u64 cost;
	__u8 agg;

	if (!(set->new_keys.interval | set->new_keys.interval_frac))
		return 0;
	cost = sluice_limit_cost(&set->new_keys, 1);
	if (sluice_gcra(&cfg->newkey_tat, now, cost, set->new_keys.tolerance) == SLUICE_PASS)
		return 0;
	agg = key->family == 4 ? set->agg4 : set->agg6;
	key->tag |= SLUICE_TAG_AGGREGATE;
	/* A policy that keys wider than the aggregate already aggregates. */
	if (agg < key->prefixlen) {
		key->prefixlen = agg;
		mask_addr(key->addr, agg);
	}
	st->aggregated++;
	return 1;
}

/* k is key (a struct sluice_key), or a wide key whose k is key (wide 1). */
static __always_inline void *new_key_state(void *map, void *k, struct sluice_key *key,
					   const int wide, struct sluice_config *cfg,
					   struct sluice_settings *set, struct sluice_stats *st,
					   __u64 now)
{
	if (!new_key_over(key, cfg, set, st, now))
		return NULL;
	if (wide)
		wide_key_aggregate(k);
	return bpf_map_lookup_elem(map, k);
}

/*
 * Create a full (zeroed) state for key; -EEXIST when another CPU was first.
 * The helper's result is an int: a kernel whose helper returns int (Debian
 * 12's 6.1) leaves the upper half of the register zero, so -EEXIST read as a
 * long is 4294967279 there and a lost race would be taken for a failed
 * update (counted update_failed, passed fail-open).
 */
static __always_inline int state_create(void *map, struct sluice_key *key, const void *val,
					struct sluice_stats *st)
{
	int err = (int)bpf_map_update_elem(map, key, val, BPF_NOEXIST);

	if (!err)
		st->new_keys++;
	return err;
}

/* The sliding log: 528 bytes do not fit the stack, a new key gets a zeroed
 * log inserted. */
static __always_inline int keytab_log(struct sluice_key *key, struct sluice_config *cfg,
				      struct sluice_settings *set, struct sluice_stats *st,
				      __u64 now, struct keytab_ref *r)
{
	struct sluice_log *log = bpf_map_lookup_elem(&sluice_logs, key);

	if (!log)
		log = new_key_state(&sluice_logs, key, key, 0, cfg, set, st, now);
	if (!log) {
		int err = state_create(&sluice_logs, key, &zero_log, st);

		if (err && err != -EEXIST)
			return KEYTAB_FAILED;
		log = bpf_map_lookup_elem(&sluice_logs, key);
		if (!log)
			return KEYTAB_FAILED;
	}
	r->log = log;
	r->dropped = &log->dropped;
	return KEYTAB_FOUND;
}

/* The set-associative table (lib/sets.h): find the key's way, or (a new key,
 * past the new-key limit maybe its aggregate's) claim one. k is key, or a
 * wide key whose k is key (wide 1: in sluice_setsf). */
static __always_inline int keytab_sets(void *k, struct sluice_key *key, const int wide,
				       struct sluice_config *cfg, struct sluice_settings *set,
				       struct sluice_stats *st, const struct decision *d,
				       const int shape, struct keytab_ref *r)
{
	struct keytab_scratch *sc;
	struct sets_req *q;
	struct way_ref wr;
	__u32 zero = 0;
	int g;

	/* The request in this CPU's scratch entry, not in the frame: the
	 * frames of a program, of also_charge() and of sets_find() share 512
	 * bytes. */
	sc = bpf_map_lookup_elem(&sluice_scratch, &zero);
	if (!sc)
		return KEYTAB_FAILED;
	q = &sc->q;
	q->seed = SLUICE_READ(cfg->set_seed);
	q->now = d->now;
	q->hashed = 0;
	/* (q->scanned is 0 here: the inline look below sets it only on a miss,
	 * and the sets_find() that always follows a miss clears it.) */
	/* Without a new-key limit, find or claim in one pass. */
	q->create = !(set->new_keys.interval | set->new_keys.interval_frac);
	q->flags = sets_flags(d->p);
	q->window = sets_window(d->p);
	if (!wide && !shape) {
		/* sluice_xdp: look inline, wait for a claim under way and
		 * claim in the call (sets.h) */
		g = sets_find_inline(k, q, 1);
		if (g == SETS_MISSING)
			g = sets_find(k, q);
	} else {
		g = wide ? sets_find_wide(k, q) : sets_find(k, q);
	}
	if (g == SETS_MISSING) {
		if (new_key_over(key, cfg, set, st, d->now)) {
			q->hashed = 0; /* now the aggregate's key */
			if (wide)
				wide_key_aggregate(k);
		}
		q->create = 1;
		g = wide ? sets_find_wide(k, q) : sets_find(k, q);
	}
	if (g == SETS_CLAIMED)
		st->new_keys++;
	if ((g != SETS_FOUND && g != SETS_CLAIMED) ||
	    sets_ref(wide ? SETS_WIDE_FAMILY : key->family, q->loc, &wr))
		return KEYTAB_CONTENDED;
	r->s0 = wr.s0;
	r->s1 = &wr.x->s1;
	r->dropped32 = &wr.x->dropped;
	return KEYTAB_FOUND;
}

/* The LRU hash (map: sluice_buckets, or sluice_flows for a wide key k whose
 * k is key, wide 1). A new key: decide on a full bucket of our own, then
 * publish it with that packet already paid for. One hash operation instead
 * of an insert and a lookup. */
static __always_inline int keytab_lru(void *map, void *k, struct sluice_key *key, const int wide,
				      struct sluice_config *cfg, struct sluice_settings *set,
				      struct sluice_stats *st, struct decision *d, const int shape,
				      struct keytab_ref *r)
{
	struct sluice_bucket *b = bpf_map_lookup_elem(map, k);

	if (!b)
		b = new_key_state(map, k, key, wide, cfg, set, st, d->now);
	if (!b) {
		struct sluice_bucket nb = {};
		int err;

		d->v = decide(d, &nb.s[0], &nb.s[1], shape);
		/* Counted in both modes: a would-drop too. */
		nb.dropped = d->v != SLUICE_PASS;
		err = state_create(map, k, &nb, st);
		if (!err)
			return KEYTAB_DECIDED;
		if (err != -EEXIST)
			return KEYTAB_FAILED;
		/* Another CPU created it first: decide on theirs. */
		b = bpf_map_lookup_elem(map, k);
		if (!b)
			return KEYTAB_FAILED;
	}
	r->s0 = &b->s[0];
	r->s1 = &b->s[1];
	r->dropped = &b->dropped;
	return KEYTAB_FOUND;
}

/*
 * The state of key (masked to its policy's prefix, tagged with its slot) for
 * the decision d (d->sh set here: the policy's fleet share): a KEYTAB_*
 * result. fk: NULL, or the packet's wide key (wide_key(), its k a copy of
 * key) when the policy keys by more than the source; the key (and fk) may
 * come back as its aggregate's (new_key_over()). `shape` is a compile-time
 * constant (the LRU table's decision on a new key).
 */
static __always_inline int keytab_state(struct sluice_key *key, struct sluice_fkey *fk,
					struct sluice_config *cfg, struct sluice_settings *set,
					struct sluice_stats *st, struct decision *d,
					const int shape, struct keytab_ref *r)
{
	int g;

	if (d->p->algo == SLUICE_ALGO_SLIDING_LOG)
		return keytab_log(key, cfg, set, st, d->now, r);
	/* A bucket's or a window's: its share of a fleet-wide limit, which a
	 * new LRU key's decision needs already. */
	fleet_share(d->p, &d->sh, d->now);
	if (!fk) {
		if (table_sets)
			return keytab_sets(key, key, 0, cfg, set, st, d, shape, r);
		return keytab_lru(&sluice_buckets, key, key, 0, cfg, set, st, d, shape, r);
	}
	if (table_sets)
		g = keytab_sets(fk, &fk->k, 1, cfg, set, st, d, shape, r);
	else
		g = keytab_lru(&sluice_flows, fk, &fk->k, 1, cfg, set, st, d, shape, r);
	/* The key as the table keyed it (its aggregate's, maybe): for the
	 * events and the penalty box. */
	__builtin_memcpy(key, &fk->k, sizeof(*key));
	return g;
}

/* The decision on a state keytab_state() found. Which table it is in is
 * read from r, not again from the policy: the verifier cannot tell that two
 * loads of the policy's algorithm give the same value. */
static __always_inline int keytab_decide(struct decision *d, const struct keytab_ref *r,
					 const int shape)
{
	int v;

	if (r->log)
		return sluice_sliding_log(r->log, d->now, d->p->window, d->p->window_limit);
	v = decide(d, r->s0, r->s1, shape);
	/* A way frozen under the decision (SLUICE_RETRY: it is being handed to
	 * another key, lib/sets.h) is dropped as contended: never admitted. */
	if (table_sets && v == SLUICE_RETRY)
		v = SLUICE_CONTENDED;
	return v;
}

#endif /* SLUICE_BPF_KEYTAB_H */
