// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What a change of --burst does to a source's bucket, as docs/algorithms.md and
 * sluicectl(8) say: the bucket is kept (same state format, no new tag), and
 * the new burst applies to it at once. Raising it hands every source the
 * extra allowance at once: its bucket now has room. Lowering it makes a held
 * source wait until its debt is under the new burst. The math of
 * include/sluice/algo.h on the host, a simulated clock.
 */
#include <string.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)
#define MS 1000000ULL

static bool policy(struct sluice_policy *p, __u8 algo, const char *rate, __u64 burst)
{
	struct scn s = { .name = "unit", .algo = algo, .rate = rate, .burst = burst };
	char err[SLUICE_ERR_LEN] = "";

	if (scn_policy(&s, p, err, sizeof(err))) {
		tap_diag("  policy %s burst %llu: %s", rate, (unsigned long long)burst, err);
		return false;
	}
	return true;
}

/* Offer n packets at one instant; how many passed. */
static __u64 offer(const struct sluice_policy *p, __u64 *s, __u64 t_ns, __u64 n)
{
	__u64 passed = 0, i;

	for (i = 0; i < n; i++)
		passed += sluice_admit(p, s, TICKS(t_ns), 60) == SLUICE_PASS;
	return passed;
}

/* The first time from t0 (1 ms steps, up to t1) a packet passes, in *at;
 * false if none (0 is a time: t0 may be 0). */
static bool first_pass(const struct sluice_policy *p, __u64 *s, __u64 t0, __u64 t1, __u64 *at)
{
	__u64 t;

	for (t = t0; t <= t1; t += MS)
		if (sluice_admit(p, s, TICKS(t), 60) == SLUICE_PASS) {
			*at = t;
			return true;
		}
	return false;
}

static void test_state_kept(void)
{
	struct sluice_policy a, b;

	if (!policy(&a, SLUICE_ALGO_TOKEN_BUCKET, "100/s", 10)) {
		tap_ok(false, "state format: policy");
		return;
	}
	TAP_TRUE(policy(&b, SLUICE_ALGO_TOKEN_BUCKET, "100/s", 50) &&
			 sluice_same_state_format(&a, &b),
		 "a new burst keeps the state format: the buckets are kept, not retagged");
	TAP_TRUE(policy(&b, SLUICE_ALGO_TOKEN_BUCKET, "400/s", 10) &&
			 sluice_same_state_format(&a, &b),
		 "a new rate keeps the state format too");
	TAP_TRUE(policy(&b, SLUICE_ALGO_LEAKY_BUCKET, "100/s", 50) &&
			 !sluice_same_state_format(&a, &b),
		 "a new algorithm changes the format: its sources start with full buckets");
	b = a;
	b.prefix4 = 24;
	TAP_TRUE(!sluice_same_state_format(&a, &b),
		 "a new key prefix changes the format: its sources start with full buckets");
}

/* Raising: 100/s burst 10, a source held at t0, then burst 50 at t0 (the
 * clock at 1 s, or at 0: the same). */
static void test_raise(__u8 algo, const char *name, __u64 t0)
{
	struct sluice_policy lo, hi;
	__u64 s[2] = { 0 };

	if (!policy(&lo, algo, "100/s", 10) || !policy(&hi, algo, "100/s", 50)) {
		tap_ok(false, "%s raise: policy", name);
		return;
	}
	TAP_EQ(offer(&lo, s, t0, 100), 10, "%s, 100/s burst 10: a flood at t0 gets 10", name);
	TAP_EQ(offer(&hi, s, t0, 100), 40,
	       "%s, burst raised to 50 at t0: the held source gets the extra 40 at once", name);
	TAP_EQ(offer(&hi, s, t0 + 10 * MS, 100), 1,
	       "%s, burst 50: then it is held again, one per 10 ms", name);
}

/* Lowering: 100/s burst 50, a source held at t0, then burst 10 at t0. */
static void test_lower(__u8 algo, const char *name, __u64 t0)
{
	struct sluice_policy lo, hi;
	__u64 s[2] = { 0 }, t = 0;
	bool found;

	if (!policy(&lo, algo, "100/s", 10) || !policy(&hi, algo, "100/s", 50)) {
		tap_ok(false, "%s lower: policy", name);
		return;
	}
	TAP_EQ(offer(&hi, s, t0, 100), 50, "%s, 100/s burst 50: a flood at t0 gets 50", name);
	/* Its debt is 50 x 10 ms = 500 ms; under burst 10 a packet passes once
	 * the debt, that packet paid, is at most 100 ms: after 410 ms. */
	found = first_pass(&lo, s, t0, t0 + 2000 * MS, &t);
	TAP_EQ(found ? t - t0 : ~0ULL, 410 * MS,
	       "%s, burst lowered to 10 at t0: the held source waits 410 ms, until its debt "
	       "is under the new burst",
	       name);
	TAP_EQ(offer(&lo, s, t + 10 * MS, 100), 1, "%s, burst 10: then one per 10 ms", name);
}

int main(void)
{
	test_state_kept();
	test_raise(SLUICE_ALGO_TOKEN_BUCKET, "token-bucket", 1000 * MS);
	test_raise(SLUICE_ALGO_LEAKY_BUCKET, "leaky-bucket", 1000 * MS);
	test_lower(SLUICE_ALGO_TOKEN_BUCKET, "token-bucket", 1000 * MS);
	test_lower(SLUICE_ALGO_LEAKY_BUCKET, "leaky-bucket", 1000 * MS);
	test_raise(SLUICE_ALGO_TOKEN_BUCKET, "token-bucket from a clock at 0", 0);
	test_raise(SLUICE_ALGO_LEAKY_BUCKET, "leaky-bucket from a clock at 0", 0);
	test_lower(SLUICE_ALGO_TOKEN_BUCKET, "token-bucket from a clock at 0", 0);
	test_lower(SLUICE_ALGO_LEAKY_BUCKET, "leaky-bucket from a clock at 0", 0);
	return tap_done();
}
