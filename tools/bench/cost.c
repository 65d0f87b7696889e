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
 *   T2fleet  T2a (token bucket) of a fleet-wide policy, no agent (N unknown:
 *        the whole limit, usage recorded); T2fleet3 the same synced with 3 boxes
 *   scale the token bucket at 1 .. 4M keys against a full 1M-key table
 *
 * Every run's verdicts are checked against the datapath's own counters; a
 * case whose counters disagree with what it should have done is marked
 * invalid rather than reported as a cost.
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

#include "bench.h"
#include "drop.skel.h"
#include "sluice.skel.h"

#define MAX_RUNS 32
#define NR_RULES 1000
#define T3_KEYS (16U << 20)
#define TABLE_KEYS (1U << 20)
#define HUGE_RATE 1000000000ULL /* 1e9/s: a packet costs 1 ns of a bucket */

static const __u32 scale_keys[] = { 1, 1000, 65536, 1U << 20, 4U << 20 };
#define NR_SCALE (sizeof(scale_keys) / sizeof(scale_keys[0]))

enum expect {
	EXP_DROP_VERDICT, /* T0: the program's return value */
	EXP_PARSED, /* T1: every packet passed after the parse */
	EXP_PASS, /* every packet passed */
	EXP_DROP, /* every packet but the burst dropped */
	EXP_LOG_CAPPED, /* sliding-log: 64 per 100 ms admitted, the rest dropped */
	EXP_NEW_KEYS, /* most packets created a key; none failed */
	EXP_AGGREGATED, /* most packets were charged to an aggregate bucket */
	EXP_RULE, /* every packet passed under the rule in `slot` */
	EXP_RULE_LOG, /* every packet counted by the sliding-log rule in `slot` */
};

struct cost_case {
	const char *test;
	int family; /* 4 or 6 */
	int algo; /* -1: none */
	__u32 keys; /* scale: distinct keys */
	struct bench_obj *obj; /* NULL: the bare drop program */
	int prog_fd;
	struct sluice_settings set;
	struct bench_frame frame;
	enum expect expect;
	__u32 slot;
	__u32 fleet_live; /* sluice_fleet.live for this case (synced when > 0) */

	int nruns;
	double ns[MAX_RUNS];
	double kns[MAX_RUNS];
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
	bool wall; /* every program held in the dispatcher: time by the wall clock */
	bool quick; /* T0, T1, T2, T4 only: for profiling the datapath */
	struct drop_bpf *drop;
	struct bench_obj parse, main, vary, scale[2][NR_SCALE];
	struct cost_case *cases;
	int ncases, cap;
	__u16 next_gen;
	char err[SLUICE_ERR_LEN];
};

static const char *const src4 = "198.18.7.1", *const dst4 = "198.18.0.2";
static const char *const src6 = "2001:2:0:7::1", *const dst6 = "2001:2::2";

static struct cost_case *add_case(struct cost_ctx *c, const char *test, int family, int algo)
{
	struct cost_case *k;

	if (c->ncases == c->cap) {
		int cap = c->cap ? 2 * c->cap : 64;
		struct cost_case *n = realloc(c->cases, (size_t)cap * sizeof(*n));

		if (!n)
			return NULL;
		c->cases = n;
		c->cap = cap;
	}
	k = &c->cases[c->ncases++];
	memset(k, 0, sizeof(*k));
	k->test = test;
	k->family = family;
	k->algo = algo;
	k->valid = true;
	sluice_settings_init(&k->set);
	if (bench_frame_build(&k->frame, family == 4 ? src4 : src6, family == 4 ? dst4 : dst6))
		return NULL;
	return k;
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
static int add_rules(struct cost_ctx *c)
{
	struct sluice_policy def;
	char cidr[64];
	__u32 slot = 1;
	int i, a, ret;

	ret = bench_policy(&def, SLUICE_ALGO_TOKEN_BUCKET, 100, SLUICE_NS_PER_SEC, 0, 0, c->err,
			   sizeof(c->err));
	if (ret)
		return ret;
#define RULE(fmt, ...)                                                                     \
	do {                                                                               \
		snprintf(cidr, sizeof(cidr), fmt, __VA_ARGS__);                              \
		def.tag = SLUICE_TAG(slot, def.algo, 1);                                   \
		slot++;                                                                    \
		ret = bench_rule_add(&c->main, cidr, 0, &def);                             \
		if (ret)                                                                   \
			return ret;                                                        \
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
		p.tag = SLUICE_TAG(slot, a, 1);
		snprintf(cidr, sizeof(cidr), "198.18.7.%d/32", 10 + a);
		ret = bench_rule_add(&c->main, cidr, 0, &p);
		if (ret)
			return ret;
		p.tag = SLUICE_TAG(slot + 1, a, 1);
		snprintf(cidr, sizeof(cidr), "2001:2:0:7::%x/128", 10 + a);
		ret = bench_rule_add(&c->main, cidr, 0, &p);
		if (ret)
			return ret;
		slot += 2;
	}
	if (slot - 1 != NR_RULES)
		return -EINVAL;
	return 0;
}

/* A case of one policy: made by make_policy(c, policy, algo) on obj, with a
 * generation of its own (fresh buckets). NULL with errno set. */
static struct cost_case *policy_case(struct cost_ctx *c, const char *test, int fam, int algo,
				     struct bench_obj *obj,
				     int (*make_policy)(struct cost_ctx *, struct sluice_policy *, int))
{
	struct cost_case *k = add_case(c, test, fam, algo);
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

static int build_cases(struct cost_ctx *c)
{
	static const int fams[] = { 4, 6 };
	struct cost_case *k;
	__u8 src[16];
	unsigned int f, s;
	int a, ret;

	for (f = 0; f < 2; f++) {
		int fam = fams[f];

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

		for (a = 0; a < SLUICE_ALGO_MAX; a++) {
			k = policy_case(c, "T2a", fam, a, &c->main, huge_policy);
			if (!k)
				return -errno;
			k->expect = a == SLUICE_ALGO_SLIDING_LOG ? EXP_LOG_CAPPED : EXP_PASS;

			k = policy_case(c, "T2b", fam, a, &c->main, tiny_policy);
			if (!k)
				return -errno;
			k->expect = EXP_DROP;

			if (a == SLUICE_ALGO_TOKEN_BUCKET) {
				static const char *const names[] = { "T2fleet", "T2fleet3" };
				int n;

				for (n = 0; n < 2; n++) {
					k = policy_case(c, names[n], fam, a, &c->main, huge_policy);
					if (!k)
						return -errno;
					k->set.def.flags |= SLUICE_POLICY_FLEET;
					k->fleet_live = n ? 3 : 0;
					k->expect = EXP_PASS;
				}
			}
			if (c->quick)
				goto t4;
			k = policy_case(c, "T3", fam, a, &c->vary, huge_policy);
			if (!k)
				return -errno;
			/* bench_vary_keys writes the low 32 bits of the address: an
			 * IPv6 key must keep them to be a new key. */
			k->set.def.prefix6 = 128;
			k->expect = EXP_NEW_KEYS;

			if (a == SLUICE_ALGO_TOKEN_BUCKET) {
				k = policy_case(c, "T3agg", fam, a, &c->vary, huge_policy);
				if (!k)
					return -errno;
				ret = sluice_limit_set(&k->set.new_keys, 1000, SLUICE_NS_PER_SEC,
						       1000, c->err, sizeof(c->err));
				if (ret)
					return ret;
				k->set.def.prefix6 = 128;
				/* The varied bits are the first 24 of an IPv4 key
				 * (little-endian u32 over the address) and the last 32
				 * of an IPv6 one: aggregate by /8 and by the default /48. */
				k->set.agg4 = 8;
				k->expect = EXP_AGGREGATED;
			}
t4:
			k = add_case(c, "T4", fam, a);
			if (!k)
				return -ENOMEM;
			k->obj = &c->main;
			k->set.nr_rules = NR_RULES;
			k->set.rules_gen = 0;
			/* The algorithm's host rule: slots 991.. in add_rules(). */
			k->slot = NR_RULES - 2 * SLUICE_ALGO_MAX + 1 + 2 * a + f;
			k->expect = a == SLUICE_ALGO_SLIDING_LOG ? EXP_RULE_LOG : EXP_RULE;
			{
				char host[64];

				if (fam == 4)
					snprintf(host, sizeof(host), "198.18.7.%d", 10 + a);
				else
					snprintf(host, sizeof(host), "2001:2:0:7::%x", 10 + a);
				if (bench_frame_build(&k->frame, host, fam == 4 ? dst4 : dst6))
					return -EINVAL;
			}
		}
	}

	/* Scale: the default algorithm, each key count its own object. */
	for (f = 0; f < 2 && !c->quick; f++) {
		int fam = fams[f];

		for (s = 0; s < NR_SCALE; s++) {
			struct bench_obj *o = &c->scale[f][s];

			k = add_case(c, "scale", fam, SLUICE_ALGO_TOKEN_BUCKET);
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
			/* The table full of the keys the packets will ask for
			 * (all of them up to 1M, a quarter of them at 4M). */
			memset(src, 0, sizeof(src));
			memcpy(src, k->frame.data + 14 + (fam == 4 ? 12 : 8), fam == 4 ? 4 : 16);
			ret = bench_prefill(o->buckets_fd, sizeof(struct sluice_bucket),
					    k->set.def.tag, (__u8)fam, fam == 4 ? 32 : 128, src, 0,
					    TABLE_KEYS);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Fill the T3 tables with keys no packet will ask for: every T3 packet then
 * meets a full table, whichever of the ten T3 cases runs first. */
static int prefill_vary(struct cost_ctx *c)
{
	__u8 src[16] = { 198, 18, 9, 0 };
	/* A generation no case uses (fresh_tag() counts up from 1). */
	__u32 tag = SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 0x1fff);
	int ret;

	ret = bench_prefill(c->vary.buckets_fd, sizeof(struct sluice_bucket), tag, 4, 32, src,
			    T3_KEYS, TABLE_KEYS);
	if (ret)
		return ret;
	return bench_prefill(c->vary.logs_fd, sizeof(struct sluice_log), tag, 4, 32, src,
			     T3_KEYS, TABLE_KEYS);
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

		bench_obj_set(k->obj, &k->set);
		if (bpf_map_update_elem(bpf_map__fd(k->obj->skel->maps.sluice_fleet), &zero, &fl,
					BPF_ANY))
			return -errno;
		k->prog_fd = k->obj->prog_fd;
		if (bench_obj_stats(k->obj, &before) || bench_obj_rstats(k->obj, k->slot, &rb))
			return -errno;
	}
	ret = bench_test_run(k->prog_fd, &k->frame, repeat, ns, kns, &retval);
	if (ret)
		return ret;
	if (k->expect == EXP_DROP_VERDICT && retval != XDP_DROP) {
		k->valid = false;
		snprintf(k->why, sizeof(k->why), "verdict %u, not XDP_DROP", retval);
	}
	if (k->obj) {
		__u64 *a = (__u64 *)&after, *b = (__u64 *)&before, *d = (__u64 *)&k->d;
		size_t i;

		if (bench_obj_stats(k->obj, &after) || bench_obj_rstats(k->obj, k->slot, &ra))
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
		ret = run_once(k, repeat, true, &ns, &kns);
		if (ret)
			return ret;
		if (!c->wall || ns < kns + 1.25 || kns >= 100)
			break;
	}
	if (c->wall && ns >= kns + 1.25) {
		ns = kns + 0.5;
		k->fallbacks++;
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

static struct cost_case *find(struct cost_ctx *c, const char *test, int family, int algo,
			      __u32 keys)
{
	int i;

	for (i = 0; i < c->ncases; i++) {
		struct cost_case *k = &c->cases[i];

		if (!strcmp(k->test, test) && k->family == family && k->algo == algo &&
		    k->keys == keys)
			return k;
	}
	return NULL;
}

static double med(struct cost_case *k)
{
	double v[MAX_RUNS];

	if (!k)
		return NAN;
	memcpy(v, k->ns, sizeof(v));
	return bench_median(v, k->nruns);
}

static double kmed(struct cost_case *k)
{
	double v[MAX_RUNS];

	memcpy(v, k->kns, sizeof(v));
	return bench_median(v, k->nruns);
}

static void cell(FILE *f, struct cost_case *k)
{
	if (!k) {
		fprintf(f, " - |");
		return;
	}
	fprintf(f, " %.1f [%.1f-%.1f]%s |", med(k), bench_min(k->ns, k->nruns),
		bench_max(k->ns, k->nruns), k->valid ? "" : " INVALID");
}

struct mem_row {
	const char *map;
	__u64 bytes;
	__u32 entries;
};

static void write_outputs(struct cost_ctx *c, FILE *js, FILE *md, FILE *dat, __u64 stats_before,
			  const struct mem_row *mem, int nmem, __s64 meminfo_delta_kb)
{
	static const int fams[] = { 4, 6 };
	struct sluice_json j;
	bool goal_t2 = true, goal_t3 = true;
	double worst_t2 = 0, worst_t3 = 0;
	int i, a, f;
	unsigned int s;

	json_init(&j, js);
	json_obj_begin(&j, NULL);
	json_u64(&j, "repeat", c->repeat);
	json_u64(&j, "runs", (__u64)c->runs);
	json_u64(&j, "bpf_stats_enabled_during_timing", stats_before);
	json_str(&j, "ns_per_packet",
		 c->wall ? "wall-clock time of the BPF_PROG_TEST_RUN call / repeat (every program "
			   "held in the XDP dispatcher); kernel_ns is the kernel's own average "
			   "(whole ns, rounded down); prog_ns is run_time_ns / run_cnt with "
			   "bpf_stats on (the program alone, plus one clock read)"
			 : "the kernel's own average (whole ns, rounded down): no spare devices "
			   "were given (-H), so each call's wall time includes two RCU grace "
			   "periods; prog_ns is run_time_ns / run_cnt with bpf_stats on");
	json_arr_begin(&j, "cases");
	for (i = 0; i < c->ncases; i++) {
		struct cost_case *k = &c->cases[i];

		json_obj_begin(&j, NULL);
		json_str(&j, "test", k->test);
		json_u64(&j, "family", (__u64)k->family);
		json_str(&j, "algo", k->algo < 0 ? "none" : sluice_algo_name((unsigned)k->algo));
		if (k->keys)
			json_u64(&j, "keys", k->keys);
		json_f64(&j, "ns_median", med(k));
		json_f64(&j, "ns_min", bench_min(k->ns, k->nruns));
		json_f64(&j, "ns_max", bench_max(k->ns, k->nruns));
		json_f64(&j, "kernel_ns_median", kmed(k));
		json_f64(&j, "prog_ns", k->prog_ns);
		json_arr_begin(&j, "ns_runs");
		for (a = 0; a < k->nruns; a++)
			json_f64(&j, NULL, k->ns[a]);
		json_arr_end(&j);
		json_u64(&j, "packets", k->runs_pkts);
		json_u64(&j, "attempts", (__u64)k->attempts);
		json_u64(&j, "fallbacks", (__u64)k->fallbacks);
		if (k->obj) {
			json_u64(&j, "passed", k->d.passed);
			json_u64(&j, "dropped", k->d.dropped);
			json_u64(&j, "new_keys", k->d.new_keys);
			json_u64(&j, "update_failed", k->d.update_failed);
		}
		json_bool(&j, "valid", k->valid);
		json_str(&j, "note", k->why);
		json_obj_end(&j);
	}
	json_arr_end(&j);

	fprintf(md, "### In-kernel cost per packet (BPF_PROG_TEST_RUN)\n\n");
	fprintf(md, "ns per packet (%s), median [min-max] of %d interleaved runs of %u packets; "
		    "bpf_stats was %s while timing. T0 = bare XDP_DROP, T1 = parse only, T2a = "
		    "one key under its limit, T2b = one key over it, T3 = a new key per packet "
		    "into a full 1M-key table, T4 = T2a with 1,000 CIDR rules.\n\n",
		c->wall ? "wall clock / repeat" : "kernel-reported, whole ns", c->runs, c->repeat,
		stats_before ? "ON (adds its own cost to every case)" : "off");
	fprintf(md, "| fam | algo | T0 drop | T1 parse | T2a pass | T2b drop | T3 new key | "
		    "T4 1000 rules | T2a-T1 | T2b-T1 | T3-T1 | T4-T2a | T2a/T0 | T3/T0 |\n");
	fprintf(md, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	json_arr_begin(&j, "derived");
	for (f = 0; f < 2; f++) {
		struct cost_case *t0 = find(c, "T0", fams[f], -1, 0);
		struct cost_case *t1 = find(c, "T1", fams[f], -1, 0);

		for (a = 0; a < SLUICE_ALGO_MAX; a++) {
			struct cost_case *t2a = find(c, "T2a", fams[f], a, 0);
			struct cost_case *t2b = find(c, "T2b", fams[f], a, 0);
			struct cost_case *t3 = find(c, "T3", fams[f], a, 0);
			struct cost_case *t4 = find(c, "T4", fams[f], a, 0);
			double d2a = med(t2a) - med(t1), d2b = med(t2b) - med(t1);
			double d3 = med(t3) - med(t1), d4 = med(t4) - med(t2a);

			fprintf(md, "| IPv%d | %s |", fams[f], sluice_algo_name((unsigned)a));
			cell(md, t0);
			cell(md, t1);
			cell(md, t2a);
			cell(md, t2b);
			cell(md, t3);
			cell(md, t4);
			fprintf(md, " %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |\n", d2a, d2b, d3,
				d4, med(t2a) / med(t0), med(t3) / med(t0));
			json_obj_begin(&j, NULL);
			json_u64(&j, "family", (__u64)fams[f]);
			json_str(&j, "algo", sluice_algo_name((unsigned)a));
			json_f64(&j, "t2a_minus_t1", d2a);
			json_f64(&j, "t2b_minus_t1", d2b);
			json_f64(&j, "t3_minus_t1", d3);
			json_f64(&j, "t4_minus_t2a", d4);
			json_f64(&j, "t1_over_t0", med(t1) / med(t0));
			json_f64(&j, "t2a_over_t0", med(t2a) / med(t0));
			json_f64(&j, "t2b_over_t0", med(t2b) / med(t0));
			json_f64(&j, "t3_over_t0", med(t3) / med(t0));
			json_f64(&j, "t4_over_t0", med(t4) / med(t0));
			json_obj_end(&j);
			/* sliding-log's T2a is its drop path: judged by T2b alone */
			if (a != SLUICE_ALGO_SLIDING_LOG && d2a > worst_t2)
				worst_t2 = d2a;
			if (d2b > worst_t2)
				worst_t2 = d2b;
			if (d3 > worst_t3)
				worst_t3 = d3;
		}
	}
	json_arr_end(&j);
	goal_t2 = worst_t2 <= 40.0;
	goal_t3 = worst_t3 <= 250.0;
	{
		int fb = 0, runs = 0;

		for (i = 0; i < c->ncases; i++) {
			fb += c->cases[i].fallbacks;
			runs += c->cases[i].nruns;
		}
		fprintf(md, "\n%d of %d timed runs were disturbed (the thread was scheduled "
			    "out) and are timed by the kernel's whole-ns count + 0.5.\n", fb, runs);
		json_u64(&j, "fallback_runs", (__u64)fb);
	}
	fprintf(md, "\nNotes:");
	for (i = 0; i < c->ncases; i++) {
		struct cost_case *k = &c->cases[i];

		if (k->why[0] && strcmp(k->test, "scale"))
			fprintf(md, "\n- %s IPv%d %s: %s%s", k->test, k->family,
				k->algo < 0 ? "" : sluice_algo_name((unsigned)k->algo), k->why,
				k->valid ? "" : " (INVALID)");
	}
	fprintf(md, "\n- T3 and scale key IPv6 by /128: bench_vary_keys writes the low 32 "
		    "bits of the address.\n\n");
	for (f = 0; f < 2; f++) {
		static const char *const tests[] = { "T0", "T1", "T2a", "T2b", "T3", "T4" };
		unsigned int t;

		fprintf(md, "Program alone (bpf_stats run_time_ns / run_cnt, one clock read "
			    "included), token bucket, IPv%d:", fams[f]);
		for (t = 0; t < sizeof(tests) / sizeof(tests[0]); t++) {
			struct cost_case *k = find(c, tests[t], fams[f], t < 2 ? -1 : 0, 0);

			if (k)
				fprintf(md, " %s %.1f ns%s", tests[t], k->prog_ns,
					t + 1 < sizeof(tests) / sizeof(tests[0]) ? "," : ".");
		}
		fprintf(md, "\n\n");
	}
	for (f = 0; f < 2; f++) {
		struct cost_case *k = find(c, "T3agg", fams[f], 0, 0);
		struct cost_case *t1 = find(c, "T1", fams[f], -1, 0);

		if (k)
			fprintf(md, "T3agg IPv%d (T3, token bucket, with the new-key limit on: "
				    "1000/s, then aggregate buckets): %.1f [%.1f-%.1f] ns, %.1f ns "
				    "over T1.\n\n",
				fams[f], med(k), bench_min(k->ns, k->nruns),
				bench_max(k->ns, k->nruns), med(k) - med(t1));
	}
	for (f = 0; f < 2; f++) {
		struct cost_case *t2 = find(c, "T2a", fams[f], 0, 0);
		struct cost_case *f0 = find(c, "T2fleet", fams[f], 0, 0);
		struct cost_case *f3 = find(c, "T2fleet3", fams[f], 0, 0);

		if (t2 && f0 && f3)
			fprintf(md, "Fleet-wide policy, IPv%d (T2a, token bucket, marked --fleet; "
				    "every packet passes and adds its cost to sluice_fleet_use): no "
				    "agent %.1f ns (%+.1f over T2a), 3 boxes synced %.1f ns (%+.1f).\n\n",
				fams[f], med(f0), med(f0) - med(t2), med(f3), med(f3) - med(t2));
	}
	fprintf(md, "Goal T2-T1 <= 40 ns: %s (worst %.1f ns). ", goal_t2 ? "met" : "MISSED",
		worst_t2);
	if (c->quick)
		fprintf(md, "T3 not run (-q).\n\n");
	else
		fprintf(md, "Goal T3-T1 <= 250 ns: %s (worst %.1f ns).\n\n",
			goal_t3 ? "met" : "MISSED", worst_t3);
	json_obj_begin(&j, "goals");
	json_f64(&j, "worst_t2_minus_t1", worst_t2);
	json_bool(&j, "t2_minus_t1_le_40ns", goal_t2);
	json_f64(&j, "worst_t3_minus_t1", worst_t3);
	json_bool(&j, "t3_minus_t1_le_250ns", goal_t3);
	json_obj_end(&j);

	if (c->quick)
		goto memory;
	/* Scale */
	fprintf(md, "### Cost per packet against key count (token bucket, 1M-key table)\n\n");
	fprintf(md, "| keys | IPv4 ns | IPv6 ns | IPv4 new keys | IPv6 new keys | IPv4 /T0 |\n");
	fprintf(md, "|---|---|---|---|---|---|\n");
	fprintf(dat, "# keys v4_median v4_min v4_max v6_median v6_min v6_max t0_v4\n");
	for (s = 0; s < NR_SCALE; s++) {
		struct cost_case *k4 = find(c, "scale", 4, 0, scale_keys[s]);
		struct cost_case *k6 = find(c, "scale", 6, 0, scale_keys[s]);
		struct cost_case *t0 = find(c, "T0", 4, -1, 0);

		fprintf(md, "| %u |", scale_keys[s]);
		cell(md, k4);
		cell(md, k6);
		fprintf(md, " %.1f%% | %.1f%% | %.2f |\n",
			100.0 * (double)k4->d.new_keys / (double)k4->runs_pkts,
			100.0 * (double)k6->d.new_keys / (double)k6->runs_pkts, med(k4) / med(t0));
		fprintf(dat, "%u %.2f %.2f %.2f %.2f %.2f %.2f %.2f\n", scale_keys[s], med(k4),
			bench_min(k4->ns, k4->nruns), bench_max(k4->ns, k4->nruns), med(k6),
			bench_min(k6->ns, k6->nruns), bench_max(k6->ns, k6->nruns), med(t0));
	}
	fprintf(md, "\n");

memory:
	/* Memory */
	fprintf(md, "### sluice memory per key\n\n| map | entries | bytes | "
		    "bytes per key |\n|---|---|---|---|\n");
	json_arr_begin(&j, "memory");
	for (i = 0; i < nmem; i++) {
		fprintf(md, "| %s | %u | %llu | %.1f |\n", mem[i].map, mem[i].entries,
			(unsigned long long)mem[i].bytes, (double)mem[i].bytes / mem[i].entries);
		json_obj_begin(&j, NULL);
		json_str(&j, "map", mem[i].map);
		json_u64(&j, "entries", mem[i].entries);
		json_u64(&j, "bytes", mem[i].bytes);
		json_f64(&j, "bytes_per_key", (double)mem[i].bytes / mem[i].entries);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	if (nmem)
		fprintf(md, "\nMemAvailable fell by %lld kB while the %d scale objects (1M-key "
		    "table each) were loaded and filled: %.1f bytes per key (includes the programs "
		    "and their other maps; other activity on the machine adds noise).\n\n",
		(long long)meminfo_delta_kb, (int)(2 * NR_SCALE),
		(double)meminfo_delta_kb * 1024.0 / (2.0 * NR_SCALE * TABLE_KEYS));
	json_f64(&j, "meminfo_bytes_per_key",
		 (double)meminfo_delta_kb * 1024.0 / (2.0 * NR_SCALE * TABLE_KEYS));
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
	fprintf(f, "usage: sluice-bench cost -o JSON -m MARKDOWN -d SCALE.dat [-r REPEAT] "
		   "[-n RUNS] [-H DEV,DEV,...] [-q]\n"
		   "  -H  spare veth devices (14) to hold the programs in the XDP dispatcher\n"
		   "  -q  quick: T0, T1, T2 and T4 only (to profile a change to the datapath)\n");
}

int cmd_cost(int argc, char **argv)
{
	const char *json_path = NULL, *md_path = NULL, *dat_path = NULL;
	struct cost_ctx c = { .repeat = 1000000, .runs = 5 };
	struct bench_obj_opts oo = {};
	struct mem_row mem[2];
	__u64 stats_before = 0;
	__s64 mem0 = 0, mem1 = 0;
	FILE *js = NULL, *md = NULL, *dat = NULL;
	int opt, i, r, ret, stats_fd = -1;
	unsigned int f, s;

	while ((opt = getopt(argc, argv, "o:m:d:r:n:H:qh")) != -1) {
		switch (opt) {
		case 'q':
			c.quick = true;
			break;
		case 'H':
			ret = bench_hold_devices(optarg);
			if (ret)
				return SLUICE_EXIT_USAGE;
			break;
		case 'o':
			json_path = optarg;
			break;
		case 'm':
			md_path = optarg;
			break;
		case 'd':
			dat_path = optarg;
			break;
		case 'r':
			c.repeat = (__u32)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			c.runs = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return SLUICE_EXIT_USAGE;
		}
	}
	if (!json_path || !md_path || !dat_path || c.repeat < 1 || c.runs < 1 ||
	    c.runs > MAX_RUNS) {
		usage(stderr);
		return SLUICE_EXIT_USAGE;
	}

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
	oo.parse_only = true;
	oo.max_keys = 1024;
	ret = bench_obj_load(&c.parse, &oo);
	if (ret)
		goto load_err;
	oo.parse_only = false;
	oo.max_keys = 0;
	ret = bench_obj_load(&c.main, &oo);
	if (ret)
		goto load_err;
	ret = add_rules(&c);
	if (ret)
		goto load_err;
	if (c.quick)
		goto objects_done;
	oo.vary_keys = T3_KEYS;
	oo.max_keys = TABLE_KEYS;
	oo.max_log_keys = TABLE_KEYS;
	ret = bench_obj_load(&c.vary, &oo);
	if (ret)
		goto load_err;
	ret = prefill_vary(&c);
	if (ret)
		goto load_err;
	oo.max_log_keys = 1024;
	mem0 = mem_available_kb();
	for (f = 0; f < 2; f++) {
		for (s = 0; s < NR_SCALE; s++) {
			oo.vary_keys = scale_keys[s];
			ret = bench_obj_load(&c.scale[f][s], &oo);
			if (ret)
				goto load_err;
		}
	}
objects_done:
	ret = build_cases(&c);
	mem1 = mem_available_kb();
	if (ret)
		goto load_err;
	c.wall = bench_held();
	{
		int fds[4 + 2 * NR_SCALE], nfd = 0;

		fds[nfd++] = bpf_program__fd(c.drop->progs.bench_drop);
		fds[nfd++] = c.parse.prog_fd;
		fds[nfd++] = c.main.prog_fd;
		if (!c.quick)
			fds[nfd++] = c.vary.prog_fd;
		for (f = 0; f < 2 && !c.quick; f++)
			for (s = 0; s < NR_SCALE; s++)
				fds[nfd++] = c.scale[f][s].prog_fd;
		for (i = 0; c.wall && i < nfd; i++) {
			if (bench_hold(fds[i])) {
				fprintf(stderr,
					"sluice-bench: Couldn't hold program %d of %d in the "
					"dispatcher (give more devices with -H): timing by the "
					"kernel's whole-ns average\n", i + 1, nfd);
				c.wall = false;
			}
		}
	}
	/* Per map: the 1M-key bucket table and the 1M-key log table of T3. */
	mem[0].map = "sluice_buckets";
	mem[1].map = "sluice_logs";
	if (!c.quick && (bench_map_memory(c.vary.buckets_fd, &mem[0].bytes, &mem[0].entries) ||
			 bench_map_memory(c.vary.logs_fd, &mem[1].bytes, &mem[1].entries))) {
		ret = -ENOENT;
		goto load_err;
	}

	/* Warm up: JIT images, caches, and the T2b buckets into their drop state. */
	for (i = 0; i < c.ncases; i++) {
		ret = run_case(&c, &c.cases[i], 1000, false);
		if (ret)
			goto run_err;
	}
	for (r = 0; r < c.runs; r++) {
		for (i = 0; i < c.ncases; i++) {
			ret = run_case(&c, &c.cases[i], c.repeat, true);
			if (ret)
				goto run_err;
		}
		fprintf(stderr, "sluice-bench cost: round %d of %d done\n", r + 1, c.runs);
	}
	for (i = 0; i < c.ncases; i++)
		check_case(&c.cases[i]);

	/* One more run of each case with bpf_stats on: the program's own time. */
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0)
		fprintf(stderr, "sluice-bench: Couldn't enable bpf_stats: %s (prog_ns left 0)\n",
			strerror(errno));
	for (i = 0; stats_fd >= 0 && i < c.ncases; i++) {
		struct cost_case *k = &c.cases[i];
		__u64 t0, n0, t1, n1;
		__u32 rep = c.repeat / 10 ? c.repeat / 10 : 1;

		if (k->obj)
			k->prog_fd = k->obj->prog_fd;
		if (bench_prog_runtime(k->prog_fd, &t0, &n0))
			break;
		ret = run_once(k, rep, false, NULL, NULL);
		if (ret)
			goto run_err;
		if (bench_prog_runtime(k->prog_fd, &t1, &n1))
			break;
		if (n1 > n0)
			k->prog_ns = (double)(t1 - t0) / (double)(n1 - n0);
	}
	if (stats_fd >= 0)
		close(stats_fd);

	js = fopen(json_path, "w");
	md = fopen(md_path, "w");
	dat = fopen(dat_path, "w");
	if (!js || !md || !dat) {
		fprintf(stderr, "sluice-bench: Couldn't write the results: %s\n", strerror(errno));
		ret = -errno;
		goto out;
	}
	write_outputs(&c, js, md, dat, stats_before, mem, c.quick ? 0 : 2, mem0 - mem1);
	ret = 0;
	goto out;

load_err:
	fprintf(stderr, "sluice-bench: Couldn't set up the cost benchmark: %s%s%s\n",
		strerror(ret < 0 ? -ret : ret), c.err[0] ? ": " : "", c.err);
	goto out;
run_err:
	fprintf(stderr, "sluice-bench: Couldn't run BPF_PROG_TEST_RUN: %s\n", strerror(-ret));
out:
	if (js)
		fclose(js);
	if (md)
		fclose(md);
	if (dat)
		fclose(dat);
	bench_hold_release();
	for (f = 0; f < 2; f++)
		for (s = 0; s < NR_SCALE; s++)
			bench_obj_close(&c.scale[f][s]);
	bench_obj_close(&c.vary);
	bench_obj_close(&c.main);
	bench_obj_close(&c.parse);
	drop_bpf__destroy(c.drop);
	free(c.cases);
	return ret ? SLUICE_EXIT_RUNTIME : SLUICE_EXIT_OK;
}
