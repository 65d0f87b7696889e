// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice: per-source rate limiting at XDP (sluice_xdp), and shaping at tc
 * egress (sluice_tc: the same pipeline, whose accepted packets get a
 * departure time that the fq qdisc honours).
 *
 * packet -> parse -> policy (default or longest-prefix rule) -> key (source
 * masked to the policy's prefix) -> bucket (LRU hash, or with --table sets
 * the set-associative table of lib/sets.h; created full) -> verdict
 * -> per-CPU counters and a sampled drop event. Under dry-run a packet the
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
#include "lib/sets.h"
#include <sluice/sluice.h>
#include <sluice/algo.h>

/* ---- Maps: pinned under /sys/fs/bpf/sluice/<ifname>/ by the loader ----
 * (sluice_buckets, sluice_fleet and sluice_fleet_use: in lib/shared.h) */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_DEFAULT_MAX_LOG_KEYS); /* --max-log-keys */
	__type(key, struct sluice_key);
	__type(value, struct sluice_log);
} sluice_logs SEC(".maps");

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

/* Added after layout 4 (SLUICE_MAP_RWOULD): attach creates it in a state
 * pinned without it. */
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

/* ---- Load-time knobs (skel->rodata); the verifier prunes what is off ---- */

/* Bench builds: stop after parsing, or give every packet a random source
 * among bench_vary_keys, to measure parsing and key-table churn alone. */
const volatile __u8 bench_parse_only = 0;
const volatile __u32 bench_vary_keys = 0;

static const struct sluice_log zero_log;


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

static __always_inline void *new_key_state(void *map, struct sluice_key *key,
					   struct sluice_config *cfg, struct sluice_settings *set,
					   struct sluice_stats *st, __u64 now)
{
	if (!new_key_over(key, cfg, set, st, now))
		return NULL;
	return bpf_map_lookup_elem(map, key);
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

static __always_inline int dry_run(const struct sluice_policy *p,
				    const struct sluice_settings *set)
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
 */
static __always_inline void count_key_drop(__u64 *dropped, __u32 *dropped32,
					   struct sluice_settings *set)
{
	__u64 sample = (__u64)set->event_mask + 1;

	if (dropped32) {
		/* a way's count (--table sets): 32 bits, stopping short of a wrap */
		__u32 d = SLUICE_READ(*dropped32);

		if (d < sample)
			__sync_fetch_and_add(dropped32, 1);
		else if (d < SLUICE_WAY_DROPPED_MAX && !(bpf_get_prandom_u32() & set->event_mask))
			__sync_fetch_and_add(dropped32, (__u32)sample);
		return;
	}
	if (SLUICE_READ(*dropped) < sample)
		__sync_fetch_and_add(dropped, 1);
	else if (!(bpf_get_prandom_u32() & set->event_mask))
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

/* How much of a policy's limit this box holds (struct sluice_fleet). */
struct share {
	__u32 fleet; /* a fleet policy: decide on the share */
	__u32 mult; /* costs x mult: N while the fleet is not synced */
	__u32 div; /* burst / div: N */
	__u32 record; /* synced: record the usage for the agent to push */
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
 * A bucket policy's verdict: a limiter's, or under `shape` (a compile-time
 * constant: the XDP program has none of this) a shaper's, with a departure
 * (*depart ticks) and the fq horizon (max_wait ticks) refused before any
 * charge. Window algorithms on a shaper decide as a limiter's: they meter.
 */
static __always_inline int decide(const struct sluice_policy *p, __u64 *s0, __u64 *s1, __u64 now,
				  __u32 len, __u32 pkts, const struct share *sh, __u64 *used,
				  const int shape, __u64 max_wait, __u64 *depart)
{
	if (shape && p->algo <= SLUICE_ALGO_LEAKY_BUCKET)
		return sluice_bucket_shape_at(p, s0, s1, now, len, pkts, sh->fleet ? sh->mult : 1,
					      sh->fleet ? sh->div : 1, max_wait, used, depart);
	if (sh->fleet)
		return sluice_bucket_admit_shared(p, s0, s1, now, len, sh->mult, sh->div, used);
	return sluice_admit_at(p, s0, s1, now, len);
}

/* What an admitted packet of a fleet policy cost, for the agent to push.
 * Aggregate buckets (new keys over --new-keys) stay local. */
static __always_inline void fleet_record(const struct sluice_key *key, const __u64 *used)
{
	struct sluice_fleet_use *u;

	if (key->tag & SLUICE_TAG_AGGREGATE)
		return;
	u = bpf_map_lookup_elem(&sluice_fleet_use, key);
	if (!u) {
		struct sluice_fleet_use nu = { .used = { used[0], used[1] } };

		if (!(int)bpf_map_update_elem(&sluice_fleet_use, key, &nu, BPF_NOEXIST))
			return;
		u = bpf_map_lookup_elem(&sluice_fleet_use, key);
		if (!u)
			return;
	}
	if (used[0])
		__sync_fetch_and_add(&u->used[0], used[0]);
	if (used[1])
		__sync_fetch_and_add(&u->used[1], used[1]);
}

/* What the tc program learns of a packet the pipeline passed or dropped. */
struct shape_out {
	__u64 now; /* ticks: the clock the verdict was taken at (when shaped) */
	__u64 depart; /* ticks (>= now): its departure (when shaped) */
	__u8 shaped; /* a token/leaky bucket policy gave it a departure */
	__u8 dry; /* ... under dry-run: to be counted, not applied */
	__u8 horizon; /* the departure would reach the fq horizon: dropped (or would be) */
};

#define TC_ACT_OK 0
#define TC_ACT_SHOT 2

/* pipeline()'s verdicts: the program's own return codes. */
#define PIPE_PASS (shape ? TC_ACT_OK : XDP_PASS)
#define PIPE_DROP (shape ? TC_ACT_SHOT : XDP_DROP)

/*
 * The datapath of both programs, on the frame [data, data_end) of `len`
 * bytes: parse -> policy -> key -> new-key admission -> bucket -> verdict ->
 * counters and sampled events; returns the program's verdict (XDP_PASS or
 * XDP_DROP, TC_ACT_OK or TC_ACT_SHOT). `shape` is a compile-time constant: 0 for
 * sluice_xdp, whose code is then what it was before shapers, 1 for
 * sluice_tc, where `pkts` packets (GSO segments) are charged, the key may be
 * the destination (config.kind), a token/leaky bucket policy gives an
 * accepted packet a departure in *out and window algorithms meter (drop the
 * excess, delay nothing; they count a GSO packet once, as they count a
 * packet at XDP).
 */
static __always_inline int pipeline(void *data, void *data_end, __u32 len, __u32 pkts,
				    const int shape, struct shape_out *out)
{
	struct sluice_key key = {};
	__u8 src[16] __attribute__((aligned(8))) = {};
	struct sluice_config *cfg;
	struct sluice_settings *set;
	struct sluice_policy *policy;
	struct sluice_rstats *rs;
	struct sluice_stats *st;
	struct share sh = {};
	__u32 zero = 0, slot;
	__u64 now, *dropped, used[2] = {}, max_wait = ~0ULL, depart = 0;
	__u32 *dropped32 = NULL;
	__u8 reason;
	int v;

	st = bpf_map_lookup_elem(&sluice_stats, &zero);
	cfg = bpf_map_lookup_elem(&sluice_config, &zero);
	if (!st || !cfg)
		return PIPE_PASS; /* cannot happen: arrays always have entry 0 */
	st->rx++;
	st->rx_bytes += len;

	switch (parse_addr(data, data_end, &key.family, key.addr,
			   shape && (SLUICE_READ(cfg->kind) & SLUICE_KIND_KEY_DST))) {
	case PARSE_OK:
		break;
	case PARSE_NON_IP:
		st->non_ip++;
		st->passed++;
		return PIPE_PASS;
	default:
		st->malformed++;
		st->passed++;
		return PIPE_PASS;
	}
	if (bench_parse_only) {
		st->passed++;
		return PIPE_PASS;
	}
	if (bench_vary_keys) {
		__u32 r = bpf_get_prandom_u32() % bench_vary_keys;

		/* IPv6: the low 32 bits (a /128 key tells them apart), so a
		 * source in 2001:2::/48 stays in it. Two constant offsets: the
		 * verifier refuses a variable one. */
		if (key.family == 4)
			__builtin_memcpy(&key.addr[0], &r, 4);
		else
			__builtin_memcpy(&key.addr[12], &r, 4);
	}
	__builtin_memcpy(src, key.addr, 16);

	/* One load of `active`: the whole packet uses one half of the config. */
	set = &cfg->settings[SLUICE_READ(cfg->active) & 1];
	policy = &set->def;
	if (set->nr_rules) {
		struct sluice_rule_key rk;
		struct sluice_rule *rule = NULL;

		if (set->rule_maps & SLUICE_RULES_HASHED) {
			const __u8 *lens = cfg->hash_lens[set->rules_gen & 1][key.family == 6];
			__u8 m[16] __attribute__((aligned(8)));
			int i;

			for (i = 0; i < SLUICE_HASH_LENS && !rule; i++) {
				__u8 l = lens[i];

				if (!l)
					break;
				__builtin_memcpy(m, key.addr, 16);
				mask_addr(m, l);
				sluice_rule_key_init(&rk, set->rules_gen, key.family, m, l);
				rule = bpf_map_lookup_elem(&sluice_rulehash, &rk);
			}
		}
		if (!rule && !(set->rule_maps & SLUICE_RULES_NO_PREFIX)) {
			sluice_rule_key_init(&rk, set->rules_gen, key.family, key.addr,
					     key.family == 4 ? 32 : 128);
			rule = bpf_map_lookup_elem(&sluice_rules, &rk);
		}
		if (rule)
			policy = &rule->policy;
	}

	slot = SLUICE_TAG_SLOT(policy->tag) & (SLUICE_MAX_RULES - 1);
	rs = bpf_map_lookup_elem(&sluice_rstats, &slot);
	if (!rs)
		return PIPE_PASS;

	key.tag = policy->tag;
	if (policy->action == SLUICE_ACT_EXEMPT) {
		st->exempt++;
		goto pass;
	}
	if (policy->action == SLUICE_ACT_DENY) {
		reason = SLUICE_REASON_DENIED;
		dropped = NULL;
		goto over;
	}

	key.prefixlen = key.family == 4 ? policy->prefix4 : policy->prefix6;
	mask_addr(key.addr, key.prefixlen);
	now = now_ticks();
	if (shape) {
		__u64 h = SLUICE_READ(cfg->shape_horizon_us);

		/* us -> ticks: 2^32 us x 1000 x 16 fits in 64 bits */
		if (h)
			max_wait = (h * 1000) << SLUICE_TICK_SHIFT;
	}

	if (policy->algo == SLUICE_ALGO_SLIDING_LOG) {
		struct sluice_log *log = bpf_map_lookup_elem(&sluice_logs, &key);

		if (!log)
			log = new_key_state(&sluice_logs, &key, cfg, set, st, now);
		if (!log) {
			/* 528 bytes do not fit the stack: insert a zeroed log. */
			int err = state_create(&sluice_logs, &key, &zero_log, st);

			if (err && err != -EEXIST)
				goto failed;
			log = bpf_map_lookup_elem(&sluice_logs, &key);
			if (!log)
				goto failed;
		}
		v = sluice_sliding_log(log, now, policy->window, policy->window_limit);
		dropped = &log->dropped;
	} else if (table_sets) {
		/* The set-associative table (lib/sets.h): find the key's way, or
		 * (a new key, past the new-key limit maybe its aggregate's)
		 * claim one. A state frozen under the decision (SLUICE_RETRY:
		 * this very way is being handed to another key) is dropped as
		 * contended: never admitted. */
		struct sets_req q = { .seed = SLUICE_READ(cfg->set_seed), .now = now };
		struct way_ref wr;
		int g;

		fleet_share(policy, &sh, now);
		dropped = NULL;
		/* Without a new-key limit, find or claim in one pass. */
		q.create = !(set->new_keys.interval | set->new_keys.interval_frac);
		q.flags = sets_flags(policy);
		q.window = sets_window(policy);
		g = sets_find(&key, &q);
		if (g == SETS_MISSING) {
			if (new_key_over(&key, cfg, set, st, now))
				q.hashed = 0; /* now the aggregate's key */
			q.create = 1;
			g = sets_find(&key, &q);
		}
		if (g == SETS_CLAIMED)
			st->new_keys++;
		v = SLUICE_CONTENDED;
		if ((g == SETS_FOUND || g == SETS_CLAIMED) && !sets_ref(key.family, q.loc, &wr)) {
			v = decide(policy, wr.s0, &wr.x->s1, now, len, pkts, &sh, used, shape,
				   max_wait, &depart);
			if (v == SLUICE_RETRY)
				v = SLUICE_CONTENDED;
			dropped32 = &wr.x->dropped;
		}
	} else {
		struct sluice_bucket *b = bpf_map_lookup_elem(&sluice_buckets, &key);

		fleet_share(policy, &sh, now);
		if (!b)
			b = new_key_state(&sluice_buckets, &key, cfg, set, st, now);
		if (!b) {
			/* A new key: decide on a full bucket of our own, then
			 * publish it with that packet already paid for. One
			 * hash operation instead of an insert and a lookup. */
			struct sluice_bucket nb = {};
			int err;

			v = decide(policy, &nb.s[0], &nb.s[1], now, len, pkts, &sh, used, shape,
				   max_wait, &depart);
			/* Counted in both modes: a would-drop too. */
			nb.dropped = v != SLUICE_PASS;
			err = state_create(&sluice_buckets, &key, &nb, st);
			if (!err) {
				dropped = NULL;
				goto verdict;
			}
			if (err != -EEXIST)
				goto failed;
			/* Another CPU created it first: decide on theirs. */
			b = bpf_map_lookup_elem(&sluice_buckets, &key);
			if (!b)
				goto failed;
		}
		v = decide(policy, &b->s[0], &b->s[1], now, len, pkts, &sh, used, shape, max_wait,
			   &depart);
		dropped = &b->dropped;
	}
verdict:
	if (v == SLUICE_PASS) {
		if (sh.record)
			fleet_record(&key, used);
		if (shape && policy->algo <= SLUICE_ALGO_LEAKY_BUCKET) {
			out->now = now;
			out->depart = depart;
			out->shaped = 1;
			out->dry = dry_run(policy, set);
		}
		goto pass;
	}
	reason = v == SLUICE_CONTENDED ? SLUICE_REASON_CONTENDED : SLUICE_REASON_LIMITED;
	if (shape && v == SLUICE_HORIZON)
		out->horizon = 1;

over:
	if (dry_run(policy, set)) {
		if (dropped || dropped32)
			count_key_drop(dropped, dropped32, set);
		count_would_drop(st, set, &key, src, slot, len);
		goto pass;
	}
	if (reason == SLUICE_REASON_DENIED)
		st->denied++;
	else if (reason == SLUICE_REASON_CONTENDED)
		st->contended++;
	else if (!shape || !out->horizon)
		st->limited++; /* not a horizon drop: sluice_tc counts that one */
	if (dropped || dropped32)
		count_key_drop(dropped, dropped32, set);
	goto drop;

failed:
	/* The key table refused the key: explicit policy, fail-open by default;
	 * under dry-run fail-closed only counts what it would drop. */
	st->update_failed++;
	if (set->flags & SLUICE_FAIL_CLOSED) {
		if (dry_run(policy, set)) {
			count_would_drop(st, set, &key, src, slot, len);
			goto pass;
		}
		reason = SLUICE_REASON_FAIL_CLOSED;
		goto drop;
	}
pass:
	st->passed++;
	rs->passed++;
	rs->passed_bytes += len;
	return PIPE_PASS;

drop:
	emit_event(st, set, &key, src, reason, len, st->dropped);
	st->dropped++;
	st->dropped_bytes += len;
	rs->dropped++;
	rs->dropped_bytes += len;
	return PIPE_DROP;
}

SEC("xdp")
int sluice_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct shape_out out; /* never touched: shape is 0 */

	return pipeline(data, data_end, data_end - data, 1, 0, &out);
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
	struct shape_out out = {};
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
	if (pipeline(data, data_end, skb->len, pkts, 1, &out) == TC_ACT_SHOT) {
		if (out.horizon)
			ss->horizon_dropped++;
		return TC_ACT_SHOT;
	}
	tstamp = skb->tstamp;
	mono = skb->tstamp_type == BPF_SKB_TSTAMP_DELIVERY_MONO;
	if (out.shaped) {
		ss->shaped++;
		if (out.depart > out.now) {
			depart_ns = (out.depart + (1 << SLUICE_TICK_SHIFT) - 1) >> SLUICE_TICK_SHIFT;
			delay = depart_ns - (out.now >> SLUICE_TICK_SHIFT);
			count_delay(ss, delay);
			if (!out.dry) {
				if (!mono || tstamp < depart_ns)
					bpf_skb_set_tstamp(skb, depart_ns,
							   BPF_SKB_TSTAMP_DELIVERY_MONO);
				return TC_ACT_OK;
			}
		}
	} else if (out.horizon) {
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
