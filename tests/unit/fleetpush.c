// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Which keys a fleet sync pushes (user/lib/fleetpush.c), on the host: the
 * rules one by one (theta, a debt, the age, a full table), then a fleet of
 * boxes on a simulated clock, each deciding with include/sluice/algo.h's
 * shared bucket and syncing with a Redis of one line (tat = max(tat, now) +
 * used) only what fleetpush lets through: a spoofed flood of one-packet
 * sources costs Redis nothing, and a heavy source sprayed over every box is
 * still held to burst + rate x t + (N - 1) x rate x S + N x theta (issue 24).
 */
#include <string.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "fleetpush.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define MS 1000000ULL
#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)

static struct sluice_key key4(__u32 a)
{
	struct sluice_key k = { .tag = 1, .family = 4, .prefixlen = 32 };

	memcpy(k.addr, &a, 4);
	return k;
}

static void test_rules(void)
{
	struct sluice_fleet_push *p;
	struct sluice_key a = key4(1), b = key4(2), c = key4(3);
	__u64 theta[2] = { 100, 0 }, one[2] = { 10, 0 }, many[2] = { 100, 0 }, none[2] = { 0, 0 };
	__u64 bytes[2] = { 0, 5 }, t = 5000 * MS;

	if (!tap_ok(!sluice_fleet_push_new(4, &p), "a table for 4 keys"))
		return;
	sluice_fleet_push_begin(p, t);
	TAP_TRUE(!sluice_fleet_push_want(p, &a, one, theta, 10000 * MS),
		 "usage under theta is held");
	TAP_TRUE(sluice_fleet_push_want(p, &b, many, theta, 10000 * MS),
		 "usage at theta is pushed");
	TAP_TRUE(!sluice_fleet_push_want(p, &c, none, theta, 10000 * MS), "no usage, no push");
	TAP_TRUE(sluice_fleet_push_want(p, &c, bytes, theta, 10000 * MS),
		 "a lane without a threshold pushes any usage");
	sluice_fleet_push_debt(p, &b, 250 * MS);
	TAP_EQ(sluice_fleet_push_end(p), 1, "one key held in the first sync");

	t += 100 * MS;
	sluice_fleet_push_begin(p, t);
	TAP_TRUE(sluice_fleet_push_want(p, &b, one, theta, 10000 * MS),
		 "a key in debt pushes what it used, under theta too");
	TAP_TRUE(!sluice_fleet_push_want(p, &a, one, theta, 10000 * MS),
		 "a held key stays held under theta");
	sluice_fleet_push_debt(p, &b, 250 * MS);
	sluice_fleet_push_end(p);

	/* b unseen for a sync (held by its debt, it used nothing): still in
	 * debt after, until the debt runs out */
	t += 100 * MS;
	sluice_fleet_push_begin(p, t);
	sluice_fleet_push_want(p, &a, one, theta, 10000 * MS);
	sluice_fleet_push_end(p);
	t += 100 * MS;
	sluice_fleet_push_begin(p, t);
	TAP_TRUE(sluice_fleet_push_want(p, &b, one, theta, 10000 * MS),
		 "a debt is carried over a sync the key used nothing in");
	sluice_fleet_push_want(p, &a, one, theta, 10000 * MS);
	sluice_fleet_push_end(p);
	t += 300 * MS;
	sluice_fleet_push_begin(p, t);
	TAP_TRUE(!sluice_fleet_push_want(p, &b, one, theta, 10000 * MS),
		 "once the debt has run out, the key is held under theta again");
	sluice_fleet_push_want(p, &a, one, theta, 10000 * MS);
	sluice_fleet_push_end(p);

	/* a held since 5 s (it had usage at every sync: a held key keeps
	 * it), b since 5.6 s; max age 1 s */
	t = 6050 * MS;
	sluice_fleet_push_begin(p, t);
	TAP_TRUE(sluice_fleet_push_want(p, &a, one, theta, 1000 * MS),
		 "a key held for max age is pushed");
	TAP_TRUE(!sluice_fleet_push_want(p, &b, one, theta, 1000 * MS),
		 "a key held for less is not");
	TAP_TRUE(!sluice_fleet_push_want(p, &c, one, theta, 1000 * MS), "nor a new one");
	sluice_fleet_push_end(p);
	t += 600 * MS;
	sluice_fleet_push_begin(p, t);
	TAP_TRUE(sluice_fleet_push_want(p, &b, one, theta, 1000 * MS),
		 "the age counts from the key's first usage held, not from the last");
	TAP_TRUE(!sluice_fleet_push_want(p, &a, one, theta, 1000 * MS),
		 "a key pushed for its age starts a new age");
	sluice_fleet_push_end(p);
	sluice_fleet_push_free(p);
}

static void test_full(void)
{
	struct sluice_fleet_push *p;
	__u64 theta[2] = { 100, 0 }, one[2] = { 1, 0 };
	size_t i, held = 0, pushed = 0;

	if (!tap_ok(!sluice_fleet_push_new(1000, &p), "a table for 1000 keys"))
		return;
	sluice_fleet_push_begin(p, MS);
	for (i = 0; i < 5000; i++) {
		struct sluice_key k = key4((__u32)i + 1);

		if (sluice_fleet_push_want(p, &k, one, theta, 0))
			pushed++;
		else
			held++;
	}
	TAP_EQ(sluice_fleet_push_end(p), held, "end counts the keys held");
	tap_diag("of 5000 keys, %zu held, %zu pushed", held, pushed);
	TAP_TRUE(held >= 1000 && pushed > 0,
		 "a full table pushes what it has no room for, and holds at least its size");
	sluice_fleet_push_free(p);
}

#define BOXES 3
#define FLOOD 60000 /* one-packet sources per box */

struct box {
	struct sluice_fleet_push *push;
	__u64 s[2]; /* the heavy source's bucket */
	__u64 used; /* its ticks not pushed */
	__u64 next; /* ns of the next sync */
	__u64 flood_used[FLOOD]; /* each flood source's ticks not pushed */
	__u64 pkts;
};

static struct box boxes[BOXES];

/*
 * BOXES boxes of 100/s burst 300, sync 100 ms at phases of their own, theta
 * frac of a box's share of the burst; the heavy source offered a packet
 * every ms on every box for secs, and FLOOD one-packet sources on each box
 * over the first second. Returns the heavy source's packets admitted;
 * *flood_pushes the flood's keys pushed to Redis, *heavy_pushes the heavy's.
 */
static __u64 flood_run(const struct sluice_policy *p, double frac, __u64 secs, __u64 *flood_pushes,
		       __u64 *heavy_pushes, __u64 *theta_out)
{
	__u64 t0 = 1000 * MS, t, tat = 0, total = 0, tol = p->pkt.tolerance, lt, sync = 100 * MS;
	__u64 cost = sluice_limit_cost(&p->pkt, 1), theta[2];
	int i;

	lt = sluice_share_tolerance(tol, cost, 1, BOXES);
	theta[0] = (__u64)((double)lt * frac);
	theta[1] = 0;
	*theta_out = theta[0];
	*flood_pushes = *heavy_pushes = 0;
	for (i = 0; i < BOXES; i++) {
		memset(&boxes[i], 0, sizeof(boxes[i]));
		if (sluice_fleet_push_new(FLOOD + 16, &boxes[i].push))
			return 0;
		boxes[i].next = t0 + (sync * (__u64)(2 * i + 1)) / (2 * BOXES);
	}
	for (t = t0; t < t0 + secs * SLUICE_NS_PER_SEC; t += MS) {
		__u64 now = TICKS(t), used[2], f;

		for (i = 0; i < BOXES; i++) {
			struct box *b = &boxes[i];

			if (t >= b->next) {
				struct sluice_key hk = key4(0xffffffff);
				__u64 u[2] = { b->used, 0 };

				sluice_fleet_push_begin(b->push, t);
				if (frac == 0 ||
				    sluice_fleet_push_want(b->push, &hk, u, theta, 30000 * MS)) {
					__u64 debt, floor;

					if (b->used)
						++*heavy_pushes;
					if (tat < now)
						tat = now;
					tat += b->used;
					b->used = 0;
					debt = tat - now;
					floor = now + sluice_fold_debt(debt, tol, lt);
					if (b->s[0] < floor)
						b->s[0] = floor;
					sluice_fleet_push_debt(b->push, &hk,
							       debt >> SLUICE_TICK_SHIFT);
				}
				for (f = 0; f < FLOOD; f++) {
					struct sluice_key k = key4((__u32)(i * FLOOD + f + 1));
					__u64 fu[2] = { b->flood_used[f], 0 };

					if (!fu[0])
						continue;
					if (frac == 0 ||
					    sluice_fleet_push_want(b->push, &k, fu, theta,
								   30000 * MS)) {
						/* its own key in Redis: no debt worth
						 * folding for one packet */
						++*flood_pushes;
						b->flood_used[f] = 0;
					}
				}
				sluice_fleet_push_end(b->push);
				b->next += sync;
			}
			/* the flood: FLOOD sources over the first second */
			f = (t - t0) / MS * FLOOD / 1000;
			if (t - t0 < 1000 * MS)
				for (; f < ((t - t0) / MS + 1) * FLOOD / 1000; f++)
					b->flood_used[f] += cost;
			if (sluice_bucket_admit_shared(p, &b->s[0], &b->s[1], now, 60, 1, BOXES,
						       used) == SLUICE_PASS) {
				b->used += used[0];
				b->pkts++;
				total++;
			}
		}
	}
	for (i = 0; i < BOXES; i++)
		sluice_fleet_push_free(boxes[i].push);
	return total;
}

static void test_flood(double frac, const char *how)
{
	struct scn s = {
		.name = "push", .algo = SLUICE_ALGO_TOKEN_BUCKET, .rate = "100/s", .burst = 300
	};
	struct sluice_policy p;
	char err[SLUICE_ERR_LEN] = "";
	__u64 got, hi, lo, fp, hp, theta, secs = 3, n_theta;

	if (!tap_ok(!scn_policy(&s, &p, err, sizeof(err)), "flood %s: policy", how))
		return;
	p.flags |= SLUICE_POLICY_FLEET;
	got = flood_run(&p, frac, secs, &fp, &hp, &theta);
	/* N x theta, in packets, rounded up */
	n_theta = (BOXES * theta + sluice_limit_cost(&p.pkt, 1) - 1) / sluice_limit_cost(&p.pkt, 1);
	hi = 300 + 100 * secs + (BOXES - 1) * 100 * 100 / 1000 + n_theta;
	lo = (300 + 100 * secs) * 9 / 10;
	tap_diag("flood %s: heavy admitted %llu (%llu to %llu, N x theta %llu packets), "
		 "pushed %llu times; flood keys pushed %llu",
		 how, (unsigned long long)got, (unsigned long long)lo, (unsigned long long)hi,
		 (unsigned long long)n_theta, (unsigned long long)hp, (unsigned long long)fp);
	TAP_TRUE(got <= hi, "flood %s: the heavy source held to the bound with N x theta", how);
	TAP_TRUE(got >= lo, "flood %s: the heavy source gets 0.9 x (burst + rate x t)", how);
	if (frac > 0) {
		TAP_EQ(fp, 0, "flood %s: no one-packet source costs Redis a key", how);
		TAP_TRUE(n_theta * 2 < 300, "flood %s: N x theta under half a burst", how);
	} else {
		TAP_EQ(fp, (__u64)BOXES * FLOOD, "flood %s: every one-packet source pushed", how);
	}
}

int main(void)
{
	test_rules();
	test_full();
	test_flood(0.25, "theta 0.25");
	test_flood(0, "no threshold");
	return tap_done();
}
