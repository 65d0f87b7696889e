// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice: per-source rate limiting at XDP (sluice_xdp), and shaping at tc
 * egress (sluice_tc: the same pipeline, whose accepted packets get a
 * departure time that the fq qdisc honours).
 *
 * pipeline(), in stages: parse (lib/parse.h) -> classify: the policy, the
 * default or the longest-prefix rule -> key state: the source masked to the
 * policy's prefix, its state in a key table (lib/keytab.h: the sliding log's,
 * the LRU hash, or with --table sets the set-associative table of
 * lib/sets.h; new keys past the new-key limit charged to their aggregate's;
 * a key in the penalty box of its policy's --penalty refused before its
 * state is read, and one refused for its limit boxed: lib/xstats.h)
 * -> decide (lib/decide.h, include/sluice/algo.h) -> account -> verdict:
 * per-CPU counters and a sampled drop event. Under dry-run a packet the
 * verdict would drop passes, counted as a would-drop: globally, per policy
 * (sluice_rwould), per key (its dropped counter) and in sampled events.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <errno.h>

#include "lib/parse.h"
#include "lib/shared.h"
#include "lib/shape.h"
#include "lib/keytab.h"
#include "lib/l4rules.h"
#include "lib/xstats.h"
#include <sluice/sluice.h>
#include <sluice/algo.h>

/* ---- Maps: pinned under /sys/fs/bpf/sluice/<ifname>/ by the loader ----
 * (sluice_buckets, sluice_fleet, sluice_fleet_use and the sets: in
 * lib/shared.h; sluice_logs: in lib/keytab.h) */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_config);
} sluice_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 2 * SLUICE_DEFAULT_MAX_RULES); /* two generations; --max-rules */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sluice_rule_key);
	__type(value, struct sluice_rule);
} sluice_rules SEC(".maps");

/* Rules of the prefix lengths in config.hash_lens (SLUICE_RULES_HASHED). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * SLUICE_DEFAULT_MAX_RULES); /* two generations; --max-rules */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sluice_rule_key);
	__type(value, struct sluice_rule);
} sluice_rulehash SEC(".maps");

/* The rules as userspace reads them (struct sluice_config.ruletab_*); the
 * program never touches it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_DEFAULT_MAX_RULES); /* --max-rules */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_rule_entry);
} sluice_ruletab SEC(".maps");

/* The policy of each slot under each settings half (SLUICE_POLICY_AT):
 * every policy the datapath applies is read here. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_POLICIES_ENTRIES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_policy);
} sluice_policies SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_stats);
} sluice_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_MAX_RULES);
	__type(key, __u32);
	__type(value, struct sluice_rstats);
} sluice_rstats SEC(".maps");

/* Would-drop counters (SLUICE_MAP_RWOULD), an optional map: attach creates it
 * in a state pinned without it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_MAX_RULES);
	__type(key, __u32);
	__type(value, struct sluice_rwould);
} sluice_rwould SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} sluice_events SEC(".maps");

/* Policies' second keys (--also-rate), by SLUICE_POLICY_ALSO(): an optional
 * map, which attach adds to a state pinned without it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_ALSO_IDS);
	__type(key, __u32);
	__type(value, struct sluice_also);
} sluice_also SEC(".maps");

/* ---- Load-time knobs (skel->rodata); the verifier prunes what is off ---- */

/* Bench builds: stop after parsing, or give every packet a random source
 * among bench_vary_keys, to measure parsing and key-table churn alone. */
const volatile __u8 bench_parse_only = 0;
const volatile __u32 bench_vary_keys = 0;

static __always_inline int dry_run(const struct sluice_policy *p, const struct sluice_settings *set)
{
	return (p->flags & SLUICE_POLICY_DRY_RUN) || (set->flags & SLUICE_DRY_RUN);
}

/*
 * A key's drop count, for `top` and `show`: its drops, or under dry-run its
 * would-drops (they read the mode of the key's policy to say which). A write
 * on every drop would pull the bucket's cache line away from the other CPUs
 * that are only reading it to refuse the same flood: exact up to one sample (event_mask + 1 drops),
 * then each drop adds a whole sample with chance 1/sample. The chance is a
 * random draw, not "every sample-th drop of this CPU": that one follows the
 * traffic, and sources sent round-robin all had their samples land on one
 * of them. So the count is unbiased, with a standard deviation of about
 * sqrt(sample x (N - sample)) for N drops (8 x sqrt(N - 64) by default).
 * sluice_xdp draws with sample_draw() (keytab.h), no helper call; sluice_tc
 * (`shape`) from the kernel's generator: sample_draw() inlined there took 8
 * bytes more of its frame, which 6.1 has no room for.
 */
static __always_inline void count_key_drop(__u64 *dropped, __u32 *dropped32, __u32 event_mask,
					   const int shape)
{
	__u64 sample = (__u64)event_mask + 1;

	if (dropped32) {
		/* a way's count (--table sets): 32 bits, stopping short of a wrap */
		__u32 d = SLUICE_READ(*dropped32);

		if (d < sample)
			__sync_fetch_and_add(dropped32, 1);
		else if (d < SLUICE_WAY_DROPPED_MAX &&
			 !((shape ? bpf_get_prandom_u32() : sample_draw()) & event_mask))
			__sync_fetch_and_add(dropped32, (__u32)sample);
		return;
	}
	if (SLUICE_READ(*dropped) < sample)
		__sync_fetch_and_add(dropped, 1);
	else if (!((shape ? bpf_get_prandom_u32() : sample_draw()) & event_mask))
		__sync_fetch_and_add(dropped, sample);
}

/* One event per sample of `count` (this CPU's drops, or its would-drops). */
static __always_inline void emit_event(struct sluice_stats *st, struct sluice_settings *set,
				       struct sluice_key *key, __u8 *src, __u8 reason, __u32 len,
				       __u64 count)
{
	struct sluice_event *ev;

	if (count & set->event_mask)
		return;
	ev = bpf_ringbuf_reserve(&sluice_events, sizeof(*ev), 0);
	if (!ev) {
		st->events_lost++;
		return;
	}
	ev->ts_ns = bpf_ktime_get_ns();
	__builtin_memcpy(ev->addr, src, 16);
	ev->family = key->family;
	ev->reason = reason;
	ev->pkt_len = len > 0xffff ? 0xffff : len;
	ev->slot = SLUICE_TAG_SLOT(key->tag);
	ev->sample = set->event_mask + 1;
	ev->key_prefixlen = key->prefixlen;
	__builtin_memset(ev->pad, 0, sizeof(ev->pad));
	bpf_ringbuf_submit(ev, 0);
}

/* Under dry-run: pass what the verdict would drop, counted where a drop
 * would be (globally, in the policy's slot, in a sampled event). */
static __always_inline void count_would_drop(struct sluice_stats *st, struct sluice_settings *set,
					     struct sluice_key *key, __u8 *src, __u32 slot,
					     __u32 len)
{
	struct sluice_rwould *rw = bpf_map_lookup_elem(&sluice_rwould, &slot);

	emit_event(st, set, key, src, SLUICE_REASON_WOULD_DROP, len, st->would_drop);
	st->would_drop++;
	if (rw) {
		rw->would_drop++;
		rw->would_drop_bytes += len;
	}
}

/* What the tc program learns of a packet the pipeline passed or dropped. */

#define TC_ACT_OK 0
#define TC_ACT_SHOT 2

/* pipeline()'s verdicts: the program's own return codes. */
#define PIPE_PASS (shape ? TC_ACT_OK : XDP_PASS)
#define PIPE_DROP (shape ? TC_ACT_SHOT : XDP_DROP)

/* A packet on its way through the pipeline's stages. */
struct packet {
	struct sluice_config *cfg;
	struct sluice_settings *set; /* the half of cfg the packet uses */
	struct sluice_policy *policy;
	struct sluice_stats *st;
	struct sluice_rstats *rs; /* the policy's slot's counters */
	__u32 slot;
	__u32 len; /* bytes */
};

/* The pipeline's outcomes besides the algorithms' verdicts (SLUICE_PASS to
 * SLUICE_HORIZON): a policy that does not decide, a key table that refused. */
enum {
	OUTCOME_EXEMPT = 16,
	OUTCOME_DENIED = 17,
	OUTCOME_FAILED = 18,
	OUTCOME_PENALIZED = 19, /* the key is in the penalty box */
	OUTCOME_ALSO = 20, /* the policy's second key refused it (--also-rate) */
};

/* Bench builds: every packet from a random source among bench_vary_keys. */
static __always_inline void bench_vary(struct sluice_key *key)
{
	__u32 r;

	if (!bench_vary_keys)
		return;
	r = bpf_get_prandom_u32() % bench_vary_keys;
	/* IPv6: the low 32 bits (a /128 key tells them apart), so a source in
	 * 2001:2::/48 stays in it. Two constant offsets: the verifier refuses
	 * a variable one. */
	if (key->family == 4)
		__builtin_memcpy(&key->addr[0], &r, 4);
	else
		__builtin_memcpy(&key->addr[12], &r, 4);
}

/* The rule of key's address among the prefix lengths in config.hash_lens
 * (SLUICE_RULES_HASHED), longest first; NULL: none. */
static __always_inline struct sluice_rule *
rule_hashed(struct sluice_config *cfg, struct sluice_settings *set, const struct sluice_key *key)
{
	const __u8 *lens = cfg->hash_lens[set->rules_gen & 1][key->family == 6];
	__u8 m[16] __attribute__((aligned(8)));
	struct sluice_rule *rule = NULL;
	struct sluice_rule_key rk;
	int i;

	for (i = 0; i < SLUICE_HASH_LENS && !rule; i++) {
		__u8 l = lens[i];

		if (!l)
			break;
		__builtin_memcpy(m, key->addr, 16);
		mask_addr(m, l);
		sluice_rule_key_init(&rk, set->rules_gen, key->family, m, l);
		rule = bpf_map_lookup_elem(&sluice_rulehash, &rk);
	}
	return rule;
}

/*
 * Classify: the packet's policy and its slot's counters; the key tagged
 * with the slot. The slot is that of the first rule matching on the
 * transport header that holds the packet, when there are such rules (its
 * IP header l3off bytes into [data, data_end)), else of the rule of the
 * longest prefix holding its address, else the default's (0); the policy
 * is the slot's in sluice_policies under this half of the settings. Only
 * the slot is taken from the rule found: every policy pointer is of one
 * map, and the verifier walks the pipeline after this once, not once per
 * map a rule may come from. 0, or -1: no policy or no counters (cannot
 * happen: arrays, indices masked).
 *
 * The L4 parse and classification are inlined: as a function of their own
 * (a global one, verified apart) they cost a BPF-to-BPF call whose return
 * goes through the kernel's return thunk, about 8 ns a packet here (SRSO
 * mitigation). Inlined, the verifier's liveness pruning keeps it cheap:
 * the header's fields are dead once the rule is found.
 */
static __always_inline int classify(struct packet *pk, struct sluice_key *key, void *data,
				    void *data_end, __u32 l3off)
{
	struct sluice_settings *set;
	struct sluice_rule *rule = NULL;
	struct sluice_rule_key rk;
	/* One load of `active`: the whole packet uses one half of the config. */
	__u32 half = SLUICE_READ(pk->cfg->active) & 1, tag = 0, k, slot;
	int l4 = -1;

	set = &pk->cfg->settings[half];
	pk->set = set;
	if (set->flags & SLUICE_L4_ON) {
		l4 = l4rules_at(data, data_end, l3off, key, !!(set->flags & SLUICE_L4_GEN));
		if (l4 >= 0) {
			struct sluice_policy *p;

			k = (__u32)l4 & (2 * SLUICE_L4_RULES_MAX - 1);
			p = bpf_map_lookup_elem(&sluice_l4pol, &k);
			if (!p)
				return -1;
			tag = p->tag;
		}
	}
	if (l4 < 0 && set->nr_rules) {
		if (set->rule_maps & SLUICE_RULES_HASHED)
			rule = rule_hashed(pk->cfg, set, key);
		if (!rule && !(set->rule_maps & SLUICE_RULES_NO_PREFIX)) {
			sluice_rule_key_init(&rk, set->rules_gen, key->family, key->addr,
					     key->family == 4 ? 32 : 128);
			rule = bpf_map_lookup_elem(&sluice_rules, &rk);
		}
		if (rule)
			tag = rule->policy.tag;
	}
	slot = SLUICE_TAG_SLOT(tag) & (SLUICE_MAX_RULES - 1);
	k = SLUICE_POLICY_AT(half, slot);
	pk->policy = bpf_map_lookup_elem(&sluice_policies, &k);
	if (!pk->policy)
		return -1;
	pk->slot = slot;
	pk->rs = bpf_map_lookup_elem(&sluice_rstats, &slot);
	key->tag = pk->policy->tag;
	return pk->rs ? 0 : -1;
}

/* A second key's bucket when it is new: full, from .rodata (the frame of a
 * global function counts towards 6.1's 512 bytes too). */
const volatile struct sluice_bucket also_bucket_empty = {};

/*
 * The second key of a policy (--also-rate) for the packet its own key just
 * admitted, in three calls, each checked once by the verifier: also_key()
 * makes the key, sets_find() finds it in the set table, also_charge()
 * charges it. Not one call that makes the other two: the frames of a chain
 * of calls share 512 bytes (6.1 rounds each up to 32), and sluice_tc's,
 * also_charge()'s and sets_find()'s are more than that together. They pass
 * scalars and this CPU's scratch entry for the same reason.
 *
 * also_key(): the prefix key of `key` (masked, tagged) for entry `id` of
 * sluice_also (SLUICE_POLICY_ALSO()): the source masked to the entry's
 * prefix, tagged SLUICE_ALSO_TAG(), in the scratch entry (ak, and aq for
 * sets_find()); 0, or -1 when there is no such entry.
 */
__noinline int also_key(const struct sluice_key *key, __u32 id, __u64 now)
{
	struct keytab_scratch *sc;
	struct sluice_config *cfg;
	struct sluice_also *al;
	__u32 zero = 0;

	id &= SLUICE_ALSO_IDS - 1;
	sc = bpf_map_lookup_elem(&sluice_scratch, &zero);
	al = bpf_map_lookup_elem(&sluice_also, &id);
	cfg = bpf_map_lookup_elem(&sluice_config, &zero);
	if (!key || !sc || !al || !cfg)
		return -1;
	__builtin_memcpy(&sc->ak, key, sizeof(sc->ak));
	sc->ak.tag = SLUICE_ALSO_TAG(key->tag);
	sc->ak.pad = 0;
	sc->ak.prefixlen = key->family == 4 ? al->prefix4 : al->prefix6;
	/* never longer than the key itself (userspace refuses it) */
	if (sc->ak.prefixlen > key->prefixlen)
		sc->ak.prefixlen = key->prefixlen;
	mask_addr(sc->ak.addr, sc->ak.prefixlen);
	__builtin_memset(&sc->aq, 0, sizeof(sc->aq));
	sc->aq.seed = SLUICE_READ(cfg->set_seed);
	sc->aq.now = now;
	sc->aq.create = 1;
	return 0;
}

/*
 * also_charge(): the prefix key also_key() made (on the set table, in the
 * way sets_find() found at aq.loc), charged `pkts` packets of the entry's
 * limit. A fleet policy's prefix decides on the box's share as its own key
 * does (mult, div: struct share), its usage recorded for the agent
 * (`record`) when it passes. On a shaper (`shape`) the prefix delays too:
 * the packet's turn in the prefix's queue goes to the scratch entry's
 * also_depart, --also-burst is the work that queue may hold (every excess
 * packet waits its turn: a second key has no --delay), and a turn at the fq
 * horizon or beyond is SLUICE_HORIZON, nothing charged. The arguments are
 * packed: ALSO_ARG(event_mask, id, record, shape), ALSO_SHARE(mult, div,
 * pkts).
 *
 * SLUICE_PASS; SLUICE_DROP or SLUICE_HORIZON (the key's drop count sampled
 * as any key's); SLUICE_CONTENDED; or -1: the LRU table refused the key.
 */
#define ALSO_ARG(mask, id, record, shape)                                     \
	((__u64)(__u32)(mask) | (__u64)((id) & (SLUICE_ALSO_IDS - 1)) << 32 | \
	 (__u64) !!(record) << 36 | (__u64) !!(shape) << 37)
#define ALSO_SHARE(mult, div, pkts) \
	((__u64)((mult)&0xfffff) | (__u64)((div)&0xfffff) << 20 | (__u64)((pkts)&0xfffff) << 40)
_Static_assert(SLUICE_FLEET_MAX_BOXES < 0xfffff, "a share's N fits in 20 bits");

__noinline int also_charge(__u64 now, __u64 arg, __u64 share)
{
	__u32 zero = 0, id = (arg >> 32) & (SLUICE_ALSO_IDS - 1), mult = share & 0xfffff,
	      div = (share >> 20) & 0xfffff;
	struct keytab_scratch *sc;
	struct sluice_also *al;
	__u32 *dropped32 = NULL;
	__u64 *dropped = NULL, *s0, cost, local, tol;
	int v;

	sc = bpf_map_lookup_elem(&sluice_scratch, &zero);
	al = bpf_map_lookup_elem(&sluice_also, &id);
	if (!sc || !al)
		return -1;
	if (table_sets) {
		struct way_ref wr;

		if (sets_ref(sc->ak.family, sc->aq.loc, &wr))
			return SLUICE_CONTENDED;
		s0 = wr.s0;
		dropped32 = &wr.x->dropped;
	} else {
		struct sluice_bucket *b = bpf_map_lookup_elem(&sluice_buckets, &sc->ak);

		if (!b) {
			int err = (int)bpf_map_update_elem(&sluice_buckets, &sc->ak,
							   (void *)&also_bucket_empty, BPF_NOEXIST);

			if (err && err != -EEXIST)
				return -1;
			b = bpf_map_lookup_elem(&sluice_buckets, &sc->ak);
			if (!b)
				return -1;
		}
		s0 = &b->s[0];
		dropped = &b->dropped;
	}
	cost = sluice_limit_cost(&al->pkt, (share >> 40) & 0xfffff);
	local = sluice_share_cost(cost, mult);
	tol = sluice_share_tolerance(al->pkt.tolerance, local, mult, div);
	if (arg & 1ULL << 37) {
		struct sluice_config *cfg = bpf_map_lookup_elem(&sluice_config, &zero);
		__u64 h = cfg ? SLUICE_READ(cfg->shape_horizon_us) : 0;

		/* us -> ticks as key_verdict() does; 0: no horizon */
		v = sluice_gcra_shape_max(s0, now, local, tol, 0,
					  h ? (h * 1000) << SLUICE_TICK_SHIFT : ~0ULL,
					  &sc->also_depart, &sc->also_wrote);
	} else {
		v = sluice_gcra_to(s0, now, local, tol, &sc->also_wrote);
	}
	if (v == SLUICE_PASS) {
		if (arg & 1ULL << 36)
			fleet_record(&sc->ak, cost, 0);
		return SLUICE_PASS;
	}
	count_key_drop(dropped, dropped32, (__u32)arg, 0);
	/* a way frozen while it is handed to another key: contended */
	if (v == SLUICE_DROP || v == SLUICE_HORIZON)
		return v;
	return SLUICE_CONTENDED;
}

/*
 * also_refund(): give back the own key's charge (own_used[], own_wrote[] of
 * the scratch entry, on a share of `mult`) of a packet its second key
 * refused. The own key's state is found again, as a scalar cannot carry a
 * pointer to it: on the set table at the way sets_find() gave it (the
 * scratch entry's q.loc), on the LRU table by its key (`key`, or with
 * `wide` the wide key in the scratch entry). The refund is a CAS from the
 * TAT the charge wrote (sluice_gcra_refund()): it never takes from a state
 * that is not the one charged. Returns 0 (a global function of 6.1 returns
 * a scalar).
 */
__noinline int also_refund(const struct sluice_key *key, __u32 wide, __u32 mult)
{
	struct keytab_scratch *sc;
	__u64 *s0, *s1;
	__u32 zero = 0;

	sc = bpf_map_lookup_elem(&sluice_scratch, &zero);
	if (!sc || !key)
		return 0;
	if (table_sets) {
		struct way_ref wr;

		if (sets_ref(wide ? SETS_WIDE_FAMILY : key->family, sc->q.loc, &wr))
			return 0;
		s0 = wr.s0;
		s1 = &wr.x->s1;
	} else {
		struct sluice_bucket *b;

		/* two lookups, each checked: clang took b + 8 of a merged
		 * pointer before its check */
		if (wide) {
			b = bpf_map_lookup_elem(&sluice_flows, &sc->fk);
			if (!b)
				return 0;
		} else {
			/* a copy: 6.1 takes no argument's memory as a map key */
			__builtin_memcpy(&sc->own, key, sizeof(sc->own));
			b = bpf_map_lookup_elem(&sluice_buckets, &sc->own);
			if (!b)
				return 0;
		}
		s0 = &b->s[0];
		s1 = &b->s[1];
	}
	if (sc->own_used[0])
		sluice_gcra_refund(s0, sc->own_wrote[0], sluice_share_cost(sc->own_used[0], mult));
	if (sc->own_used[1])
		sluice_gcra_refund(s1, sc->own_wrote[1], sluice_share_cost(sc->own_used[1], mult));
	return 0;
}

/*
 * A packet its own key admitted under a policy with a second key: that
 * key's verdict. When it refuses, the own key's charge is given back first
 * (also_refund()), so neither is charged: OUTCOME_ALSO, SLUICE_HORIZON (a
 * shaper's prefix turn at the fq horizon) or SLUICE_CONTENDED. A second
 * key the table refused fails as a key would (OUTCOME_FAILED, then
 * table_failed()), its own key's charge kept: a fail-open policy passes
 * the packet. On a shaper the packet departs at the later of the two keys'
 * turns (d->depart). Every call passes scalars and reads a scalar back: no
 * pointer into a key table is live over them, which kept the states the
 * verifier walks in sluice_tc from multiplying.
 */
static __always_inline int also_verdict(struct packet *pk, struct sluice_key *key,
					struct decision *d, struct sluice_fkey *fk, const int shape)
{
	const struct share *sh = &d->sh;
	struct keytab_scratch *sc;
	__u32 zero = 0;
	int a;

	sc = bpf_map_lookup_elem(&sluice_scratch, &zero);
	if (!sc || also_key(key, SLUICE_POLICY_ALSO(d->p), d->now))
		return OUTCOME_FAILED;
	sc->own_used[0] = d->used[0];
	sc->own_used[1] = d->used[1];
	sc->own_wrote[0] = d->wrote[0];
	sc->own_wrote[1] = d->wrote[1];
	a = table_sets ? sets_find(&sc->ak, &sc->aq) : SETS_FOUND;
	if (a == SETS_FOUND || a == SETS_CLAIMED)
		a = also_charge(
			d->now,
			ALSO_ARG(pk->set->event_mask, SLUICE_POLICY_ALSO(d->p), sh->record, shape),
			ALSO_SHARE(sh->fleet ? sh->mult : 1, sh->fleet ? sh->div : 1, d->pkts));
	else
		a = SLUICE_CONTENDED;
	if (a == SLUICE_PASS) {
		if (shape && sc->also_depart > d->depart)
			d->depart = sc->also_depart;
		return SLUICE_PASS;
	}
	if (a < 0)
		return OUTCOME_FAILED;
	also_refund(key, fk != NULL, sh->fleet ? sh->mult : 1);
	if (a == SLUICE_DROP)
		return OUTCOME_ALSO;
	return a == SLUICE_HORIZON ? SLUICE_HORIZON : SLUICE_CONTENDED;
}

/*
 * Key state, then decide: the key masked to its policy's prefix, its state
 * in the key table (lib/keytab.h), the verdict on it: SLUICE_PASS,
 * SLUICE_DROP, SLUICE_CONTENDED, SLUICE_HORIZON, or OUTCOME_FAILED.
 */
static __always_inline int key_verdict(struct packet *pk, struct sluice_key *key,
				       struct decision *d, void *ctx, __u32 l3off, const int shape)
{
	const struct sluice_policy *p = pk->policy;
	struct sluice_fkey *fk = NULL;
	struct keytab_ref ref = {};
	__u32 mode;
	int v, g;

	key->prefixlen = key->family == 4 ? p->prefix4 : p->prefix6;
	mask_addr(key->addr, key->prefixlen);
	d->p = p;
	d->now = now_ticks();
	/* In the penalty box: refused whole, its bucket not read. Only the
	 * box's drop count is written (sampled as a bucket's is). */
	if (box_on(p)) {
		struct sluice_box *b = box_held(key, d->now);

		if (b) {
			count_key_drop(&b->dropped, NULL, pk->set->event_mask, shape);
			return OUTCOME_PENALIZED;
		}
	}
	if (shape) {
		__u64 h = SLUICE_READ(pk->cfg->shape_horizon_us);

		/* us -> ticks: 2^32 us x 1000 x 16 fits in 64 bits */
		if (h)
			d->max_wait = (h * 1000) << SLUICE_TICK_SHIFT;
	}
	/* Keyed by more than the source (--key): the wide key, after the box
	 * (which holds the source). A policy keyed by the source reads no
	 * transport header here. */
	mode = SLUICE_POLICY_KEY(p);
	if (wide_keys && mode) {
		fk = wide_key(key, mode);
		if (!fk)
			return OUTCOME_FAILED;
		if (shape)
			wide_key_tc(ctx, l3off);
		else
			wide_key_xdp(ctx, l3off);
	}
	g = keytab_state(key, fk, pk->cfg, pk->set, pk->st, d, shape, &ref);
	switch (g) {
	case KEYTAB_FOUND:
		v = keytab_decide(d, &ref, shape);
		/* The key's refusals (drops, or under dry-run would-drops) are
		 * counted here, where its state is at hand: past this point
		 * no pointer into a key table is live, so the verifier walks
		 * the accounting once for every table, not once per table
		 * (the wide keys' tripled it). */
		if (v != SLUICE_PASS)
			count_key_drop(ref.dropped, ref.dropped32, pk->set->event_mask, shape);
		break;
	case KEYTAB_DECIDED:
		v = d->v;
		break;
	case KEYTAB_CONTENDED:
		return SLUICE_CONTENDED;
	default:
		return OUTCOME_FAILED;
	}
	/* A second key (--also-rate): bucket policies only (a limiter's, a
	 * shaper's, a fleet's); a source charged to its aggregate (past
	 * --new-keys) is held by that aggregate's prefix already. A shaper's
	 * policy keyed by more than the source has none (userspace refuses
	 * it): with the wide keys' paths, sluice_tc passed the million
	 * instructions 6.1's verifier walks. */
	if (v == SLUICE_PASS && SLUICE_POLICY_ALSO(p) && p->algo <= SLUICE_ALGO_LEAKY_BUCKET &&
	    !(key->tag & SLUICE_TAG_AGGREGATE) && (!shape || !fk))
		v = also_verdict(pk, key, d, fk, shape);
	return v;
}

/* A refused packet (reason: SLUICE_REASON_*): counted, and the reason to
 * drop it; under dry-run counted as a would-drop, and 0: it passes. */
static __always_inline __u8 refuse(struct packet *pk, struct sluice_key *key, __u8 *src,
				   __u8 reason, const int shape, const struct decision *d)
{
	struct sluice_stats *st = pk->st;

	if (reason == SLUICE_REASON_PENALIZED || reason == SLUICE_REASON_ALSO) {
		struct sluice_xstats *xs = xstats();

		if (xs && reason == SLUICE_REASON_ALSO)
			xs->also_limited++;
		else if (xs)
			xs->penalized++;
	}
	if (dry_run(pk->policy, pk->set)) {
		count_would_drop(st, pk->set, key, src, pk->slot, pk->len);
		return 0;
	}
	if (reason == SLUICE_REASON_DENIED)
		st->denied++;
	else if (reason == SLUICE_REASON_CONTENDED)
		st->contended++;
	else if (!shape || !d->horizon)
		st->limited++; /* not a horizon drop: sluice_tc counts that one */
	return reason;
}

/* The key table refused the key: explicit policy, fail-open by default;
 * under dry-run fail-closed only counts what it would drop. */
static __always_inline __u8 table_failed(struct packet *pk, struct sluice_key *key, __u8 *src)
{
	pk->st->update_failed++;
	if (!(pk->set->flags & SLUICE_FAIL_CLOSED))
		return 0;
	if (dry_run(pk->policy, pk->set)) {
		count_would_drop(pk->st, pk->set, key, src, pk->slot, pk->len);
		return 0;
	}
	return SLUICE_REASON_FAIL_CLOSED;
}

/*
 * Account: count what the outcome v did, record an admitted fleet packet's
 * usage, tell sluice_tc a shaped packet's departure. Returns the reason to
 * drop the packet (SLUICE_REASON_*), or 0: it passes.
 */
static __always_inline __u8 account(struct packet *pk, struct sluice_key *key, __u8 *src,
				    struct decision *d, int v, const int shape)
{
	__u8 reason;

	if (v == OUTCOME_EXEMPT) {
		pk->st->exempt++;
		return 0;
	}
	if (v == OUTCOME_FAILED)
		return table_failed(pk, key, src);
	if (v == SLUICE_PASS) {
		if (d->sh.record)
			fleet_record(key, d->used[0], d->used[1]);
		if (shape && pk->policy->algo <= SLUICE_ALGO_LEAKY_BUCKET) {
			d->shaped = 1;
			d->dry = dry_run(pk->policy, pk->set);
		}
		return 0;
	}
	/* One call of refuse() for every refusal: a second inlined copy (for
	 * the denied) made the verifier walk sluice_tc half as long again. */
	if (v == OUTCOME_DENIED) {
		reason = SLUICE_REASON_DENIED;
	} else if (v == OUTCOME_PENALIZED) {
		reason = SLUICE_REASON_PENALIZED;
	} else if (v == OUTCOME_ALSO) {
		/* its own key is under its limit: never boxed */
		reason = SLUICE_REASON_ALSO;
	} else {
		/* Over the limit with a penalty: into the box (under dry-run
		 * too, to count what it would refuse). */
		if (v == SLUICE_DROP && box_on(pk->policy))
			box_key(key, d->now, sluice_penalty_ds(pk->policy));
		reason = v == SLUICE_CONTENDED ? SLUICE_REASON_CONTENDED : SLUICE_REASON_LIMITED;
		if (shape && v == SLUICE_HORIZON)
			d->horizon = 1;
	}
	return refuse(pk, key, src, reason, shape, d);
}

/* Verdict: pass (reason 0) or drop, counted globally and in the policy's
 * slot; a drop in a sampled event. */
static __always_inline int verdict(struct packet *pk, struct sluice_key *key, __u8 *src,
				   __u8 reason, const int shape)
{
	struct sluice_stats *st = pk->st;
	struct sluice_rstats *rs = pk->rs;

	if (!reason) {
		st->passed++;
		rs->passed++;
		rs->passed_bytes += pk->len;
		return PIPE_PASS;
	}
	emit_event(st, pk->set, key, src, reason, pk->len, st->dropped);
	st->dropped++;
	st->dropped_bytes += pk->len;
	rs->dropped++;
	rs->dropped_bytes += pk->len;
	return PIPE_DROP;
}

/*
 * The datapath of both programs, on the frame [data, data_end) of `len`
 * bytes: parse -> classify (policy and rule) -> key state (new-key admission
 * included) -> decide -> account -> verdict; returns the program's verdict
 * (XDP_PASS or XDP_DROP, TC_ACT_OK or TC_ACT_SHOT). The caller's decision
 * dp holds len, dp->pkts and dp->max_wait (~0) on entry: it is the
 * caller's so that sluice_tc reads the departure from it, with no copy in
 * a frame of its own. `shape` is a compile-time constant: 0 for sluice_xdp,
 * which has none of the shaper's code, 1 for sluice_tc, where dp->pkts
 * packets (GSO segments) are charged, the key may be the destination
 * (config.kind), a token/leaky bucket policy gives an accepted packet a
 * departure (dp->depart, dp->shaped) and window algorithms meter (drop the
 * excess, delay nothing; they count a GSO packet once, as they count a
 * packet at XDP).
 */
static __always_inline int pipeline(void *ctx, void *data, void *data_end, const int shape,
				    struct decision *dp)
{
	__u32 len = dp->len;
	struct sluice_key key = {};
	__u8 src[16] __attribute__((aligned(8))) = {};
	struct packet pk = { .len = len };
	void *l3 = data;
	__u32 zero = 0;
	int v;

	pk.st = bpf_map_lookup_elem(&sluice_stats, &zero);
	pk.cfg = bpf_map_lookup_elem(&sluice_config, &zero);
	if (!pk.st || !pk.cfg)
		return PIPE_PASS; /* cannot happen: arrays always have entry 0 */
	pk.st->rx++;
	pk.st->rx_bytes += len;

	/* Parse: the source, or with config.kind a shaper's destination. A
	 * frame that is not IP, or is malformed, passes as it is, counted. The
	 * switch stays here: in a function of its own, clang merged the two
	 * counters into one at a chosen offset, an instruction more at every
	 * header the parse checks. */
	switch (parse_ip(data, data_end, &key.family, key.addr,
			 shape && (SLUICE_READ(pk.cfg->kind) & SLUICE_KIND_KEY_DST), &l3)) {
	case PARSE_OK:
		break;
	case PARSE_NON_IP:
		pk.st->non_ip++;
		pk.st->passed++;
		return PIPE_PASS;
	default:
		pk.st->malformed++;
		pk.st->passed++;
		return PIPE_PASS;
	}
	if (bench_parse_only) {
		pk.st->passed++;
		return PIPE_PASS;
	}
	bench_vary(&key);
	__builtin_memcpy(src, key.addr, 16);

	if (classify(&pk, &key, data, data_end, (__u32)(l3 - data)))
		return PIPE_PASS;
	if (pk.policy->action == SLUICE_ACT_EXEMPT)
		v = OUTCOME_EXEMPT;
	else if (pk.policy->action == SLUICE_ACT_DENY)
		v = OUTCOME_DENIED;
	else
		v = key_verdict(&pk, &key, dp, ctx, (__u32)(l3 - data), shape);
	return verdict(&pk, &key, src, account(&pk, &key, src, dp, v, shape), shape);
}

SEC("xdp")
int sluice_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct decision d = { .max_wait = ~0ULL, .len = data_end - data, .pkts = 1 };

	return pipeline(ctx, data, data_end, 0, &d);
}

/* ---- The shaper: tc egress, in front of an fq qdisc (`sluice shape`) ---- */

/*
 * Egress: the same pipeline, and for a token/leaky bucket policy the
 * packet's earliest departure time (EDT) in skb->tstamp, which fq honours.
 *
 * - Accepted with a departure after now: tstamp = that departure (ns,
 *   rounded up from ticks; CLOCK_MONOTONIC, the delivery type), unless the
 *   packet already carries a later monotonic delivery time (TCP's pacing):
 *   that one stays. A departure the fq horizon (config.shape_horizon_us,
 *   0: none) would refuse drops here instead, with nothing charged to the
 *   key, counted in horizon_dropped and as a drop (stats.dropped, the
 *   rule's, the key's), not in `limited`.
 * - Beyond the queue: TC_ACT_SHOT, counted `limited` as a limiter's drops.
 * - Every other passed packet (departing now, exempt, non-IP, malformed,
 *   metered by a window algorithm, failed open) keeps a monotonic delivery
 *   time; a tstamp of any other kind (a forwarded packet's receive time,
 *   which fq would read as decades ahead) is cleared, counted `restamped`.
 * - Dry-run: a dry-run shaper neither drops nor delays, it counts what it
 *   would do. What it would drop passes as a would-drop (a horizon refusal
 *   also in horizon_dropped, and it charges nothing either); what it would
 *   delay is counted in shaped, delayed, delay_ns, max_delay_ns and the
 *   histogram as if it were, and departs as an untouched packet. Its keys'
 *   state advances as a live shaper's would, so `show` reads the delay it
 *   would give.
 */
SEC("tc")
int sluice_tc(struct __sk_buff *skb)
{
	struct decision d = { .max_wait = ~0ULL };
	struct sluice_shape_stats *ss;
	__u32 zero = 0, pkts = skb->gso_segs;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u64 tstamp, depart_ns, delay;
	int mono;

	if (data + SHAPE_PULL_LEN > data_end && skb->len > data_end - data) {
		bpf_skb_pull_data(skb, skb->len < SHAPE_PULL_LEN ? skb->len : SHAPE_PULL_LEN);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
	}
	if (!pkts)
		pkts = 1;
	ss = bpf_map_lookup_elem(&sluice_shape_stats, &zero);
	if (!ss)
		return TC_ACT_OK; /* cannot happen: arrays always have entry 0 */
	d.len = skb->len;
	d.pkts = pkts;
	if (pipeline(skb, data, data_end, 1, &d) == TC_ACT_SHOT) {
		if (d.horizon)
			ss->horizon_dropped++;
		return TC_ACT_SHOT;
	}
	tstamp = skb->tstamp;
	mono = skb->tstamp_type == BPF_SKB_TSTAMP_DELIVERY_MONO;
	if (d.shaped) {
		ss->shaped++;
		if (d.depart > d.now) {
			depart_ns = (d.depart + (1 << SLUICE_TICK_SHIFT) - 1) >> SLUICE_TICK_SHIFT;
			delay = depart_ns - (d.now >> SLUICE_TICK_SHIFT);
			count_delay(ss, delay);
			if (!d.dry) {
				if (!mono || tstamp < depart_ns)
					bpf_skb_set_tstamp(skb, depart_ns,
							   BPF_SKB_TSTAMP_DELIVERY_MONO);
				return TC_ACT_OK;
			}
		}
	} else if (d.horizon) {
		ss->horizon_dropped++; /* dry-run: a would-drop, passed */
	}
	if (tstamp && !mono) {
		/* A store, not bpf_skb_set_tstamp(skb, 0, UNSPEC): the helper
		 * refuses any protocol but IPv4 and IPv6 (-EOPNOTSUPP), and
		 * non-IP frames need clearing too. A program that reads
		 * tstamp_type stores tstamp as it is, the type left as it was
		 * (not monotonic). The verifier wants the store at an offset
		 * of the context itself: hide skb, or clang reuses the
		 * address it read tstamp from. */
		struct __sk_buff *c = skb;

		SLUICE_OPAQUE(c);
		c->tstamp = 0;
		ss->restamped++;
	}
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
