// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Token bucket (GCRA) math of include/sluice/algo.h on the host, with a
 * simulated clock: exact counts at exact times, fractional and huge rates,
 * byte limits, a clock that moves back, new keys, and the bound every
 * bucket must keep: over any span, admitted <= burst + rate x elapsed.
 */
#include <stdlib.h>
#include <string.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)

/* A token-bucket policy from rates as sluicectl takes them. */
static bool policy(struct sluice_policy *p, __u8 algo, const char *rate, __u64 burst,
		   const char *byte_rate, __u64 byte_burst)
{
	struct scn s = {
		.name = "unit",
		.algo = algo,
		.rate = rate,
		.burst = burst,
		.byte_rate = byte_rate,
		.byte_burst = byte_burst,
	};
	char err[SLUICE_ERR_LEN] = "";

	if (scn_policy(&s, p, err, sizeof(err))) {
		tap_diag("  policy %s burst %llu / %s burst %llu: %s", rate ? rate : "-",
			 (unsigned long long)burst, byte_rate ? byte_rate : "-",
			 (unsigned long long)byte_burst, err);
		return false;
	}
	return true;
}

/* Offer `n` packets of len bytes at one instant; return how many passed. */
static __u64 offer(const struct sluice_policy *p, __u64 *s, __u64 now_ticks, __u64 n, __u32 len)
{
	__u64 passed = 0, i;

	for (i = 0; i < n; i++)
		passed += sluice_admit(p, s, now_ticks, len) == SLUICE_PASS;
	return passed;
}

/* A flood: one packet every step_ns from t0 to t1 (inclusive). */
static __u64 flood(const struct sluice_policy *p, __u64 *s, __u64 t0, __u64 t1, __u64 step_ns)
{
	__u64 passed = 0, t;

	for (t = t0; t <= t1; t += step_ns)
		passed += sluice_admit(p, s, TICKS(t), 60) == SLUICE_PASS;
	return passed;
}

static void test_burst_then_steady(void)
{
	struct sluice_policy p;
	__u64 s[2] = { 0, 0 };
	__u64 t0 = SCN_T0, n, k, ok;

	if (!policy(&p, SLUICE_ALGO_TOKEN_BUCKET, "100/s", 50, NULL, 0)) {
		tap_ok(false, "100/s burst 50: policy");
		return;
	}
	TAP_EQ(offer(&p, s, TICKS(t0), 60, 60), 50, "100/s burst 50: exactly 50 at one instant");
	/* Empty now: exactly one every 10 ms, never one before. */
	ok = 0;
	for (k = 1; k <= 1000; k++) {
		__u64 at = t0 + k * SCN_MS(10);

		ok += sluice_admit(&p, s, TICKS(at - 1), 60) == SLUICE_DROP &&
		      sluice_admit(&p, s, TICKS(at), 60) == SLUICE_PASS &&
		      sluice_admit(&p, s, TICKS(at), 60) == SLUICE_DROP;
	}
	TAP_EQ(ok, 1000, "100/s burst 50: then one every 10 ms, not 1 ns earlier, for 10 s");

	/* A fresh key flooded every 1 ms for 10 s: 50 + 10 s x 100/s. */
	memset(s, 0, sizeof(s));
	n = flood(&p, s, t0, t0 + SCN_S(10), SCN_MS(1));
	TAP_EQ(n, 1050, "100/s burst 50: flood every 1 ms for 10 s admits 50 + 1000");
}

static void test_fractional(void)
{
	struct sluice_policy p;
	__u64 s[2] = { 0, 0 };
	__u64 t0 = SCN_T0, n;

	if (policy(&p, SLUICE_ALGO_TOKEN_BUCKET, "1/h", 1, NULL, 0)) {
		n = flood(&p, s, t0, t0 + SCN_S(10 * 3600), SCN_S(1));
		TAP_EQ(n, 11, "1/h burst 1: a flood every second for 10 h admits 11");
		memset(s, 0, sizeof(s));
		n = flood(&p, s, t0, t0 + SCN_S(3600) - 1, SCN_MS(1));
		TAP_EQ(n, 1, "1/h burst 1: nothing more within the hour (every 1 ms)");
	} else {
		tap_ok(false, "1/h: policy");
	}

	/*
	 * 3/s: a packet costs 5333333334 ticks (1/3 s rounded up by 2/3 of a
	 * tick), tolerance 3 of them. Flooding every 1 ms, the n-th packet
	 * passes once (n - 3) x 5333333334 ticks have elapsed: in 60 s
	 * (960e9 ticks) that is n - 3 <= 179.99999996, so 182, one less than
	 * the exact 183 (which needs the 60 s instant itself); 1 ms later 183.
	 */
	if (policy(&p, SLUICE_ALGO_TOKEN_BUCKET, "3/s", 3, NULL, 0)) {
		memset(s, 0, sizeof(s));
		n = flood(&p, s, t0, t0 + SCN_S(60), SCN_MS(1));
		TAP_EQ(n, 182, "3/s burst 3: flood every 1 ms for 60 s admits 182");
		n += flood(&p, s, t0 + SCN_S(60) + SCN_MS(1), t0 + SCN_S(60) + SCN_MS(1), 1);
		TAP_EQ(n, 183, "3/s burst 3: and the 183rd 1 ms later");
		TAP_EQ(p.pkt.interval, 5333333333ULL, "3/s: interval 5333333333 ticks");
		TAP_EQ(sluice_limit_cost(&p.pkt, 1), 5333333334ULL,
		       "3/s: a packet costs 5333333334 ticks (rounded up)");
		/* One rounding for the three, not three: 3 x 1431655766 / 2^32
		 * is 1 tick and a remainder of 2, rounded up to 2 ticks. */
		TAP_EQ(sluice_limit_cost(&p.pkt, 3), 16000000001ULL,
		       "3/s: three units cost 1 s + 1 tick");
	} else {
		tap_ok(false, "3/s: policy");
	}
}

static void test_huge(void)
{
	struct sluice_policy p;
	__u64 s[2] = { 0, 0 };
	__u64 t0 = SCN_T0, n;

	if (policy(&p, SLUICE_ALGO_TOKEN_BUCKET, "1000000000/s", 1000, NULL, 0)) {
		TAP_EQ(offer(&p, s, TICKS(t0), 2000, 60), 1000,
		       "1e9/s burst 1000: 1000 at one instant");
		TAP_EQ(offer(&p, s, TICKS(t0 + 999), 2000, 60), 999,
		       "1e9/s burst 1000: 999 ns later, 999");
		TAP_EQ(offer(&p, s, TICKS(t0 + SCN_US(1) + 999), 2000, 60), 1000,
		       "1e9/s burst 1000: 1 us later, 1000");
	} else {
		tap_ok(false, "1e9/s: policy");
	}

	/* 1gbit = 125e6 B/s is exactly 128 ticks a byte: 100 frames of 1500 B. */
	if (policy(&p, SLUICE_ALGO_TOKEN_BUCKET, NULL, 0, "1gbit", 150000)) {
		memset(s, 0, sizeof(s));
		TAP_EQ(offer(&p, s, TICKS(t0), 300, 1500), 100,
		       "1gbit burst 150000 B: 100 frames of 1500 B at one instant");
	} else {
		tap_ok(false, "1gbit: policy");
	}

	/*
	 * 100gbit = 12.5e9 B/s is 1.28 ticks a byte: a burst of 150000 B may
	 * admit at most 100 frames of 1500 B at one instant, whatever the
	 * rounding.
	 */
	if (policy(&p, SLUICE_ALGO_TOKEN_BUCKET, NULL, 0, "100gbit", 150000)) {
		memset(s, 0, sizeof(s));
		n = offer(&p, s, TICKS(t0), 300, 1500);
		if (!tap_ok(n <= 100,
			    "100gbit burst 150000 B: at most 100 frames of 1500 B at one instant"))
			tap_diag("  admitted %llu frames = %llu B > burst 150000 B (tolerance %llu "
				 "ticks for a byte cost of %llu + %u/2^32 ticks)",
				 (unsigned long long)n, (unsigned long long)n * 1500,
				 (unsigned long long)p.bytes.tolerance,
				 (unsigned long long)p.bytes.interval, p.bytes.interval_frac);
		else
			TAP_TRUE(n >= 99, "100gbit burst 150000 B: and at least 99");
	} else {
		tap_ok(false, "100gbit: policy");
	}
}

/*
 * Over every span [t_i, t_j] of a sequence, what was admitted may not
 * exceed burst + rate x (t_j - t_i), for packets and for bytes. Checked on
 * every pair, in exact integers: admitted x period <= burst x period +
 * count x span.
 */
static bool span_bound_ok(const struct sluice_limit *l, const struct scn_pkt *pk, const int *v,
			  size_t n, bool bytes, char *why, size_t whylen)
{
	size_t i, j;

	if (!l->period_ns)
		return true;
	for (i = 0; i < n; i++) {
		unsigned __int128 units = 0;

		if (v[i] != SLUICE_PASS)
			continue;
		for (j = i; j < n; j++) {
			unsigned __int128 lhs, rhs;

			if (v[j] != SLUICE_PASS)
				continue;
			units += bytes ? pk[j].len : 1;
			lhs = units * l->period_ns;
			rhs = (unsigned __int128)l->burst * l->period_ns +
			      (unsigned __int128)l->rate * (pk[j].t_ns - pk[i].t_ns);
			if (lhs > rhs) {
				snprintf(why, whylen,
					 "%llu %s admitted in [%llu, %llu] ns, bound %.3f",
					 (unsigned long long)units, bytes ? "bytes" : "packets",
					 (unsigned long long)pk[i].t_ns,
					 (unsigned long long)pk[j].t_ns,
					 (double)rhs / (double)l->period_ns);
				return false;
			}
		}
	}
	return true;
}

static void check_span_bound(const struct scn *sc)
{
	char why[200] = "";
	struct scn_run r;
	size_t passed;
	bool ok;

	if (!scn_run_host(sc, &r))
		return;
	passed = scn_run_passed(&r);
	ok = span_bound_ok(&r.p.pkt, r.pk, r.v, r.n, false, why, sizeof(why)) &&
	     span_bound_ok(&r.p.bytes, r.pk, r.v, r.n, true, why, sizeof(why));
	if (!tap_ok(ok, "%s: every span admits <= burst + rate x elapsed (%zu of %zu passed)",
		    sc->name, passed, r.n))
		tap_diag("  %s", why);
	/* A bound that nothing approaches proves little: the sequences are
	 * built to overload the limit. */
	TAP_TRUE(passed > 0 && passed < r.n, "%s: the sequence both passes and drops", sc->name);
	scn_run_free(&r);
}

static void test_span_bound(void)
{
	static const struct scn extra[] = {
		{ "random token-bucket 3/s burst 1", SLUICE_ALGO_TOKEN_BUCKET, "3/s", 1,
		  .nr_random = 1500, .seed = 101, .gap_ns = SCN_MS(333), .len_min = 60,
		  .len_max = 60 },
		/* 160 ticks a packet; arrivals come about one in 1.8 ns. */
		{ "random token-bucket 100000000/s burst 100", SLUICE_ALGO_TOKEN_BUCKET,
		  "100000000/s", 100, .nr_random = 6000, .seed = 102, .gap_ns = 1, .len_min = 60,
		  .len_max = 60 },
		{ "random token-bucket bytes 100gbit burst 150000", SLUICE_ALGO_TOKEN_BUCKET, NULL,
		  0, "100gbit", 150000, .nr_random = 3000, .seed = 103, .gap_ns = 20,
		  .len_min = SCN_MIN_LEN, .len_max = SCN_MAX_LEN },
		{ "random token-bucket bytes 3mbit burst 3000", SLUICE_ALGO_TOKEN_BUCKET, NULL, 0,
		  "3mbit", 3000, .nr_random = 2000, .seed = 104, .gap_ns = SCN_MS(2),
		  .len_min = SCN_MIN_LEN, .len_max = SCN_MAX_LEN },
	};
	size_t i;

	for (i = 0; i < scn_nr_tables; i++) {
		const struct scn *sc = &scn_tables[i];

		if (sc->nr_random &&
		    (sc->algo == SLUICE_ALGO_TOKEN_BUCKET || sc->algo == SLUICE_ALGO_LEAKY_BUCKET))
			check_span_bound(sc);
	}
	for (i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
		check_span_bound(&extra[i]);
}

/* State of any algorithm, so one test can copy it whole. */
struct any_state {
	__u64 s[2];
	struct sluice_log log;
};

static int admit_any(const struct sluice_policy *p, struct any_state *st, __u64 now, __u32 len)
{
	if (p->algo == SLUICE_ALGO_SLIDING_LOG)
		return sluice_sliding_log(&st->log, now, p->window, p->window_limit);
	return sluice_admit(p, st->s, now, len);
}

/*
 * A clock reading older than the state counts as no time elapsed: on the
 * same state, a packet the late reading admits must also be admitted at
 * the newest time seen so far. Random sequences with jumps back, every
 * algorithm.
 */
static void test_clock_back(void)
{
	static const struct scn algos[] = {
		{ "token-bucket 100/s burst 10", SLUICE_ALGO_TOKEN_BUCKET, "100/s", 10 },
		{ "leaky-bucket 100/s burst 10 + 1mbit burst 3000", SLUICE_ALGO_LEAKY_BUCKET,
		  "100/s", 10, "1mbit", 3000 },
		{ "fixed-window 100/s in 100ms", SLUICE_ALGO_FIXED_WINDOW, "100/s",
		  .window = "100ms" },
		{ "sliding-window 100/s in 100ms", SLUICE_ALGO_SLIDING_WINDOW, "100/s",
		  .window = "100ms" },
		{ "sliding-log 100/s in 100ms", SLUICE_ALGO_SLIDING_LOG, "100/s",
		  .window = "100ms" },
	};
	size_t a;

	for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
		char err[SLUICE_ERR_LEN] = "";
		struct sluice_policy p;
		struct any_state st, late;
		__u64 rnd = 7 + a, t = SCN_T0, newest = 0;
		unsigned int i, extra = 0, back = 0, passed = 0;

		if (scn_policy(&algos[a], &p, err, sizeof(err))) {
			tap_ok(false, "%s: policy: %s", algos[a].name, err);
			continue;
		}
		memset(&st, 0, sizeof(st));
		for (i = 0; i < 20000; i++) {
			__u64 now;
			__u32 len = (__u32)scn_rand_range(&rnd, 60, 1500);
			int v_late, v_new;

			t += scn_rand_range(&rnd, 0, SCN_MS(3));
			now = t;
			if (scn_rand_range(&rnd, 0, 9) == 0) {
				/* back by up to half a second, or to the very start */
				__u64 d = scn_rand_range(&rnd, 0, SCN_MS(500));

				now = scn_rand_range(&rnd, 0, 20) ? (t > d ? t - d : 0) : 0;
				back++;
			}
			if (now > newest)
				newest = now;
			late = st;
			v_new = admit_any(&p, &late, TICKS(newest), len);
			v_late = admit_any(&p, &st, TICKS(now), len);
			extra += v_late == SLUICE_PASS && v_new != SLUICE_PASS;
			passed += v_late == SLUICE_PASS;
		}
		if (!TAP_EQ(extra, 0, "%s: a clock moving back never admits extra (%u jumps back)",
			    algos[a].name, back))
			tap_diag("  %u packets passed on the old reading and not on the newest",
				 extra);
		TAP_TRUE(passed > 0 && passed < 20000, "%s: the sequence both passes and drops",
			 algos[a].name);
	}
}

/* State far in the future, clock near zero: no arithmetic may wrap. */
static void test_no_underflow(void)
{
	struct sluice_policy p;
	__u64 s[2], before;

	if (!policy(&p, SLUICE_ALGO_TOKEN_BUCKET, "10/s", 5, "1gbit", 3000)) {
		tap_ok(false, "no underflow: policy");
		return;
	}
	s[0] = 1ULL << 62;
	s[1] = 0;
	before = s[0];
	TAP_EQ(sluice_admit(&p, s, 1, 60), SLUICE_DROP,
	       "packet TAT 2^62 ticks ahead, clock at 1 tick: dropped");
	TAP_EQ(s[0], before, "  and the TAT is unchanged");
	s[0] = 0;
	s[1] = 1ULL << 62;
	TAP_EQ(sluice_admit(&p, s, 0, 1500), SLUICE_DROP,
	       "byte TAT 2^62 ticks ahead, clock at 0: dropped");
	TAP_EQ(s[0], 0, "  and the packet charge is refunded to exactly 0");
	TAP_EQ(s[1], 1ULL << 62, "  and the byte TAT is unchanged");
	/* A refund is taken only from the TAT the charge wrote: a state
	 * written since (another packet, another key) keeps its charge. */
	s[0] = 5;
	sluice_gcra_refund(&s[0], 15, 10);
	TAP_EQ(s[0], 5, "a refund from a TAT written since leaves it charged");
	sluice_gcra_refund(&s[0], 5, 3);
	TAP_EQ(s[0], 2, "a refund from the TAT it wrote gives the charge back");
}

/*
 * A key seen for the first time starts full, at any time: its state is 0
 * (the LRU table's) or SLUICE_FRESH (a set table's way claimed over a zero
 * word), the sliding log's empty. At a clock of 0, inside the first 1 s
 * window, at its end, at the boundary and just past it, and far on.
 */
static void test_new_key_full(void)
{
	static const __u64 at[] = {
		0,
		1,
		SCN_MS(500),
		SCN_S(1) - 1,
		SCN_S(1),
		SCN_S(1) + 1,
		SCN_S(86400),
		SCN_S(86400ULL * 365 * 30),
	};
	static const __u64 fresh[] = { 0, SLUICE_FRESH };
	static const struct scn algos[] = {
		{ "token-bucket 10/s burst 7", SLUICE_ALGO_TOKEN_BUCKET, "10/s", 7 },
		{ "leaky-bucket 10/s burst 7", SLUICE_ALGO_LEAKY_BUCKET, "10/s", 7 },
		{ "token-bucket 1/h burst 7", SLUICE_ALGO_TOKEN_BUCKET, "1/h", 7 },
		{ "fixed-window 7/s", SLUICE_ALGO_FIXED_WINDOW, "7/s", .window = "1s" },
		{ "sliding-window 7/s", SLUICE_ALGO_SLIDING_WINDOW, "7/s", .window = "1s" },
		{ "sliding-log 7/s", SLUICE_ALGO_SLIDING_LOG, "7/s", .window = "1s" },
	};
	size_t a, i;

	for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
		char err[SLUICE_ERR_LEN] = "";
		struct sluice_policy p;
		unsigned int good = 0;

		if (scn_policy(&algos[a], &p, err, sizeof(err))) {
			tap_ok(false, "%s: policy: %s", algos[a].name, err);
			continue;
		}
		for (i = 0; i < sizeof(at) / sizeof(at[0]) * 2; i++) {
			__u64 t = at[i / 2], f = fresh[i % 2];
			struct any_state st;
			unsigned int k, passed = 0;

			memset(&st, 0, sizeof(st));
			st.s[0] = f;
			for (k = 0; k < 20; k++)
				passed += admit_any(&p, &st, TICKS(t), 60) == SLUICE_PASS;
			if (passed == 7)
				good++;
			else
				tap_diag("  at %llu ns from state %#llx: %u passed, want 7",
					 (unsigned long long)t, (unsigned long long)f, passed);
		}
		TAP_EQ(good, sizeof(at) / sizeof(at[0]) * 2,
		       "%s: a new key (state 0 or SLUICE_FRESH) admits exactly 7 at once, at 0 ns "
		       "to 30 years",
		       algos[a].name);
	}
}

/*
 * The set table's two sentinels (algo.h) against the buckets: SLUICE_FROZEN
 * is never written over (SLUICE_RETRY), SLUICE_FRESH is a full bucket at
 * every now, 0 included, and the TATs just below it are real ones (a debt,
 * not a fresh key). Neither is a TAT any bucket reaches.
 */
static void test_sentinels(void)
{
	static const __u64 nows[] = { 0, 1, TICKS(SCN_S(1)), TICKS(SCN_S(86400ULL * 365 * 30)) };
	struct sluice_policy p;
	unsigned int i, bad_fresh = 0, bad_frozen = 0, bad_below = 0;

	if (!policy(&p, SLUICE_ALGO_TOKEN_BUCKET, "10/s", 5, NULL, 0)) {
		tap_ok(false, "sentinels: policy");
		return;
	}
	for (i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
		__u64 now = nows[i], c = sluice_limit_cost(&p.pkt, 1), tat = SLUICE_FRESH, w = 0;

		bad_fresh += sluice_gcra_to(&tat, now, c, p.pkt.tolerance, &w) != SLUICE_PASS ||
			     tat != now + c || w != now + c;
		tat = SLUICE_FROZEN;
		bad_frozen += sluice_gcra(&tat, now, c, p.pkt.tolerance) != SLUICE_RETRY ||
			      tat != SLUICE_FROZEN;
		tat = SLUICE_FRESH - 1;
		bad_below += sluice_gcra(&tat, now, c, p.pkt.tolerance) != SLUICE_DROP ||
			     tat != SLUICE_FRESH - 1;
	}
	TAP_EQ(bad_fresh, 0,
	       "sentinels: SLUICE_FRESH is a full bucket at every now, 0 included: "
	       "the first packet passes and writes now + its cost");
	TAP_EQ(bad_frozen, 0, "sentinels: SLUICE_FROZEN is never written over: SLUICE_RETRY");
	TAP_EQ(bad_below, 0, "sentinels: a TAT just below SLUICE_FRESH is a debt: dropped, kept");
	/* 2^64 - 2^32 ticks: a TAT that far is 36 years of uptime, beyond
	 * any now plus the largest tolerance for 27 of them. */
	TAP_TRUE(SLUICE_FRESH / SLUICE_TICKS_PER_SEC / (86400ULL * 366) >= 36 &&
			 SLUICE_FRESH - SLUICE_MAX_TOLERANCE > TICKS(SCN_S(86400ULL * 366 * 27)),
		 "sentinels: no bucket's TAT reaches SLUICE_FRESH (36 years of ticks)");
	TAP_EQ((__u32)SLUICE_FRESH, 0, "sentinels: SLUICE_FRESH's low half, a window count, is 0");
	{
		struct sluice_policy sh;
		__u64 tat = SLUICE_FRESH, d = 1, wr = 0;

		policy(&sh, SLUICE_ALGO_LEAKY_BUCKET, "10/s", 0, NULL, 0);
		TAP_TRUE(sluice_gcra_shape_max(&tat, 0, sluice_limit_cost(&sh.pkt, 1), 0, 0, ~0ULL,
					       &d, &wr) == SLUICE_PASS &&
				 d == 0 && tat == sluice_limit_cost(&sh.pkt, 1),
			 "sentinels: a shaper of burst 0 sends a SLUICE_FRESH key's first packet "
			 "at once, at now 0");
		tat = SLUICE_FROZEN;
		TAP_TRUE(sluice_gcra_shape(&tat, 0, 1, 10, 0, &d) == SLUICE_RETRY &&
				 tat == SLUICE_FROZEN,
			 "sentinels: a shaper never writes over SLUICE_FROZEN");
	}
}

/* The views sluicectl shows: units left and time until the next one. */
static void test_views(void)
{
	struct sluice_policy p;
	__u64 s[2] = { 0, 0 }, now = TICKS(SCN_T0);

	if (!policy(&p, SLUICE_ALGO_TOKEN_BUCKET, "10/s", 5, NULL, 0)) {
		tap_ok(false, "views: policy");
		return;
	}
	TAP_EQ(sluice_gcra_left(&p.pkt, s[0], now), 5, "view: a new key has 5 left");
	TAP_EQ(sluice_gcra_wait(&p.pkt, s[0], now), 0, "view: a new key need not wait");
	offer(&p, s, now, 3, 60);
	TAP_EQ(sluice_gcra_left(&p.pkt, s[0], now), 2, "view: 2 left after 3");
	offer(&p, s, now, 2, 60);
	TAP_EQ(sluice_gcra_left(&p.pkt, s[0], now), 0, "view: 0 left after 5");
	TAP_EQ(sluice_gcra_wait(&p.pkt, s[0], now), TICKS(SCN_MS(100)),
	       "view: empty, the next one in 100 ms");
	TAP_EQ(sluice_gcra_left(&p.pkt, s[0], now + TICKS(SCN_MS(250))), 2,
	       "view: 250 ms later 2 left");
}

int main(void)
{
	test_burst_then_steady();
	test_fractional();
	test_huge();
	test_span_bound();
	test_clock_back();
	test_no_underflow();
	test_new_key_full();
	test_sentinels();
	test_views();
	return tap_done();
}
