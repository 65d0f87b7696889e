// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * leaky-bucket is GCRA: a reference leaky bucket written the textbook way
 * (a level that drains continuously at the rate, plus the time it was last
 * drained; a packet fits if level + its size <= capacity, and only a packet
 * that fits raises the level) admits exactly what sluice_admit() admits with
 * the same capacity and rate, packet for packet, on random arrivals.
 *
 * The reference is exact integer arithmetic: with a rate of `count` units
 * per P ticks, the level is kept in units x P, so draining `e` ticks removes
 * exactly e x count and nothing is ever rounded.
 */
#include <stdlib.h>
#include <string.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

struct leaky {
	unsigned __int128 level; /* units x P */
	__u64 last; /* ticks of the last drain */
	__u64 count, P; /* rate: count units per P ticks */
	__u64 cap; /* capacity, units */
};

static void leaky_init(struct leaky *b, __u64 count, __u64 P, __u64 cap)
{
	memset(b, 0, sizeof(*b));
	b->count = count;
	b->P = P;
	b->cap = cap;
}

/* Arrivals are in time order here; the level only drains forward. */
static void leaky_drain(struct leaky *b, __u64 now)
{
	unsigned __int128 out;

	if (now <= b->last)
		return;
	out = (unsigned __int128)(now - b->last) * b->count;
	b->level = b->level > out ? b->level - out : 0;
	b->last = now;
}

static bool leaky_fits(const struct leaky *b, __u64 units)
{
	return b->level + (unsigned __int128)units * b->P <= (unsigned __int128)b->cap * b->P;
}

static void leaky_fill(struct leaky *b, __u64 units)
{
	b->level += (unsigned __int128)units * b->P;
}

/* The exact meter for limit l: rate l->rate per l->period_ns, capacity burst. */
static void leaky_exact(struct leaky *b, const struct sluice_limit *l)
{
	leaky_init(b, l->rate, l->period_ns << SLUICE_TICK_SHIFT, l->burst);
}

/*
 * The meter with the datapath's rounded price: a unit costs
 * sluice_limit_cost(l, 1) ticks, the level drains one tick per tick.
 * Used only where the rate does not divide a tick (3/s, 7/s ...).
 */
static void leaky_rounded(struct leaky *b, const struct sluice_limit *l)
{
	leaky_init(b, 1, sluice_limit_cost(l, 1), l->burst);
}

/*
 * Packet for packet: the reference meter(s) against the verdicts of
 * sluice_admit. With `rounded`, the packet meter uses the datapath's
 * rounded cost (rates that do not divide a tick).
 */
static void check_equal(const struct scn *sc, bool rounded)
{
	struct leaky pkt, bytes;
	bool has_pkt, has_bytes;
	size_t i, passed = 0;
	long bad = -1;
	int want = 0;
	struct scn_run r;

	if (!scn_run_host(sc, &r))
		return;
	has_pkt = r.p.pkt.period_ns != 0;
	has_bytes = r.p.bytes.period_ns != 0;
	if (rounded)
		leaky_rounded(&pkt, &r.p.pkt);
	else
		leaky_exact(&pkt, &r.p.pkt);
	leaky_exact(&bytes, &r.p.bytes);
	for (i = 0; i < r.n && bad < 0; i++) {
		__u64 now = r.pk[i].t_ns << SLUICE_TICK_SHIFT;
		bool fits = true;

		leaky_drain(&pkt, now);
		leaky_drain(&bytes, now);
		if (has_pkt && !leaky_fits(&pkt, 1))
			fits = false;
		if (has_bytes && !leaky_fits(&bytes, r.pk[i].len))
			fits = false;
		if (fits) {
			leaky_fill(&pkt, 1);
			leaky_fill(&bytes, r.pk[i].len);
			passed++;
		}
		want = fits ? SLUICE_PASS : SLUICE_DROP;
		if (r.v[i] != want)
			bad = (long)i;
	}
	if (!tap_ok(bad < 0, "%s: the reference leaky bucket%s admits the same %zu of %zu",
		    sc->name, rounded ? " (rounded price)" : "", passed, r.n))
		tap_diag("  packet %ld at %llu ns, %u B: sluice %s, reference %s", bad,
			 (unsigned long long)r.pk[bad].t_ns, r.pk[bad].len,
			 scn_verdict_name(r.v[bad]), scn_verdict_name(want));
	TAP_TRUE(passed > 0 && passed < r.n, "%s: the sequence both passes and drops", sc->name);
	scn_run_free(&r);
}

/*
 * Where the rate does not divide a tick the datapath rounds each price up.
 * Feeding the exact meter with the datapath's own decisions, every packet
 * sluice admits must fit the exact meter: rounding may only admit less.
 */
static void check_never_more(const struct scn *sc)
{
	struct leaky pkt, bytes;
	size_t i, passed = 0;
	long bad = -1;
	struct scn_run r;

	if (!scn_run_host(sc, &r))
		return;
	leaky_exact(&pkt, &r.p.pkt);
	leaky_exact(&bytes, &r.p.bytes);
	for (i = 0; i < r.n; i++) {
		__u64 now = r.pk[i].t_ns << SLUICE_TICK_SHIFT;

		if (r.v[i] != SLUICE_PASS)
			continue;
		leaky_drain(&pkt, now);
		leaky_drain(&bytes, now);
		if ((r.p.pkt.period_ns && !leaky_fits(&pkt, 1)) ||
		    (r.p.bytes.period_ns && !leaky_fits(&bytes, r.pk[i].len))) {
			if (bad < 0)
				bad = (long)i;
		}
		leaky_fill(&pkt, 1);
		leaky_fill(&bytes, r.pk[i].len);
		passed++;
	}
	if (!tap_ok(bad < 0,
		    "%s: nothing admitted that the exact meter refuses (%zu of %zu passed)",
		    sc->name, passed, r.n))
		tap_diag("  packet %ld at %llu ns, %u B: admitted, but the exact meter is full",
			 bad, (unsigned long long)r.pk[bad].t_ns, r.pk[bad].len);
	scn_run_free(&r);
}

#define RND(n, s, gap, lo, hi) \
	.nr_random = (n), .seed = (s), .gap_ns = (gap), .len_min = (lo), .len_max = (hi)

int main(void)
{
	/* Rates that divide a tick exactly: the plain reference. */
	static const struct scn exact[] = {
		{ "leaky-bucket 10/s capacity 5", SLUICE_ALGO_LEAKY_BUCKET, "10/s", 5,
		  RND(3000, 11, SCN_MS(100), 60, 60) },
		{ "leaky-bucket 1000/s capacity 20", SLUICE_ALGO_LEAKY_BUCKET, "1000/s", 20,
		  RND(5000, 12, SCN_MS(1), 60, 60) },
		{ "leaky-bucket 1/h capacity 3", SLUICE_ALGO_LEAKY_BUCKET, "1/h", 3,
		  RND(2000, 13, SCN_S(1200), 60, 60) },
		{ "leaky-bucket 100000000/s capacity 100", SLUICE_ALGO_LEAKY_BUCKET, "100000000/s",
		  100, RND(5000, 14, 1, 60, 60) },
		{ "leaky-bucket 10mbit capacity 6000 B", SLUICE_ALGO_LEAKY_BUCKET, NULL, 0,
		  "10mbit", 6000, RND(5000, 15, SCN_US(700), SCN_MIN_LEN, SCN_MAX_LEN) },
		{ "leaky-bucket 1000/s capacity 10 + 10mbit capacity 6000 B",
		  SLUICE_ALGO_LEAKY_BUCKET, "1000/s", 10, "10mbit", 6000,
		  RND(5000, 16, SCN_US(700), SCN_MIN_LEN, SCN_MAX_LEN) },
		{ "token-bucket 1000/s burst 10 + 10mbit burst 6000 B", SLUICE_ALGO_TOKEN_BUCKET,
		  "1000/s", 10, "10mbit", 6000,
		  RND(5000, 17, SCN_US(700), SCN_MIN_LEN, SCN_MAX_LEN) },
		/* From a clock at 0: a bucket at 0 is full and drains as at 1 s. */
		{ "leaky-bucket 10/s capacity 5 from 0", SLUICE_ALGO_LEAKY_BUCKET, "10/s", 5,
		  RND(3000, 18, SCN_MS(100), 60, 60), .from_zero = true },
		{ "leaky-bucket 1000/s capacity 10 + 10mbit capacity 6000 B from 0",
		  SLUICE_ALGO_LEAKY_BUCKET, "1000/s", 10, "10mbit", 6000,
		  RND(5000, 19, SCN_US(700), SCN_MIN_LEN, SCN_MAX_LEN), .from_zero = true },
	};
	/* Rates that do not: 16e9 ticks / 7 and / 3 leave a fraction. */
	static const struct scn frac[] = {
		{ "leaky-bucket 7/s capacity 3", SLUICE_ALGO_LEAKY_BUCKET, "7/s", 3,
		  RND(3000, 21, SCN_MS(143), 60, 60) },
		{ "leaky-bucket 3/s capacity 1", SLUICE_ALGO_LEAKY_BUCKET, "3/s", 1,
		  RND(3000, 22, SCN_MS(333), 60, 60) },
		{ "leaky-bucket 7/s capacity 3 from 0", SLUICE_ALGO_LEAKY_BUCKET, "7/s", 3,
		  RND(3000, 25, SCN_MS(143), 60, 60), .from_zero = true },
	};
	/* And bytes: 100gbit is 1.28 ticks a byte, 3mbit 42666.67. */
	static const struct scn frac_bytes[] = {
		{ "leaky-bucket 3mbit capacity 3000 B", SLUICE_ALGO_LEAKY_BUCKET, NULL, 0, "3mbit",
		  3000, RND(3000, 23, SCN_MS(2), SCN_MIN_LEN, SCN_MAX_LEN) },
		{ "leaky-bucket 100gbit capacity 150000 B", SLUICE_ALGO_LEAKY_BUCKET, NULL, 0,
		  "100gbit", 150000, RND(3000, 24, 20, SCN_MIN_LEN, SCN_MAX_LEN) },
	};
	size_t i;

	for (i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		check_equal(&exact[i], false);
	for (i = 0; i < sizeof(frac) / sizeof(frac[0]); i++) {
		check_equal(&frac[i], true);
		check_never_more(&frac[i]);
	}
	for (i = 0; i < sizeof(frac_bytes) / sizeof(frac_bytes[0]); i++)
		check_never_more(&frac_bytes[i]);
	return tap_done();
}
