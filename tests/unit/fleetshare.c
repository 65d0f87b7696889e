// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A fleet policy's share (include/sluice/algo.h: sluice_share_cost(),
 * sluice_bucket_admit_shared(), sluice_bucket_shape_at()) with any N at
 * all: mult x cost saturates instead of wrapping (issue 20, B5: N =
 * 2305843010 wrapped a 0.5 s packet to almost nothing, and a --rate 2/s
 * --burst 4 rule passed 14 of 80 in 4 s). The math on the host, a
 * simulated clock; tests/bpf/fleetlive.c has the datapath's clamp of live.
 */
#include <string.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)
#define MS 1000000ULL
#define T0 (1000 * MS)

static bool policy(struct sluice_policy *p, const char *rate, __u64 burst, const char *brate,
		   __u64 bburst)
{
	struct scn s = { .name = "unit",
			 .algo = SLUICE_ALGO_TOKEN_BUCKET,
			 .rate = rate,
			 .burst = burst,
			 .byte_rate = brate,
			 .byte_burst = bburst };
	char err[SLUICE_ERR_LEN] = "";

	if (scn_policy(&s, p, err, sizeof(err))) {
		tap_diag("  policy %s burst %llu: %s", rate ? rate : "-", (unsigned long long)burst,
			 err);
		return false;
	}
	p->flags |= SLUICE_POLICY_FLEET;
	return true;
}

/* n packets of len bytes evenly over secs seconds, at the share mult/div:
 * how many passed. */
static unsigned int offer(const struct sluice_policy *p, __u32 mult, __u32 div, unsigned int n,
			  __u64 secs, __u32 len)
{
	__u64 s[2] = { 0, 0 }, used[2];
	unsigned int i, passed = 0;

	for (i = 0; i < n; i++) {
		__u64 t = T0 + secs * 1000 * MS * i / n;

		passed += sluice_bucket_admit_shared(p, &s[0], &s[1], TICKS(t), len, mult, div,
						     used) == SLUICE_PASS;
	}
	return passed;
}

static void test_cost(void)
{
	TAP_EQ(sluice_share_cost(12345, 1), 12345, "share cost: mult 1 is the cost");
	TAP_EQ(sluice_share_cost(12345, 0), 12345, "share cost: mult 0 is the cost");
	TAP_EQ(sluice_share_cost(1ULL << 40, 1U << 16), 1ULL << 56,
	       "share cost: 2^40 x 2^16 exact");
	TAP_EQ(sluice_share_cost(1ULL << 46, 1U << 16), 1ULL << 62,
	       "share cost: 2^46 x 2^16 exact (the fast path's largest)");
	TAP_EQ(sluice_share_cost(3, 0xffffffffU), 3ULL * 0xffffffffULL,
	       "share cost: a cheap unit times 2^32 - 1 exact");
	TAP_EQ(sluice_share_cost(8000000000ULL, 2305843010U), SLUICE_MAX_TOLERANCE,
	       "share cost: 0.5 s x 2305843010 saturates (it wrapped to %llu)",
	       (unsigned long long)(8000000000ULL * 2305843010ULL));
	TAP_EQ(sluice_share_cost(1ULL << 50, 1U << 16), SLUICE_MAX_TOLERANCE,
	       "share cost: 2^50 x 2^16 saturates");
	TAP_EQ(sluice_share_cost(~0ULL >> 1, 0xffffffffU), SLUICE_MAX_TOLERANCE,
	       "share cost: 2^63 x 2^32 saturates");
}

/* The issue's rule: --rate 2/s --burst 4, 80 packets in 4 s. */
static void test_issue(void)
{
	static const __u32 ns[] = { 2305843010U, 4294967295U, 1U << 31, 65536, 1000 };
	struct sluice_policy p;
	size_t i;

	if (!policy(&p, "2/s", 4, NULL, 0)) {
		tap_ok(false, "the issue's rule: policy");
		return;
	}
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		unsigned int got = offer(&p, ns[i], ns[i], 80, 4, 100);

		/* rate/N and burst/N (at least a packet) of 2/s burst 4 over 4 s:
		 * the first packet, nothing more. */
		if (!tap_ok(got == 1,
			    "rate 2/s burst 4, N %u, outage: 1 of 80 in 4 s pass "
			    "(rate/N)",
			    ns[i]))
			tap_diag("  %u passed", got);
		got = offer(&p, 1, ns[i], 80, 4, 100);
		/* Synced: the whole rate, a burst of one packet: 1 + 2/s x 4 s. */
		if (!tap_ok(got >= 8 && got <= 9,
			    "rate 2/s burst 4, N %u, synced: 8 or 9 of 80 "
			    "in 4 s pass (the rate, burst/N of one packet)",
			    ns[i]))
			tap_diag("  %u passed", got);
	}
	/* 4 at once, then one each 0.5 s from 0.5 s to 3.5 s */
	TAP_EQ(offer(&p, 1, 1, 80, 4, 100), 11,
	       "rate 2/s burst 4 alone: 11 of 80 in 4 s (burst "
	       "+ rate x t)");
}

/* A byte limit slow enough that a 64 KB packet costs more than 2^46 ticks:
 * the division path. */
static void test_slow_bytes(void)
{
	struct sluice_policy p;
	unsigned int got;

	if (!policy(&p, NULL, 0, "1/s", 65535)) {
		tap_ok(false, "a byte rate of 1/s: policy");
		return;
	}
	got = offer(&p, 65536, 65536, 20, 10, 65535);
	TAP_EQ(got, 1,
	       "byte rate 1/s, 64 KB packets, N 65536 in an outage: the first of 20 "
	       "in 10 s, no more");
	got = offer(&p, 0xffffffffU, 0xffffffffU, 20, 10, 65535);
	TAP_EQ(got, 1, "byte rate 1/s, 64 KB packets, N 2^32 - 1: the first of 20, no more");
}

/* The shaper's share: n packets 50 ms apart at N; how many were accepted,
 * and whether every departure was from now to SLUICE_MAX_TOLERANCE ahead. */
static unsigned int shape_n(const struct sluice_policy *p, __u32 n, bool *sane)
{
	__u64 s[2] = { 0, 0 }, used[2], depart = 0;
	unsigned int i, passed = 0;

	*sane = true;
	for (i = 0; i < 80; i++) {
		__u64 now = TICKS(T0 + 50 * MS * i);
		int v = sluice_bucket_shape_at(p, &s[0], &s[1], now, 100, 1, n, n, ~0ULL, used,
					       &depart);

		if (v == SLUICE_PASS) {
			passed++;
			*sane &= depart >= now && depart - now <= SLUICE_MAX_TOLERANCE;
		}
	}
	return passed;
}

static void test_shape(void)
{
	static const __u32 ns[] = { 2305843010U, 4294967295U };
	struct sluice_policy p;
	unsigned int cap;
	bool sane;
	size_t i;

	if (!policy(&p, "2/s", 4, NULL, 0)) {
		tap_ok(false, "shaper share: policy");
		return;
	}
	p.pkt_delay = 2;
	cap = shape_n(&p, 1U << 16, &sane);
	TAP_TRUE(cap <= 2 && sane,
		 "shaper, rate 2/s burst 4, N 2^16: %u of 80 accepted (the "
		 "share's one unit, and the one the shaper queues behind it)",
		 cap);
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		unsigned int got = shape_n(&p, ns[i], &sane);

		TAP_TRUE(got <= cap && sane,
			 "shaper, rate 2/s burst 4, N %u: %u of 80 accepted "
			 "(no more than at N 2^16), no departure wrapped",
			 ns[i], got);
	}
}

int main(void)
{
	test_cost();
	test_issue();
	test_slow_bytes();
	test_shape();
	return tap_done();
}
