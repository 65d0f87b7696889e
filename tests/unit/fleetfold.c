// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fold of the fleet's debt into a box's bucket (user/lib/fleetfold.c),
 * on the host: its arithmetic, then a fleet of boxes on a simulated clock,
 * each deciding with include/sluice/algo.h's shared bucket (the whole rate,
 * burst/N) and syncing with a Redis of one line (tat = max(tat, now) + used)
 * every interval, at phases of their own. A source sprayed over every box
 * gets one burst and the rate, burst + rate x t, and never more than burst +
 * rate x t + (N - 1) x rate x S (issue 20, B7), also after a pause that
 * leaves the fleet's bucket half full. The tolerances the fold and the
 * threshold take, by tag: a policy's second key (--also-rate) has its own,
 * of packets only, under SLUICE_ALSO_TAG() of the policy's tag.
 */
#include <string.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define MS 1000000ULL
#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)
#define MAX_BOXES 5

static void test_arithmetic(void)
{
	__u64 hour = TICKS(3600ULL * SLUICE_NS_PER_SEC);

	TAP_EQ(sluice_fold_debt(0, 300, 100), 0, "fold: no debt, nothing");
	TAP_EQ(sluice_fold_debt(150, 300, 100), 50,
	       "fold: half the burst spent, a box of 1/3 takes a third of it");
	TAP_EQ(sluice_fold_debt(1, 300, 100), 1, "fold: rounded up (1/3 of a tick is one)");
	TAP_EQ(sluice_fold_debt(300, 300, 100), 100,
	       "fold: the burst spent, the box's whole share");
	TAP_EQ(sluice_fold_debt(450, 300, 100), 250,
	       "fold: past the burst, the share plus all the debt beyond it");
	TAP_EQ(sluice_fold_debt(450, 0, 100), 450, "fold: no tolerance known, the whole debt");
	TAP_EQ(sluice_fold_debt(450, 300, 300), 450,
	       "fold: a box of the whole burst, the whole debt");
	TAP_EQ(sluice_fold_debt(hour, hour, hour / 3), hour / 3,
	       "fold: an hour's tolerance does not overflow");
	/* Three boxes of a third each: what they have left adds up to what
	 * the fleet has left. */
	TAP_EQ(3 * (100 - sluice_fold_debt(120, 300, 100)), 300 - 120,
	       "fold: three boxes' room adds up to the fleet's room");
}

struct box {
	__u64 s[2]; /* its bucket */
	__u64 used; /* ticks admitted since its last sync */
	__u64 next; /* ns of its next sync */
	__u64 pkts;
};

/*
 * n boxes, policy p; each box is offered a packet every gap_ns while
 * on(t) (from t = 1 s), for secs seconds; every box syncs every sync_ns at a
 * phase of its own. Returns the packets admitted.
 */
static __u64 fleet_run(const struct sluice_policy *p, int n, __u64 gap_ns, __u64 sync_ns,
		       __u64 secs, bool (*on)(__u64 t))
{
	struct box b[MAX_BOXES];
	__u64 t0 = 1000 * MS, t, tat = 0, total = 0, tol = p->pkt.tolerance, lt;
	int i;

	memset(b, 0, sizeof(b));
	lt = sluice_share_tolerance(tol, sluice_limit_cost(&p->pkt, 1), 1, (__u32)n);
	for (i = 0; i < n; i++)
		b[i].next = t0 + (sync_ns * (__u64)(2 * i + 1)) / (__u64)(2 * n);
	for (t = t0; t < t0 + secs * SLUICE_NS_PER_SEC; t += gap_ns) {
		__u64 now = TICKS(t), used[2];

		for (i = 0; i < n; i++) {
			if (t >= b[i].next) {
				__u64 debt, floor;

				if (tat < now)
					tat = now;
				tat += b[i].used;
				b[i].used = 0;
				debt = tat - now;
				floor = now + sluice_fold_debt(debt, tol, lt);
				if (b[i].s[0] < floor)
					b[i].s[0] = floor;
				b[i].next += sync_ns;
			}
			if (!on(t - t0))
				continue;
			if (sluice_bucket_admit_shared(p, &b[i].s[0], &b[i].s[1], now, 60, 1,
						       (__u32)n, used) == SLUICE_PASS) {
				b[i].used += used[0];
				b[i].pkts++;
				total++;
			}
		}
	}
	return total;
}

static bool always(__u64 t)
{
	(void)t;
	return true;
}

/* On for 1 s, off for 1.5 s (the fleet's bucket half full again), on. */
static bool paused(__u64 t)
{
	return t < 1000 * MS || t >= 2500 * MS;
}

static void spray(int n, __u64 burst, __u64 secs, bool (*on)(__u64), const char *how)
{
	struct scn s = {
		.name = "fold", .algo = SLUICE_ALGO_TOKEN_BUCKET, .rate = "100/s", .burst = burst
	};
	struct sluice_policy p;
	char err[SLUICE_ERR_LEN] = "";
	__u64 got, lo, hi, sync = 100 * MS;
	__u64 open_s = on == paused ? secs - 1500 * MS / SLUICE_NS_PER_SEC : secs;

	if (!tap_ok(!scn_policy(&s, &p, err, sizeof(err)), "%d boxes, burst %llu: policy", n,
		    (unsigned long long)burst))
		return;
	p.flags |= SLUICE_POLICY_FLEET;
	got = fleet_run(&p, n, MS, sync, secs, on);
	/* rate x t over the whole span (a pause earns it too, up to the burst) */
	hi = burst + 100 * secs + (__u64)(n - 1) * 100 * sync / SLUICE_NS_PER_SEC;
	lo = (burst + 100 * open_s) * 9 / 10;
	tap_diag("%d boxes, 100/s burst %llu, %s, %llu s: %llu admitted (%llu to %llu)", n,
		 (unsigned long long)burst, how, (unsigned long long)secs, (unsigned long long)got,
		 (unsigned long long)lo, (unsigned long long)hi);
	TAP_TRUE(got <= hi,
		 "%d boxes, burst %llu, %s: at most burst + rate x t + (N - 1) x rate x S", n,
		 (unsigned long long)burst, how);
	if (on == always)
		TAP_TRUE(got >= lo,
			 "%d boxes, burst %llu, %s: one burst, at least 0.9 x (burst + "
			 "rate x t)",
			 n, (unsigned long long)burst, how);
}

/*
 * The tolerances of a default of 1000/s burst 1000 with a second key of
 * 100/s burst 90, a rule on L4 of 10/s burst 20 with one of 5/s burst 50, a
 * rule of a CIDR alone with one that is not fleet-wide: the second keys'
 * keys fold and share by their own limit; a policy's own keys as before.
 */
static void test_tols(void)
{
	struct sluice_fleet_tols t = { 0 };
	struct sluice_policies pol;
	struct sluice_txn_rule r;
	struct sluice_txn_l4 l4;
	struct sluice_key own = { .tag = SLUICE_TAG(0, 0, 1), .family = 4, .prefixlen = 32 };
	struct sluice_key al = { .tag = SLUICE_ALSO_TAG(SLUICE_TAG(0, 0, 1)),
				 .family = 4,
				 .prefixlen = 24 };
	const struct sluice_limit *a1 = &pol.also[1].pkt, *a2 = &pol.also[2].pkt;
	__u64 sec = SLUICE_TICKS_PER_SEC, d = 45 * sec / 100;

	memset(&pol, 0, sizeof(pol));
	memset(&r, 0, sizeof(r));
	memset(&l4, 0, sizeof(l4));
	pol.set.def.tag = SLUICE_TAG(0, 0, 1);
	pol.set.def.flags = SLUICE_POLICY_FLEET | 1 << SLUICE_POLICY_ALSO_SHIFT;
	sluice_limit_set(&pol.set.def.pkt, 1000, SLUICE_NS_PER_SEC, 1000, NULL, 0);
	sluice_limit_set(&pol.also[1].pkt, 100, SLUICE_NS_PER_SEC, 90, NULL, 0);
	l4.policy.tag = SLUICE_TAG(7, 1, 2);
	l4.policy.algo = SLUICE_ALGO_LEAKY_BUCKET;
	l4.policy.flags = SLUICE_POLICY_FLEET | 2 << SLUICE_POLICY_ALSO_SHIFT;
	sluice_limit_set(&l4.policy.pkt, 10, SLUICE_NS_PER_SEC, 20, NULL, 0);
	sluice_limit_set(&pol.also[2].pkt, 5, SLUICE_NS_PER_SEC, 50, NULL, 0);
	r.rule.policy.tag = SLUICE_TAG(3, 0, 1);
	r.rule.policy.flags = 1 << SLUICE_POLICY_ALSO_SHIFT; /* not fleet-wide */
	sluice_limit_set(&r.rule.policy.pkt, 100, SLUICE_NS_PER_SEC, 100, NULL, 0);
	pol.rules = &r;
	pol.nr_rules = 1;
	pol.l4 = &l4;
	pol.nr_l4 = 1;
	if (!tap_ok(!sluice_fleet_tols_set(&t, &pol), "the tolerances of four keys' limits"))
		return;
	TAP_EQ(t.n, 4,
	       "the default, the rule on L4, and their second keys: 4 (the rule of a "
	       "CIDR alone is not fleet-wide)");

	TAP_EQ(sluice_fleet_share_tol(&t, &own, 0, 3),
	       sluice_share_tolerance(pol.set.def.pkt.tolerance,
				      sluice_limit_cost(&pol.set.def.pkt, 1), 1, 3),
	       "the default's own key: a third of its burst of 1000");
	TAP_EQ(sluice_fleet_share_tol(&t, &al, 0, 3),
	       sluice_share_tolerance(a1->tolerance, sluice_limit_cost(a1, 1), 1, 3),
	       "its second key's: a third of the second key's burst of 90");
	TAP_EQ(sluice_fleet_share_tol(&t, &al, 0, 3), 30 * sec / 100,
	       "... 30 packets of 100/s: 0.3 s");
	TAP_EQ(sluice_fleet_share_tol(&t, &al, 1, 3), 0, "a second key has no byte lane");
	/* a debt of 0.45 s, half the second key's burst: a third of it */
	TAP_EQ(sluice_fleet_fold(&t, &al, 0, 3, d), d / 3,
	       "its second key's debt, half its burst: the box's third of it");
	/* 1.2 s: past both bursts, each folded by its own */
	d = 12 * sec / 10;
	TAP_EQ(sluice_fleet_fold(&t, &al, 0, 3, d), d - (90 * sec / 100 - 30 * sec / 100),
	       "its second key's debt of 1.2 s, past its 0.9 s: the share and all beyond");
	TAP_EQ(sluice_fleet_fold(&t, &own, 0, 3, d),
	       d - (pol.set.def.pkt.tolerance - sluice_fleet_share_tol(&t, &own, 0, 3)),
	       "the same debt on the own key: past its own burst, by its own");

	al.tag = SLUICE_ALSO_TAG(SLUICE_TAG(7, 1, 2));
	TAP_EQ(sluice_fleet_share_tol(&t, &al, 0, 2),
	       sluice_share_tolerance(a2->tolerance, sluice_limit_cost(a2, 1), 1, 2),
	       "the rule on L4's second key: half its burst of 50 (rules on L4 are read)");
	al.tag = SLUICE_ALSO_TAG(SLUICE_TAG(3, 0, 1));
	TAP_EQ(sluice_fleet_share_tol(&t, &al, 0, 2), 0,
	       "a second key of a policy that is not fleet-wide: none");
	TAP_EQ(sluice_fleet_fold(&t, &al, 0, 2, d), d, "... and its debt folds whole");
	sluice_fleet_tols_free(&t);
}

int main(void)
{
	test_arithmetic();
	test_tols();
	spray(2, 300, 3, always, "sprayed evenly");
	spray(3, 300, 3, always, "sprayed evenly");
	spray(5, 300, 3, always, "sprayed evenly");
	spray(3, 30, 3, always, "sprayed evenly");
	spray(3, 300, 4, paused, "paused 1.5 s after 1 s");
	spray(5, 300, 4, paused, "paused 1.5 s after 1 s");
	return tap_done();
}
