// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The set-associative key table (--table sets) itself, through
 * BPF_PROG_TEST_RUN: --max-keys 4 is one set of four ways per family, so
 * every key of a family meets every other in one set.
 *
 *  - eviction by meaning: with four ways held, a fifth key takes the way
 *    free soonest (a full bucket, an ended window; else the smallest debt),
 *    for the token and leaky buckets, a bucket with a byte limit (its second
 *    clock in aux, SLUICE_WAY_AUX) and both windows; a held source survives;
 *    the evicted key comes back with a full bucket; the sliding log keeps its
 *    own LRU table (sluice_logs);
 *  - the families are separate tables; prefixes, aggregation, rules,
 *    dry-run, byte limits give the same verdicts as on the LRU table; the
 *    keytab (user/lib/keytab.c) walks, finds and deletes the keys;
 *  - the claim protocol (bpf/lib/sets.h) raced on two CPUs.
 * The test clock throughout: nothing refills unless the test moves it.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>

#include <sluice/sets.h>
#include "libsluice.h"
#include "../lib/bpfrun.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define H BPFRUN_HOUR
#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)

/* A string check: one TAP line, and what came when it differs. */
#define TAP_STR4(got, want, ...)                                   \
	({                                                         \
		const char *__g = (got), *__w = (want);            \
		bool __r = tap_ok(!strcmp(__g, __w), __VA_ARGS__); \
		if (!__r)                                          \
			tap_diag("  got %s, want %s", __g, __w);   \
		__r;                                               \
	})

static __u32 tag_of(__u8 algo)
{
	return SLUICE_TAG(0, algo, 1);
}

/* 4 keys a family: of the set table, one set of 4 ways (a table that ends
 * in part of a group, as one pinned by an older sluice may: the claim's
 * choice and the protocol are the same on a whole group's 16 ways). */
static int open_table(struct bpfrun *r, int table)
{
	struct bpfrun_opts o = { .max_keys = 4, .sets_n = { 1, 1 }, .table = table };

	return bpfrun_open(r, &o);
}

/* Is the key (the default policy's, /32 or /64) in the table? */
static bool has(struct bpfrun *r, __u8 algo, const char *src)
{
	struct sluice_bucket b;

	return !bpfrun_lookup(r, false, tag_of(algo), src, strchr(src, ':') ? 64 : 32, &b);
}

static void sendk(struct bpfrun *r, const char *src, __u32 len, unsigned int n)
{
	char got[64];

	bpfrun_sendn(r, src, len, n, got);
}

/* Which of srcs[0..3] are in the table, as "1101". */
static const char *present(struct bpfrun *r, __u8 algo, const char *const *srcs, char *out)
{
	int i;

	for (i = 0; i < 4; i++)
		out[i] = has(r, algo, srcs[i]) ? '1' : '0';
	out[4] = '\0';
	return out;
}

static const char *const K[4] = { "198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4" };
#define NEWKEY "198.18.0.5"

/*
 * The buckets: K[0] held at its limit (burst 8: debt 8 h), K[1] 4 packets,
 * K[2] 1, K[3] 3. The fifth key evicts K[2] (the smallest debt, not the
 * oldest nor the first way); K[2] comes back with a full bucket, evicting
 * then the smallest debt again (the fifth key's 1), and K[0] survives all.
 * With bytes (a byte limit of 1 byte a minute), K[2]'s one packet is of
 * 600 bytes: 10 h of byte debt, so K[3] (3 h by both clocks) goes instead.
 * Last, the clock moves to just past the next debt's end (K[3]'s 3 h; with
 * bytes K[1]'s 4 h): that full bucket is the next victim.
 */
static void test_evict_bucket(struct bpfrun *r, __u8 algo, bool bytes)
{
	char t[96], got[8], want[8];
	struct sluice_settings set;
	struct sluice_stats st;
	int victim = bytes ? 3 : 2, late = bytes ? 1 : 3;

	snprintf(t, sizeof(t), "eviction, %s%s",
		 algo == SLUICE_ALGO_TOKEN_BUCKET ? "token bucket" : "leaky bucket",
		 bytes ? " with a byte limit" : "");
	if (!bpfrun_setup(r, &set, 8)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	set.def.algo = algo;
	set.def.tag = tag_of(algo);
	if (bytes && sluice_limit_set_bytes(&set.def.bytes, 60, H, 100000, NULL, 0)) {
		tap_ok(false, "%s: byte limit", t);
		return;
	}
	bpfrun_configure(r, &set);
	sendk(r, K[0], 60, 9);
	sendk(r, K[1], 60, 4);
	sendk(r, K[2], bytes ? 600 : 60, 1);
	sendk(r, K[3], 60, 3);
	TAP_STR4(present(r, algo, K, got), "1111", "%s: four ways held", t);
	sendk(r, NEWKEY, 60, 1);
	strcpy(want, "1111");
	want[victim] = '0';
	TAP_STR4(present(r, algo, K, got), want, "%s: a fifth key evicts %s, the way free soonest",
		 t, K[victim]);
	TAP_TRUE(has(r, algo, NEWKEY), "%s: the fifth key has the way", t);
	bpfrun_expect(r, K[victim], 60, "PPPPPPPPD", "%s: %s comes back with a full bucket", t,
		      K[victim]);
	TAP_TRUE(!has(r, algo, NEWKEY) && has(r, algo, K[0]),
		 "%s: coming back it evicted the fifth key (1 packet of debt), not %s", t, K[0]);
	bpfrun_expect(r, K[0], 60, "D", "%s: %s, held, stays held", t, K[0]);
	if (!bpfrun_stats(r, &st))
		TAP_EQ(st.update_failed, 0, "%s: update_failed stays 0", t);

	bpfrun_clock(r, SCN_T0 + (late == 3 ? 3 : 4) * H + 1);
	sendk(r, "198.18.0.6", 60, 1);
	TAP_TRUE(!has(r, algo, K[late]) && has(r, algo, K[0]) && has(r, algo, "198.18.0.6"),
		 "%s: with %s's bucket full again, a new key takes its way", t, K[late]);
}

/*
 * The windows (10 s, limit 100): all four keys start in window 5, then K[0],
 * K[1], K[3] send again in window 8; at 85 s K[2]'s window has ended (fixed:
 * at 60 s; sliding: its count weighs on window 6 too, free at 70 s): the
 * fifth key takes its way.
 */
static void test_evict_window(struct bpfrun *r, __u8 algo)
{
	const char *t = algo == SLUICE_ALGO_FIXED_WINDOW ? "eviction, fixed window" :
							   "eviction, sliding window";
	struct sluice_settings set;
	char got[8];
	int i;

	if (!bpfrun_setup(r, &set, 8)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	set.def.algo = algo;
	set.def.tag = tag_of(algo);
	if (sluice_window_set(&set.def, 100, SCN_S(10), NULL, 0)) {
		tap_ok(false, "%s: window", t);
		return;
	}
	bpfrun_configure(r, &set);
	bpfrun_clock(r, SCN_S(55));
	for (i = 0; i < 4; i++)
		sendk(r, K[i], 60, 3);
	bpfrun_clock(r, SCN_S(80));
	sendk(r, K[0], 60, 1);
	sendk(r, K[1], 60, 1);
	sendk(r, K[3], 60, 1);
	TAP_STR4(present(r, algo, K, got), "1111", "%s: four ways held", t);
	bpfrun_clock(r, SCN_S(85));
	sendk(r, NEWKEY, 60, 1);
	TAP_STR4(present(r, algo, K, got), "1101",
		 "%s: a fifth key takes the way of %s, whose window ended", t, K[2]);
	/* Every window current: the soonest to end goes; all end at once
	 * here, so some way goes and three stay. */
	sendk(r, "198.18.0.6", 60, 1);
	TAP_EQ(bpfrun_count_keys(r, false), 4, "%s: the set holds 4 keys", t);
}

/* Way `w` of IPv4 set 0 (open_table(): the only one), as the program left it. */
static struct sluice_way raw_way(struct bpfrun *r, int w)
{
	struct sluice_set4 *s = r->keys.mem[0];
	struct sluice_way out;

	out.ident = __atomic_load_n(&s->w[w].ident, __ATOMIC_ACQUIRE);
	out.s0 = __atomic_load_n(&s->w[w].s0, __ATOMIC_ACQUIRE);
	return out;
}

/*
 * The clock at 0 on the set table: a fresh table's ways are all 0, so each
 * claim resets its way to SLUICE_FRESH (bpf/lib/sets.h), read as a new key
 * by every algorithm at every now. Bytes only (1 B a minute, burst 6000:
 * the packet clock never charged), K[0] sends 6000 B, K[1..3] 60 B at 0:
 * their ways keep SLUICE_FRESH in s0 and only the byte TAT moves; the
 * keytab reads that s0 as the LRU's 0; at 60 min + 1 ns K[1..3]'s bytes are
 * paid off and a fifth key takes one of their ways, never K[0]'s (100 h of
 * byte debt). Then the windows (10 s, limit 100, a rule for K[0]; the
 * others 1000/s buckets, full 1 ms after their packet): K[0]'s count of
 * window 0 holds its way until the window stops weighing (fixed: 10 s;
 * sliding: 20 s), a fifth key at its last ns takes a bucket's.
 */
static void test_clock_zero(struct bpfrun *r)
{
	const char *t = "the clock at 0";
	struct sluice_settings set;
	struct sluice_bucket b;
	struct sluice_key k;
	char got[8];
	int i, fresh = 0, a;

	if (!bpfrun_setup(r, &set, 8)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	memset(&set.def.pkt, 0, sizeof(set.def.pkt));
	if (sluice_limit_set_bytes(&set.def.bytes, 60, H, 6000, NULL, 0)) {
		tap_ok(false, "%s: byte limit", t);
		return;
	}
	bpfrun_configure(r, &set);
	bpfrun_clock(r, 0);
	bpfrun_expect(r, K[0], 1000, "PPPPPPD", "%s: bytes only: %s's 6000 B of burst at 0", t,
		      K[0]);
	for (i = 1; i < 4; i++)
		sendk(r, K[i], 60, 1);
	for (i = 0; i < 4; i++)
		fresh += raw_way(r, i).s0 == SLUICE_FRESH;
	TAP_EQ(fresh, 4,
	       "%s: the four claimed ways hold SLUICE_FRESH, never charged by a packet "
	       "limit",
	       t);
	memset(&k, 0, sizeof(k));
	k.tag = tag_of(0);
	k.family = 4;
	k.prefixlen = 32;
	memcpy(k.addr, (const __u8[]){ 198, 18, 0, 2 }, 4);
	TAP_TRUE(!sluice_keytab_lookup(&r->keys, &k, &b) && b.s[0] == 0 &&
			 b.s[1] == TICKS(60 * SLUICE_NS_PER_SEC * 60),
		 "%s: the keytab reads it as the LRU's new key (s0 0) with its byte TAT (60 min)",
		 t);
	bpfrun_clock(r, 60 * 60 * SLUICE_NS_PER_SEC + 1);
	sendk(r, NEWKEY, 60, 1);
	TAP_TRUE(present(r, 0, K, got)[0] == '1' && has(r, 0, NEWKEY) &&
			 bpfrun_count_keys(r, false) == 4,
		 "%s: a fifth key, once 60 B are paid, takes a way free of debt, not %s's (%s)", t,
		 K[0], got);

	for (a = 0; a < 2; a++) {
		__u8 algo = a ? SLUICE_ALGO_SLIDING_WINDOW : SLUICE_ALGO_FIXED_WINDOW;
		const char *name = a ? "sliding window" : "fixed window";
		__u64 end = a ? SCN_S(20) : SCN_S(10);
		__u32 wtag = SLUICE_TAG(BPFRUN_RULE_SLOT, algo, 1);
		struct sluice_policy w;
		int gone = 0;

		if (!bpfrun_setup(r, &set, 8)) {
			tap_ok(false, "%s: setup", t);
			return;
		}
		sluice_limit_set(&set.def.pkt, 1000, SLUICE_NS_PER_SEC, 8, NULL, 0);
		bpfrun_policy(&w, SLUICE_ACT_LIMIT, 8);
		w.algo = algo;
		sluice_window_set(&w, 100, SCN_S(10), NULL, 0);
		bpfrun_rule(r, 0, "198.18.0.1/32", &w, BPFRUN_RULE_SLOT);
		set.nr_rules = 1;
		bpfrun_configure(r, &set);
		bpfrun_clock(r, 0);
		sendk(r, K[0], 60, 3);
		for (i = 1; i < 4; i++)
			sendk(r, K[i], 60, 1);
		TAP_EQ(raw_way(r, 0).s0, SLUICE_WIN_PACK(0, 3),
		       "%s: %s: 3 packets at 0 count 3 in window 0", t, name);
		/* K[1..3]: 1000/s buckets, full again 1 ms later; K[0]'s window
		 * 0 counts until `end`. */
		bpfrun_clock(r, end - 1);
		sendk(r, NEWKEY, 60, 1);
		for (i = 1; i < 4; i++)
			gone += !has(r, 0, K[i]);
		TAP_TRUE(!bpfrun_lookup(r, false, wtag, K[0], 32, &b) && gone == 1 &&
				 has(r, 0, NEWKEY),
			 "%s: %s: at %s - 1 ns window 0's count still holds %s's way; a fifth key "
			 "takes a full bucket's",
			 t, name, a ? "20 s" : "10 s", K[0]);
		TAP_EQ(b.s[0], SLUICE_WIN_PACK(0, 3), "%s: %s: ... with its count of window 0", t,
		       name);
	}
}

/* The sliding log keeps its own LRU map: eight keys, all kept, none in the
 * set table, each its own log. */
static void test_sliding_log(struct bpfrun *r)
{
	const char *t = "sliding log on the set table";
	struct sluice_settings set;
	char src[32];
	int i;

	if (!bpfrun_setup(r, &set, 8)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	set.def.algo = SLUICE_ALGO_SLIDING_LOG;
	set.def.tag = tag_of(SLUICE_ALGO_SLIDING_LOG);
	if (sluice_window_set(&set.def, 2, SCN_S(10), NULL, 0)) {
		tap_ok(false, "%s: window", t);
		return;
	}
	bpfrun_configure(r, &set);
	bpfrun_expect(r, "198.18.0.1", 60, "PPD", "%s: the first source's log fills", t);
	for (i = 2; i <= 8; i++) {
		snprintf(src, sizeof(src), "198.18.0.%d", i);
		sendk(r, src, 60, 1);
	}
	TAP_EQ(bpfrun_count_keys(r, true), 8, "%s: sluice_logs holds all 8 keys", t);
	TAP_EQ(bpfrun_count_keys(r, false), 0, "%s: the set table holds none", t);
	bpfrun_expect(r, "198.18.0.1", 60, "D", "%s: the first source's log is kept", t);
}

/* The families are separate tables: an IPv6 flood never evicts IPv4 keys. */
static void test_families(struct bpfrun *r)
{
	const char *t = "IPv4 and IPv6";
	struct sluice_settings set;
	char src[64], got[8];
	int i;

	if (!bpfrun_setup(r, &set, 2)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	for (i = 0; i < 4; i++)
		sendk(r, K[i], 60, 3);
	for (i = 0; i < 40; i++) {
		snprintf(src, sizeof(src), "2001:2:0:%x::1", i + 1);
		sendk(r, src, 80, 1);
	}
	TAP_STR4(present(r, SLUICE_ALGO_TOKEN_BUCKET, K, got), "1111",
		 "%s: 40 IPv6 keys evict none of the four IPv4 keys", t);
	TAP_EQ(bpfrun_count_keys(r, false), 8, "%s: 4 keys of each family", t);
	bpfrun_expect(r, K[0], 60, "D", "%s: the IPv4 keys stay held", t);
	bpfrun_expect(r, "2001:2:0:28::1", 80, "PD", "%s: the newest IPv6 key is kept", t);
}

/* ---- the same verdicts as on the LRU table ---- */

struct walk_want {
	__u32 tag;
	__u8 family, prefixlen;
	__u8 addr[16];
	int seen;
};

static int walk_fn(const void *key, const void *val, void *ctx)
{
	const struct sluice_key *k = key;
	struct walk_want *w = ctx;

	(void)val;
	if (k->tag == w->tag && k->family == w->family && k->prefixlen == w->prefixlen &&
	    !memcmp(k->addr, w->addr, 16))
		w->seen++;
	return 0;
}

/* Is (tag, cidr) a key the walk returns, exactly once? */
static bool walk_has(struct bpfrun *r, __u32 tag, const char *cidr)
{
	struct walk_want w = { .tag = tag };
	struct sluice_cidr c;

	if (sluice_parse_cidr(cidr, &c, NULL, 0))
		return false;
	w.family = c.family;
	w.prefixlen = c.prefixlen;
	memcpy(w.addr, c.addr, 16);
	return sluice_keytab_walk(&r->keys, walk_fn, &w) >= 0 && w.seen == 1;
}

/* One spot check: its sequence of sends, verdicts appended to out. */
static void spot(struct bpfrun *r, int which, char *out)
{
	static const char *const srcs[][6] = {
		/* prefixes /24 and /64: each pair shares one key */
		{ "198.18.5.1", "198.18.5.77", "198.18.6.1", "2001:2::1", "2001:2::ffff:1",
		  "2001:2:0:1::1" },
		/* --new-keys 1/h burst 2: past it sources share their /24 */
		{ "198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4", "198.18.1.9",
		  "198.18.0.1" },
		/* a rule of burst 1 for 198.18.1.0/24, the default's burst 3 */
		{ "198.18.1.1", "198.19.0.1", "198.18.1.2", "198.19.0.2", "198.18.1.1",
		  "198.19.0.1" },
		/* dry-run */
		{ "198.18.0.1", "198.18.0.1", "198.18.0.2", "198.18.0.1", "198.18.0.2",
		  "198.18.0.3" },
		/* a byte limit of 1000 bytes/h, burst 300: 100-byte packets */
		{ "198.18.0.1", "198.18.0.1", "198.18.0.2", "198.18.0.1", "2001:2::1",
		  "2001:2::1" },
	};
	struct sluice_settings set;
	struct sluice_policy p;
	char got[8];
	int i;

	bpfrun_setup(r, &set, 2);
	switch (which) {
	case 0:
		set.def.prefix4 = 24;
		set.def.prefix6 = 64;
		break;
	case 1:
		sluice_limit_set(&set.new_keys, 1, H, 2, NULL, 0);
		break;
	case 2:
		sluice_limit_set(&set.def.pkt, 1, H, 3, NULL, 0);
		bpfrun_policy(&p, SLUICE_ACT_LIMIT, 1);
		bpfrun_rule(r, 0, "198.18.1.0/24", &p, BPFRUN_RULE_SLOT);
		set.nr_rules = 1;
		break;
	case 3:
		set.flags |= SLUICE_DRY_RUN;
		break;
	case 4:
		sluice_limit_set(&set.def.pkt, 1, H, 100, NULL, 0);
		sluice_limit_set_bytes(&set.def.bytes, 1000, H, 300, NULL, 0);
		break;
	}
	bpfrun_configure(r, &set);
	for (i = 0; i < 6; i++) {
		bpfrun_sendn(r, srcs[which][i], which == 4 ? 100 : 60, 2, got);
		strcat(out, got);
	}
}

static void test_spots(struct bpfrun *r)
{
	static const char *const name[] = { "prefixes /24 and /64", "--new-keys aggregation",
					    "rules: two policies in one set", "dry-run",
					    "byte limits" };
	static const char *const want[] = {
		"PPDDPPPPDDPP", "PPPPPPDDPPDD", "PDPPPDPPDDPD", "PPPPPPPPPPPP", "PPPDPPDDPPPD",
	};
	struct bpfrun lru;
	char s[64], l[64];
	int i;

	if (open_table(&lru, BPFRUN_LRU)) {
		tap_ok(false, "spot checks: load the program on the LRU table");
		return;
	}
	for (i = 0; i < 5; i++) {
		s[0] = l[0] = '\0';
		spot(r, i, s);
		spot(&lru, i, l);
		if (!tap_ok(!strcmp(s, l) && !strcmp(s, want[i]),
			    "%s: the same verdicts on the set table as on lru (%s)", name[i],
			    want[i]))
			tap_diag("  sets %s, lru %s", s, l);
		if (i == 0) {
			TAP_TRUE(walk_has(r, tag_of(0), "198.18.5.0/24") &&
					 walk_has(r, tag_of(0), "198.18.6.0/24") &&
					 walk_has(r, tag_of(0), "2001:2::/64") &&
					 walk_has(r, tag_of(0), "2001:2:0:1::/64") &&
					 sluice_keytab_count(&r->keys) == 4,
				 "%s: the keytab walk returns the 4 keys with their prefix",
				 name[i]);
		} else if (i == 1) {
			TAP_TRUE(walk_has(r, tag_of(0) | SLUICE_TAG_AGGREGATE, "198.18.0.0/24") &&
					 walk_has(r, tag_of(0), "198.18.0.1/32"),
				 "%s: the aggregate 198.18.0.0/24 is a key of the set table, "
				 "tagged aggregate",
				 name[i]);
		} else if (i == 2) {
			TAP_TRUE(walk_has(r,
					  SLUICE_TAG(BPFRUN_RULE_SLOT, SLUICE_ALGO_TOKEN_BUCKET, 1),
					  "198.18.1.1/32") &&
					 walk_has(r, tag_of(0), "198.19.0.1/32"),
				 "%s: each key tagged with its policy", name[i]);
		}
	}
	bpfrun_close(&lru);
}

/* Delete through the keytab: the key's next packet starts a full bucket. */
static void test_delete(struct bpfrun *r)
{
	const char *t = "keytab delete";
	struct sluice_settings set;
	struct sluice_bucket b;
	struct sluice_key k;

	if (!bpfrun_setup(r, &set, 3)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	bpfrun_expect(r, "2001:2::5", 60, "PPPD", "%s: an IPv6 key is held", t);
	bpfrun_expect(r, K[0], 60, "PPPD", "%s: an IPv4 key is held", t);
	memset(&k, 0, sizeof(k));
	k.tag = tag_of(0);
	k.family = 4;
	k.prefixlen = 32;
	memcpy(k.addr, (const __u8[]){ 198, 18, 0, 1 }, 4);
	TAP_EQ(sluice_keytab_delete(&r->keys, &k), 0, "%s: of %s", t, K[0]);
	TAP_EQ(sluice_keytab_lookup(&r->keys, &k, &b), -ENOENT, "%s: %s is gone", t, K[0]);
	TAP_EQ(sluice_keytab_delete(&r->keys, &k), -ENOENT, "%s: again: -ENOENT", t);
	bpfrun_expect(r, K[0], 60, "PPPD", "%s: %s's next packets start a full bucket", t, K[0]);
	bpfrun_expect(r, "2001:2::5", 60, "D", "%s: the IPv6 key is untouched", t);
	TAP_EQ(sluice_keytab_flush(&r->keys, NULL, NULL), 2, "%s: flush forgets both keys", t);
	bpfrun_expect(r, "2001:2::5", 60, "PPPD", "%s: after the flush, a full bucket", t);
}

/* ---- the claim protocol on two CPUs ---- */

/* Live ways of one identity in the IPv4 sets (one set, or test_two_groups()'s
 * eight), read one after another: at most one each. Returns how many
 * identities have two or more. */
static int duplicates(struct bpfrun *r)
{
	struct sluice_set4 *s = r->keys.mem[0];
	__u64 id[2 * SLUICE_GROUP_WAYS];
	int n = 0, i, j, dup = 0;
	__u32 c;

	for (c = 0; c < r->keys.nsets[0] && c < 2 * SLUICE_SET_GROUP; c++)
		for (i = 0; i < SLUICE_SET_WAYS; i++)
			id[n++] = __atomic_load_n(&s[c].w[i].ident, __ATOMIC_ACQUIRE);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (id[i] && SLUICE_WAY_MATCH(id[i]) == SLUICE_WAY_MATCH(id[j]))
				dup++;
	return dup;
}

/* Ways left frozen or BUSY once every packet is done: a claim that never
 * finished (its key's packets would be contended for ever). */
static int stuck(struct bpfrun *r)
{
	struct sluice_set4 *s = r->keys.mem[0];
	int i, n = 0;
	__u32 c;

	for (c = 0; c < r->keys.nsets[0]; c++)
		for (i = 0; i < SLUICE_SET_WAYS; i++) {
			__u64 id = __atomic_load_n(&s[c].w[i].ident, __ATOMIC_ACQUIRE);

			n += __atomic_load_n(&s[c].w[i].s0, __ATOMIC_ACQUIRE) == SLUICE_FROZEN ||
			     (id >> 32 & SLUICE_WAY_BUSY);
		}
	return n;
}

#define NFRAMES 12
struct race {
	struct bpfrun *r;
	__u8 frame[NFRAMES][128];
	__u32 len;
	int nframes;
	int count, gen; /* the two racers' barrier */
	int rounds;
	int (*check)(struct race *x, int round);
	int bad;
	int mode; /* 0: first packets of one key; 1: churn around HELD */
	unsigned long passed[2][NFRAMES]; /* this round's */
	unsigned long total[2][NFRAMES];
	int err;
};

struct racer {
	struct race *x;
	int cpu;
};

/* Both racers here before either goes on (spinning: each has a CPU). */
static void barrier(struct race *x)
{
	int gen = __atomic_load_n(&x->gen, __ATOMIC_ACQUIRE);

	if (__atomic_fetch_add(&x->count, 1, __ATOMIC_ACQ_REL) == 1) {
		__atomic_store_n(&x->count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&x->gen, gen + 1, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&x->gen, __ATOMIC_ACQUIRE) == gen)
		__builtin_ia32_pause();
}

static void *racer(void *p)
{
	struct racer *me = p;
	struct race *x = me->x;
	cpu_set_t one;
	int round, i, k;
	__u32 action;

	CPU_ZERO(&one);
	CPU_SET(me->cpu, &one);
	if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one))
		x->err = 1;
	for (round = 1; round <= x->rounds; round++) {
		barrier(x);
		memset(x->passed[me->cpu], 0, sizeof(x->passed[0]));
		if (x->mode == 0) {
			for (i = 0; i < 6; i++) {
				if (bpfrun_run(x->r, x->frame[0], x->len, &action))
					x->err = 1;
				else if (action == XDP_PASS)
					x->passed[me->cpu][0]++;
			}
		} else {
			for (i = 0; i < 64; i++) {
				/* the two CPUs walk the keys in opposite orders,
				 * HELD (frame 0) every other packet */
				k = i % 2 ? 0 :
					    1 + (me->cpu ? i / 2 : x->nframes * 64 - i / 2) %
							    (x->nframes - 1);
				if (bpfrun_run(x->r, x->frame[k], x->len, &action))
					x->err = 1;
				else if (action == XDP_PASS)
					x->passed[me->cpu][k]++;
			}
		}
		for (k = 0; k < NFRAMES; k++)
			x->total[me->cpu][k] += x->passed[me->cpu][k];
		barrier(x);
		/* CPU 0's racer checks the round (and flushes), CPU 1's waits */
		if (me->cpu == 0)
			x->bad += x->check(x, round);
		barrier(x);
	}
	return NULL;
}

static bool run_race(struct race *x, int (*check)(struct race *x, int round))
{
	struct racer me[2] = { { x, 0 }, { x, 1 } };
	pthread_t th[2];
	int i;

	x->count = x->gen = x->bad = 0;
	x->check = check;
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, racer, &me[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return !x->bad && !x->err;
}

#define RACE_BURST 4
static int fresh_bad, fresh_dups;

/* After a round of one key's first packets: one way, at most its burst. */
static int check_fresh(struct race *x, int round)
{
	unsigned long n = x->passed[0][0] + x->passed[1][0];
	int d = duplicates(x->r), bad = 0, z = stuck(x->r);

	if (n > RACE_BURST || d || z) {
		if (fresh_bad++ < 3)
			tap_diag("round %d: the new key passed %lu (burst %d), %d duplicate ways, "
				 "%d ways left frozen or busy",
				 round, n, RACE_BURST, d, z);
		bad = 1;
	}
	fresh_dups += d;
	sluice_keytab_flush(&x->r->keys, NULL, NULL);
	return bad;
}

static int churn_bad;

/* After a round of the churn: HELD never evicted, never passed, no
 * identity twice. */
static int check_churn(struct race *x, int round)
{
	struct sluice_bucket b;
	struct sluice_key k;
	int d = duplicates(x->r), z = stuck(x->r);
	bool held;

	memset(&k, 0, sizeof(k));
	k.tag = SLUICE_TAG(BPFRUN_RULE_SLOT, SLUICE_ALGO_TOKEN_BUCKET, 1);
	k.family = 4;
	k.prefixlen = 32;
	memcpy(k.addr, (const __u8[]){ 198, 18, 9, 1 }, 4);
	held = !sluice_keytab_lookup(&x->r->keys, &k, &b);
	if (!held || d || z || x->passed[0][0] || x->passed[1][0]) {
		if (churn_bad++ < 3)
			tap_diag("round %d: HELD %s, passed %lu + %lu, %d duplicate ways, %d ways "
				 "left frozen or busy",
				 round, held ? "kept" : "evicted", x->passed[0][0], x->passed[1][0],
				 d, z);
		return 1;
	}
	return 0;
}

/* The race of one new key's first packets (src) on both CPUs at once, in
 * *x: whether every round kept one way for it and at most its burst. */
static bool race_fresh(struct bpfrun *r, struct race *x, const char *src)
{
	memset(x, 0, sizeof(*x));
	x->r = r;
	x->len = 60;
	x->nframes = 1;
	x->rounds = 5000;
	frame_ip(x->frame[0], src, 60, NULL);
	x->mode = 0;
	fresh_bad = fresh_dups = 0;
	return run_race(x, check_fresh);
}

/* HELD (198.18.9.1: a rule of burst 8) driven to its limit, then n keys
 * (srcs, `what` in the check's name) churning around it on both CPUs, in
 * *x, with the stats before the churn in *st0: checks that every round kept
 * HELD and no key in two ways, and returns whether it did; -1 when the
 * setup failed (reported as t's). */
static int race_churn(struct bpfrun *r, struct sluice_settings *set, const char *t, struct race *x,
		      char (*srcs)[32], int n, struct sluice_stats *st0, const char *what)
{
	bool ok;
	struct sluice_policy p;
	int i;

	bpfrun_policy(&p, SLUICE_ACT_LIMIT, 8);
	set->nr_rules = 1;
	if (bpfrun_rule(r, 0, "198.18.9.1/32", &p, BPFRUN_RULE_SLOT) || bpfrun_configure(r, set)) {
		tap_ok(false, "%s: rule", t);
		return -1;
	}
	bpfrun_expect(r, "198.18.9.1", 60, "PPPPPPPPD", "%s: HELD is held at its limit (8)", t);
	memset(x, 0, sizeof(*x));
	x->r = r;
	x->len = 60;
	x->nframes = n + 1;
	x->rounds = 1000;
	x->mode = 1;
	frame_ip(x->frame[0], "198.18.9.1", 60, NULL);
	for (i = 0; i < n; i++)
		frame_ip(x->frame[i + 1], srcs[i], 60, NULL);
	churn_bad = 0;
	bpfrun_stats(r, st0);
	ok = run_race(x, check_churn);
	TAP_TRUE(ok,
		 "%s, %s around a held one, %d rounds: HELD never evicted, never passed, no key "
		 "in two ways, no way left frozen",
		 t, what, x->rounds);
	return ok;
}

static void test_race(struct bpfrun *r)
{
	const char *t = "two CPUs";
	static struct race x;
	struct sluice_settings set;
	struct sluice_stats st0, st;
	unsigned long kp;
	char src[6][32];
	int i, ok;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		tap_skip("one CPU: two must race for the set", "%s: the claim protocol", t);
		return;
	}
	/* (1) Both CPUs send the first packets of one new key at once. */
	if (!bpfrun_setup(r, &set, RACE_BURST)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	ok = race_fresh(r, &x, "198.18.0.7");
	TAP_TRUE(ok,
		 "%s, a new key's first packets on both at once, %d rounds: one way for it, "
		 "never more than its burst (%d) passed, no way left frozen",
		 t, x.rounds, RACE_BURST);
	if (!bpfrun_stats(r, &st))
		tap_diag("%s: rx %llu passed %llu contended %llu new_keys %llu", t,
			 (unsigned long long)st.rx, (unsigned long long)st.passed,
			 (unsigned long long)st.contended, (unsigned long long)st.new_keys);

	/* (2) HELD (a rule of burst 8, at its limit: 8 h of debt) and six
	 * keys of burst 4 (at most 4 h of debt) churn in one set of four on
	 * both CPUs, HELD's packets among them. */
	if (!bpfrun_setup(r, &set, RACE_BURST)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	for (i = 0; i < 6; i++)
		snprintf(src[i], sizeof(src[i]), "198.18.0.%d", i + 1);
	if (race_churn(r, &set, t, &x, src, 6, &st0, "6 keys churning in one set") < 0)
		return;
	bpfrun_stats(r, &st);
	for (i = 1, kp = 0; i < x.nframes; i++)
		kp += x.total[0][i] + x.total[1][i];
	tap_diag("%s: churn passed %lu, new_keys %llu, contended %llu", t, kp,
		 (unsigned long long)(st.new_keys - st0.new_keys),
		 (unsigned long long)(st.contended - st0.contended));
	TAP_TRUE(kp <= RACE_BURST * (st.new_keys - st0.new_keys) &&
			 st.new_keys > st0.new_keys + 100,
		 "%s: the churn's keys passed at most their burst per claim (%lu <= %d x %llu), "
		 "and were evicted and claimed again and again",
		 t, kp, RACE_BURST, (unsigned long long)(st.new_keys - st0.new_keys));
}

/* ---- two groups: a key's own group and its other one (two-choice) ---- */

/* The default policy's /32 key of src. */
static struct sluice_key key4(const char *src)
{
	struct sluice_key k;

	memset(&k, 0, sizeof(k));
	k.tag = tag_of(SLUICE_ALGO_TOKEN_BUCKET);
	k.family = 4;
	k.prefixlen = 32;
	inet_pton(AF_INET, src, k.addr);
	return k;
}

/* 198.18.2.x addresses (x from *next on) whose own and other IPv4 groups
 * are own and alt, into out (32 bytes each), n of them. */
static int find_keys(struct bpfrun *r, __u32 own, __u32 alt, int n, int *next, char (*out)[32])
{
	int got = 0;

	for (; got < n && *next < 256; (*next)++) {
		struct sluice_key k;
		__u32 base[2];
		__u64 h;

		snprintf(out[got], 32, "198.18.2.%d", *next);
		k = key4(out[got]);
		h = sluice_key_hash(r->seed, &k);
		sluice_set_pair(h, sluice_way_ident(&k, h), r->keys.nsets[0], base);
		if (base[0] == own * SLUICE_SET_GROUP && base[1] == alt * SLUICE_SET_GROUP)
			got++;
	}
	return got == n ? 0 : -1;
}

/* The IPv4 group that holds src's key (-1: none), read from the table. */
static int group_holding(struct bpfrun *r, const char *src)
{
	struct sluice_key k = key4(src);
	__u64 want = sluice_way_ident(&k, sluice_key_hash(r->seed, &k));
	struct sluice_set4 *s = r->keys.mem[0];
	__u32 i;
	int w;

	for (i = 0; i < r->keys.nsets[0]; i++)
		for (w = 0; w < SLUICE_SET_WAYS; w++)
			if (SLUICE_WAY_MATCH(__atomic_load_n(&s[i].w[w].ident, __ATOMIC_ACQUIRE)) ==
			    want)
				return (int)(i / SLUICE_SET_GROUP);
	return -1;
}

/* How many of srcs (n) group g holds. */
static int held_in(struct bpfrun *r, char (*srcs)[32], int n, int g)
{
	int i, held = 0;

	for (i = 0; i < n; i++)
		held += group_holding(r, srcs[i]) == g;
	return held;
}

#define GW SLUICE_GROUP_WAYS
#define FILL (GW - 2) /* keys held in each group around test_race_two()'s churn */

/*
 * Two CPUs race over two groups. First a new key's first packets, of
 * groups 0 and 1, on both at once. Then FILL keys whose only group is 0
 * (a) and FILL whose only group is 1 (b) are held 24 h ahead, leaving two
 * ways free in each group, and 11 keys whose groups are 0 and 1 (in either
 * order) churn around HELD (a rule of burst 8, at its limit), 12 keys in 4
 * ways: claims in both groups at once, each key's in the one a CPU found
 * better. HELD is never evicted nor passed, nor is any a or b (held
 * longer), and no key has a way in each group.
 */
static void test_race_two(struct bpfrun *r, char (*a)[32], char (*b)[32])
{
	const char *t = "two groups, two CPUs";
	static struct race x;
	struct sluice_settings set;
	struct sluice_stats st0, st;
	char keys[11][32];
	int i, ok, next = 0;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		tap_skip("one CPU: two must race for the groups", "%s: the claim protocol", t);
		return;
	}
	if (find_keys(r, 0, 1, 6, &next, keys) ||
	    (next = 0, find_keys(r, 1, 0, 5, &next, keys + 6))) {
		tap_ok(false, "%s: 198.18.2.0/24 has 11 keys of groups 0 and 1", t);
		return;
	}
	if (!bpfrun_setup(r, &set, RACE_BURST)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	/* A new key's first packets on both CPUs at once, the table empty:
	 * its groups equal, a CPU that sees the other's way frozen in one
	 * claims in the other, and one of the two must give way. */
	bpfrun_stats(r, &st0);
	ok = race_fresh(r, &x, keys[0]);
	TAP_TRUE(ok,
		 "%s, a new key of groups 0 and 1 on both at once, %d rounds: one way for it, "
		 "never more than its burst (%d) passed, no way left frozen",
		 t, x.rounds, RACE_BURST);
	bpfrun_stats(r, &st);
	tap_diag("%s: new_keys %llu, contended %llu", t,
		 (unsigned long long)(st.new_keys - st0.new_keys),
		 (unsigned long long)(st.contended - st0.contended));

	if (!bpfrun_setup(r, &set, RACE_BURST)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	/* charged 20 h on: their debts end 24 h after the race's clock */
	bpfrun_clock(r, SCN_T0 + 20 * BPFRUN_HOUR);
	for (i = 0; i < FILL; i++) {
		sendk(r, a[i], 60, RACE_BURST + 1);
		sendk(r, b[i], 60, RACE_BURST + 1);
	}
	bpfrun_clock(r, SCN_T0);
	TAP_TRUE(held_in(r, a, FILL, 0) == FILL && held_in(r, b, FILL, 1) == FILL,
		 "%s: %d keys held in each group, 2 ways free in each", t, FILL);
	if (race_churn(r, &set, t, &x, keys, 11, &st0, "11 keys of two groups churning") < 0)
		return;
	bpfrun_stats(r, &st);
	tap_diag("%s: new_keys %llu, contended %llu", t,
		 (unsigned long long)(st.new_keys - st0.new_keys),
		 (unsigned long long)(st.contended - st0.contended));
	TAP_TRUE(st.new_keys > st0.new_keys + 100,
		 "%s: the keys were evicted and claimed again and again (%llu claims)", t,
		 (unsigned long long)(st.new_keys - st0.new_keys));
	TAP_TRUE(held_in(r, a, FILL, 0) == FILL && held_in(r, b, FILL, 1) == FILL,
		 "%s: and none of the %d keys held longer was evicted (%d and %d kept)", t,
		 2 * FILL, held_in(r, a, FILL, 0), held_in(r, b, FILL, 1));
}

/*
 * --max-keys 32: two IPv4 groups (8 sets). The a keys have group 0 as both
 * their groups, the b keys group 1, and N group 0 as its own and group 1
 * as its other. With group 0 held by 16 a keys, N takes a way in group 1,
 * and its packets find it there; with both groups held, N evicts the way
 * free soonest of the two (the last b's, one packet of debt), not one of
 * its own group; the keytab finds and deletes N in group 1.
 */
static void test_two_groups(void)
{
	const char *t = "two groups";
	char a[GW][32], b[GW][32], n[1][32];
	struct sluice_settings set;
	struct sluice_stats st0, st;
	struct bpfrun_opts o = { .max_keys = 2 * GW, .table = BPFRUN_SETS };
	struct sluice_bucket bk;
	struct sluice_key k;
	struct bpfrun r;
	int i, na = 0, nb = 0, nn = 0, held;

	if (bpfrun_open(&r, &o)) {
		tap_ok(false, "%s: load the sluice program on the set table, --max-keys %d", t,
		       2 * GW);
		return;
	}
	TAP_EQ(r.keys.nsets[0], 2 * SLUICE_SET_GROUP, "%s: --max-keys %d is two IPv4 groups", t,
	       2 * GW);
	if (find_keys(&r, 0, 0, GW, &na, a) || find_keys(&r, 1, 1, GW, &nb, b) ||
	    find_keys(&r, 0, 1, 1, &nn, n)) {
		tap_ok(false, "%s: 198.18.2.0/24 has keys of each pair of groups", t);
		bpfrun_close(&r);
		return;
	}
	if (!bpfrun_setup(&r, &set, 8)) {
		tap_ok(false, "%s: setup", t);
		bpfrun_close(&r);
		return;
	}
	set.def.tag = tag_of(SLUICE_ALGO_TOKEN_BUCKET);
	bpfrun_configure(&r, &set);
	for (i = 0; i < GW; i++)
		sendk(&r, a[i], 60, 9);
	TAP_EQ(held_in(&r, a, GW, 0), GW, "%s: group 0 holds the %d keys whose only group it is", t,
	       GW);
	bpfrun_stats(&r, &st0);
	bpfrun_expect(&r, n[0], 60, "PPPPPPPPD",
		      "%s: N, of groups 0 and 1, gets its burst (8) and no more", t);
	bpfrun_stats(&r, &st);
	TAP_EQ(group_holding(&r, n[0]), 1, "%s: N took a way in its other group (1)", t);
	TAP_EQ(st.new_keys - st0.new_keys, 1,
	       "%s: N was claimed once: its packets after the first found it in group 1", t);
	TAP_EQ(held_in(&r, a, GW, 0), GW, "%s: and no key of group 0 was evicted for it", t);
	k = key4(n[0]);
	TAP_EQ(sluice_keytab_lookup(&r.keys, &k, &bk), 0, "%s: the keytab finds N in group 1", t);
	TAP_EQ(sluice_keytab_delete(&r.keys, &k), 0, "%s: and deletes it there", t);
	TAP_EQ(group_holding(&r, n[0]), -1, "%s: N is gone", t);

	/* Both groups held; the last b with one packet of debt, the smallest. */
	for (i = 0; i < GW - 1; i++)
		sendk(&r, b[i], 60, 9);
	sendk(&r, b[GW - 1], 60, 1);
	sendk(&r, n[0], 60, 1);
	held = held_in(&r, a, GW, 0) + held_in(&r, b, GW - 1, 1);
	TAP_TRUE(group_holding(&r, n[0]) == 1 && group_holding(&r, b[GW - 1]) == -1 &&
			 held == 2 * GW - 1,
		 "%s: with both groups held, N evicts the last b (the smallest debt, in its "
		 "other group), not a key of its own group; the %d others stay (N in group %d, "
		 "the last b in %d, %d kept)",
		 t, 2 * GW - 1, group_holding(&r, n[0]), group_holding(&r, b[GW - 1]), held);
	test_race_two(&r, a, b);
	bpfrun_close(&r);
}

/*
 * A set table of layout 5 or 6 (a key in single sets) read by this
 * sluice: --max-keys 64, four groups. K's legacy other set is outside its
 * groups. In that set, K is found by a reader of layout 6 and not of 7,
 * and counted out of place (attach then refuses the upgrade); in its own
 * set (layout 5's place), every reader finds it, the datapath too.
 */
static void test_legacy(void)
{
	const char *t = "layouts 5 and 6";
	struct bpfrun_opts o = { .max_keys = 64, .table = BPFRUN_SETS };
	struct sluice_settings set;
	struct sluice_set4 *s4;
	struct sluice_bucket bk;
	struct sluice_key k;
	__u32 layout = 6, own, alt, idx[SLUICE_KEY_SETS];
	__u64 h, want;
	struct bpfrun r;
	char src[32];
	int x, c, n, in;

	if (bpfrun_open(&r, &o)) {
		tap_ok(false, "%s: load the sluice program on the set table, --max-keys 64", t);
		return;
	}
	if (!bpfrun_setup(&r, &set, 8)) {
		tap_ok(false, "%s: setup", t);
		goto out;
	}
	set.def.tag = tag_of(SLUICE_ALGO_TOKEN_BUCKET);
	bpfrun_configure(&r, &set);
	for (x = 1; x < 256; x++) {
		snprintf(src, sizeof(src), "198.18.3.%d", x);
		k = key4(src);
		h = sluice_key_hash(r.seed, &k);
		want = sluice_way_ident(&k, h);
		own = sluice_set_index(h, r.keys.nsets[0]);
		alt = sluice_set_alt(own, want, r.keys.nsets[0]);
		n = sluice_key_sets(h, want, r.keys.nsets[0], 0, idx);
		for (c = 0, in = 0; c < n; c++)
			in |= idx[c] == alt;
		if (!in)
			break;
	}
	if (x == 256) {
		tap_ok(false,
		       "%s: 198.18.3.0/24 has a key whose legacy other set is outside its groups",
		       t);
		goto out;
	}
	/* K held (a TAT 10 h ahead of the clock: burst 8), in way 2 of its legacy other set */
	s4 = r.keys.mem[0];
	s4[alt].x[2].meta = SLUICE_WAY_META(32, 0);
	s4[alt].w[2].s0 = (SCN_T0 + 10 * BPFRUN_HOUR) << SLUICE_TICK_SHIFT;
	__atomic_store_n(&s4[alt].w[2].ident, want, __ATOMIC_RELEASE);
	r.keys.layout = &layout;
	TAP_EQ(sluice_keytab_lookup(&r.keys, &k, &bk), 0,
	       "%s: a reader of a layout-6 state finds K in its other set (%u)", t, alt);
	layout = SLUICE_LAYOUT_VERSION;
	TAP_EQ(sluice_keytab_lookup(&r.keys, &k, &bk), -ENOENT,
	       "%s: ... a reader of layout %d does not: it is outside K's groups", t,
	       SLUICE_LAYOUT_VERSION);
	TAP_EQ(sluice_keytab_misplaced(&r.keys), 1, "%s: ... and K is counted out of place", t);
	/* Layout 5's place: its own set, in its own group. */
	__atomic_store_n(&s4[alt].w[2].ident, 0, __ATOMIC_RELEASE);
	s4[alt].w[2].s0 = 0;
	s4[own].x[3].meta = SLUICE_WAY_META(32, 0);
	s4[own].w[3].s0 = (SCN_T0 + 10 * BPFRUN_HOUR) << SLUICE_TICK_SHIFT;
	__atomic_store_n(&s4[own].w[3].ident, want, __ATOMIC_RELEASE);
	layout = SLUICE_LAYOUT_ONE_SET;
	TAP_EQ(sluice_keytab_lookup(&r.keys, &k, &bk), 0,
	       "%s: a reader of a layout-5 state finds K in its own set (%u)", t, own);
	layout = SLUICE_LAYOUT_VERSION;
	TAP_EQ(sluice_keytab_lookup(&r.keys, &k, &bk), 0,
	       "%s: ... a reader of layout %d too: the own set is in the own group", t,
	       SLUICE_LAYOUT_VERSION);
	TAP_EQ(sluice_keytab_misplaced(&r.keys), 0, "%s: ... nothing out of place", t);
	bpfrun_expect(&r, src, 60, "D", "%s: and the datapath finds K there, held", t);
	r.keys.layout = NULL;
out:
	bpfrun_close(&r);
}

int main(void)
{
	struct bpfrun r;

	/* The LRU reference of the spot checks holds 4 keys: the kernel's LRU
	 * keeps a free list per CPU, so one whose user moves to another CPU
	 * evicts before it is full (a busy machine moved this process once and
	 * the LRU forgot two keys). The racers pin themselves to their CPUs. */
	bpfrun_one_cpu();
	if (open_table(&r, BPFRUN_SETS)) {
		tap_ok(false, "load the sluice program on the set table of one set a family");
		return tap_done();
	}
	TAP_EQ(r.keys.nsets[0], 1, "a table of one IPv4 set");
	test_evict_bucket(&r, SLUICE_ALGO_TOKEN_BUCKET, false);
	test_evict_bucket(&r, SLUICE_ALGO_LEAKY_BUCKET, false);
	test_evict_bucket(&r, SLUICE_ALGO_TOKEN_BUCKET, true);
	test_evict_window(&r, SLUICE_ALGO_FIXED_WINDOW);
	test_evict_window(&r, SLUICE_ALGO_SLIDING_WINDOW);
	test_sliding_log(&r);
	test_clock_zero(&r);
	test_families(&r);
	test_spots(&r);
	test_delete(&r);
	test_race(&r);
	bpfrun_close(&r);
	test_two_groups();
	test_legacy();
	return tap_done();
}
