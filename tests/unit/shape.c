// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The shaper's algorithm on the host (sluice_bucket_shape_shared(), the
 * leaky bucket with delay of nginx's limit_req): burst + 1 packets go into
 * an idle key at once, --delay D sends D + 1 at once and spaces the rest at
 * the interval, --nodelay sends every accepted packet at once, burst 0 one
 * packet per interval; byte limits, the packet charge refunded when the byte
 * limit refuses, GSO packets, the horizon bound, a clock going back; and a
 * reference queue, written as a work-conserving server rather than a TAT,
 * compared packet for packet (verdict and departure) over random arrivals.
 */
#include <stdlib.h>
#include <string.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "../lib/tap.h"

#define MS (1000000ULL << SLUICE_TICK_SHIFT) /* a millisecond in ticks */

/* A shaper policy: rate/s packets, burst, delay (SLUICE_NODELAY: a meter). */
static void policy(struct sluice_policy *p, __u64 rate, __u64 burst, __u32 delay)
{
	memset(p, 0, sizeof(*p));
	p->action = SLUICE_ACT_LIMIT;
	p->algo = SLUICE_ALGO_LEAKY_BUCKET;
	p->prefix4 = 32;
	p->prefix6 = 64;
	if (sluice_limit_set(&p->pkt, rate, SLUICE_NS_PER_SEC, burst ? burst : 1, NULL, 0))
		abort();
	if (!burst)
		p->pkt.tolerance = 0; /* burst 0: no queue (the library asks for >= 1) */
	p->pkt_delay = delay;
}

/* One packet of len bytes (pkts segments) at now: the verdict, *dep. */
static int shape(const struct sluice_policy *p, __u64 *s, __u64 now, __u32 len, __u32 pkts,
		 __u64 max_wait, __u64 *dep)
{
	__u64 used[2];

	*dep = ~0ULL;
	return sluice_bucket_shape_shared(p, s, now, len, pkts, 1, 1, max_wait, used, dep);
}

/* n packets at `now`: a string of their departures after now in ms ("0 0 10
 * 20 D": D dropped). */
static const char *burst_at(const struct sluice_policy *p, __u64 *s, __u64 now, int n, char *out,
			    size_t cap)
{
	size_t off = 0;
	int i;

	out[0] = '\0';
	for (i = 0; i < n && off < cap; i++) {
		__u64 dep;
		int v = shape(p, s, now, 100, 1, ~0ULL, &dep);

		if (v == SLUICE_PASS)
			off += (size_t)snprintf(out + off, cap - off, "%s%llu", i ? " " : "",
						(unsigned long long)((dep - now) / MS));
		else
			off += (size_t)snprintf(out + off, cap - off, "%s%s", i ? " " : "",
						v == SLUICE_DROP ? "D" : "?");
	}
	return out;
}

/* The same at 1 s, at a clock of 0, and at 0 from a set table's fresh way
 * (SLUICE_FRESH): a clock at 0 and a new way are an idle key too. */
static void expect_burst(const struct sluice_policy *p, int n, const char *want, const char *name)
{
	static const struct {
		__u64 now, s0;
		const char *what;
	} at[] = { { 1000 * MS, 0, "at 1 s" },
		   { 0, 0, "at 0" },
		   { 0, SLUICE_FRESH, "at 0 from SLUICE_FRESH" } };
	size_t i;

	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		__u64 s[2] = { at[i].s0, 0 };
		char got[512];

		burst_at(p, s, at[i].now, n, got, sizeof(got));
		if (!tap_ok(!strcmp(got, want), "%s (%s)", name, at[i].what))
			tap_diag("  got  %s\n#   want %s", got, want);
	}
}

static void nginx_semantics(void)
{
	struct sluice_policy p;

	/* 100/s: an interval of 10 ms. */
	policy(&p, 100, 5, 0);
	expect_burst(&p, 8, "0 10 20 30 40 50 D D",
		     "burst 5 delay 0: burst + 1 accepted at once, spaced by the interval");
	policy(&p, 100, 5, 2);
	expect_burst(&p, 8, "0 0 0 10 20 30 D D",
		     "burst 5 delay 2: delay + 1 depart at once, the rest spaced");
	policy(&p, 100, 5, 5);
	expect_burst(&p, 8, "0 0 0 0 0 0 D D", "burst 5 delay 5: the whole queue at once");
	policy(&p, 100, 5, SLUICE_NODELAY);
	expect_burst(&p, 8, "0 0 0 0 0 0 D D", "burst 5 nodelay: a meter, accepted go at once");
	policy(&p, 100, 0, 0);
	expect_burst(&p, 3, "0 D D", "burst 0: one packet per interval, no queue");
	policy(&p, 100, 5, 9);
	expect_burst(&p, 7, "0 0 0 0 0 0 D", "delay above burst: every accepted packet at once");
}

/* A queue drains at the rate: after 25 ms of quiet 2 of 5 queued turns are gone. */
static void drain(void)
{
	struct sluice_policy p;
	__u64 s[2] = { 0, 0 }, t0 = 1000 * MS, dep;
	char got[256];

	policy(&p, 100, 5, 0);
	burst_at(&p, s, t0, 6, got, sizeof(got));
	TAP_EQ(shape(&p, s, t0 + 25 * MS, 100, 1, ~0ULL, &dep), SLUICE_PASS,
	       "after 25 ms a full queue has room again");
	TAP_EQ(dep, t0 + 60 * MS, "and the packet takes the turn after the queue (60 ms)");
	TAP_EQ(shape(&p, s, t0 + 25 * MS, 100, 1, ~0ULL, &dep), SLUICE_PASS,
	       "a second one fits (3 turns drained, 4 and this one queued)");
	TAP_EQ(shape(&p, s, t0 + 25 * MS, 100, 1, ~0ULL, &dep), SLUICE_DROP,
	       "a third one is beyond the queue");
	TAP_EQ(s[0], t0 + 80 * MS, "the TAT counts only accepted packets");
}

static void bytes_and_refund(void)
{
	struct sluice_policy p;
	__u64 s[2] = { 0, 0 }, t0 = 1000 * MS, dep, tat;

	/* 1,000,000 B/s: a byte costs 1 us; burst 3000 B; no packet limit. */
	memset(&p, 0, sizeof(p));
	p.algo = SLUICE_ALGO_LEAKY_BUCKET;
	if (sluice_limit_set_bytes(&p.bytes, 1000000, SLUICE_NS_PER_SEC, 3000, NULL, 0))
		abort();
	TAP_EQ(shape(&p, s, t0, 1000, 1, ~0ULL, &dep), SLUICE_PASS, "bytes: the first 1000 B pass");
	TAP_EQ(dep, t0, "bytes: and depart at once");
	shape(&p, s, t0, 1000, 1, ~0ULL, &dep);
	TAP_EQ(dep - t0, 1 * MS, "bytes: the next 1000 B wait what 1000 B cost (1 ms)");
	shape(&p, s, t0, 500, 1, ~0ULL, &dep);
	TAP_EQ(dep - t0, 2 * MS, "bytes: 500 B after 2000 B wait 2 ms");
	shape(&p, s, t0, 1500, 1, ~0ULL, &dep);
	TAP_EQ(dep - t0, 2500000ULL << SLUICE_TICK_SHIFT, "bytes: 1500 B after 2500 B wait 2.5 ms");
	TAP_EQ(shape(&p, s, t0, 100, 1, ~0ULL, &dep), SLUICE_DROP,
	       "bytes: 4000 B queued (4 ms) is beyond a 3000 B queue (3 ms)");

	/* Both limits: the packet limit is looser; a packet the bytes refuse
	 * gets its packet charge back. */
	if (sluice_limit_set(&p.pkt, 100, SLUICE_NS_PER_SEC, 10, NULL, 0))
		abort();
	s[0] = s[1] = 0;
	shape(&p, s, t0, 1500, 1, ~0ULL, &dep);
	shape(&p, s, t0, 1500, 1, ~0ULL, &dep);
	TAP_EQ(dep - t0, 10 * MS, "both: the later departure wins (packets: 10 ms, bytes: 1.5 ms)");
	shape(&p, s, t0, 1500, 1, ~0ULL, &dep);
	tat = s[0];
	TAP_EQ(shape(&p, s, t0, 1500, 1, ~0ULL, &dep), SLUICE_DROP,
	       "both: 4500 B queued is beyond the byte queue");
	TAP_EQ(s[0], tat, "both: the refused packet's packet charge is refunded");
	TAP_EQ(shape(&p, s, t0 + 2 * MS, 10, 1, ~0ULL, &dep), SLUICE_PASS,
	       "both: 2 ms later the byte queue has room");
	TAP_EQ(dep - t0, 30 * MS, "both: and the packet takes the 4th packet turn (30 ms)");
}

static void gso_and_horizon(void)
{
	struct sluice_policy p;
	__u64 s[2] = { 0, 0 }, t0 = 1000 * MS, dep, tat;

	policy(&p, 100, 10, 0);
	TAP_EQ(shape(&p, s, t0, 6000, 4, ~0ULL, &dep), SLUICE_PASS, "gso: 4 segments accepted");
	TAP_EQ(s[0], t0 + 40 * MS, "gso: they cost 4 intervals");
	shape(&p, s, t0, 100, 1, ~0ULL, &dep);
	TAP_EQ(dep - t0, 40 * MS, "gso: the next packet waits for all 4");
	TAP_EQ(shape(&p, s, t0, 6000, 7, ~0ULL, &dep), SLUICE_PASS,
	       "gso: accepted while the queue ahead (5 turns) is within the burst");

	s[0] = s[1] = 0;
	policy(&p, 100, 10, 0);
	shape(&p, s, t0, 100, 1, 25 * MS, &dep);
	shape(&p, s, t0, 100, 1, 25 * MS, &dep);
	shape(&p, s, t0, 100, 1, 25 * MS, &dep);
	TAP_EQ(dep - t0, 20 * MS, "horizon 25 ms: a 20 ms departure is within it");
	tat = s[0];
	TAP_EQ(shape(&p, s, t0, 100, 1, 25 * MS, &dep), SLUICE_HORIZON,
	       "horizon 25 ms: a 30 ms departure is refused");
	TAP_EQ(s[0], tat, "horizon: the refused packet is not charged");
	TAP_EQ(shape(&p, s, t0, 100, 1, 30 * MS, &dep), SLUICE_HORIZON,
	       "horizon 30 ms: a departure that reaches it is refused too");
	TAP_EQ(shape(&p, s, t0, 100, 1, 30 * MS + 1, &dep), SLUICE_PASS,
	       "horizon 30 ms + 1 tick: the 30 ms departure is in");

	/* The byte limit reaching the horizon refunds the packet limit. */
	s[0] = s[1] = 0;
	if (sluice_limit_set_bytes(&p.bytes, 1000000, SLUICE_NS_PER_SEC, 100000, NULL, 0))
		abort();
	TAP_EQ(shape(&p, s, t0, 30000, 1, 25 * MS, &dep), SLUICE_PASS,
	       "horizon, bytes: 30000 B into an idle key depart at once");
	tat = s[0];
	TAP_EQ(shape(&p, s, t0, 100, 1, 25 * MS, &dep), SLUICE_HORIZON,
	       "horizon, bytes: 30 ms of bytes ahead reach a 25 ms horizon (packets: 10 ms)");
	TAP_EQ(s[0], tat, "horizon, bytes: the packet limit's charge is refunded");
}

/* A clock behind the state: no time elapsed, never an earlier departure. */
static void clock_back(void)
{
	struct sluice_policy p;
	__u64 s[2] = { 0, 0 }, t0 = 1000 * MS, dep, prev;

	policy(&p, 100, 3, 0);
	shape(&p, s, t0, 100, 1, ~0ULL, &dep);
	shape(&p, s, t0, 100, 1, ~0ULL, &prev);
	TAP_EQ(prev, t0 + 10 * MS, "clock back: the second packet departs at 10 ms");
	TAP_EQ(shape(&p, s, t0 - 5 * MS, 100, 1, ~0ULL, &dep), SLUICE_PASS,
	       "clock back 5 ms: the queue ahead is 25 ms, within 30 ms");
	TAP_EQ(dep, t0 + 20 * MS, "clock back: the packet still takes the next turn (20 ms)");
	TAP_EQ(shape(&p, s, t0 - 5 * MS, 100, 1, ~0ULL, &dep), SLUICE_DROP,
	       "clock back: 35 ms queued ahead of an earlier clock is beyond the queue");
	TAP_EQ(s[0], t0 + 30 * MS, "clock back: the TAT never moves back");
}

/* ---- the reference: a FIFO with one server working at the rate ----
 * work: the server's work left (ticks) at `last`; a packet costs its limit's
 * price; it is accepted while the work ahead of it is within the tolerance,
 * starts service when the work ahead is done and departs `delay` units of
 * work earlier (never before its arrival). */
struct server {
	__u64 work, last, tol, delay;
};

static void server_init(struct server *q, __u64 tol, __u64 delay)
{
	memset(q, 0, sizeof(*q));
	q->tol = tol;
	q->delay = delay;
}

static __u64 server_ahead(struct server *q, __u64 now)
{
	if (now > q->last) {
		__u64 done = now - q->last;

		q->work = q->work > done ? q->work - done : 0;
		q->last = now;
	}
	/* A clock behind `last`: nothing more is done yet. */
	return q->work + (q->last > now ? q->last - now : 0);
}

static __u64 xrand_state = 88172645463325252ULL;

static __u64 xrand(void)
{
	xrand_state ^= xrand_state << 13;
	xrand_state ^= xrand_state >> 7;
	xrand_state ^= xrand_state << 17;
	return xrand_state;
}

struct scen {
	const char *name;
	__u64 rate, burst; /* packets/s (0: none), burst in packets */
	__u32 delay; /* packets */
	__u64 brate, bburst; /* bytes/s (0: none), burst in bytes */
	__u32 bdelay;
	__u64 mean_gap_ns; /* arrivals: exponential-ish gaps of this mean */
	int back; /* 1 in `back` arrivals is 0-3 ms earlier than the last one */
	int n;
	bool at_once; /* a meter (nodelay) or no queue (burst 0): none waits */
	bool from_zero; /* the clock starts at 0, the state at SLUICE_FRESH (a fresh way) */
};

static void reference(const struct scen *sc)
{
	struct sluice_policy p;
	struct server qp, qb;
	__u64 s[2] = { sc->from_zero ? SLUICE_FRESH : 0, 0 }, t = sc->from_zero ? 0 : 1000 * MS;
	int i, bad = -1, passed = 0, delayed = 0;
	int v = 0, want = 0;
	__u64 dep = 0, wdep = 0;

	memset(&p, 0, sizeof(p));
	p.algo = SLUICE_ALGO_LEAKY_BUCKET;
	if (sc->rate) {
		policy(&p, sc->rate, sc->burst, sc->delay);
		server_init(&qp, p.pkt.tolerance, sluice_shape_delay(&p.pkt, sc->delay));
	}
	if (sc->brate) {
		if (sluice_limit_set_bytes(&p.bytes, sc->brate, SLUICE_NS_PER_SEC, sc->bburst, NULL,
					   0))
			abort();
		p.byte_delay = sc->bdelay;
		server_init(&qb, p.bytes.tolerance, sluice_shape_delay(&p.bytes, sc->bdelay));
	}
	for (i = 0; i < sc->n && bad < 0; i++) {
		__u32 len = 64 + (__u32)(xrand() % 1437), pkts = 1 + (xrand() % 8 == 0 ? 3 : 0);
		__u64 gap = (xrand() % (2 * sc->mean_gap_ns + 1)) << SLUICE_TICK_SHIFT;
		__u64 now, ap = 0, ab = 0, dp = 0, db = 0;
		bool ok = true;

		if (xrand() % 4 == 0)
			gap = 0; /* bursts */
		t += gap;
		now = t;
		if (sc->back && xrand() % sc->back == 0) {
			__u64 b = (xrand() % 3000000) << SLUICE_TICK_SHIFT;

			now = now > b ? now - b : 0;
		}
		if (sc->rate) {
			ap = server_ahead(&qp, now);
			ok = ap <= qp.tol;
			dp = now + (ap > qp.delay ? ap - qp.delay : 0);
		}
		if (ok && sc->brate) {
			ab = server_ahead(&qb, now);
			ok = ab <= qb.tol;
			db = now + (ab > qb.delay ? ab - qb.delay : 0);
		}
		if (ok) {
			if (sc->rate)
				qp.work += sluice_limit_cost(&p.pkt, pkts);
			if (sc->brate)
				qb.work += sluice_limit_cost(&p.bytes, len);
		}
		want = ok ? SLUICE_PASS : SLUICE_DROP;
		wdep = dp > db ? dp : db;
		if (!wdep)
			wdep = now;
		v = shape(&p, s, now, len, pkts, ~0ULL, &dep);
		if (v != want || (v == SLUICE_PASS && dep != wdep))
			bad = i;
		passed += v == SLUICE_PASS;
		delayed += v == SLUICE_PASS && dep > now;
	}
	if (!tap_ok(bad < 0,
		    "reference queue, %s: the same verdicts and departures over %d packets",
		    sc->name, sc->n))
		tap_diag("  packet %d: sluice %s departure %llu, reference %s departure %llu", bad,
			 v == SLUICE_PASS ? "pass" : "drop", (unsigned long long)dep,
			 want == SLUICE_PASS ? "pass" : "drop", (unsigned long long)wdep);
	TAP_TRUE(passed > 0 && passed < sc->n && (sc->at_once ? delayed == 0 : delayed > 0),
		 "reference queue, %s: the arrivals pass, %s and drop (%d passed, %d delayed)",
		 sc->name, sc->at_once ? "never wait" : "wait", passed, delayed);
}

int main(void)
{
	static const struct scen scens[] = {
		{ "100/s burst 20 delay 0", 100, 20, 0, 0, 0, 0, 8000000, 0, 3000 },
		{ "100/s burst 20 delay 5", 100, 20, 5, 0, 0, 0, 8000000, 0, 3000 },
		{ "3/s burst 4 delay 1 (rounded price)", 3, 4, 1, 0, 0, 0, 250000000, 0, 2000 },
		{ "1000/s burst 50 nodelay", 1000, 50, SLUICE_NODELAY, 0, 0, 0, 700000, 0, 3000,
		  true },
		{ "1000/s burst 0", 1000, 0, 0, 0, 0, 0, 700000, 0, 3000, true },
		{ "bytes 1 MB/s burst 30000 delay 3000", 0, 0, 0, 1000000, 30000, 3000, 600000, 0,
		  3000 },
		{ "200/s burst 10 delay 2 and 300 kB/s burst 20000", 200, 10, 2, 300000, 20000, 0,
		  3000000, 0, 3000 },
		{ "100/s burst 20 delay 3, a clock going back", 100, 20, 3, 0, 0, 0, 6000000, 5,
		  3000 },
		{ "100/s burst 20 delay 5 from a clock at 0", 100, 20, 5, 0, 0, 0, 8000000, 0, 3000,
		  false, true },
		{ "1000/s burst 0 from a clock at 0", 1000, 0, 0, 0, 0, 0, 700000, 0, 3000, true,
		  true },
		{ "bytes 1 MB/s burst 30000 delay 3000 from a clock at 0", 0, 0, 0, 1000000, 30000,
		  3000, 600000, 0, 3000, false, true },
		{ "200/s burst 10 delay 2 and 300 kB/s burst 20000 from 0, a clock going back", 200,
		  10, 2, 300000, 20000, 0, 3000000, 5, 3000, false, true },
	};
	size_t i;

	nginx_semantics();
	drain();
	bytes_and_refund();
	gso_and_horizon();
	clock_back();
	for (i = 0; i < sizeof(scens) / sizeof(scens[0]); i++)
		reference(&scens[i]);
	return tap_done();
}
