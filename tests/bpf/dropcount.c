// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A key's drop count (what `top` and `show` print) against the real count.
 * Exact below one sample (64 drops); past it, each drop adds a whole sample
 * with chance 1/64, drawn at random: an unbiased estimate whose standard
 * deviation is 8 x sqrt(N - 64) for N real drops. The draw must not follow
 * the traffic: 64 sources sent round-robin on one CPU made a per-CPU
 * "every 64th drop" sample land on one source every time.
 */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "../lib/bpfrun.h"
#include "../lib/tap.h"
#include "libsluice.h"

#define SOURCES 64
#define ROUNDS 2000

/* 5 standard deviations, and one sample of rounding. */
static double bound(double real)
{
	return 5.0 * 8.0 * sqrt(real > 64 ? real - 64 : 0) + 64.0;
}

static void test_exact_flag(struct bpfrun *r)
{
	struct sluice_settings set;
	struct sluice_bucket b;
	__u8 frame[FRAME_MAX];
	size_t len;
	__u32 action;
	bool ok;

	if (!bpfrun_setup(r, &set, 1)) {
		tap_ok(false, "exact: setup");
		return;
	}
	len = frame_ip(frame, "198.18.2.1", 60, NULL);
	/* 1 pass, then 63 drops: below one sample, exact. */
	memset(&b, 0, sizeof(b));
	bpfrun_run_repeat(r, frame, (__u32)len, 64, &action);
	ok = !bpfrun_lookup(r, false, set.def.tag, "198.18.2.1", 32, &b);
	TAP_TRUE(ok && b.dropped == 63 && sluice_drops_exact(&set, b.dropped),
		 "63 drops count 63, exact (got %llu)", (unsigned long long)b.dropped);
	/* One more: 64. From here the count moves a sample at a time, so 64
	 * can stand for 64 to 127 drops: never shown as exact. */
	bpfrun_run_repeat(r, frame, (__u32)len, 1, &action);
	ok = !bpfrun_lookup(r, false, set.def.tag, "198.18.2.1", 32, &b);
	TAP_TRUE(ok && b.dropped == 64 && !sluice_drops_exact(&set, b.dropped),
		 "64 drops count 64, not shown as exact (got %llu)", (unsigned long long)b.dropped);
	bpfrun_run_repeat(r, frame, (__u32)len, 26, &action);
	ok = !bpfrun_lookup(r, false, set.def.tag, "198.18.2.1", 32, &b);
	TAP_TRUE(ok && !sluice_drops_exact(&set, b.dropped),
		 "90 drops are not shown as an exact count (got %llu)",
		 (unsigned long long)b.dropped);
}

static void test_round_robin(struct bpfrun *r)
{
	static __u8 frames[SOURCES][FRAME_MAX];
	struct sluice_settings set;
	char src[32];
	size_t len = 0;
	double real = ROUNDS - 1, sum = 0, worst = 0;
	int i, k, bad = 0, errs = 0;
	__u32 action;

	if (!bpfrun_setup(r, &set, 1)) {
		tap_ok(false, "round robin: setup");
		return;
	}
	for (i = 0; i < SOURCES; i++) {
		snprintf(src, sizeof(src), "198.18.1.%d", i);
		len = frame_ip(frames[i], src, 60, NULL);
	}
	/* Burst 1 at 1/h on a still clock: one pass, then every packet drops. */
	for (k = 0; k < ROUNDS; k++)
		for (i = 0; i < SOURCES; i++)
			errs += bpfrun_run(r, frames[i], (__u32)len, &action) != 0;
	for (i = 0; i < SOURCES; i++) {
		struct sluice_bucket b;
		double d;

		snprintf(src, sizeof(src), "198.18.1.%d", i);
		if (bpfrun_lookup(r, false, set.def.tag, src, 32, &b)) {
			bad++;
			continue;
		}
		sum += (double)b.dropped;
		d = fabs((double)b.dropped - real);
		if (d > worst)
			worst = d;
		bad += d > bound(real);
	}
	tap_diag("%d sources x %.0f drops, round robin on one CPU: worst key off by %.0f (bound "
		 "%.0f), all keys %.0f for %.0f real",
		 SOURCES, real, worst, bound(real), sum, real * SOURCES);
	TAP_TRUE(!errs && !bad, "every key's count is within 5 sd of its %.0f real drops", real);
	TAP_TRUE(fabs(sum - real * SOURCES) <=
			 5.0 * 8.0 * sqrt(SOURCES * (real - 64)) + 64.0 * SOURCES,
		 "the keys' counts add up to the real drops within 5 sd");
}

int main(void)
{
	struct bpfrun r;

	bpfrun_one_cpu();
	if (!bpfrun_load(&r, NULL))
		return tap_done();
	test_exact_flag(&r);
	test_round_robin(&r);
	bpfrun_close(&r);
	return tap_done();
}
