// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A policy's second key (--also-prefix4/6, --also-rate, --also-burst): a
 * packet its own key admits is charged to its source's prefix too, and is
 * dropped when that refuses, its own key's charge given back first, so that
 * neither is charged. A packet its own key refuses never reaches the second
 * key. Counted: limited (or under dry-run would_drop) and
 * sluice_xstats.also_limited; the refusing key's drop count.
 *
 * Both key tables (the suite runs again with SLUICE_TEST_TABLE=sets), new
 * keys (the LRU table publishes a new key with its charge: the refund finds
 * it) and known ones, IPv4 and IPv6, a rule's policy, dry-run, a source
 * charged to its aggregate past --new-keys (its aggregate holds the prefix:
 * no second charge), a wide key (--key src,dport), and a window policy,
 * which never has a second key; a fleet policy's share. On the test clock: the default policy 10/s
 * burst 5 per /32 (and /64); its second key 10/s burst 8 per /24 (and /48).
 */
#include <errno.h>
#include <string.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libsluice.h"
#include "sluice.skel.h"
#include <sluice/algo.h>
#include "../lib/bpfrun.h"
#include "../lib/l4frame.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define TAG_DEFAULT SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 1)
#define RULE_SLOT 5
#define TAG_RULE SLUICE_TAG(RULE_SLOT, SLUICE_ALGO_TOKEN_BUCKET, 1)
#define ALSO_ID 3
#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)
#define COST TICKS(SLUICE_NS_PER_SEC / 10) /* one packet at 10/s */

/* 10/s burst 5, keyed by /32 and /64, with the second key ALSO_ID. */
static void limit_10(struct sluice_policy *p)
{
	bpfrun_policy(p, SLUICE_ACT_LIMIT, 0);
	sluice_limit_set(&p->pkt, 10, SLUICE_NS_PER_SEC, 5, NULL, 0);
	p->flags |= ALSO_ID << SLUICE_POLICY_ALSO_SHIFT;
}

/* Entry ALSO_ID of sluice_also: 10/s burst `burst` per /p4 and /p6. */
static bool put_also(struct bpfrun *r, __u64 burst, __u8 p4, __u8 p6)
{
	struct sluice_also a = { .prefix4 = p4, .prefix6 = p6 };
	__u32 id = ALSO_ID;

	if (sluice_limit_set(&a.pkt, 10, SLUICE_NS_PER_SEC, burst, NULL, 0))
		return false;
	return !bpf_map_update_elem(r->also_fd, &id, &a, BPF_ANY);
}

/* A fresh state: limit_10() as the default policy, the second key of
 * burst 8 per /24 and /48, plus `flags` in the settings. */
static bool setup(struct bpfrun *r, struct sluice_settings *set, __u32 flags)
{
	if (!bpfrun_setup(r, set, 1) || !put_also(r, 8, 24, 48))
		return false;
	limit_10(&set->def);
	set->def.tag = TAG_DEFAULT;
	set->flags |= flags;
	return !bpfrun_configure(r, set) && !bpfrun_put_policy(r, &set->def);
}

struct counts {
	__u64 passed, limited, would, also;
};

static bool counts(struct bpfrun *r, const char *t, struct counts want)
{
	struct sluice_stats st;
	struct sluice_xstats xs;
	bool ok;

	if (bpfrun_stats(r, &st) || bpfrun_xstats(r, &xs))
		return tap_ok(false, "%s: read the counters", t);
	ok = st.passed == want.passed && st.limited == want.limited && st.dropped == want.limited &&
	     st.would_drop == want.would && xs.also_limited == want.also && !xs.penalized;
	if (!tap_ok(ok, "%s: passed %llu, limited %llu, would_drop %llu, also_limited %llu", t,
		    (unsigned long long)want.passed, (unsigned long long)want.limited,
		    (unsigned long long)want.would, (unsigned long long)want.also))
		tap_diag("  got passed %llu, dropped %llu, limited %llu, would_drop %llu, "
			 "also_limited %llu",
			 (unsigned long long)st.passed, (unsigned long long)st.dropped,
			 (unsigned long long)st.limited, (unsigned long long)st.would_drop,
			 (unsigned long long)xs.also_limited);
	return ok;
}

/* The bucket of src's key (tag, prefixlen); all ones when there is none. */
static struct sluice_bucket bucket(struct bpfrun *r, __u32 tag, const char *src, __u8 len)
{
	struct sluice_bucket b;

	if (bpfrun_lookup(r, false, tag, src, len, &b))
		memset(&b, 0xff, sizeof(b));
	return b;
}

/* A bucket's TAT, SLUICE_FRESH read as 0 (a new way's: a full bucket). */
static __u64 tat(struct sluice_bucket b)
{
	return b.s[0] == SLUICE_FRESH ? 0 : b.s[0];
}

/* Eight sources of one /24, each under its own limit: the prefix holds them
 * at its burst of 8; the ninth is refused and its own new key keeps its
 * whole burst; another /24 is not touched. */
static void prefix_held(struct bpfrun *r)
{
	const char *t = "a /24 of many sources";
	struct sluice_settings set;
	char src[32], got[16] = "";
	struct sluice_bucket b;
	int i;

	if (!tap_ok(setup(r, &set, 0), "%s: setup", t))
		return;
	for (i = 1; i <= 9; i++) {
		snprintf(src, sizeof(src), "198.18.0.%d", i);
		bpfrun_sendn(r, src, 64, 1, got + i - 1);
	}
	TAP_TRUE(!strcmp(got, "PPPPPPPPD"), "%s: 8 sources pass, the ninth is refused (got %s)", t,
		 got);
	counts(r, t, (struct counts){ .passed = 8, .limited = 1, .also = 1 });
	b = bucket(r, TAG_DEFAULT, "198.18.0.9", 32);
	TAP_TRUE(tat(b) <= TICKS(SCN_T0),
		 "%s: the ninth source's own new key is given its charge back (TAT %llu, now "
		 "%llu)",
		 t, (unsigned long long)tat(b), (unsigned long long)TICKS(SCN_T0));
	b = bucket(r, SLUICE_ALSO_TAG(TAG_DEFAULT), "198.18.0.0", 24);
	TAP_TRUE(b.s[0] == TICKS(SCN_T0) + 8 * COST && b.dropped == 1,
		 "%s: the second key 198.18.0.0/24 holds 8 charges and 1 drop (TAT %llu, "
		 "dropped %llu)",
		 t, (unsigned long long)(b.s[0] - TICKS(SCN_T0)), (unsigned long long)b.dropped);
	bpfrun_expect(r, "198.18.1.1", 64, "PPPPPD",
		      "%s: another /24 passes its source's own burst of 5", t);
	/* A tenth of a second later the prefix has room for one more. */
	bpfrun_clock(r, SCN_T0 + SLUICE_NS_PER_SEC / 10);
	bpfrun_expect(r, "198.18.0.9", 64, "PD",
		      "%s: 100 ms later, one more packet of the /24 (its ninth source's)", t);
	/* A second later, the ninth source has the whole of its own burst:
	 * the refused packets cost it nothing. */
	bpfrun_clock(r, SCN_T0 + 2 * SLUICE_NS_PER_SEC);
	bpfrun_expect(r, "198.18.0.9", 64, "PPPPPD",
		      "%s: 2 s later, the ninth source passes its own burst of 5", t);
}

/* A source over its own limit: its refused packets never reach the second
 * key, so the rest of its /24 keeps the prefix's burst. And a known key
 * refused by the second key keeps its state as it was. */
static void own_first(struct bpfrun *r)
{
	const char *t = "own key first";
	struct sluice_settings set;
	struct sluice_bucket before, after;

	if (!tap_ok(setup(r, &set, 0), "%s: setup", t))
		return;
	bpfrun_expect(r, "198.18.0.1", 64, "PPPPPDDDDDDDDDD",
		      "%s: one source floods: its burst of 5, then its own limit", t);
	bpfrun_expect(r, "198.18.0.2", 64, "PPP",
		      "%s: its neighbour passes the 3 left of the /24's 8", t);
	before = bucket(r, TAG_DEFAULT, "198.18.0.2", 32);
	bpfrun_expect(r, "198.18.0.2", 64, "D", "%s: then the /24 refuses it", t);
	after = bucket(r, TAG_DEFAULT, "198.18.0.2", 32);
	TAP_TRUE(before.s[0] == after.s[0] && after.s[0] == TICKS(SCN_T0) + 3 * COST,
		 "%s: the refused packet left the neighbour's own TAT as it was (3 charges)", t);
	counts(r, t, (struct counts){ .passed = 8, .limited = 11, .also = 1 });
	after = bucket(r, SLUICE_ALSO_TAG(TAG_DEFAULT), "198.18.0.0", 24);
	TAP_TRUE(after.dropped == 1, "%s: the /24's drop count is its own refusal only (got %llu)",
		 t, (unsigned long long)after.dropped);
}

/* IPv6: the sources of a /48 share its second key; another /48 does not. */
static void ipv6(struct bpfrun *r)
{
	const char *t = "IPv6 /48";
	struct sluice_settings set;
	char got[16] = "";

	if (!tap_ok(setup(r, &set, 0), "%s: setup", t))
		return;
	bpfrun_sendn(r, "2001:2::1", 80, 5, got);
	bpfrun_sendn(r, "2001:2:0:1::1", 80, 4, got + 5);
	TAP_TRUE(!strcmp(got, "PPPPPPPPD"),
		 "%s: two /64s of one /48: 5 + 3 pass, then the /48 refuses (got %s)", t, got);
	bpfrun_expect(r, "2001:2:1::1", 80, "PPPPPD", "%s: another /48 is its own", t);
	counts(r, t, (struct counts){ .passed = 13, .limited = 2, .also = 1 });
}

/* Dry-run: a packet the second key refuses passes, counted as a would-drop;
 * the state advances as a live policy's (the own key's charge given back). */
static void dry_run(struct bpfrun *r)
{
	const char *t = "dry-run";
	struct sluice_settings set;
	char src[32], got[16] = "";
	int i;

	if (!tap_ok(setup(r, &set, SLUICE_DRY_RUN), "%s: setup", t))
		return;
	for (i = 1; i <= 10; i++) {
		snprintf(src, sizeof(src), "198.18.0.%d", i);
		bpfrun_sendn(r, src, 64, 1, got + i - 1);
	}
	TAP_TRUE(!strcmp(got, "PPPPPPPPPP"), "%s: all 10 pass (got %s)", t, got);
	counts(r, t, (struct counts){ .passed = 10, .would = 2, .also = 2 });
	TAP_TRUE(tat(bucket(r, TAG_DEFAULT, "198.18.0.10", 32)) <= TICKS(SCN_T0),
		 "%s: the would-be-dropped source's own charge is given back", t);
}

/* A rule's policy has its own second keys (the rule's tag), apart from the
 * default policy's. */
static void rule(struct bpfrun *r)
{
	const char *t = "a rule's second key";
	struct sluice_settings set;
	struct sluice_policy p;
	struct sluice_bucket b;

	if (!tap_ok(setup(r, &set, 0), "%s: setup", t))
		return;
	limit_10(&p);
	p.tag = TAG_RULE;
	set.nr_rules = 1;
	TAP_TRUE(!bpfrun_rule(r, 0, "198.18.4.0/23", &p, RULE_SLOT) && !bpfrun_configure(r, &set),
		 "%s: rule 198.18.4.0/23 with a second key", t);
	bpfrun_expect(r, "198.18.4.1", 64, "PPPPP", "%s: a source of the rule: its burst", t);
	bpfrun_expect(r, "198.18.4.2", 64, "PPPD", "%s: its neighbour: the /24's 3 left", t);
	bpfrun_expect(r, "198.18.5.1", 64, "PPPPP",
		      "%s: the rule's other /24 has its own second key", t);
	b = bucket(r, SLUICE_ALSO_TAG(TAG_RULE), "198.18.4.0", 24);
	TAP_TRUE(b.s[0] == TICKS(SCN_T0) + 8 * COST,
		 "%s: the second key carries the rule's slot (TAT +%llu)", t,
		 (unsigned long long)(b.s[0] - TICKS(SCN_T0)));
	bpfrun_expect(r, "198.18.0.1", 64, "PPPPP", "%s: the default policy's /24 is another key",
		      t);
}

/* Past --new-keys a new source is charged to its aggregate, which holds its
 * prefix already: no second charge. */
static void aggregate(struct bpfrun *r)
{
	const char *t = "aggregated source";
	struct sluice_settings set;
	struct sluice_bucket b;

	if (!tap_ok(setup(r, &set, 0), "%s: setup", t))
		return;
	sluice_limit_set(&set.new_keys, 1, BPFRUN_HOUR, 1, NULL, 0);
	TAP_TRUE(!bpfrun_configure(r, &set), "%s: --new-keys 1/h burst 1", t);
	bpfrun_expect(r, "198.18.0.1", 64, "P", "%s: the first source: a key of its own", t);
	bpfrun_expect(r, "198.18.0.2", 64, "PPPPPD",
		      "%s: the second, charged to its aggregate: the aggregate's burst", t);
	b = bucket(r, SLUICE_ALSO_TAG(TAG_DEFAULT), "198.18.0.0", 24);
	TAP_TRUE(b.s[0] == TICKS(SCN_T0) + COST,
		 "%s: the second key holds the first source's one charge only (TAT +%llu)", t,
		 (unsigned long long)(b.s[0] - TICKS(SCN_T0)));
}

/* A window policy never has a second key, whatever its flags say. */
static void window(struct bpfrun *r)
{
	const char *t = "window policy";
	struct sluice_settings set;

	if (!tap_ok(setup(r, &set, 0), "%s: setup", t))
		return;
	set.def.algo = SLUICE_ALGO_FIXED_WINDOW;
	set.def.tag = SLUICE_TAG(0, SLUICE_ALGO_FIXED_WINDOW, 2);
	sluice_window_set(&set.def, 10, SLUICE_NS_PER_SEC, NULL, 0);
	TAP_TRUE(!bpfrun_configure(r, &set) && !bpfrun_put_policy(r, &set.def),
		 "%s: fixed-window 10 per 1s", t);
	bpfrun_expect(r, "198.18.0.1", 64, "PPPPPPPPPPD", "%s: its 10 a window, no more", t);
	counts(r, t, (struct counts){ .passed = 10, .limited = 1 });
}

/* A wide key (--key src,dport): each service of a source under its own
 * limit, the source's /24 charged for all of them. */
static void wide(struct bpfrun *r)
{
	const char *t = "wide key";
	struct sluice_settings set;
	struct l4frame f;
	__u32 a;
	char got[16] = "";
	int i;

	if (!tap_ok(setup(r, &set, 0), "%s: setup", t))
		return;
	sluice_policy_set_key_mode(&set.def, SLUICE_KEY_SRC_DPORT);
	set.def.tag = SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 3);
	TAP_TRUE(!bpfrun_configure(r, &set) && !bpfrun_put_policy(r, &set.def),
		 "%s: --key src,dport", t);
	for (i = 0; i < 9; i++) {
		l4f_ip4(&f, 0, 5, SLUICE_IPPROTO_UDP, 0);
		l4f_udp(&f, 40000, (__u16)(53 + (i >= 5)));
		l4f_pad(&f);
		a = ~0U;
		bpfrun_run(r, f.b, f.len, &a);
		got[i] = a == XDP_PASS ? 'P' : a == XDP_DROP ? 'D' : '?';
	}
	TAP_TRUE(!strcmp(got, "PPPPPPPPD"),
		 "%s: udp/53 5, udp/54 3, then the source's /24 refuses (got %s)", t, got);
	counts(r, t, (struct counts){ .passed = 8, .limited = 1, .also = 1 });
}

/*
 * Host against BPF: random packets of nine sources of two /24s at random
 * times, on the program and on a model of the same arithmetic on the host
 * (algo.h: the own key's bucket, then the prefix's, the own charge given
 * back when the prefix refuses). Every verdict the same.
 */
static void differential(struct bpfrun *r)
{
	static const char *const srcs[] = { "198.18.0.1", "198.18.0.2", "198.18.0.3",
					    "198.18.0.4", "198.18.0.5", "198.18.0.6",
					    "198.18.1.1", "198.18.1.2", "198.18.1.3" };
	const char *t = "host against BPF";
	struct sluice_settings set;
	struct sluice_also a = { .prefix4 = 24, .prefix6 = 48 };
	__u64 own[9][2] = {}, pre[2] = {}, now = SCN_T0, seed = 0x5eed;
	unsigned int i, n = 3000, same = 0, first_bad = 0, passed = 0, also = 0;
	__u32 id = ALSO_ID;

	if (!tap_ok(setup(r, &set, 0), "%s: setup", t))
		return;
	sluice_limit_set(&a.pkt, 20, SLUICE_NS_PER_SEC, 8, NULL, 0);
	/* each source's own 4/s burst 3: both keys refuse, in turn */
	sluice_limit_set(&set.def.pkt, 4, SLUICE_NS_PER_SEC, 3, NULL, 0);
	if (!tap_ok(!bpf_map_update_elem(r->also_fd, &id, &a, BPF_ANY) &&
			    !bpfrun_configure(r, &set) && !bpfrun_put_policy(r, &set.def),
		    "%s: own keys at 4/s burst 3, the second key at 20/s burst 8", t))
		return;
	for (i = 0; i < n; i++) {
		unsigned int k;
		__u64 used[2], wrote[2], ticks;
		int v, want;
		char got;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		k = (unsigned int)(seed >> 33) % 9;
		now += ((seed >> 20) % 20) * 1000000ULL; /* 0 to 19 ms */
		ticks = TICKS(now);
		v = sluice_bucket_admit_to(&set.def, &own[k][0], &own[k][1], ticks, 64, 1, 1, used,
					   wrote);
		if (v == SLUICE_PASS &&
		    sluice_gcra(&pre[k >= 6], ticks, sluice_limit_cost(&a.pkt, 1),
				a.pkt.tolerance) != SLUICE_PASS) {
			sluice_gcra_refund(&own[k][0], wrote[0], used[0]);
			v = SLUICE_DROP;
			also++;
		}
		want = v == SLUICE_PASS ? 'P' : 'D';
		passed += v == SLUICE_PASS;
		bpfrun_clock(r, now);
		bpfrun_sendn(r, srcs[k], 64, 1, &got);
		if (got == want)
			same++;
		else if (!first_bad)
			first_bad = i + 1;
	}
	if (!tap_ok(same == n,
		    "%s: %u random packets, every verdict the same (%u passed, %u refused by the prefix, the rest by their own key)",
		    t, n, passed, also))
		tap_diag("  %u differ, the first at packet %u", n - same, first_bad);
	counts(r, t, (struct counts){ .passed = passed, .limited = n - passed, .also = also });
}

/* sluice_fleet: `live` boxes, synced until ok_until (ticks); every usage
 * recorded forgotten. */
static bool fleet_at(struct bpfrun *r, __u32 live, __u64 ok_until)
{
	int fd = bpf_map__fd(r->skel->maps.sluice_fleet);
	int use = bpf_map__fd(r->skel->maps.sluice_fleet_use);
	struct sluice_fleet v;
	struct sluice_key k;
	__u32 zero = 0;

	while (!bpf_map_get_next_key(use, NULL, &k))
		if (bpf_map_delete_elem(use, &k))
			return false;
	if (bpf_map_lookup_elem(fd, &zero, &v))
		return false;
	v.live = live;
	v.ok_until = ok_until;
	return !bpf_map_update_elem(fd, &zero, &v, BPF_ANY);
}

/* The usage recorded for the fleet agent under the key tag, src/len:
 * packets' ticks, ~0 when there is none. */
static __u64 fleet_used(struct bpfrun *r, __u32 tag, const char *src, __u8 len)
{
	struct sluice_fleet_use u;
	struct sluice_key k;

	if (bpfrun_key(tag, src, len, &k))
		return ~0ULL;
	if (bpf_map_lookup_elem(bpf_map__fd(r->skel->maps.sluice_fleet_use), &k, &u))
		return ~0ULL;
	return u.used[0];
}

/*
 * A fleet-wide policy (--fleet on) with a second key: the prefix decides on
 * the box's share of its limit as the own key does. Three boxes, no sync
 * (an outage): rate/3 and burst/3 each, so a /24's burst of 8 is 2 packets
 * here. Synced: the whole rate and burst/3 (2 packets at once again), and
 * what the prefix admitted is recorded for the agent under its own key,
 * beside each source's.
 */
static void fleet(struct bpfrun *r)
{
	const char *t = "a fleet policy's second key";
	struct sluice_settings set;
	char src[32], got[16] = "";
	int i;

	if (!tap_ok(bpfrun_setup(r, &set, 1) && put_also(r, 8, 24, 48) &&
			    fleet_at(r, 3, TICKS(SCN_T0) - 1),
		    "%s: setup", t))
		return;
	limit_10(&set.def);
	set.def.tag = TAG_DEFAULT;
	set.def.flags |= SLUICE_POLICY_FLEET;
	if (!tap_ok(!bpfrun_configure(r, &set) && !bpfrun_put_policy(r, &set.def),
		    "%s: the policy", t))
		return;
	for (i = 1; i <= 4; i++) {
		snprintf(src, sizeof(src), "198.18.0.%d", i);
		bpfrun_sendn(r, src, 64, 1, got + i - 1);
	}
	TAP_TRUE(!strcmp(got, "PPDD"),
		 "%s, no sync, 3 boxes: the /24 passes its share, 2 of 8 (got %s)", t, got);
	counts(r, t, (struct counts){ .passed = 2, .limited = 2, .also = 2 });
	TAP_TRUE(fleet_used(r, SLUICE_ALSO_TAG(TAG_DEFAULT), "198.18.0.0", 24) == ~0ULL,
		 "%s, no sync: nothing recorded for the fleet", t);
	TAP_TRUE(tat(bucket(r, TAG_DEFAULT, "198.18.0.3", 32)) <= TICKS(SCN_T0),
		 "%s, no sync: a refused source's own share is given back", t);

	/* synced: the whole rate, burst/3 */
	if (!tap_ok(bpfrun_setup(r, &set, 1) && put_also(r, 8, 24, 48) &&
			    fleet_at(r, 3, TICKS(SCN_T0 + BPFRUN_HOUR)),
		    "%s: synced: setup", t))
		return;
	limit_10(&set.def);
	set.def.tag = TAG_DEFAULT;
	set.def.flags |= SLUICE_POLICY_FLEET;
	if (!tap_ok(!bpfrun_configure(r, &set) && !bpfrun_put_policy(r, &set.def),
		    "%s: synced: the policy", t))
		return;
	memset(got, 0, sizeof(got));
	for (i = 1; i <= 4; i++) {
		snprintf(src, sizeof(src), "198.18.0.%d", i);
		bpfrun_sendn(r, src, 64, 1, got + i - 1);
	}
	TAP_TRUE(!strcmp(got, "PPDD"), "%s, synced, 3 boxes: the /24 passes burst/3, 2 (got %s)",
		 t, got);
	TAP_TRUE(fleet_used(r, SLUICE_ALSO_TAG(TAG_DEFAULT), "198.18.0.0", 24) == 2 * COST,
		 "%s, synced: the prefix's 2 packets recorded under its key (%llu ticks)", t,
		 (unsigned long long)fleet_used(r, SLUICE_ALSO_TAG(TAG_DEFAULT), "198.18.0.0",
						24));
	TAP_TRUE(fleet_used(r, TAG_DEFAULT, "198.18.0.1", 32) == COST &&
			 fleet_used(r, TAG_DEFAULT, "198.18.0.3", 32) == ~0ULL,
		 "%s, synced: an admitted source's own packet is recorded, a refused one's not",
		 t);
	/* 100 ms later: one packet's room at the whole rate */
	bpfrun_clock(r, SCN_T0 + SLUICE_NS_PER_SEC / 10);
	bpfrun_expect(r, "198.18.0.5", 64, "PD",
		      "%s, synced: 100 ms later, one more of the /24 (the whole rate)", t);
	fleet_at(r, 1, 0);
}

int main(void)
{
	struct bpfrun r;
	struct bpfrun_opts o = { .max_flows = 4096 };

	bpfrun_one_cpu();
	if (!bpfrun_load(&r, &o))
		return tap_done();
	prefix_held(&r);
	own_first(&r);
	ipv6(&r);
	dry_run(&r);
	rule(&r);
	aggregate(&r);
	window(&r);
	wide(&r);
	differential(&r);
	fleet(&r);
	bpfrun_close(&r);
	return tap_done();
}
