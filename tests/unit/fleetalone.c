// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Keys on their own (user/lib/fleetalone.c), the outage share of a key
 * whose Redis Cluster shard is down: a box on a simulated clock admits at
 * the whole rate between syncs (its agent still syncs the other shards),
 * and at each sync the agent charges what it admitted N-fold and raises the
 * key's bucket. Over a flood the key gets its outage share, rate/N, within
 * burst/N + rate/N x t + rate x S, and not much less; a key that stays
 * under its share is never held; the table forgets full buckets. A key of
 * a policy's second key (--also-rate) is one more key: its usage comes in
 * its own limit's units, so it is held to its own rate/N, apart from the
 * own key of a source in its prefix.
 */
#include <string.h>
#include <sluice/sluice.h>

#include "fleetalone.h"
#include "../lib/tap.h"

#define US 1000ULL /* ns */

static struct sluice_key key4(__u32 a)
{
	struct sluice_key k = { .tag = 1, .family = 4, .prefixlen = 32 };

	memcpy(k.addr, &a, 4);
	return k;
}

/*
 * A box's bucket of one key (GCRA: tat, cost a packet, tolerance) offered
 * pps for secs, synced every sync_us: the packets admitted.
 */
static __u64 run(struct sluice_fleet_alone *a, const struct sluice_key *k, double rate,
		 double burst, __u32 n, double pps, double secs, __u64 sync_us)
{
	__u64 cost = (__u64)(1e6 / rate), tol = (__u64)(burst / n * 1e6 / rate) - cost;
	__u64 gap = (__u64)(1e6 / pps), now = 1000000, end = now + (__u64)(secs * 1e6);
	__u64 tat = now, next_sync = now + sync_us, used = 0, admitted = 0;

	for (; now < end; now += gap) {
		while (next_sync <= now) {
			__u64 own = used ? sluice_fleet_alone_charge(a, k, 0, (double)used, n,
								     next_sync) :
					   0;

			if (next_sync + own > tat)
				tat = next_sync + own;
			used = 0;
			next_sync += sync_us;
		}
		if (tat < now)
			tat = now;
		if (tat - now <= tol) {
			tat += cost;
			used += cost;
			admitted++;
		}
	}
	return admitted;
}

/* A second key's key (SLUICE_ALSO_TAG(), the /24 of source 7) and the
 * source's own key: two buckets, each charged its own usage; the second
 * key's held to its own rate/N. */
static void test_also(struct sluice_fleet_alone *a)
{
	struct sluice_key own = key4(7), al = key4(7);
	__u64 d1, d2, got, want_max, want_min, secs = 10;

	own.tag = SLUICE_TAG(3, 0, 1);
	al.tag = SLUICE_ALSO_TAG(own.tag);
	al.prefixlen = 24;
	d1 = sluice_fleet_alone_charge(a, &own, 0, 1000, 3, 2000 * US);
	d2 = sluice_fleet_alone_charge(a, &al, 0, 500, 3, 2000 * US);
	TAP_TRUE(d1 == 3000 && d2 == 1500,
		 "a second key's key and a source's own: two buckets (%llu, %llu)",
		 (unsigned long long)d1, (unsigned long long)d2);
	al.addr[3] = 0;
	got = run(a, &al, 100, 90, 3, 1000, (double)secs, 100000);
	want_max = 90 / 3 + 100 * secs / 3 + 100 / 10 + 1;
	want_min = 9 * 100 * secs / 3 / 10;
	TAP_TRUE(got <= want_max && got >= want_min,
		 "a second key of 100/s burst 90, N 3, a flood: %llu admitted, within rate/N "
		 "(%llu to %llu)",
		 (unsigned long long)got, (unsigned long long)want_min,
		 (unsigned long long)want_max);
}

int main(void)
{
	struct sluice_fleet_alone *a;
	struct sluice_key k = key4(7), k2 = key4(8);
	double rate = 100, burst = 100, secs = 10;
	__u64 got, want_max, want_min, d1, d2;
	__u32 n;

	if (!tap_ok(!sluice_fleet_alone_new(16, &a), "a table of keys on their own"))
		return tap_done();
	for (n = 2; n <= 8; n *= 2) {
		struct sluice_key kn = key4(100 + n);

		got = run(a, &kn, rate, burst, n, 1000, secs, 100000);
		want_max = (__u64)(burst / n + rate / n * secs + rate * 0.1) + 1;
		want_min = (__u64)(0.9 * rate / n * secs);
		TAP_TRUE(got <= want_max && got >= want_min,
			 "N %u, a flood of 1000 pps for %.0f s: %llu admitted, within rate/N "
			 "(%llu to %llu)",
			 n, secs, (unsigned long long)got, (unsigned long long)want_min,
			 (unsigned long long)want_max);
	}
	got = run(a, &k2, rate, burst, 4, rate / 4 * 0.8, secs, 100000);
	TAP_TRUE(got >= (__u64)(rate / 4 * 0.8 * secs) - 1,
		 "a key at 80%% of its share is never held (%llu admitted)",
		 (unsigned long long)got);

	/* The charge itself: tat = max(tat, now) + n x used. */
	d1 = sluice_fleet_alone_charge(a, &k, 1, 1000, 3, 50 * US);
	d2 = sluice_fleet_alone_charge(a, &k, 1, 1000, 3, 51 * US);
	TAP_TRUE(d1 == 3000 && d2 == 5000,
		 "a lane's usage counts n-fold, and adds up while in debt (%llu, %llu)",
		 (unsigned long long)d1, (unsigned long long)d2);
	d1 = sluice_fleet_alone_charge(a, &k, 1, 1000, 3, 1000 * US);
	TAP_EQ(d1, 3000, "once its tat has passed, a bucket is full again");
	TAP_TRUE(sluice_fleet_alone_count(a, 1000 * US) >= 1 &&
			 !sluice_fleet_alone_count(a, 30000000),
		 "a lane in debt is counted, and later every bucket is full again");

	test_also(a);
	sluice_fleet_alone_free(a);
	return tap_done();
}
