// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fold of the fleet's debt into a box's bucket (user/lib/fleetfold.c),
 * on the host: its arithmetic, then a fleet of boxes on a simulated clock,
 * each deciding with include/sluice/algo.h's shared bucket (the whole rate,
 * burst/N) and syncing with a Redis of one line (tat = max(tat, now) + used)
 * every interval, at phases of their own. A source sprayed over every box
 * gets one burst and the rate, burst + rate x t, and never more than burst +
 * rate x t + (N - 1) x rate x S (issue 20, B7), also after a pause that
 * leaves the fleet's bucket half full.
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

int main(void)
{
	test_arithmetic();
	spray(2, 300, 3, always, "sprayed evenly");
	spray(3, 300, 3, always, "sprayed evenly");
	spray(5, 300, 3, always, "sprayed evenly");
	spray(3, 30, 3, always, "sprayed evenly");
	spray(3, 300, 4, paused, "paused 1.5 s after 1 s");
	spray(5, 300, 4, paused, "paused 1.5 s after 1 s");
	return tap_done();
}
