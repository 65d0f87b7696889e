// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The window algorithms of include/sluice/algo.h on the host:
 * - sliding-window: the estimate previous x (1 - elapsed/window) + current,
 *   against a reference that keeps every window's count;
 * - fixed-window: one count per window, and the pitfall it is known for (a
 *   full limit at the end of a window and another at the start of the next);
 *   sliding-window, sliding-log and token bucket do not allow it;
 * - sliding-log: exact over every trailing window, checked by brute force.
 */
#include <stdlib.h>
#include <string.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)
#define RND(n, s, gap) .nr_random = (n), .seed = (s), .gap_ns = (gap), .len_min = 60, .len_max = 60

/*
 * Reference sliding window: the count of every window, and the documented
 * estimate previous x (1 - elapsed/window) + current, with the weight of the
 * previous window rounded up to 1/65536 (towards dropping): a packet passes
 * while the estimate before it is below the limit.
 */
static void check_sliding_reference(const struct scn *sc)
{
	__u64 cur_win = 0, cur = 0, prev = 0, W;
	size_t i, rounded_away = 0, over_exact = 0;
	long bad = -1;
	int want = 0;
	struct scn_run r;

	if (!scn_run_host(sc, &r))
		return;
	W = r.p.window;
	for (i = 0; i < r.n; i++) {
		__u64 now = TICKS(r.pk[i].t_ns), w = now / W, e = now - w * W;
		unsigned __int128 weight, est, exact_lhs, exact_rhs;
		__u64 N = r.p.window_limit;

		if (i == 0 || w != cur_win) {
			prev = (i > 0 && w == cur_win + 1) ? cur : 0;
			cur = 0;
			cur_win = w;
		}
		weight = (((unsigned __int128)(W - e) << 16) + W - 1) / W;
		est = prev * weight + ((unsigned __int128)cur << 16);
		want = est < ((unsigned __int128)N << 16) ? SLUICE_PASS : SLUICE_DROP;
		/* The estimate in exact rationals: prev x (W - e) + cur x W < N x W */
		exact_lhs = (unsigned __int128)prev * (W - e) + (unsigned __int128)cur * W;
		exact_rhs = (unsigned __int128)N * W;
		if (want == SLUICE_DROP && exact_lhs < exact_rhs)
			rounded_away++;
		if (r.v[i] == SLUICE_PASS && exact_lhs >= exact_rhs)
			over_exact++;
		if (r.v[i] != want && bad < 0)
			bad = (long)i;
		if (r.v[i] == SLUICE_PASS)
			cur++;
	}
	if (!tap_ok(bad < 0, "%s: verdicts of the estimate formula, packet for packet (%zu of %zu)",
		    sc->name, scn_run_passed(&r), r.n))
		tap_diag("  packet %ld at %llu ns: sluice %s, reference %s", bad,
			 (unsigned long long)r.pk[bad].t_ns, scn_verdict_name(r.v[bad]),
			 scn_verdict_name(want));
	TAP_EQ(over_exact, 0,
	       "%s: never admits at or over the limit by the exact (unrounded) "
	       "estimate",
	       sc->name);
	if (rounded_away)
		tap_diag("  %zu packets at the exact limit dropped by the rounded-up weight",
			 rounded_away);
	scn_run_free(&r);
}

/* Fixed window reference: one count per window. */
static void check_fixed_reference(const struct scn *sc)
{
	__u64 cur_win = 0, cur = 0;
	long bad = -1;
	int want = 0;
	struct scn_run r;
	size_t i;

	if (!scn_run_host(sc, &r))
		return;
	for (i = 0; i < r.n; i++) {
		__u64 w = TICKS(r.pk[i].t_ns) / r.p.window;

		if (i == 0 || w != cur_win) {
			cur_win = w;
			cur = 0;
		}
		want = cur < r.p.window_limit ? SLUICE_PASS : SLUICE_DROP;
		if (r.v[i] != want && bad < 0)
			bad = (long)i;
		cur += r.v[i] == SLUICE_PASS;
	}
	if (!tap_ok(bad < 0, "%s: one count per window, packet for packet (%zu of %zu)", sc->name,
		    scn_run_passed(&r), r.n))
		tap_diag("  packet %ld at %llu ns: sluice %s, reference %s", bad,
			 (unsigned long long)r.pk[bad].t_ns, scn_verdict_name(r.v[bad]),
			 scn_verdict_name(want));
	scn_run_free(&r);
}

/*
 * Sliding log, brute force: for every admitted packet at t, at most N were
 * admitted in (t - W, t]; for every dropped packet at t, N already were (no
 * false drop, single-threaded).
 */
static void check_log_exact(const struct scn *sc)
{
	size_t i, j, over = 0, false_drops = 0;
	long first_over = -1, first_false = -1;
	struct scn_run r;

	if (!scn_run_host(sc, &r))
		return;
	for (i = 0; i < r.n; i++) {
		__u64 t = TICKS(r.pk[i].t_ns), W = r.p.window;
		size_t in = 0;

		/* admitted so far (including this one) within (t - W, t] */
		for (j = 0; j <= i; j++) {
			__u64 tj = TICKS(r.pk[j].t_ns);

			if (r.v[j] == SLUICE_PASS && tj <= t && tj + W > t)
				in++;
		}
		if (r.v[i] == SLUICE_PASS && in > r.p.window_limit) {
			over++;
			if (first_over < 0)
				first_over = (long)i;
		}
		if (r.v[i] != SLUICE_PASS && in != r.p.window_limit) {
			false_drops++;
			if (first_false < 0)
				first_false = (long)i;
		}
	}
	if (!TAP_EQ(over, 0, "%s: every trailing window holds <= %u admitted (%zu of %zu)",
		    sc->name, r.p.window_limit, scn_run_passed(&r), r.n))
		tap_diag("  first at packet %ld, %llu ns", first_over,
			 (unsigned long long)r.pk[first_over].t_ns);
	if (!TAP_EQ(false_drops, 0, "%s: every drop had %u admitted in its trailing window",
		    sc->name, r.p.window_limit))
		tap_diag("  first at packet %ld, %llu ns", first_false,
			 (unsigned long long)r.pk[first_false].t_ns);
	TAP_TRUE(scn_run_passed(&r) > 0 && scn_run_passed(&r) < r.n,
		 "%s: the sequence both passes and drops", sc->name);
	scn_run_free(&r);
}

static bool make_policy(struct sluice_policy *p, __u8 algo, const char *rate, __u64 burst,
			const char *window)
{
	struct scn s = {
		.name = "unit", .algo = algo, .rate = rate, .burst = burst, .window = window
	};
	char err[SLUICE_ERR_LEN] = "";

	if (scn_policy(&s, p, err, sizeof(err))) {
		tap_diag("  %s %s: %s", sluice_algo_name(algo), rate, err);
		return false;
	}
	return true;
}

/*
 * The estimate at given points of a window: 100 admitted in window 1, then
 * a flood at elapsed e into window 2 admits 100 - 100 x (1 - e/W).
 */
static void test_sliding_formula(void)
{
	static const struct {
		__u64 e_ns;
		unsigned int want;
		const char *what;
	} pts[] = {
		{ 0, 0, "at the boundary: 100 x 1 + 0" },
		{ SCN_MS(250), 25, "at 1/4: 100 x 3/4 + 25" },
		{ SCN_MS(500), 50, "at 1/2: 100 x 1/2 + 50" },
		{ SCN_MS(750), 75, "at 3/4: 100 x 1/4 + 75" },
		{ SCN_MS(999), 100, "at 999 ms: 100 x 0.001 + 99 < 100 (a full window again)" },
	};
	struct sluice_policy p;
	size_t i;

	if (!make_policy(&p, SLUICE_ALGO_SLIDING_WINDOW, "100/s", 0, "1s")) {
		tap_ok(false, "sliding-window formula: policy");
		return;
	}
	for (i = 0; i < sizeof(pts) / sizeof(pts[0]); i++) {
		__u64 s[2] = { 0, 0 };
		unsigned int k, first = 0, second = 0;

		for (k = 0; k < 150; k++)
			first += sluice_sliding_window(s, TICKS(SCN_S(1)), p.window,
						       p.window_limit) == SLUICE_PASS;
		for (k = 0; k < 150; k++)
			second += sluice_sliding_window(s, TICKS(SCN_S(2) + pts[i].e_ns), p.window,
							p.window_limit) == SLUICE_PASS;
		TAP_TRUE(first == 100 && second == pts[i].want,
			 "sliding-window 100/s: 100 in window 1, then %u %s", pts[i].want,
			 pts[i].what);
		if (first != 100 || second != pts[i].want)
			tap_diag("  got %u then %u", first, second);
	}
}

/* A flood every 10 us across the boundary at 2 s, from 1.999 s to 2.001 s. */
static unsigned int boundary_flood(const struct sluice_policy *p)
{
	__u64 s[2] = { 0, 0 }, t;
	struct sluice_log log;
	unsigned int passed = 0;

	memset(&log, 0, sizeof(log));
	for (t = SCN_MS(1999); t <= SCN_MS(2001); t += SCN_US(10)) {
		int v = p->algo == SLUICE_ALGO_SLIDING_LOG ?
				sluice_sliding_log(&log, TICKS(t), p->window, p->window_limit) :
				sluice_admit(p, s, TICKS(t), 60);

		passed += v == SLUICE_PASS;
	}
	return passed;
}

/*
 * The seeds' pitfall: with a limit of N per window, a client sending at the
 * end of one window and the start of the next gets 2N through in 2 ms.
 */
static void test_boundary(void)
{
	struct sluice_policy p;

	if (make_policy(&p, SLUICE_ALGO_FIXED_WINDOW, "100/s", 0, "1s"))
		TAP_EQ(boundary_flood(&p), 200,
		       "fixed-window 100/s: 200 admitted within 2 ms across the boundary (2x)");
	else
		tap_ok(false, "fixed-window: policy");
	if (make_policy(&p, SLUICE_ALGO_SLIDING_WINDOW, "100/s", 0, "1s"))
		/* 100 at the end of window 1; in window 2 the estimate is
		 * 100 x (1 - 10us/1s) = 99.999 < 100 once, then >= 100. */
		TAP_EQ(boundary_flood(&p), 101,
		       "sliding-window 100/s: 101 within those 2 ms, no 2x");
	else
		tap_ok(false, "sliding-window: policy");
	if (make_policy(&p, SLUICE_ALGO_SLIDING_LOG, "64/s", 0, "1s"))
		TAP_EQ(boundary_flood(&p), 64, "sliding-log 64/s: 64 within those 2 ms, no 2x");
	else
		tap_ok(false, "sliding-log: policy");
	if (make_policy(&p, SLUICE_ALGO_TOKEN_BUCKET, "100/s", 100, NULL))
		TAP_EQ(boundary_flood(&p), 100,
		       "token-bucket 100/s burst 100: 100 within those 2 ms, no 2x");
	else
		tap_ok(false, "token-bucket: policy");
}

/*
 * What the sliding-window counter promises and what it does not: every
 * aligned window holds at most N (checked), while a trailing window that
 * straddles two can hold more than N when the previous window's packets
 * came late (it is an estimate; sliding-log is the exact one). Shown, not
 * asserted, so an operator reading the log can see by how much.
 */
static void report_sliding_trailing(const struct scn *sc)
{
	size_t i, j, worst = 0, aligned_over = 0;
	struct scn_run r;

	if (!scn_run_host(sc, &r))
		return;
	for (i = 0; i < r.n; i++) {
		__u64 t = TICKS(r.pk[i].t_ns), W = r.p.window;
		size_t in = 0, same = 0;

		for (j = 0; j <= i; j++) {
			__u64 tj = TICKS(r.pk[j].t_ns);

			if (r.v[j] != SLUICE_PASS)
				continue;
			in += tj + W > t;
			same += tj / W == t / W;
		}
		if (in > worst)
			worst = in;
		aligned_over += same > r.p.window_limit;
	}
	TAP_EQ(aligned_over, 0, "%s: every aligned window holds <= %u admitted", sc->name,
	       r.p.window_limit);
	tap_diag("  most admitted in any trailing window: %zu (limit %u)", worst, r.p.window_limit);
	scn_run_free(&r);
}

/*
 * Window number 0 is a window (the first of uptime), a count of 0 is a new
 * key (0, and the set table's SLUICE_FRESH), SLUICE_FROZEN is never written
 * over; the sliding log's stamp of a packet at tick 0 frees its slot at
 * exactly one window, and stamps written before the offset read as before.
 */
static void test_zero_and_sentinels(void)
{
	__u64 W = TICKS(SCN_S(1)), s[2], rnd = 61;
	unsigned int i, k, passed, bad = 0;
	struct sluice_log log;
	int v;

	TAP_TRUE(sluice_window_delta(0, 0) == 2 && sluice_window_delta(SLUICE_FRESH, 0) == 2 &&
			 sluice_window_delta(SLUICE_FRESH, 7) == 2,
		 "window delta: the zero state and SLUICE_FRESH are new keys, in window 0 too");
	TAP_TRUE(sluice_window_delta(SLUICE_WIN_PACK(0, 1), 0) == 0 &&
			 sluice_window_delta(SLUICE_WIN_PACK(0, 1), 1) == 1 &&
			 sluice_window_delta(SLUICE_WIN_PACK(5, 3), 4) == -1,
		 "window delta: a count in window 0 is window 0's (0 in it, 1 in window 1)");
	for (k = 0; k < 2; k++) {
		const char *name = k ? "sliding window" : "fixed window";
		__u64 at[] = { 0, W / 2, W - 1 };

		for (i = 0; i < 3; i++) {
			s[0] = SLUICE_WIN_PACK(0, 3);
			s[1] = 0;
			passed = 0;
			while (passed < 10 &&
			       (k ? sluice_sliding_window(s, at[i], W, 4) :
				    sluice_fixed_window(&s[0], at[i], W, 4)) == SLUICE_PASS)
				passed++;
			bad += passed != 1 || s[0] != SLUICE_WIN_PACK(0, 4);
		}
		TAP_EQ(bad, 0,
		       "%s: 3 counted in window 0 stay counted through it (at 0, 1/2, its "
		       "last tick): 1 more of 4",
		       name);
		bad = 0;
		s[0] = SLUICE_FRESH;
		s[1] = 0;
		v = k ? sluice_sliding_window(s, 0, W, 4) : sluice_fixed_window(&s[0], 0, W, 4);
		TAP_TRUE(v == SLUICE_PASS && s[0] == SLUICE_WIN_PACK(0, 1),
			 "%s: SLUICE_FRESH at now 0 is a new key: window 0, count 1", name);
		s[0] = SLUICE_FROZEN;
		v = k ? sluice_sliding_window(s, W, W, 4) : sluice_fixed_window(&s[0], W, W, 4);
		TAP_TRUE(v == SLUICE_RETRY && s[0] == SLUICE_FROZEN,
			 "%s: SLUICE_FROZEN is never written over: SLUICE_RETRY", name);
	}

	memset(&log, 0, sizeof(log));
	passed = 0;
	for (k = 0; k < 5; k++)
		passed += sluice_sliding_log(&log, 0, W, 3) == SLUICE_PASS;
	TAP_TRUE(passed == 3 && log.ts[0] == SLUICE_LOG_STAMP(0) && log.ts[0] != 0,
		 "sliding log: 3 of 5 at tick 0, each slot stamped 0 + 1 (a slot of 0 is empty)");
	TAP_EQ(sluice_sliding_log(&log, W - 1, W, 3), SLUICE_DROP,
	       "sliding log: the slots of tick 0 are held to the window's last tick");
	for (k = 0, passed = 0; k < 5; k++)
		passed += sluice_sliding_log(&log, W, W, 3) == SLUICE_PASS;
	TAP_EQ(passed, 3, "sliding log: ... and free at exactly one window: 3 again");

	/* A log written before the offset (stamp = now, on the real clock a
	 * multiple of 16 ticks, as is every window) frees each slot at the
	 * same now as the old test did. */
	for (i = 0, bad = 0; i < 100000; i++) {
		__u64 w = (1 + scn_rand_range(&rnd, 0, 3599999)) * TICKS(SCN_MS(1));
		__u64 ts = TICKS(scn_rand_range(&rnd, 1, SCN_S(100000)));
		__u64 now = TICKS(scn_rand_range(&rnd, 0, 2)) == 0 ?
				    ts + w - TICKS(scn_rand_range(&rnd, 0, 1)) :
				    TICKS(scn_rand_range(&rnd, 0, SCN_S(200000)));
		int old_held = ts != 0 && (ts > now || now - ts < w);

		bad += old_held != sluice_log_held(ts, SLUICE_LOG_STAMP(now), w);
	}
	TAP_EQ(bad, 0,
	       "sliding log: stamps of the old encoding (ns << 4) are held exactly as "
	       "before, at every now of the real clock (100000 draws, a third at the window's "
	       "end)");
}

int main(void)
{
	static const struct scn sliding[] = {
		{ "sliding-window 100/s in 100ms", SLUICE_ALGO_SLIDING_WINDOW, "100/s",
		  .window = "100ms", RND(5000, 31, SCN_MS(10)) },
		{ "sliding-window 7/s in 1s", SLUICE_ALGO_SLIDING_WINDOW, "7/s", .window = "1s",
		  RND(3000, 32, SCN_MS(143)) },
		{ "sliding-window 1000/s in 1s", SLUICE_ALGO_SLIDING_WINDOW, "1000/s",
		  .window = "1s", RND(20000, 33, SCN_US(500)) },
		{ "sliding-window 3/h in 1h", SLUICE_ALGO_SLIDING_WINDOW, "3/h", .window = "1h",
		  RND(2000, 34, SCN_S(1200)) },
	};
	static const struct scn fixed[] = {
		{ "fixed-window 100/s in 100ms", SLUICE_ALGO_FIXED_WINDOW, "100/s",
		  .window = "100ms", RND(5000, 41, SCN_MS(10)) },
		{ "fixed-window 7/s in 1s", SLUICE_ALGO_FIXED_WINDOW, "7/s", .window = "1s",
		  RND(3000, 42, SCN_MS(143)) },
	};
	static const struct scn logs[] = {
		{ "sliding-log 1/s in 1s", SLUICE_ALGO_SLIDING_LOG, "1/s", .window = "1s",
		  RND(2000, 51, SCN_S(1)) },
		{ "sliding-log 3/s in 1s", SLUICE_ALGO_SLIDING_LOG, "3/s", .window = "1s",
		  RND(3000, 52, SCN_MS(333)) },
		{ "sliding-log 100/s in 100ms", SLUICE_ALGO_SLIDING_LOG, "100/s", .window = "100ms",
		  RND(4000, 53, SCN_MS(10)) },
		{ "sliding-log 640/s in 100ms", SLUICE_ALGO_SLIDING_LOG, "640/s", .window = "100ms",
		  RND(4000, 54, SCN_US(1560)) },
		{ "sliding-log 64/h in 1h", SLUICE_ALGO_SLIDING_LOG, "64/h", .window = "1h",
		  RND(3000, 55, SCN_S(56)) },
	};
	size_t i;

	test_zero_and_sentinels();
	test_sliding_formula();
	for (i = 0; i < sizeof(sliding) / sizeof(sliding[0]); i++)
		check_sliding_reference(&sliding[i]);
	report_sliding_trailing(&sliding[0]);
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		check_fixed_reference(&fixed[i]);
	test_boundary();
	for (i = 0; i < sizeof(logs) / sizeof(logs[0]); i++)
		check_log_exact(&logs[i]);
	for (i = 0; i < scn_nr_tables; i++) {
		const struct scn *sc = &scn_tables[i];

		if (sc->nr_random && sc->algo == SLUICE_ALGO_SLIDING_LOG)
			check_log_exact(sc);
		/* From a clock at 0: window 0 against the same references. */
		else if (sc->nr_random && sc->from_zero && sc->algo == SLUICE_ALGO_SLIDING_WINDOW)
			check_sliding_reference(sc);
		else if (sc->nr_random && sc->from_zero && sc->algo == SLUICE_ALGO_FIXED_WINDOW)
			check_fixed_reference(sc);
	}
	return tap_done();
}
