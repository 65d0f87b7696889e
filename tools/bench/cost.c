// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-bench cost: the datapath's cost per packet, in the kernel, with
 * BPF_PROG_TEST_RUN. Every case runs `repeat` packets per run; all cases run
 * once per round and the rounds interleave, so a slow moment of the machine
 * spreads over every case instead of landing on one. Each case is reported as
 * the median of its runs with the min and max, next to a bare XDP_DROP
 * measured in the same rounds.
 *
 *   T0   bare XDP_DROP (tools/bench/drop.bpf.c)
 *   T1   sluice stopping after the parse (bench_parse_only)
 *   T2a  one hot key under its limit (every packet passes)
 *   T2b  one hot key over its limit (every packet is dropped)
 *   T3   a new key per packet (bench_vary_keys = 16M) into a full 1M-key table
 *   T3agg T3 with the new-key limit on (1000/s): past it, new keys are charged
 *        to their aggregate prefix's bucket instead of churning the table
 *   T4   T2a with 1,000 CIDR rules installed, the packet matching a /32 (/128)
 *   T5   T2a (token bucket) under 16 rules that match on the transport header
 *        (UDP to port 9), the packet held by the last of them: every rule's
 *        match holds it, only the last one's CIDR, so the classifier tries
 *        all 16 (the worst case of its bit vectors); against T2a, the same
 *        packet with no such rule
 *   T2fleet  T2a (token bucket) of a fleet-wide policy, no agent (N unknown:
 *        the whole limit, usage recorded); T2fleet3 the same synced with 3 boxes
 *   scale the token bucket at 1 .. 4M keys against a full 1M-key table
 *
 * Every case from T2a on runs on both key tables, each its own objects, in
 * the same rounds: `lru` (sluice_buckets, one LRU hash for both families)
 * and `sets` (--table sets: sluice_sets4/6, 1M keys per family, so the same
 * 1M keys a family as the LRU table). The sets table adds T3held: T3 into a
 * table whose every way holds a key with debt (a TAT an hour or more ahead,
 * and the new keys' own a 1/hour policy's), so every claim evicts by
 * smallest debt. Every algorithm's T3 cases share the two sets tables, and
 * each timed run starts from the table as it was filled (restore_table()).
 * The floor (tools/bench/floor.bpf.c: parse, one array
 * lookup, compare, clock, CAS) runs in the same rounds too, with its own T1
 * (parse only), T2 (one hot key) and T3 (a random key into 1M slots of 64 B).
 *
 * Every run's verdicts are checked against the datapath's own counters; a
 * case whose counters disagree with what it should have done is marked
 * invalid rather than reported as a cost.
 *
 * The bench's own trust: a case whose runs spread (max - min) wider than
 * SPREAD_LIMIT of their median is measured again, all its runs, in rounds of
 * the wide cases only, up to -R times (2 by default); the runs it replaced are
 * kept in the JSON (discarded_fs_runs), and render.py flags a case still
 * wide after the last. render.py also counts each case's disturbed runs.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "array.h"
#include "bench.h"
#include <sys/mman.h>
#include <sluice/sets.h>

#include "drop.skel.h"
#include "floor.skel.h"
#include "sluice.skel.h"

#define MAX_RUNS 32
#define MAX_RERUNS 4
/* A case whose runs spread (max - min) wider than this fraction of their
 * median is measured again (render.py reads it from the JSON: one number). */
#define SPREAD_LIMIT 0.20
#define NR_RULES 1000
#define NR_L4_RULES 16
#define L4_SLOT (NR_RULES + 1) /* T5's rule: IPv4's, IPv6's is the next */
#define T3_KEYS (16U << 20)
#define TABLE_KEYS (1U << 20)
#define HUGE_RATE 1000000000ULL /* 1e9/s: a packet costs 1 ns of a bucket */
#define HOUR_NS 3600000000000ULL

enum table { TAB_LRU, TAB_SETS, TAB_FLOOR };
static const char *const tab_names[] = { "lru", "sets", "floor" };

static const __u32 scale_keys[] = { 1, 1000, 65536, 1U << 20, 4U << 20 };
#define NR_SCALE (sizeof(scale_keys) / sizeof(scale_keys[0]))

enum expect {
	EXP_DROP_VERDICT, /* T0: the program's return value */
	EXP_PARSED, /* T1: every packet passed after the parse */
	EXP_PASS, /* every packet passed */
	EXP_DROP, /* every packet but the burst dropped */
	EXP_LOG_CAPPED, /* sliding-log: 64 per 100 ms admitted, the rest dropped */
	EXP_NEW_KEYS, /* most packets created a key; none failed */
	EXP_NEW_KEYS_HELD, /* most packets created a key, each held at once */
	EXP_FLOOR, /* the floor program's verdict: XDP_PASS (its CAS landed) */
	EXP_AGGREGATED, /* most packets were charged to an aggregate bucket */
	EXP_RULE, /* every packet passed under the rule in `slot` */
	EXP_RULE_LOG, /* every packet counted by the sliding-log rule in `slot` */
};

struct cost_case {
	const char *test;
	int table; /* enum table */
	int family; /* 4 or 6 */
	int algo; /* -1: none */
	__u32 keys; /* scale: distinct keys */
	struct bpfrun *obj; /* NULL: the bare drop program */
	int prog_fd;
	struct sluice_settings set;
	struct bench_frame frame;
	enum expect expect;
	__u32 slot;
	__u32 fleet_live; /* sluice_fleet.live for this case (synced when > 0) */
	__u32 prefilled; /* sets: keys the prefill placed (scale) */
	__u32 held_ways, live_ways; /* sets T3: after the runs */

	int nruns;
	double ns[MAX_RUNS];
	double kns[MAX_RUNS];
	bool sched[MAX_RUNS]; /* the run was scheduled out: the kernel's count */
	int reruns; /* times every run was measured again (a wide spread) */
	int ndiscarded;
	double discarded[MAX_RERUNS * MAX_RUNS]; /* the runs reruns replaced */
	bool again; /* in the current rerun */
	double prog_ns; /* bpf_stats run_time_ns / run_cnt, one extra run */
	__u64 runs_pkts; /* packets of the timed runs */
	struct sluice_stats d; /* counter deltas over the timed runs */
	__u64 rule_passed, rule_counted;
	int attempts; /* runs made, retries included */
	int fallbacks; /* runs timed by the kernel's count (see run_case()) */
	bool valid;
	char why[160];
};

struct cost_ctx {
	__u32 repeat;
	int runs;
	int max_reruns; /* -R */
	bool wall; /* every program held in the dispatcher: time by the wall clock */
	bool quick; /* T0, T1, T2, T4 only: for profiling the datapath */
	struct drop_bpf *drop;
	struct floor_bpf *floor;
	/* [table]: lru, sets; held: the sets table full of held keys */
	struct bpfrun parse, main[2], vary[2], held, scale[2][2][NR_SCALE];
	/* The T3 set tables as prefill_vary() left them (vary[TAB_SETS], held),
	 * each family's sets: restored before every timed run of a case on
	 * them (restore_table()). */
	struct table_snap {
		struct bpfrun *obj;
		void *mem[2];
		size_t len[2];
	} snap[2];
	struct cost_case *cases;
	int ncases, cap;
	__u16 next_gen;
	char err[SLUICE_ERR_LEN];
};

static const char *const src4 = "198.18.7.1", *const dst4 = "198.18.0.2";
static const char *const src6 = "2001:2:0:7::1", *const dst6 = "2001:2::2";

static struct cost_case *add_case_t(struct cost_ctx *c, const char *test, int table, int family,
				    int algo)
{
	struct cost_case *k;

	if (sluice_array_room(c->cases, c->ncases, c->cap, 64))
		return NULL;
	k = &c->cases[c->ncases++];
	memset(k, 0, sizeof(*k));
	k->test = test;
	k->table = table;
	k->family = family;
	k->algo = algo;
	k->valid = true;
	sluice_settings_init(&k->set);
	if (bench_frame_build(&k->frame, family == 4 ? src4 : src6, family == 4 ? dst4 : dst6))
		return NULL;
	return k;
}

static struct cost_case *add_case(struct cost_ctx *c, const char *test, int family, int algo)
{
	return add_case_t(c, test, TAB_LRU, family, algo);
}

/* A policy that never refuses a packet of the bench (or, for sliding-log,
 * refuses as few as it can: it holds at most 64 per window of >= 100 ms). */
static int huge_policy(struct cost_ctx *c, struct sluice_policy *p, int algo)
{
	if (algo == SLUICE_ALGO_SLIDING_LOG)
		return bench_policy(p, algo, SLUICE_LOG_MAX, 100000000ULL, 0, 100000000ULL, c->err,
				    sizeof(c->err));
	return bench_policy(p, algo, HUGE_RATE, SLUICE_NS_PER_SEC, 0, 0, c->err, sizeof(c->err));
}

/* One packet per second, burst 1: after the first packet, every one drops. */
static int tiny_policy(struct cost_ctx *c, struct sluice_policy *p, int algo)
{
	return bench_policy(p, algo, 1, SLUICE_NS_PER_SEC, 1, 0, c->err, sizeof(c->err));
}

/* One packet per hour, burst 1: a new key passes and is held for an hour
 * (T3held: every way of the table keeps a debt). */
static int held_policy(struct cost_ctx *c, struct sluice_policy *p, int algo)
{
	return bench_policy(p, algo, 1, HOUR_NS, 1, 0, c->err, sizeof(c->err));
}

/* A fresh tag per case, so that no two cases ever share a bucket. */
static __u32 fresh_tag(struct cost_ctx *c, int algo)
{
	return SLUICE_TAG(0, algo, ++c->next_gen);
}

/*
 * 1,000 rules, 500 per family, in generation 0: the whole benchmarking range,
 * 256 subnets, 238 hosts elsewhere, and one host per algorithm that the T4
 * packets come from, beneath a subnet rule so the trie walk is a deep one.
 */
static int add_rules(struct cost_ctx *c, struct bpfrun *o)
{
	struct sluice_policy def;
	char cidr[64];
	__u32 slot = 1;
	int i, a, ret;

	ret = bench_policy(&def, SLUICE_ALGO_TOKEN_BUCKET, 100, SLUICE_NS_PER_SEC, 0, 0, c->err,
			   sizeof(c->err));
	if (ret)
		return ret;
#define RULE(fmt, ...)                                          \
	do {                                                    \
		snprintf(cidr, sizeof(cidr), fmt, __VA_ARGS__); \
		ret = bpfrun_rule(o, 0, cidr, &def, slot++);    \
		if (ret)                                        \
			return ret;                             \
	} while (0)
	RULE("%s", "198.18.0.0/15");
	RULE("%s", "2001:2::/48");
	for (i = 0; i < 256; i++) {
		RULE("198.18.%d.0/24", i);
		RULE("2001:2:0:%x::/64", i);
	}
	for (i = 0; i < 238; i++) {
		RULE("198.19.%d.1/32", i);
		RULE("2001:2:0:%x::1/128", 0x1000 + i);
	}
#undef RULE
	for (a = 0; a < SLUICE_ALGO_MAX; a++) {
		struct sluice_policy p;

		ret = huge_policy(c, &p, a);
		if (ret)
			return ret;
		snprintf(cidr, sizeof(cidr), "198.18.7.%d/32", 10 + a);
		ret = bpfrun_rule(o, 0, cidr, &p, slot);
		if (ret)
			return ret;
		snprintf(cidr, sizeof(cidr), "2001:2:0:7::%x/128", 10 + a);
		ret = bpfrun_rule(o, 0, cidr, &p, slot + 1);
		if (ret)
			return ret;
		slot += 2;
	}
	if (slot - 1 != NR_RULES)
		return -EINVAL;
	return 0;
}

/*
 * T5's rules, in generation 0 for IPv4 and 1 for IPv6 (a case picks its
 * family's): 16 on UDP port 9 each, sorted by precedence, of which only the
 * last (the widest CIDR) holds the packet's source. The others count on a
 * slot of their own; no packet should reach it.
 */
static int add_l4_rules(struct cost_ctx *c, struct bpfrun *o)
{
	size_t bm_len = 2 * SLUICE_L4BM_WORDS * sizeof(__u64);
	size_t r_len = 2 * SLUICE_L4_RULES_MAX * sizeof(struct sluice_l4rule);
	size_t p_len = 2 * SLUICE_L4_RULES_MAX * sizeof(struct sluice_policy);
	__u64 *bm = mmap(NULL, bm_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 bpf_map__fd(o->skel->maps.sluice_l4bm), 0);
	struct sluice_l4rule *rules = mmap(NULL, r_len, PROT_READ | PROT_WRITE, MAP_SHARED,
					   bpf_map__fd(o->skel->maps.sluice_l4rules), 0);
	struct sluice_policy *pol = mmap(NULL, p_len, PROT_READ | PROT_WRITE, MAP_SHARED,
					 bpf_map__fd(o->skel->maps.sluice_l4pol), 0);
	int ret = 0, gen, i;

	if (bm == MAP_FAILED || rules == MAP_FAILED || pol == MAP_FAILED)
		ret = -errno;
	for (gen = 0; gen < 2 && !ret; gen++) {
		struct sluice_l4rule *r = rules + gen * SLUICE_L4_RULES_MAX;
		struct sluice_policy *p = pol + gen * SLUICE_L4_RULES_MAX;
		struct sluice_cidr cidr;
		char text[64];

		for (i = 0; i < NR_L4_RULES && !ret; i++) {
			if (i < NR_L4_RULES - 1)
				snprintf(text, sizeof(text),
					 gen ? "2001:2:0:1%02x::/64" : "198.19.%d.0/24", i);
			else
				snprintf(text, sizeof(text), gen ? "2001:2::/48" : "198.18.0.0/15");
			ret = sluice_parse_cidr(text, &cidr, c->err, sizeof(c->err));
			memset(&r[i], 0, sizeof(r[i]));
			r[i].m.has = SLUICE_MATCH_PROTO | SLUICE_MATCH_DPORT;
			r[i].m.proto = SLUICE_IPPROTO_UDP;
			r[i].m.dport_lo = r[i].m.dport_hi = 9;
			r[i].family = cidr.family;
			r[i].prefixlen = cidr.prefixlen;
			memcpy(r[i].addr, cidr.addr, 16);
		}
		if (!ret)
			ret = sluice_l4rules_sort(r, NR_L4_RULES, NULL);
		/* The sort keeps the holder last: the longest prefixes go first. */
		if (!ret && r[NR_L4_RULES - 1].prefixlen != (gen ? 48 : 15))
			ret = -EINVAL;
		for (i = 0; i < NR_L4_RULES && !ret; i++) {
			ret = huge_policy(c, &p[i], SLUICE_ALGO_TOKEN_BUCKET);
			p[i].tag = SLUICE_TAG(i < NR_L4_RULES - 1 ? L4_SLOT + 2 : L4_SLOT + gen,
					      SLUICE_ALGO_TOKEN_BUCKET, 1);
			if (!ret)
				ret = bpfrun_put_policy(o, &p[i]);
		}
		if (!ret)
			ret = sluice_l4bm_build(r, NR_L4_RULES,
						bm + (size_t)gen * SLUICE_L4BM_WORDS);
	}
	if (bm != MAP_FAILED)
		munmap(bm, bm_len);
	if (rules != MAP_FAILED)
		munmap(rules, r_len);
	if (pol != MAP_FAILED)
		munmap(pol, p_len);
	return ret;
}

/* A case of one policy: made by make_policy(c, policy, algo) on obj, with a
 * generation of its own (fresh buckets). NULL with errno set. */
static struct cost_case *
policy_case(struct cost_ctx *c, const char *test, int table, int fam, int algo, struct bpfrun *obj,
	    int (*make_policy)(struct cost_ctx *, struct sluice_policy *, int))
{
	struct cost_case *k = add_case_t(c, test, table, fam, algo);
	int ret;

	if (!k) {
		errno = ENOMEM;
		return NULL;
	}
	k->obj = obj;
	ret = make_policy(c, &k->set.def, algo);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	k->set.def.tag = fresh_tag(c, algo);
	return k;
}

/* The source a case's packets carry (16 bytes, as parsed). */
static void case_src(const struct cost_case *k, __u8 *src)
{
	memset(src, 0, 16);
	memcpy(src, k->frame.data + 14 + (k->family == 4 ? 12 : 8), k->family == 4 ? 4 : 16);
}

static const int fams[] = { 4, 6 };

/* T0 (the bare drop), T1 (sluice's parse only) and the floor's cases of one
 * family. */
static int base_cases(struct cost_ctx *c, int fam)
{
	static const char *const floor_tests[] = { "T1", "T2", "T3", "T2sip" };
	struct cost_case *k;
	int t;

	k = add_case(c, "T0", fam, -1);
	if (!k)
		return -ENOMEM;
	k->prog_fd = bpf_program__fd(c->drop->progs.bench_drop);
	k->expect = EXP_DROP_VERDICT;

	k = add_case(c, "T1", fam, -1);
	if (!k)
		return -ENOMEM;
	k->obj = &c->parse;
	k->expect = EXP_PARSED;

	for (t = 0; t < 4; t++) {
		static const char *const rand = "T3";

		if (c->quick && floor_tests[t] == rand)
			continue;
		k = add_case_t(c, floor_tests[t], TAB_FLOOR, fam, -1);
		if (!k)
			return -ENOMEM;
		k->prog_fd = bpf_program__fd(t == 0 ? c->floor->progs.floor_parse :
					     t == 1 ? c->floor->progs.floor_hot :
					     t == 2 ? c->floor->progs.floor_rand :
						      c->floor->progs.floor_sip);
		k->expect = EXP_FLOOR;
	}
	return 0;
}

/* One hot key of algorithm a in table t: T2a (under its limit), T2b (over
 * it) and, for the token bucket, T2fleet and T2fleet3 (a fleet-wide policy). */
static int hot_cases(struct cost_ctx *c, int t, int fam, int a)
{
	static const char *const names[] = { "T2fleet", "T2fleet3" };
	struct cost_case *k;
	int n;

	k = policy_case(c, "T2a", t, fam, a, &c->main[t], huge_policy);
	if (!k)
		return -errno;
	k->expect = a == SLUICE_ALGO_SLIDING_LOG ? EXP_LOG_CAPPED : EXP_PASS;

	k = policy_case(c, "T2b", t, fam, a, &c->main[t], tiny_policy);
	if (!k)
		return -errno;
	k->expect = EXP_DROP;

	for (n = 0; a == SLUICE_ALGO_TOKEN_BUCKET && n < 2; n++) {
		k = policy_case(c, names[n], t, fam, a, &c->main[t], huge_policy);
		if (!k)
			return -errno;
		k->set.def.flags |= SLUICE_POLICY_FLEET;
		k->fleet_live = n ? 3 : 0;
		k->expect = EXP_PASS;
	}
	return 0;
}

/* A new key per packet into a full table: T3, T3held (the sets table full
 * of held keys) and, for the token bucket, T3agg (the new-key limit on). */
static int new_key_cases(struct cost_ctx *c, int t, int fam, int a)
{
	struct cost_case *k;
	int ret;

	k = policy_case(c, "T3", t, fam, a, &c->vary[t], huge_policy);
	if (!k)
		return -errno;
	/* bench_vary_keys writes the low 32 bits of the address: an IPv6 key
	 * must keep them to be a new key. */
	k->set.def.prefix6 = 128;
	k->expect = EXP_NEW_KEYS;

	if (t == TAB_SETS && a != SLUICE_ALGO_SLIDING_LOG) {
		/* sliding-log keeps its LRU sluice_logs on both tables */
		k = policy_case(c, "T3held", t, fam, a, &c->held, held_policy);
		if (!k)
			return -errno;
		k->set.def.prefix6 = 128;
		k->expect = EXP_NEW_KEYS_HELD;
	}

	if (a != SLUICE_ALGO_TOKEN_BUCKET)
		return 0;
	k = policy_case(c, "T3agg", t, fam, a, &c->vary[t], huge_policy);
	if (!k)
		return -errno;
	ret = sluice_limit_set(&k->set.new_keys, 1000, SLUICE_NS_PER_SEC, 1000, c->err,
			       sizeof(c->err));
	if (ret)
		return ret;
	k->set.def.prefix6 = 128;
	/* The varied bits are the first 24 of an IPv4 key (little-endian u32
	 * over the address) and the last 32 of an IPv6 one: aggregate by /8 and
	 * by the default /48. */
	k->set.agg4 = 8;
	k->expect = EXP_AGGREGATED;
	return 0;
}

/* T4: T2a under 1,000 rules, the packet from algorithm a's host rule (of
 * family fams[f]). */
static int rule_case(struct cost_ctx *c, int t, unsigned int f, int a)
{
	int fam = fams[f];
	struct cost_case *k = add_case_t(c, "T4", t, fam, a);
	char host[64];

	if (!k)
		return -ENOMEM;
	k->obj = &c->main[t];
	k->set.nr_rules = NR_RULES;
	k->set.rules_gen = 0;
	/* The algorithm's host rule: slots 991.. in add_rules(). */
	k->slot = NR_RULES - 2 * SLUICE_ALGO_MAX + 1 + 2 * a + f;
	k->expect = a == SLUICE_ALGO_SLIDING_LOG ? EXP_RULE_LOG : EXP_RULE;
	if (fam == 4)
		snprintf(host, sizeof(host), "198.18.7.%d", 10 + a);
	else
		snprintf(host, sizeof(host), "2001:2:0:7::%x", 10 + a);
	if (bench_frame_build(&k->frame, host, fam == 4 ? dst4 : dst6))
		return -EINVAL;
	return 0;
}

/* T5: T2a's packet under T5's rules (add_l4_rules()), held by the last. */
static int l4_case(struct cost_ctx *c, int t, unsigned int f)
{
	struct cost_case *k = policy_case(c, "T5", t, fams[f], SLUICE_ALGO_TOKEN_BUCKET,
					  &c->main[t], huge_policy);

	if (!k)
		return -errno;
	k->set.flags |= SLUICE_L4_ON | (f ? SLUICE_L4_GEN : 0);
	k->slot = L4_SLOT + f;
	k->expect = EXP_RULE;
	return 0;
}

/* Scale: the default algorithm, each key count and table its own object,
 * its table first filled with the keys the packets will ask for (all of
 * them up to 1M, a quarter of them at 4M; in the sets table those whose set
 * has room). */
static int scale_cases(struct cost_ctx *c)
{
	struct cost_case *k;
	unsigned int f, s;
	__u8 src[16];
	int t, ret;

	for (t = TAB_LRU; t <= TAB_SETS; t++) {
		for (f = 0; f < 2; f++) {
			int fam = fams[f];
			__u8 plen = fam == 4 ? 32 : 128;

			for (s = 0; s < NR_SCALE; s++) {
				struct bpfrun *o = &c->scale[t][f][s];

				k = add_case_t(c, "scale", t, fam, SLUICE_ALGO_TOKEN_BUCKET);
				if (!k)
					return -ENOMEM;
				k->obj = o;
				k->keys = scale_keys[s];
				ret = huge_policy(c, &k->set.def, SLUICE_ALGO_TOKEN_BUCKET);
				if (ret)
					return ret;
				k->set.def.prefix6 = 128;
				k->set.def.tag = fresh_tag(c, SLUICE_ALGO_TOKEN_BUCKET);
				k->expect = scale_keys[s] > TABLE_KEYS ? EXP_NEW_KEYS : EXP_PASS;
				case_src(k, src);
				if (t == TAB_LRU)
					ret = bench_prefill(o->buckets_fd,
							    sizeof(struct sluice_bucket),
							    k->set.def.tag, (__u8)fam, plen, src, 0,
							    TABLE_KEYS);
				else
					ret = bench_sets_prefill(o, k->set.def.tag, (__u8)fam, plen,
								 src, 0, TABLE_KEYS, 0, 0,
								 SLUICE_WAY_META(plen, 0),
								 &k->prefilled);
				if (ret)
					return ret;
			}
		}
	}
	return 0;
}

/* Every case, in the order each round runs them. */
static int build_cases(struct cost_ctx *c)
{
	unsigned int f;
	int a, t, ret;

	for (f = 0; f < 2; f++) {
		ret = base_cases(c, fams[f]);
		for (t = TAB_LRU; t <= TAB_SETS && !ret; t++) {
			for (a = 0; a < SLUICE_ALGO_MAX && !ret; a++) {
				ret = hot_cases(c, t, fams[f], a);
				if (!ret && !c->quick)
					ret = new_key_cases(c, t, fams[f], a);
				if (!ret)
					ret = rule_case(c, t, f, a);
			}
			if (!ret)
				ret = l4_case(c, t, f);
		}
		if (ret)
			return ret;
	}
	return c->quick ? 0 : scale_cases(c);
}

/* Fill the T3 tables with keys no packet will ask for: every T3 packet then
 * meets a full table, whichever of the T3 cases runs first. The sets tables:
 * 1M keys a family, free ways (s0 0) in vary[TAB_SETS], held ones (a TAT
 * two hours ahead and more, each a different debt) in held. */
static int prefill_vary(struct cost_ctx *c)
{
	__u8 src[16] = { 198, 18, 9, 0 };
	__u8 src6[16] = { 0x20, 0x01, 0, 2, 0, 0, 0, 9 };
	/* A generation no case uses (fresh_tag() counts up from 1). */
	__u32 tag = SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 0x1fff), placed;
	__u64 ahead = (bench_now_ns() + 2 * HOUR_NS) << SLUICE_TICK_SHIFT;
	int ret, f;

	ret = bench_prefill(c->vary[TAB_LRU].buckets_fd, sizeof(struct sluice_bucket), tag, 4, 32,
			    src, T3_KEYS, TABLE_KEYS);
	if (ret)
		return ret;
	ret = bench_prefill(c->vary[TAB_LRU].logs_fd, sizeof(struct sluice_log), tag, 4, 32, src,
			    T3_KEYS, TABLE_KEYS);
	if (ret)
		return ret;
	ret = bench_prefill(c->vary[TAB_SETS].logs_fd, sizeof(struct sluice_log), tag, 4, 32, src,
			    T3_KEYS, TABLE_KEYS);
	if (ret)
		return ret;
	for (f = 0; f < 2; f++) {
		__u8 fam = f ? 6 : 4, plen = f ? 128 : 32;
		const __u8 *s = f ? src6 : src;
		__u32 meta = SLUICE_WAY_META(plen, 0), want = 4 * c->held.keys.nsets[f];

		ret = bench_sets_prefill(&c->vary[TAB_SETS], tag, fam, plen, s, T3_KEYS, TABLE_KEYS,
					 0, 0, meta, &placed);
		if (ret)
			return ret;
		/* Every way held: keys until no set has room left (a set's last
		 * free way takes many keys to reach). */
		placed = 0;
		for (__u32 r = T3_KEYS, got; placed < want && r < 0xf0000000U;
		     r += 4 * TABLE_KEYS) {
			ret = bench_sets_prefill(&c->held, tag, fam, plen, s, r, 4 * TABLE_KEYS,
						 ahead, 16, meta, &got);
			if (ret)
				return ret;
			placed += got;
		}
		if (placed < want - want / 1000) {
			snprintf(c->err, sizeof(c->err),
				 "the held sets table of IPv%d took only %u keys of %u", fam,
				 placed, want);
			return -EIO;
		}
	}
	return 0;
}

/* One BPF_PROG_TEST_RUN of the case, its counters added to the case's. */
static int run_once(struct cost_case *k, __u32 repeat, bool count, double *ns, __u32 *kns)
{
	struct sluice_stats before, after;
	struct sluice_rstats rb, ra;
	__u32 retval = 0;
	int ret;

	if (k->obj) {
		struct sluice_fleet fl = { .live = k->fleet_live,
					   .ok_until = k->fleet_live ? ~0ULL : 0 };
		__u32 zero = 0;

		if (bpfrun_configure(k->obj, &k->set))
			return -EIO;
		if (bpf_map_update_elem(bpf_map__fd(k->obj->skel->maps.sluice_fleet), &zero, &fl,
					BPF_ANY))
			return -errno;
		k->prog_fd = k->obj->prog_fd;
		if (bpfrun_stats(k->obj, &before) || bpfrun_rstats(k->obj, k->slot, &rb))
			return -errno;
	}
	ret = bench_test_run(k->prog_fd, &k->frame, repeat, ns, kns, &retval);
	if (ret)
		return ret;
	if (k->expect == EXP_DROP_VERDICT && retval != XDP_DROP) {
		k->valid = false;
		snprintf(k->why, sizeof(k->why), "verdict %u, not XDP_DROP", retval);
	}
	if (k->expect == EXP_FLOOR && retval != XDP_PASS) {
		k->valid = false;
		snprintf(k->why, sizeof(k->why), "verdict %u, not XDP_PASS: its CAS failed",
			 retval);
	}
	if (k->obj) {
		__u64 *a = (__u64 *)&after, *b = (__u64 *)&before, *d = (__u64 *)&k->d;
		size_t i;

		if (bpfrun_stats(k->obj, &after) || bpfrun_rstats(k->obj, k->slot, &ra))
			return -errno;
		if (count) {
			for (i = 0; i < sizeof(after) / sizeof(__u64); i++)
				d[i] += a[i] - b[i];
			k->rule_passed += ra.passed - rb.passed;
			k->rule_counted += ra.passed + ra.dropped - rb.passed - rb.dropped;
		}
	}
	if (count) {
		k->runs_pkts += repeat;
		k->attempts++;
	}
	return 0;
}

/*
 * The T3 set tables are shared by the cases of every algorithm, and a run
 * leaves the keys it made: a window algorithm's stay unfree until their
 * window ends, and make the next case's claims read their second line. So
 * every timed run of a case on one of them starts from the table as it was
 * prefilled (its family's sets copied back), and measures the table its row
 * names, whatever ran before.
 */
static int snap_table(struct cost_ctx *c, int i, struct bpfrun *o)
{
	int f;

	c->snap[i].obj = o;
	for (f = 0; f < 2; f++) {
		size_t len = (size_t)o->keys.nsets[f] *
			     (f ? sizeof(struct sluice_set6) : sizeof(struct sluice_set4));

		/* without it the rows would measure what earlier runs left */
		c->snap[i].mem[f] = malloc(len);
		if (!c->snap[i].mem[f])
			return sluice_err(c->err, sizeof(c->err), -ENOMEM,
					  "Couldn't keep a copy of a T3 set table (%zu bytes)",
					  len);
		memcpy(c->snap[i].mem[f], o->keys.mem[f], len);
		c->snap[i].len[f] = len;
	}
	return 0;
}

static void restore_table(struct cost_ctx *c, const struct cost_case *k)
{
	int i, f = k->family == 6;

	for (i = 0; i < 2; i++)
		if (c->snap[i].obj == k->obj && c->snap[i].mem[f])
			memcpy(c->snap[i].obj->keys.mem[f], c->snap[i].mem[f], c->snap[i].len[f]);
}

static void free_snaps(struct cost_ctx *c)
{
	int i, f;

	for (i = 0; i < 2; i++)
		for (f = 0; f < 2; f++)
			free(c->snap[i].mem[f]);
}

/*
 * A timed run. The wall clock has the resolution (a fraction of a ns over a
 * million packets), the kernel's count has the robustness: it stops while the
 * thread is scheduled out, but is rounded down to whole ns. Where they agree
 * (wall within [kernel, kernel + 1.25): the call itself adds a few us) the wall
 * clock is the measurement. A short case disturbed by the scheduler runs
 * again, up to twice; a case of 100 ns or more, or one never clean, takes the
 * kernel's count + 0.5 ns (the middle of its rounding, 0.5% or less of such a
 * case), counted in `fallbacks`.
 */
static int run_case(struct cost_ctx *c, struct cost_case *k, __u32 repeat, bool timed)
{
	double ns = 0;
	__u32 kns = 0;
	int ret, i;

	if (!timed)
		return run_once(k, repeat, false, NULL, NULL);
	for (i = 0; i < 3; i++) {
		restore_table(c, k);
		ret = run_once(k, repeat, true, &ns, &kns);
		if (ret)
			return ret;
		if (!c->wall || ns < kns + 1.25 || kns >= 100)
			break;
	}
	k->sched[k->nruns] = false;
	if (c->wall && ns >= kns + 1.25) {
		ns = kns + 0.5;
		k->fallbacks++;
		k->sched[k->nruns] = true;
	} else if (!c->wall) {
		ns = kns;
	}
	k->ns[k->nruns] = ns;
	k->kns[k->nruns] = kns;
	k->nruns++;
	return 0;
}

/* Did each case do what it is meant to measure? */
static void check_case(struct cost_case *k)
{
	const struct sluice_stats *d = &k->d;
	__u64 n = k->runs_pkts;

	if (!k->valid)
		return;
	if (k->obj && d->rx != n) {
		snprintf(k->why, sizeof(k->why), "the program counted %llu packets of %llu",
			 (unsigned long long)d->rx, (unsigned long long)n);
		k->valid = false;
		return;
	}
	switch (k->expect) {
	case EXP_DROP_VERDICT:
	case EXP_FLOOR:
		return;
	case EXP_PARSED:
	case EXP_PASS:
		if (d->passed == n && !d->update_failed)
			return;
		break;
	case EXP_DROP:
		/* one packet per run may pass: the bucket refills at 1/s */
		if (d->dropped + 2ULL * (__u64)k->attempts >= n && d->limited == d->dropped)
			return;
		break;
	case EXP_LOG_CAPPED:
		if (d->passed + d->dropped == n && d->passed <= 64ULL * 64 * (__u64)k->attempts) {
			snprintf(k->why, sizeof(k->why),
				 "sliding-log admits <= 64 per 100 ms: %.4f%% passed, the rest "
				 "is the drop path",
				 100.0 * (double)d->passed / (double)n);
			return;
		}
		break;
	case EXP_NEW_KEYS:
		if (d->passed == n && !d->update_failed) {
			snprintf(k->why, sizeof(k->why), "%.1f%% of packets created a key",
				 100.0 * (double)d->new_keys / (double)n);
			if (k->keys && k->keys <= TABLE_KEYS)
				return;
			if (d->new_keys * 10 >= n * 7)
				return;
		}
		break;
	case EXP_NEW_KEYS_HELD:
		/* A new key's first packet passes; a key met again within the
		 * hour (it was not evicted yet) drops. */
		if (d->passed + d->dropped == n && !d->update_failed && !d->contended &&
		    d->new_keys * 10 >= n * 7 && d->passed >= d->new_keys) {
			snprintf(k->why, sizeof(k->why),
				 "%.1f%% of packets created a key; %u of %u ways held after the "
				 "runs",
				 100.0 * (double)d->new_keys / (double)n, k->held_ways,
				 k->live_ways);
			if (k->held_ways * 100ULL >= k->live_ways * 99ULL && k->live_ways)
				return;
		}
		break;
	case EXP_AGGREGATED:
		if (d->passed == n && !d->update_failed && d->aggregated * 10 >= n * 9) {
			snprintf(k->why, sizeof(k->why),
				 "%.1f%% of packets charged to an aggregate bucket, %.2f%% created "
				 "a key",
				 100.0 * (double)d->aggregated / (double)n,
				 100.0 * (double)d->new_keys / (double)n);
			return;
		}
		break;
	case EXP_RULE:
		if (d->passed == n && k->rule_passed == n)
			return;
		break;
	case EXP_RULE_LOG:
		if (k->rule_counted == n && d->passed <= 64ULL * 64 * (__u64)k->attempts) {
			snprintf(k->why, sizeof(k->why),
				 "sliding-log admits <= 64 per 100 ms: mostly the drop path, under "
				 "its rule");
			return;
		}
		break;
	}
	k->valid = false;
	snprintf(k->why, sizeof(k->why),
		 "counters disagree: rx %llu passed %llu dropped %llu new_keys %llu "
		 "update_failed %llu rule_passed %llu",
		 (unsigned long long)d->rx, (unsigned long long)d->passed,
		 (unsigned long long)d->dropped, (unsigned long long)d->new_keys,
		 (unsigned long long)d->update_failed, (unsigned long long)k->rule_passed);
}

static int read_sysctl_u64(const char *path, __u64 *v)
{
	unsigned long long x;
	FILE *f = fopen(path, "r");
	int ret = -EIO;

	if (!f)
		return -errno;
	if (fscanf(f, "%llu", &x) == 1) {
		*v = x;
		ret = 0;
	}
	fclose(f);
	return ret;
}

static double med(const struct cost_case *k)
{
	double v[MAX_RUNS];

	memcpy(v, k->ns, sizeof(v));
	return bench_median(v, k->nruns);
}

static double kmed(const struct cost_case *k)
{
	double v[MAX_RUNS];

	memcpy(v, k->kns, sizeof(v));
	return bench_median(v, k->nruns);
}

struct mem_row {
	const char *map;
	__u64 bytes;
	__u32 entries;
	__u32 keys; /* keys it holds: entries, or sets x ways */
};

/* One case: what it is, its runs (ns; exact in fs, ns_runs has 6 digits),
 * the program's own time, its counters and whether they agree with it. */
static void json_case(struct sluice_json *j, const struct cost_case *k)
{
	int r;

	json_obj_begin(j, NULL);
	json_str(j, "test", k->test);
	json_str(j, "table", tab_names[k->table]);
	json_u64(j, "family", (__u64)k->family);
	json_str(j, "algo", k->algo < 0 ? "none" : sluice_algo_name((unsigned)k->algo));
	if (k->keys)
		json_u64(j, "keys", k->keys);
	json_f64(j, "ns_median", med(k));
	json_f64(j, "ns_min", bench_min(k->ns, k->nruns));
	json_f64(j, "ns_max", bench_max(k->ns, k->nruns));
	json_f64(j, "kernel_ns_median", kmed(k));
	json_f64(j, "prog_ns", k->prog_ns);
	json_arr_begin(j, "ns_runs");
	for (r = 0; r < k->nruns; r++)
		json_f64(j, NULL, k->ns[r]);
	json_arr_end(j);
	json_arr_begin(j, "fs_runs");
	for (r = 0; r < k->nruns; r++)
		json_u64(j, NULL, (__u64)llround(k->ns[r] * 1e6));
	json_arr_end(j);
	json_arr_begin(j, "sched_runs");
	for (r = 0; r < k->nruns; r++)
		json_u64(j, NULL, k->sched[r]);
	json_arr_end(j);
	json_u64(j, "reruns", (__u64)k->reruns);
	json_arr_begin(j, "discarded_fs_runs");
	for (r = 0; r < k->ndiscarded; r++)
		json_u64(j, NULL, (__u64)llround(k->discarded[r] * 1e6));
	json_arr_end(j);
	json_u64(j, "prog_fs", (__u64)llround(k->prog_ns * 1e6));
	json_u64(j, "packets", k->runs_pkts);
	json_u64(j, "attempts", (__u64)k->attempts);
	json_u64(j, "fallbacks", (__u64)k->fallbacks);
	if (k->obj) {
		json_u64(j, "passed", k->d.passed);
		json_u64(j, "dropped", k->d.dropped);
		json_u64(j, "new_keys", k->d.new_keys);
		json_u64(j, "update_failed", k->d.update_failed);
		json_u64(j, "contended", k->d.contended);
	}
	if (k->prefilled)
		json_u64(j, "prefilled", k->prefilled);
	if (k->live_ways) {
		json_u64(j, "live_ways", k->live_ways);
		json_u64(j, "held_ways", k->held_ways);
	}
	json_bool(j, "valid", k->valid);
	json_str(j, "note", k->why);
	json_obj_end(j);
}

/*
 * The measurements, for tools/bench/render.py: the run's context, every
 * case, the maps' memory and MemAvailable (kB) before the lru scale objects,
 * before the sets ones and after. The renderer derives the rest: the
 * differences and goals, the Markdown tables and the chart data.
 */
static void write_json(struct cost_ctx *c, FILE *f, const char *run_id, __u64 stats_before,
		       const struct mem_row *mem, int nmem, const __s64 *avail_kb)
{
	struct sluice_json j;
	int i;

	json_init(&j, f);
	json_obj_begin(&j, NULL);
	if (run_id)
		json_str(&j, "run_id", run_id);
	json_u64(&j, "repeat", c->repeat);
	json_u64(&j, "runs", (__u64)c->runs);
	json_f64(&j, "spread_limit", SPREAD_LIMIT);
	json_u64(&j, "max_reruns", (__u64)c->max_reruns);
	json_u64(&j, "bpf_stats_enabled_during_timing", stats_before);
	json_str(&j, "ns_per_packet",
		 c->wall ? "wall-clock time of the BPF_PROG_TEST_RUN call / repeat (every program "
			   "held in the XDP dispatcher); kernel_ns is the kernel's own average "
			   "(whole ns, rounded down); prog_ns is run_time_ns / run_cnt with "
			   "bpf_stats on (the program alone, plus one clock read)" :
			   "the kernel's own average (whole ns, rounded down): no spare devices "
			   "were given (-H), so each call's wall time includes two RCU grace "
			   "periods; prog_ns is run_time_ns / run_cnt with bpf_stats on");
	json_bool(&j, "wall", c->wall);
	json_bool(&j, "quick", c->quick);
	json_u64(&j, "table_keys", TABLE_KEYS);
	json_u64(&j, "scale_objects", 2 * NR_SCALE);
	json_arr_begin(&j, "cases");
	for (i = 0; i < c->ncases; i++)
		json_case(&j, &c->cases[i]);
	json_arr_end(&j);
	json_arr_begin(&j, "memory_maps");
	for (i = 0; i < nmem; i++) {
		json_obj_begin(&j, NULL);
		json_str(&j, "map", mem[i].map);
		json_u64(&j, "entries", mem[i].entries);
		json_u64(&j, "keys", mem[i].keys);
		json_u64(&j, "bytes", mem[i].bytes);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_arr_begin(&j, "mem_available_kb");
	for (i = 0; i < 3; i++)
		json_u64(&j, NULL, (__u64)avail_kb[i]);
	json_arr_end(&j);
	json_obj_end(&j);
	json_end(&j);
}

static __s64 mem_available_kb(void)
{
	char line[128];
	long long v = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice-bench cost -o JSON [-r REPEAT] [-n RUNS] [-R RERUNS] [-I RUN_ID]\n"
		"                         [-H DEV,DEV,...] [-q]\n"
		"  -o  the measurements, for tools/bench/render.py (the tables and charts)\n"
		"  -R  measure a case again, at most RERUNS times (default 2, at most %d),\n"
		"      while its runs spread (max - min) over %.0f%% of their median\n"
		"  -I  the run's id (make bench's), written into the JSON\n"
		"  -H  spare veth devices (30) to hold the programs in the XDP dispatcher\n"
		"  -q  quick: T0, T1, T2 and T4 only (to profile a change to the datapath)\n",
		MAX_RERUNS, SPREAD_LIMIT * 100);
}

/*
 * sluice's objects of every case and their rules and prefills, and
 * MemAvailable (kB) in avail[] before the lru scale objects, before the sets
 * ones and after them.
 */
static int load_objects(struct cost_ctx *c, __s64 *avail)
{
	struct bpfrun_opts oo = { .parse_only = true, .max_keys = 1024 };
	unsigned int f, s;
	int i, ret;

	ret = bench_open(&c->parse, &oo);
	if (ret)
		return ret;
	oo.parse_only = false;
	oo.max_keys = 0;
	ret = bench_open(&c->main[TAB_LRU], &oo);
	if (ret)
		return ret;
	/* The sets objects: their own table sized per family, a small LRU one
	 * (no key of theirs goes there). */
	oo.table = BPFRUN_SETS;
	oo.max_keys = 1024;
	oo.sets_keys[0] = oo.sets_keys[1] = 4096;
	ret = bench_open(&c->main[TAB_SETS], &oo);
	if (ret)
		return ret;
	oo.table = BPFRUN_LRU;
	oo.max_keys = 0;
	for (i = TAB_LRU; i <= TAB_SETS; i++) {
		ret = add_rules(c, &c->main[i]);
		if (!ret)
			ret = add_l4_rules(c, &c->main[i]);
		if (ret)
			return ret;
	}
	if (c->quick) {
		avail[2] = mem_available_kb();
		return 0;
	}
	oo.vary_keys = T3_KEYS;
	oo.max_keys = TABLE_KEYS;
	oo.max_log_keys = TABLE_KEYS;
	ret = bench_open(&c->vary[TAB_LRU], &oo);
	if (ret)
		return ret;
	/* Same key capacity: the LRU table holds 1M keys, each sets table 1M
	 * keys of its family (T3 of one family meets 1M keys in both). */
	oo.table = BPFRUN_SETS;
	oo.max_keys = 1024;
	oo.sets_keys[0] = oo.sets_keys[1] = TABLE_KEYS;
	ret = bench_open(&c->vary[TAB_SETS], &oo);
	if (ret)
		return ret;
	oo.max_log_keys = 1024;
	ret = bench_open(&c->held, &oo);
	if (ret)
		return ret;
	ret = prefill_vary(c);
	if (ret)
		return ret;
	ret = snap_table(c, 0, &c->vary[TAB_SETS]);
	if (!ret)
		ret = snap_table(c, 1, &c->held);
	if (ret)
		return ret;
	for (i = TAB_LRU; i <= TAB_SETS; i++) {
		avail[i] = mem_available_kb();
		for (f = 0; f < 2; f++) {
			for (s = 0; s < NR_SCALE; s++) {
				oo.vary_keys = scale_keys[s];
				oo.table = i == TAB_SETS ? BPFRUN_SETS : BPFRUN_LRU;
				oo.max_keys = i == TAB_SETS ? 1024 : TABLE_KEYS;
				/* sets: 1M keys of the scale case's family, 4 of the other */
				oo.sets_keys[f] = TABLE_KEYS;
				oo.sets_keys[!f] = 4;
				ret = bench_open(&c->scale[i][f][s], &oo);
				if (ret)
					return ret;
			}
		}
	}
	avail[2] = mem_available_kb();
	return 0;
}

static void close_objects(struct cost_ctx *c)
{
	unsigned int f, s;
	int i;

	for (i = TAB_LRU; i <= TAB_SETS; i++) {
		for (f = 0; f < 2; f++)
			for (s = 0; s < NR_SCALE; s++)
				bpfrun_close(&c->scale[i][f][s]);
		bpfrun_close(&c->vary[i]);
		bpfrun_close(&c->main[i]);
	}
	bpfrun_close(&c->held);
	bpfrun_close(&c->parse);
	free_snaps(c);
}

/* Every timed program into the XDP dispatcher (bench_hold()): c->wall, or
 * the kernel's whole-ns count when the devices given run out. */
static void hold_programs(struct cost_ctx *c)
{
	int fds[32], nfd = 0, i;
	unsigned int f, s;

	c->wall = bench_held();
	fds[nfd++] = bpf_program__fd(c->drop->progs.bench_drop);
	fds[nfd++] = bpf_program__fd(c->floor->progs.floor_parse);
	fds[nfd++] = bpf_program__fd(c->floor->progs.floor_hot);
	fds[nfd++] = bpf_program__fd(c->floor->progs.floor_sip);
	if (!c->quick)
		fds[nfd++] = bpf_program__fd(c->floor->progs.floor_rand);
	fds[nfd++] = c->parse.prog_fd;
	fds[nfd++] = c->main[TAB_LRU].prog_fd;
	fds[nfd++] = c->main[TAB_SETS].prog_fd;
	if (!c->quick) {
		fds[nfd++] = c->vary[TAB_LRU].prog_fd;
		fds[nfd++] = c->vary[TAB_SETS].prog_fd;
		fds[nfd++] = c->held.prog_fd;
	}
	for (i = TAB_LRU; i <= TAB_SETS && !c->quick; i++)
		for (f = 0; f < 2; f++)
			for (s = 0; s < NR_SCALE; s++)
				fds[nfd++] = c->scale[i][f][s].prog_fd;
	for (i = 0; c->wall && i < nfd; i++) {
		if (bench_hold(fds[i])) {
			fprintf(stderr,
				"sluice-bench: Couldn't hold program %d of %d in the "
				"dispatcher (give more devices with -H): timing by the "
				"kernel's whole-ns average\n",
				i + 1, nfd);
			c->wall = false;
		}
	}
}

/* Per map: the 1M-key bucket and log tables of T3, and the sets tables
 * (1M keys a family) of T3: *nmem rows (0 under -q). 0, or -ENOENT. */
static int map_memory(struct cost_ctx *c, struct mem_row *mem, int *nmem)
{
	*nmem = 0;
	mem[0].map = "sluice_buckets (lru, both families)";
	mem[1].map = "sluice_logs (sliding-log, both tables)";
	mem[2].map = "sluice_sets4 (sets, IPv4)";
	mem[3].map = "sluice_sets6 (sets, IPv6)";
	if (c->quick)
		return 0;
	if (bench_map_memory(c->vary[TAB_LRU].buckets_fd, &mem[0].bytes, &mem[0].entries) ||
	    bench_map_memory(c->vary[TAB_LRU].logs_fd, &mem[1].bytes, &mem[1].entries) ||
	    bench_map_memory(c->vary[TAB_SETS].sets_fd[0], &mem[2].bytes, &mem[2].entries) ||
	    bench_map_memory(c->vary[TAB_SETS].sets_fd[1], &mem[3].bytes, &mem[3].entries))
		return -ENOENT;
	mem[0].keys = mem[0].entries;
	mem[1].keys = mem[1].entries;
	mem[2].keys = mem[2].entries * SLUICE_SET_WAYS;
	mem[3].keys = mem[3].entries * SLUICE_SET_WAYS;
	*nmem = 4;
	return 0;
}

/* Do the case's runs spread (max - min) wider than SPREAD_LIMIT of their
 * median? */
static bool wide(const struct cost_case *k)
{
	double m = med(k);

	return k->nruns > 1 &&
	       bench_max(k->ns, k->nruns) - bench_min(k->ns, k->nruns) > SPREAD_LIMIT * m;
}

/*
 * Every case whose runs spread too wide measured again: all its runs, in
 * c->runs rounds of the wide cases alone (after a warm-up run each), up to
 * c->max_reruns times. The new runs replace the old (kept in k->discarded):
 * the last measurement stands, whatever it is, so a rerun never picks the
 * narrower of two; render.py flags a case still wide. Counters keep adding
 * up, as check_case() wants (packets and attempts count every run).
 */
static int rerun_wide(struct cost_ctx *c)
{
	int pass, i, r, n, ret;

	for (pass = 0; pass < c->max_reruns; pass++) {
		n = 0;
		for (i = 0; i < c->ncases; i++) {
			struct cost_case *k = &c->cases[i];

			k->again = wide(k);
			if (!k->again)
				continue;
			memcpy(k->discarded + k->ndiscarded, k->ns,
			       (size_t)k->nruns * sizeof(double));
			k->ndiscarded += k->nruns;
			k->nruns = 0;
			k->reruns++;
			n++;
			ret = run_case(c, k, 1000, false);
			if (ret)
				return ret;
		}
		if (!n)
			return 0;
		fprintf(stderr,
			"sluice-bench cost: %d cases spread wider than %.0f%% of their median: "
			"measured again (%d of at most %d)\n",
			n, SPREAD_LIMIT * 100, pass + 1, c->max_reruns);
		for (r = 0; r < c->runs; r++) {
			for (i = 0; i < c->ncases; i++) {
				if (!c->cases[i].again)
					continue;
				ret = run_case(c, &c->cases[i], c->repeat, true);
				if (ret)
					return ret;
			}
		}
	}
	return 0;
}

/* A warm-up round, then the timed rounds, and the wide cases again
 * (rerun_wide()); then the sets T3 tables' held ways, and every case checked
 * against its counters. */
static int run_rounds(struct cost_ctx *c)
{
	int i, r, ret;

	/* Warm up: JIT images, caches, and the T2b buckets into their drop state. */
	for (i = 0; i < c->ncases; i++) {
		ret = run_case(c, &c->cases[i], 1000, false);
		if (ret)
			return ret;
	}
	for (r = 0; r < c->runs; r++) {
		for (i = 0; i < c->ncases; i++) {
			ret = run_case(c, &c->cases[i], c->repeat, true);
			if (ret)
				return ret;
		}
		fprintf(stderr, "sluice-bench cost: round %d of %d done\n", r + 1, c->runs);
	}
	ret = rerun_wide(c);
	if (ret)
		return ret;
	/* The sets T3 tables after the runs: how many ways hold a debt. */
	for (i = 0; i < c->ncases; i++) {
		struct cost_case *k = &c->cases[i];

		if (k->table == TAB_SETS && !strncmp(k->test, "T3", 2))
			bench_sets_count(k->obj, (__u8)k->family,
					 bench_now_ns() << SLUICE_TICK_SHIFT, &k->live_ways,
					 &k->held_ways);
	}
	for (i = 0; i < c->ncases; i++)
		check_case(&c->cases[i]);
	return 0;
}

/* One more run of each case with bpf_stats on: the program's own time. */
static int time_programs(struct cost_ctx *c)
{
	int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME), i, ret = 0;

	if (stats_fd < 0)
		fprintf(stderr, "sluice-bench: Couldn't enable bpf_stats: %s (prog_ns left 0)\n",
			strerror(errno));
	for (i = 0; stats_fd >= 0 && i < c->ncases; i++) {
		struct cost_case *k = &c->cases[i];
		__u64 t0, n0, t1, n1;
		__u32 rep = c->repeat / 10 ? c->repeat / 10 : 1;

		if (k->obj)
			k->prog_fd = k->obj->prog_fd;
		if (bench_prog_runtime(k->prog_fd, &t0, &n0))
			break;
		ret = run_once(k, rep, false, NULL, NULL);
		if (ret)
			break;
		if (bench_prog_runtime(k->prog_fd, &t1, &n1))
			break;
		if (n1 > n0)
			k->prog_ns = (double)(t1 - t0) / (double)(n1 - n0);
	}
	if (stats_fd >= 0)
		close(stats_fd);
	return ret;
}

/* The options into c and *json_path: -1, or the exit status. */
static int cost_args(int argc, char **argv, struct cost_ctx *c, const char **json_path,
		     const char **run_id)
{
	int opt;

	while ((opt = getopt(argc, argv, "o:r:n:R:I:H:qh")) != -1) {
		switch (opt) {
		case 'R':
			c->max_reruns = atoi(optarg);
			break;
		case 'I':
			*run_id = optarg;
			break;
		case 'q':
			c->quick = true;
			break;
		case 'H':
			if (bench_hold_devices(optarg))
				return SLUICE_EXIT_USAGE;
			break;
		case 'o':
			*json_path = optarg;
			break;
		case 'r':
			c->repeat = (__u32)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			c->runs = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return SLUICE_EXIT_USAGE;
		}
	}
	if (!*json_path || c->repeat < 1 || c->runs < 1 || c->runs > MAX_RUNS ||
	    c->max_reruns < 0 || c->max_reruns > MAX_RERUNS) {
		usage(stderr);
		return SLUICE_EXIT_USAGE;
	}
	return -1;
}

int cmd_cost(int argc, char **argv)
{
	const char *json_path = NULL, *run_id = NULL;
	struct cost_ctx c = { .repeat = 1000000, .runs = 5, .max_reruns = 2 };
	struct mem_row mem[4];
	__u64 stats_before = 0;
	__s64 avail[3] = { 0 };
	FILE *js;
	int ret, nmem = 0;

	ret = cost_args(argc, argv, &c, &json_path, &run_id);
	if (ret >= 0)
		return ret;
	read_sysctl_u64("/proc/sys/kernel/bpf_stats_enabled", &stats_before);
	/* One CPU for every run: no migration between runs, the same caches. */
	bench_pin_cpu(bench_ncpus_online() - 1);
	c.drop = drop_bpf__open_and_load();
	if (!c.drop) {
		ret = -errno;
		fprintf(stderr, "sluice-bench: Couldn't load the drop program: %s\n",
			strerror(-ret));
		return SLUICE_EXIT_RUNTIME;
	}
	c.floor = floor_bpf__open_and_load();
	if (!c.floor) {
		ret = -errno;
		fprintf(stderr, "sluice-bench: Couldn't load the floor programs: %s\n",
			strerror(-ret));
		drop_bpf__destroy(c.drop);
		return SLUICE_EXIT_RUNTIME;
	}
	ret = load_objects(&c, avail);
	if (!ret)
		ret = build_cases(&c);
	if (!ret) {
		hold_programs(&c);
		ret = map_memory(&c, mem, &nmem);
	}
	if (ret) {
		fprintf(stderr, "sluice-bench: Couldn't set up the cost benchmark: %s%s%s\n",
			strerror(ret < 0 ? -ret : ret), c.err[0] ? ": " : "", c.err);
		goto out;
	}
	ret = run_rounds(&c);
	if (!ret)
		ret = time_programs(&c);
	if (ret) {
		fprintf(stderr, "sluice-bench: Couldn't run BPF_PROG_TEST_RUN: %s\n",
			strerror(-ret));
		goto out;
	}
	js = fopen(json_path, "w");
	if (!js) {
		ret = -errno;
		fprintf(stderr, "sluice-bench: Couldn't write the results: %s\n", strerror(-ret));
		goto out;
	}
	write_json(&c, js, run_id, stats_before, mem, nmem, avail);
	fclose(js);
out:
	bench_hold_release();
	close_objects(&c);
	floor_bpf__destroy(c.floor);
	drop_bpf__destroy(c.drop);
	free(c.cases);
	return ret ? SLUICE_EXIT_RUNTIME : SLUICE_EXIT_OK;
}
