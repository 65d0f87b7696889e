// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The most debt the fleet agent folds for a key (user/lib/fleetbound.c):
 * n x (w + S + 2 T), w the policy's tolerance (or one unit's cost, if
 * more), found by the key's tag; a key of a policy's second key
 * (--also-rate) by the second key's limit, and the widest of them counts
 * them too; the policies of every kind of rule (those on L4 included)
 * are read. Figures worked out by hand.
 * tests/net/fleetfake.sh folds a debt of a year through a real agent.
 */
#include <string.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "fleetbound.h"
#include "../lib/tap.h"

#define MS 1000000ULL
#define S_TICKS(s) (SLUICE_TICKS_PER_SEC * (__u64)(s))

static void fleet_policy(struct sluice_policy *p, __u32 slot, __u64 rate, __u64 burst, __u64 brate,
			 __u64 bburst)
{
	memset(p, 0, sizeof(*p));
	p->tag = SLUICE_TAG(slot, SLUICE_ALGO_TOKEN_BUCKET, 3);
	p->algo = SLUICE_ALGO_TOKEN_BUCKET;
	p->action = SLUICE_ACT_LIMIT;
	p->flags = SLUICE_POLICY_FLEET;
	if (rate)
		sluice_limit_set(&p->pkt, rate, SLUICE_NS_PER_SEC, burst, NULL, 0);
	if (brate)
		sluice_limit_set_bytes(&p->bytes, brate, SLUICE_NS_PER_SEC, bburst, NULL, 0);
}

static void test_formula(void)
{
	/* 2/s burst 4: w = 2 s; S 50 ms, T 200 ms: 2.45 s a box */
	TAP_EQ(sluice_fleet_debt_bound_us(S_TICKS(2), 1, 50 * MS, 200 * MS), 2450000,
	       "1 box, w 2 s, S 50 ms, T 200 ms: 2.45 s");
	TAP_EQ(sluice_fleet_debt_bound_us(S_TICKS(2), 3, 100 * MS, 1000 * MS), 3 * 4100000,
	       "3 boxes, w 2 s, S 100 ms, T 1 s: 3 x 4.1 s");
	TAP_EQ(sluice_fleet_debt_bound_us(S_TICKS(2), 0, 50 * MS, 200 * MS), 2450000,
	       "0 boxes counts as 1");
	TAP_EQ(sluice_fleet_debt_bound_us(1, 1, 0, 0), 1, "at least 1 us");
	TAP_EQ(sluice_fleet_debt_bound_us(SLUICE_MAX_TOLERANCE, SLUICE_FLEET_MAX_BOXES, 60000 * MS,
					  60000 * MS),
	       SLUICE_MAX_TOLERANCE / 16000, "at most SLUICE_MAX_TOLERANCE, however large");
}

static void test_lookup(void)
{
	struct sluice_fleet_bound *b;
	struct sluice_policy p;
	struct sluice_key k;

	if (!tap_ok(!sluice_fleet_bound_new(&b), "allocate the bounds"))
		return;
	fleet_policy(&p, 5, 2, 4, 0, 0); /* 2/s burst 4: 2 s */
	sluice_fleet_bound_set(b, &p, NULL);
	fleet_policy(&p, 9, 100, 1, 1000, 1000); /* 100/s burst 1: 10 ms; bytes */
	sluice_fleet_bound_set(b, &p, NULL);
	fleet_policy(&p, 11, 1, 1000, 0, 0);
	p.flags = 0; /* not fleet-wide: no bound of its own */
	sluice_fleet_bound_set(b, &p, NULL);

	memset(&k, 0, sizeof(k));
	k.tag = SLUICE_TAG(5, SLUICE_ALGO_TOKEN_BUCKET, 3);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(2), "slot 5's packets: its 2 s");
	k.tag = SLUICE_TAG(9, SLUICE_ALGO_TOKEN_BUCKET, 3);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(1) / 100, "slot 9's packets: its 10 ms");
	/* 1000 B/s burst 1000: 1 s; a 64 KB packet costs 65.535 s, more */
	TAP_EQ(sluice_fleet_bound_w(b, &k, 1), S_TICKS(65535) / 1000,
	       "slot 9's bytes: a 64 KB packet's cost, above its 1 s burst");
	k.tag = SLUICE_TAG(5, SLUICE_ALGO_TOKEN_BUCKET, 2);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(2),
	       "a tag of another generation: the widest of the fleet policies");
	k.tag = SLUICE_TAG(11, SLUICE_ALGO_TOKEN_BUCKET, 3);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(2),
	       "a slot with no fleet policy: the widest");
	TAP_EQ(sluice_fleet_bound_w(b, &k, 1), S_TICKS(65535) / 1000,
	       "the widest byte limit likewise");
	sluice_fleet_bound_free(b);
}

/* A key of tag (slot, 3), or of its second key when also. */
static struct sluice_key key_of(__u32 slot, bool also)
{
	struct sluice_key k = { .tag = SLUICE_TAG(slot, SLUICE_ALGO_TOKEN_BUCKET, 3) };

	if (also)
		k.tag = SLUICE_ALSO_TAG(k.tag);
	return k;
}

/*
 * The policies as the agent reads them (sluice_fleet_bound_set_all()): a
 * default with a second key, a rule of a CIDR alone, a rule on L4 with one;
 * the second keys' w is theirs, the policies' own keys' theirs.
 */
static void test_also(void)
{
	struct sluice_fleet_bound *b;
	struct sluice_policies pol;
	struct sluice_txn_rule r;
	struct sluice_txn_l4 l4;
	struct sluice_key k;

	if (!tap_ok(!sluice_fleet_bound_new(&b), "allocate the bounds"))
		return;
	memset(&pol, 0, sizeof(pol));
	memset(&r, 0, sizeof(r));
	memset(&l4, 0, sizeof(l4));
	/* the default: 1000/s burst 1000 (1 s); its second key 100/s burst 300 (3 s) */
	fleet_policy(&pol.set.def, 0, 1000, 1000, 0, 0);
	pol.set.def.flags |= 1 << SLUICE_POLICY_ALSO_SHIFT;
	sluice_limit_set(&pol.also[1].pkt, 100, SLUICE_NS_PER_SEC, 300, NULL, 0);
	/* a rule of a CIDR alone: 10/s burst 5 (0.5 s), no second key */
	fleet_policy(&r.rule.policy, 4, 10, 5, 0, 0);
	pol.rules = &r;
	pol.nr_rules = 1;
	/* a rule on L4: 50/s burst 100 (2 s); its second key 1/s burst 20 (20 s) */
	fleet_policy(&l4.policy, 6, 50, 100, 0, 0);
	l4.policy.flags |= 2 << SLUICE_POLICY_ALSO_SHIFT;
	sluice_limit_set(&pol.also[2].pkt, 1, SLUICE_NS_PER_SEC, 20, NULL, 0);
	pol.l4 = &l4;
	pol.nr_l4 = 1;
	sluice_fleet_bound_set_all(b, &pol, false);

	k = key_of(0, false);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(1), "the default's own key: its 1 s");
	k = key_of(0, true);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(3), "the default's second key: its 3 s");
	k = key_of(4, false);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(1) / 2, "the CIDR rule's key: its 0.5 s");
	k = key_of(6, false);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(2),
	       "the rule on L4's own key: its 2 s (rules on L4 are read)");
	k = key_of(6, true);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(20),
	       "the rule on L4's second key: its 20 s");
	k = key_of(4, true);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(20),
	       "a second key of a policy that has none: the widest, second keys counted");
	k = key_of(9, false);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(20),
	       "a slot of no policy: the widest, second keys counted");
	k = key_of(0, true);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 1), 0,
	       "a second key's byte lane (never pushed): the widest byte limit, none here");
	/* the bound itself, 3 boxes, S 100 ms, T 1 s: 3 x (3 s + 2.1 s) */
	TAP_EQ(sluice_fleet_debt_bound_us(sluice_fleet_bound_w(b, &k, 0), 3, 100 * MS, 1000 * MS),
	       3 * 5100000ULL, "the default's second key, 3 boxes: 3 x (3 s + 0.1 s + 2 x 1 s)");
	/* a shaper's: a unit of 64 packets, 0.64 s of 100/s, within 3 s */
	sluice_fleet_bound_set_all(b, &pol, true);
	TAP_EQ(sluice_fleet_bound_w(b, &k, 0), S_TICKS(3), "a shaper's second key: its 3 s");
	sluice_fleet_bound_free(b);
}

int main(void)
{
	test_formula();
	test_lookup();
	test_also();
	return tap_done();
}
