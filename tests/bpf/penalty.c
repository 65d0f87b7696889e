// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The penalty box (--penalty): a key of a policy with a penalty that goes
 * over its limit is refused whole until its box runs out, its bucket never
 * read meanwhile; every packet it refuses is counted in sluice_xstats
 * (penalized, and boxings in penalties) and, as any refusal, in limited or
 * under dry-run in would_drop, where it passes. Another source, a policy
 * without a penalty, an exempt or deny policy and an aggregate key are never
 * boxed; deleting the box entry (sluicectl flush) lets the key out; a policy
 * of a new tag does not read the old tag's boxes. Then the counters of odd
 * packets that rules with a match read: fragments, l4_short, l4_opaque.
 *
 * Each case asserts the verdicts, sluice_stats, sluice_xstats and the box
 * entry, on the test clock: a policy of 10/s burst 5, penalty 2s.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libsluice.h"
#include "sluice.skel.h"
#include "../lib/bpfrun.h"
#include "../lib/l4frame.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

/* The tag sluice_settings_init() gives the default policy. */
#define TAG_DEFAULT SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 1)
#define RULE_SLOT 5
#define TAG_RULE SLUICE_TAG(RULE_SLOT, SLUICE_ALGO_TOKEN_BUCKET, 1)
#define PENALTY_DS 20 /* 2s */
#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)

#define SRC "198.18.0.1"
#define OTHER "198.18.0.2"
#define IN_RULE "198.18.3.1"

/* 10/s burst 5, keyed by /32 and /64, penalty ds tenths of a second. */
static void limit_10(struct sluice_policy *p, __u32 ds)
{
	bpfrun_policy(p, SLUICE_ACT_LIMIT, 0);
	sluice_limit_set(&p->pkt, 10, SLUICE_NS_PER_SEC, 5, NULL, 0);
	sluice_penalty_set(p, ds);
}

/* bpfrun_setup() with limit_10(ds) as the default policy, plus flags. */
static bool setup(struct bpfrun *r, struct sluice_settings *set, __u32 ds, __u32 flags)
{
	if (!bpfrun_setup(r, set, 1))
		return false;
	limit_10(&set->def, ds);
	set->def.tag = TAG_DEFAULT;
	set->flags |= flags;
	return !bpfrun_configure(r, set);
}

static struct sluice_stats stats(struct bpfrun *r)
{
	struct sluice_stats st;

	if (bpfrun_stats(r, &st))
		memset(&st, 0xff, sizeof(st));
	return st;
}

static struct sluice_xstats xstats(struct bpfrun *r)
{
	struct sluice_xstats xs;

	if (bpfrun_xstats(r, &xs))
		memset(&xs, 0xff, sizeof(xs));
	return xs;
}

/* The counters of a case, in one line: what differs is named. */
static bool counts(struct bpfrun *r, const char *t, __u64 passed, __u64 limited, __u64 would,
		   __u64 penalized, __u64 penalties)
{
	struct sluice_stats st = stats(r);
	struct sluice_xstats xs = xstats(r);
	bool ok = st.passed == passed && st.limited == limited && st.dropped == limited &&
		  st.would_drop == would && xs.penalized == penalized &&
		  xs.penalties == penalties && !st.denied && !st.exempt;

	if (!tap_ok(ok,
		    "%s: passed %llu, limited %llu, would_drop %llu; penalized %llu, penalties "
		    "%llu",
		    t, (unsigned long long)passed, (unsigned long long)limited,
		    (unsigned long long)would, (unsigned long long)penalized,
		    (unsigned long long)penalties))
		tap_diag("  got passed %llu, dropped %llu, limited %llu, would_drop %llu, "
			 "penalized %llu, penalties %llu",
			 (unsigned long long)st.passed, (unsigned long long)st.dropped,
			 (unsigned long long)st.limited, (unsigned long long)st.would_drop,
			 (unsigned long long)xs.penalized, (unsigned long long)xs.penalties);
	return ok;
}

/* The box entry of src under tag: until (ticks) and its refused count. */
static bool box_is(struct bpfrun *r, __u32 tag, const char *src, __u64 until_ns, __u64 dropped,
		   const char *t)
{
	struct sluice_box b;
	int ret = bpfrun_box(r, tag, src, 32, &b);

	if (tap_ok(!ret && b.until == TICKS(until_ns) && b.dropped == dropped,
		   "%s: %s is boxed until %llu ms, %llu refused in the box", t, src,
		   (unsigned long long)(until_ns / 1000000), (unsigned long long)dropped))
		return true;
	if (ret)
		tap_diag("  no box entry: %s", strerror(-ret));
	else
		tap_diag("  got until %llu ms, %llu refused",
			 (unsigned long long)((b.until >> SLUICE_TICK_SHIFT) / 1000000),
			 (unsigned long long)b.dropped);
	return false;
}

static bool no_box(struct bpfrun *r, __u32 tag, const char *src, const char *t)
{
	struct sluice_box b;

	return TAP_EQ(bpfrun_box(r, tag, src, 32, &b), -ENOENT, "%s: %s has no box entry", t, src);
}

static bool bucket(struct bpfrun *r, __u32 tag, const char *src, struct sluice_bucket *b)
{
	if (!bpfrun_lookup(r, false, tag, src, 32, b))
		return true;
	memset(b, 0xff, sizeof(*b));
	return false;
}

/* Over the limit, boxed for 2s: refused whole while the bucket refills
 * untouched, then out again; another source is not affected. */
static void test_box(struct bpfrun *r)
{
	const char *t = "penalty 2s";
	struct sluice_bucket b0, b1;
	struct sluice_settings set;

	if (!tap_ok(setup(r, &set, PENALTY_DS, 0), "%s: setup", t))
		return;
	bpfrun_expect(r, SRC, 60, "PPPPPD", "%s: burst 5 passes, the 6th drops", t);
	counts(r, t, 5, 1, 0, 0, 1);
	box_is(r, TAG_DEFAULT, SRC, SCN_T0 + SCN_S(2), 0, "the 6th drop");
	bucket(r, TAG_DEFAULT, SRC, &b0);

	bpfrun_clock(r, SCN_T0 + SCN_S(1));
	bpfrun_expect(r, SRC, 60, "DDD", "%s, 1s on (its bucket refilled): still refused", t);
	counts(r, "1s on", 5, 4, 0, 3, 1);
	TAP_TRUE(bucket(r, TAG_DEFAULT, SRC, &b1) && !memcmp(&b0, &b1, sizeof(b0)),
		 "1s on: the boxed key's bucket is not touched");
	box_is(r, TAG_DEFAULT, SRC, SCN_T0 + SCN_S(2), 3, "1s on");
	bpfrun_expect(r, OTHER, 60, "PPPPP", "1s on: another source passes its burst");
	no_box(r, TAG_DEFAULT, OTHER, "1s on");

	bpfrun_clock(r, SCN_T0 + SCN_S(2) - 1);
	bpfrun_expect(r, SRC, 60, "D", "1 ns before 2s: still refused");
	bpfrun_clock(r, SCN_T0 + SCN_S(2));
	bpfrun_expect(r, SRC, 60, "PPPPPD",
		      "2s on: out of the box, a full burst, then boxed again");
	counts(r, "2s on", 15, 6, 0, 4, 2);
	box_is(r, TAG_DEFAULT, SRC, SCN_T0 + SCN_S(4), 4, "boxed again");
}

/* Under dry-run a boxed key's packets pass, each a would-drop and penalized. */
static void test_dry_run(struct bpfrun *r)
{
	const char *t = "penalty under dry-run";
	struct sluice_bucket b0, b1;
	struct sluice_settings set;

	if (!tap_ok(setup(r, &set, PENALTY_DS, SLUICE_DRY_RUN), "%s: setup", t))
		return;
	bpfrun_expect(r, SRC, 60, "PPPPPP", "%s: the 6th passes too", t);
	counts(r, t, 6, 0, 1, 0, 1);
	box_is(r, TAG_DEFAULT, SRC, SCN_T0 + SCN_S(2), 0, t);
	bucket(r, TAG_DEFAULT, SRC, &b0);
	bpfrun_clock(r, SCN_T0 + SCN_S(1));
	bpfrun_expect(r, SRC, 60, "PPP", "%s, 1s on: boxed, and passed", t);
	counts(r, "dry-run, 1s on", 9, 0, 4, 3, 1);
	TAP_TRUE(bucket(r, TAG_DEFAULT, SRC, &b1) && !memcmp(&b0, &b1, sizeof(b0)),
		 "dry-run, 1s on: the bucket is not charged for what the box passed");
	box_is(r, TAG_DEFAULT, SRC, SCN_T0 + SCN_S(2), 3, "dry-run, 1s on");
}

/* A rule with a penalty boxes its sources; the default without one does not. */
static void test_rule(struct bpfrun *r)
{
	const char *t = "a rule with --penalty";
	struct sluice_settings set;
	struct sluice_policy p;

	limit_10(&p, PENALTY_DS);
	if (!tap_ok(setup(r, &set, 0, 0) && !bpfrun_rule(r, 0, "198.18.3.0/24", &p, RULE_SLOT),
		    "%s: setup", t))
		return;
	set.nr_rules = 1;
	bpfrun_configure(r, &set);
	bpfrun_expect(r, IN_RULE, 60, "PPPPPD", "%s: its source drops the 6th", t);
	bpfrun_expect(r, SRC, 60, "PPPPPD", "%s: a source of the default too", t);
	counts(r, t, 10, 2, 0, 0, 1);
	box_is(r, TAG_RULE, IN_RULE, SCN_T0 + SCN_S(2), 0, t);
	no_box(r, TAG_DEFAULT, SRC, "the default, with no penalty");
	bpfrun_clock(r, SCN_T0 + SCN_S(1));
	bpfrun_expect(r, IN_RULE, 60, "DD", "%s, 1s on: the rule's source is refused", t);
	bpfrun_expect(r, SRC, 60, "PPPPP", "%s, 1s on: the default's passes a new burst", t);
	counts(r, "a rule with --penalty, 1s on", 15, 4, 0, 2, 1);
}

/* Deleting the box entry, as sluicectl flush does, lets the key out. */
static void test_flush(struct bpfrun *r)
{
	const char *t = "flush";
	struct sluice_settings set;
	struct sluice_key key;

	if (!tap_ok(setup(r, &set, PENALTY_DS, 0), "%s: setup", t))
		return;
	bpfrun_expect(r, SRC, 60, "PPPPPD", "%s: boxed", t);
	memset(&key, 0, sizeof(key));
	key.tag = TAG_DEFAULT;
	key.family = 4;
	key.prefixlen = 32;
	memcpy(key.addr, "\xc6\x12\x00\x01", 4);
	TAP_TRUE(!bpf_map_delete_elem(r->penalty_fd, &key), "%s: delete the box entry", t);
	bpfrun_clock(r, SCN_T0 + SCN_S(1));
	bpfrun_expect(r, SRC, 60, "PPPPP", "%s, 1s on: the key passes again", t);
	counts(r, t, 10, 1, 0, 0, 1);
}

/* A policy of a new tag (a new algorithm, window or prefix) does not read
 * the box of the old tag; a new rate on the same tag leaves it running. */
static void test_new_tag(struct bpfrun *r)
{
	const char *t = "a new tag";
	struct sluice_settings set;

	if (!tap_ok(setup(r, &set, PENALTY_DS, 0), "%s: setup", t))
		return;
	bpfrun_expect(r, SRC, 60, "PPPPPD", "%s: boxed under the old tag", t);
	sluice_limit_set(&set.def.pkt, 20, SLUICE_NS_PER_SEC, 5, NULL, 0);
	bpfrun_configure(r, &set);
	bpfrun_clock(r, SCN_T0 + SCN_S(1));
	bpfrun_expect(r, SRC, 60, "D", "a new rate, the same tag: still boxed");
	set.def.tag = SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 2);
	bpfrun_configure(r, &set);
	bpfrun_expect(r, SRC, 60, "PPPPP", "%s: the key starts afresh, not boxed", t);
	no_box(r, set.def.tag, SRC, t);
	box_is(r, TAG_DEFAULT, SRC, SCN_T0 + SCN_S(2), 1, "the old tag's box stays, unread");
	counts(r, t, 10, 2, 0, 1, 1);
}

/* An exempt or deny policy never boxes, whatever its penalty bytes say. */
static void test_actions(struct bpfrun *r)
{
	const char *t = "exempt and deny";
	struct sluice_settings set;
	struct sluice_policy deny, exempt;
	struct sluice_stats st;
	struct sluice_xstats xs;

	bpfrun_policy(&deny, SLUICE_ACT_DENY, 0);
	bpfrun_policy(&exempt, SLUICE_ACT_EXEMPT, 0);
	sluice_penalty_set(&deny, PENALTY_DS);
	sluice_penalty_set(&exempt, PENALTY_DS);
	if (!tap_ok(setup(r, &set, 0, 0) && !bpfrun_rule(r, 0, "198.18.4.0/24", &deny, 1) &&
			    !bpfrun_rule(r, 0, "198.18.5.0/24", &exempt, 2),
		    "%s: setup", t))
		return;
	set.nr_rules = 2;
	bpfrun_configure(r, &set);
	bpfrun_expect(r, "198.18.4.1", 60, "DDDDDDD", "%s: the deny rule drops every packet", t);
	bpfrun_expect(r, "198.18.5.1", 60, "PPPPPPP", "%s: the exempt rule passes every one", t);
	st = stats(r);
	xs = xstats(r);
	TAP_TRUE(st.denied == 7 && st.exempt == 7 && !st.limited && !xs.penalized && !xs.penalties,
		 "%s: denied 7, exempt 7, nothing penalized or boxed", t);
	no_box(r, SLUICE_TAG(1, SLUICE_ALGO_TOKEN_BUCKET, 1), "198.18.4.1", t);
}

/* A new source past --new-keys is charged to its prefix's aggregate: a
 * refusal there boxes nothing (the box is asked for the source's own key). */
static void test_aggregate(struct bpfrun *r)
{
	const char *t = "an aggregate key";
	struct sluice_settings set;
	struct sluice_box b;

	if (!tap_ok(setup(r, &set, PENALTY_DS, 0) &&
			    !sluice_limit_set(&set.new_keys, 1, BPFRUN_HOUR, 1, NULL, 0) &&
			    !bpfrun_configure(r, &set),
		    "%s: setup", t))
		return;
	bpfrun_expect(r, SRC, 60, "P", "%s: the first new source gets its own key", t);
	bpfrun_expect(r, OTHER, 60, "PPPPPD", "%s: the next is charged to its /24's bucket", t);
	TAP_EQ(bpfrun_box(r, TAG_DEFAULT | SLUICE_TAG_AGGREGATE, "198.18.0.0", 24, &b), -ENOENT,
	       "%s: the aggregate is not boxed", t);
	no_box(r, TAG_DEFAULT, OTHER, t);
	counts(r, t, 6, 1, 0, 0, 0);
}

/* ---- the odd packets that rules with a match read ---- */

static size_t pages(size_t n)
{
	return (n + 4095) / 4096 * 4096;
}

/* One rule, 0.0.0.0/0 and ::/0 --proto tcp, exempt, in generation 0. */
static bool install_tcp_rule(struct bpfrun *r)
{
	size_t lbm = pages(2 * SLUICE_L4BM_WORDS * sizeof(__u64));
	size_t lrules = pages(2 * SLUICE_L4_RULES_MAX * sizeof(struct sluice_l4rule));
	size_t lpol = pages(2 * SLUICE_L4_RULES_MAX * sizeof(struct sluice_policy));
	struct sluice_l4rule rules[2] = { l4f_rule("0.0.0.0/0", "--proto tcp"),
					  l4f_rule("::/0", "--proto tcp") };
	struct sluice_policy pol[2];
	struct sluice_l4rule *mr;
	struct sluice_policy *mp;
	bool ok = false;
	__u64 *bm;
	int i;

	bm = mmap(NULL, lbm, PROT_READ | PROT_WRITE, MAP_SHARED,
		  bpf_map__fd(r->skel->maps.sluice_l4bm), 0);
	mr = mmap(NULL, lrules, PROT_READ | PROT_WRITE, MAP_SHARED,
		  bpf_map__fd(r->skel->maps.sluice_l4rules), 0);
	mp = mmap(NULL, lpol, PROT_READ | PROT_WRITE, MAP_SHARED,
		  bpf_map__fd(r->skel->maps.sluice_l4pol), 0);
	if (bm != MAP_FAILED && mr != MAP_FAILED && mp != MAP_FAILED) {
		for (i = 0; i < 2; i++) {
			bpfrun_policy(&pol[i], SLUICE_ACT_EXEMPT, 0);
			pol[i].tag = SLUICE_TAG(7 + i, SLUICE_ALGO_TOKEN_BUCKET, 1);
			bpfrun_put_policy(r, &pol[i]);
		}
		memcpy(mr, rules, sizeof(rules));
		memcpy(mp, pol, sizeof(pol));
		ok = !sluice_l4bm_build(rules, 2, bm);
	}
	if (bm != MAP_FAILED)
		munmap(bm, lbm);
	if (mr != MAP_FAILED)
		munmap(mr, lrules);
	if (mp != MAP_FAILED)
		munmap(mp, lpol);
	return ok;
}

static bool run_frame(struct bpfrun *r, const struct l4frame *f, __u32 *action)
{
	return !bpfrun_run(r, f->b, f->len, action);
}

static void test_l4_counters(struct bpfrun *r)
{
	const char *t = "rules with a match";
	struct sluice_settings set;
	struct sluice_xstats xs;
	struct l4frame f;
	__u32 a[5] = { 0 };
	bool ran;

	if (!tap_ok(bpfrun_setup(r, &set, 1000) && install_tcp_rule(r), "%s: setup", t))
		return;
	set.flags |= SLUICE_L4_ON;
	bpfrun_configure(r, &set);

	l4f_ip4(&f, 0, 5, SLUICE_IPPROTO_TCP, 185); /* a later fragment */
	l4f_tcp(&f, 40000, 443, SLUICE_TCP_SYN);
	l4f_pad(&f);
	ran = run_frame(r, &f, &a[0]);
	l4f_ip4(&f, 0, 5, SLUICE_IPPROTO_TCP, 0); /* a TCP header cut at 12 bytes */
	l4f_tcp(&f, 40000, 443, SLUICE_TCP_SYN);
	f.len -= 8;
	ran = run_frame(r, &f, &a[1]) && ran;
	l4f_ip6(&f, SLUICE_IPPROTO_ESP); /* nothing past ESP can be read */
	l4f_udp(&f, 4500, 4500);
	l4f_pad(&f);
	ran = run_frame(r, &f, &a[2]) && ran;
	l4f_ip6(&f, SLUICE_IPPROTO_FRAGMENT); /* IPv6: a later fragment */
	l4f_frag6(&f, SLUICE_IPPROTO_TCP, 185, 0);
	l4f_tcp(&f, 40000, 443, SLUICE_TCP_SYN);
	l4f_pad(&f);
	ran = run_frame(r, &f, &a[3]) && ran;
	l4f_ip4(&f, 0, 5, SLUICE_IPPROTO_TCP, 0); /* a whole header */
	l4f_tcp(&f, 40000, 443, SLUICE_TCP_SYN);
	l4f_pad(&f);
	ran = run_frame(r, &f, &a[4]) && ran;
	xs = xstats(r);
	TAP_TRUE(ran && a[0] == XDP_PASS && a[1] == XDP_PASS && a[2] == XDP_PASS &&
			 a[3] == XDP_PASS && a[4] == XDP_PASS,
		 "%s: the five frames pass (exempt, or the default's burst)", t);
	TAP_TRUE(xs.fragments == 2 && xs.l4_short == 1 && xs.l4_opaque == 1,
		 "%s: fragments 2 (IPv4, IPv6), l4_short 1, l4_opaque 1 (got %llu, %llu, %llu)", t,
		 (unsigned long long)xs.fragments, (unsigned long long)xs.l4_short,
		 (unsigned long long)xs.l4_opaque);
	TAP_EQ(stats(r).exempt, 4,
	       "%s: all but ESP are the rule's (--proto alone holds a fragment, a short header)",
	       t);

	/* No rule with a match: the transport header is never read. */
	set.flags &= ~SLUICE_L4_ON;
	bpfrun_configure(r, &set);
	l4f_ip4(&f, 0, 5, SLUICE_IPPROTO_TCP, 185);
	l4f_tcp(&f, 40000, 443, SLUICE_TCP_SYN);
	l4f_pad(&f);
	run_frame(r, &f, &a[0]);
	xs = xstats(r);
	TAP_EQ(xs.fragments, 2, "%s: without SLUICE_L4_ON a fragment is not counted", t);
}

int main(void)
{
	struct bpfrun r;

	bpfrun_one_cpu();
	if (!bpfrun_load(&r, NULL))
		return tap_done();
	test_box(&r);
	test_dry_run(&r);
	test_rule(&r);
	test_flush(&r);
	test_new_tag(&r);
	test_actions(&r);
	test_aggregate(&r);
	test_l4_counters(&r);
	bpfrun_close(&r);
	return tap_done();
}
