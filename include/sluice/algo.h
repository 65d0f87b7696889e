/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sluice: the counting algorithms, written once and compiled twice: into the
 * XDP program (clang -target bpf -mcpu=v3) and into the host unit tests, so a
 * scenario run through both gives the same verdicts packet for packet.
 *
 * Every state update is a compare-and-swap on one u64 (or, for the sliding
 * window, two u64s in an order that keeps readers exact, see below): LRU hash
 * values cannot hold a bpf_spin_lock, and a lock per packet would cost more
 * than the rest of the program. A CAS that fails means another CPU updated the
 * same key; we reread and decide again, at most SLUICE_CAS_TRIES times.
 *
 * Time is in ticks (ns << SLUICE_TICK_SHIFT), see sluice.h. A reading older
 * than the state (another CPU's clock a little ahead, or a test clock moved
 * back) counts as no time elapsed: it can cost a packet, never admit one extra.
 */
#ifndef SLUICE_ALGO_H
#define SLUICE_ALGO_H

#include <linux/types.h>
#include "sluice.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define SLUICE_READ(x) (*(volatile __typeof__(x) *)&(x))
#define SLUICE_WRITE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
/* Keep CAS retry loops rolled: only the first pass runs in the common case,
 * and eight unrolled copies would only crowd the instruction cache. */
#ifdef __clang__
#define SLUICE_NOUNROLL _Pragma("clang loop unroll(disable)")
#else
#define SLUICE_NOUNROLL
#endif
/* Hide a value from the compiler so a bounds mask the verifier needs stays. */
#define SLUICE_OPAQUE(x) __asm__ volatile("" : "+r"(x))

enum sluice_verdict {
	SLUICE_PASS = 0,
	SLUICE_DROP = 1,
	SLUICE_CONTENDED = 2, /* CAS retries exhausted: dropped, never admitted */
	SLUICE_HORIZON = 3, /* a shaper's: the departure would reach max_wait */
	SLUICE_RETRY = 4, /* the state is frozen (SLUICE_FROZEN): find the key again */
};

/*
 * Two state words no state ever holds, both used only by the set-associative
 * table (sets.h; the LRU table never holds either):
 *
 * SLUICE_FROZEN: a way's first state word while the way changes keys, so
 * that no update lands between its eviction decision and its claim. Every
 * CAS loop below that reads it returns SLUICE_RETRY without writing.
 *
 * SLUICE_FRESH: a claimed way's first state word before its key's first
 * update, when the word it replaces was 0 (a claim must leave a word other
 * than the one it evicted, bpf/lib/sets.h). Every algorithm reads it as it
 * reads 0, a new key: a full bucket (GCRA, the shaper) or no window yet
 * (both window algorithms), at every now, 0 included. No real state is
 * either of them, and none is read as a sentinel by mistake: a TAT of
 * SLUICE_FRESH ticks or more is 36 years of uptime, so the buckets test
 * `old >= SLUICE_FRESH`, one compare for both; a window state always counts
 * at least the packet that opened its window, so the window algorithms read
 * a count of 0 (0 and SLUICE_FRESH, whose low half is 0) as a new key, and
 * SLUICE_FROZEN (a count of 2^32 - 1, which no window reaches: 4 billion
 * packets of one key in one window) by equality.
 *
 * Zero is a real state too, and means what it says at every now: a TAT of
 * 0 is a full bucket even at now = 0 (max(0, now) = now), window 0 with a
 * count of 0 holds no packet, a sliding-log slot of 0 holds none (its
 * stamps are now + 1, never 0). Nothing reads a window number, a TAT or a
 * time of 0 as "empty" otherwise: a box booted less than one window ago
 * counts its first window as any other.
 */
#define SLUICE_FROZEN (~0ULL)
#define SLUICE_FRESH (0xffffffffULL << 32)

static __always_inline int sluice_cas(__u64 *p, __u64 old, __u64 new_val)
{
	return __sync_val_compare_and_swap(p, old, new_val) == old;
}

/* Ticks that `units` packets or bytes cost under limit l, rounded up so that
 * rounding can only ever admit less than the rate, never more. */
static __always_inline __u64 sluice_limit_cost(const struct sluice_limit *l, __u64 units)
{
	__u64 frac = units * l->interval_frac; /* units < 2^16: fits */

	return units * l->interval + (frac >> 32) + ((frac & 0xffffffffULL) != 0);
}

/*
 * GCRA, virtual-scheduling form. *tat is the theoretical arrival time: the
 * moment the bucket would be full again. A unit costing `cost` ticks is
 * admitted if, after paying, the TAT is at most `tolerance` ahead of now.
 * A new key starts full: its TAT is 0, at or before every now (0 too), or
 * SLUICE_FRESH, read as 0. Since the new TAT is max(tat, now) + cost and
 * the test is against now, no arithmetic can underflow, and a clock moving
 * back only makes the test stricter.
 */
static __always_inline int sluice_gcra_to(__u64 *tat, __u64 now, __u64 cost, __u64 tolerance,
					  __u64 *written)
{
	int i;

	SLUICE_NOUNROLL
	for (i = 0; i < SLUICE_CAS_TRIES; i++) {
		__u64 old = SLUICE_READ(*tat);
		__u64 base, next;

		/* One compare for both sentinels on the common path. */
		if (old >= SLUICE_FRESH) {
			if (old == SLUICE_FROZEN)
				return SLUICE_RETRY;
			base = now;
		} else {
			base = old > now ? old : now;
		}
		next = base + cost;
		if (next - now > tolerance)
			return SLUICE_DROP;
		if (sluice_cas(tat, old, next)) {
			*written = next;
			return SLUICE_PASS;
		}
	}
	return SLUICE_CONTENDED;
}

static __always_inline int sluice_gcra(__u64 *tat, __u64 now, __u64 cost, __u64 tolerance)
{
	__u64 w;

	return sluice_gcra_to(tat, now, cost, tolerance, &w);
}

/*
 * Give back what sluice_gcra_to() took for a packet another limit then
 * refused: one CAS from the TAT it wrote. If anything wrote the TAT since
 * (another packet of the key, or, in the set-associative table, another key
 * that took the way over) the charge stays: the packet cost budget it did
 * not use, which can only admit less, and never is a refund taken from a
 * state that is not the one charged.
 */
static __always_inline void sluice_gcra_refund(__u64 *tat, __u64 written, __u64 cost)
{
	sluice_cas(tat, written, written - cost);
}

/*
 * Window algorithms pack (window number mod 2^32) << 32 | count into a u64.
 * Windows are at least 100 ms, so 2^32 of them are 13 years of uptime.
 * sluice_window_delta() says how many windows `now` is past the packed one,
 * as a signed number: 0 the same window, < 0 a clock behind the state.
 * (A key idle for 2^31 windows, 6.8 years at 100 ms, would read as behind.)
 *
 * Window number 0 is a window like any other: now / window is 0 for the
 * first window of uptime, and a state of window 0 counts in it. What marks
 * a new key is a count of 0, which no state stores (the packet that opens
 * a window counts 1): the zero state, and SLUICE_FRESH.
 */
static __always_inline __s32 sluice_window_delta(__u64 packed, __u32 win_now)
{
	/* A count of 0 is a new key: 2 windows past, nothing to carry over. */
	if (!(__u32)packed)
		return 2;
	return (__s32)(win_now - (__u32)(packed >> 32));
}

#define SLUICE_WIN_PACK(win, count) (((__u64)(__u32)(win) << 32) | (__u32)(count))
#define SLUICE_WIN_COUNT(packed) ((__u32)(packed))
#define SLUICE_WIN_ID(packed) ((__u32)((packed) >> 32))

/* Fixed window: one counter per window, reset at the boundary. */
static __always_inline int sluice_fixed_window(__u64 *state, __u64 now, __u64 window, __u32 limit)
{
	__u32 win = (__u32)(now / window);
	int i;

	SLUICE_NOUNROLL
	for (i = 0; i < SLUICE_CAS_TRIES; i++) {
		__u64 old = SLUICE_READ(*state);
		__u32 count = sluice_window_delta(old, win) <= 0 ? SLUICE_WIN_COUNT(old) : 0;
		__u64 next;

		if (old == SLUICE_FROZEN)
			return SLUICE_RETRY;
		if (count >= limit)
			return SLUICE_DROP;
		next = sluice_window_delta(old, win) <= 0 ? old + 1 : SLUICE_WIN_PACK(win, 1);
		if (sluice_cas(state, old, next))
			return SLUICE_PASS;
	}
	return SLUICE_CONTENDED;
}

/*
 * Weight of the previous window at `elapsed` ticks into the current one, in
 * 1/65536ths, rounded up so the estimate errs towards the previous window.
 */
static __always_inline __u64 sluice_prev_weight(__u64 elapsed, __u64 window)
{
	__u64 rest = (window - elapsed) << 16; /* window <= 1 h: fits in 63 bits */

	return rest / window + (rest % window != 0);
}

/*
 * Record that window `win` ended with `count` packets into *prev, keeping the
 * largest count of the newest window: a CPU with an older snapshot can never
 * lower it.
 */
static __always_inline void sluice_window_retire(__u64 *prev, __u32 win, __u32 count)
{
	int i;

	SLUICE_NOUNROLL
	for (i = 0; i < SLUICE_CAS_TRIES; i++) {
		__u64 old = SLUICE_READ(*prev);
		__s32 d = sluice_window_delta(old, win);

		if (d < 0 || (d == 0 && SLUICE_WIN_COUNT(old) >= count))
			return;
		if (sluice_cas(prev, old, SLUICE_WIN_PACK(win, count)))
			return;
	}
}

/*
 * Sliding-window counter: estimate = previous x (1 - elapsed/window) + current,
 * and a packet passes while the estimate is below the limit.
 * s[0] holds the current window, s[1] the count the previous window ended on.
 *
 * Rolling over writes s[1] before the CAS that moves s[0] into the new window,
 * and s[1] only ever grows for a given window; so anyone who reads s[0] in
 * window w finds in s[1] the final count of w-1 (or something older, meaning
 * 0). That keeps the estimate exact across CPUs with two plain u64s.
 */
static __always_inline int sluice_sliding_window_at(__u64 *s0, __u64 *s1, __u64 now, __u64 window,
						    __u32 limit)
{
	__u64 w64 = now / window;
	__u32 win = (__u32)w64;
	__u64 elapsed = now - w64 * window;
	__u64 budget = (__u64)limit << 16;
	int i;

	SLUICE_NOUNROLL
	for (i = 0; i < SLUICE_CAS_TRIES; i++) {
		__u64 cur = SLUICE_READ(*s0);
		__s32 d = sluice_window_delta(cur, win);
		__u64 prev_count = 0, cur_count = 0, weight, next;

		if (cur == SLUICE_FROZEN)
			return SLUICE_RETRY;
		if (d <= 0) {
			__u64 prev = SLUICE_READ(*s1);

			cur_count = SLUICE_WIN_COUNT(cur);
			if (SLUICE_WIN_ID(prev) == SLUICE_WIN_ID(cur) - 1)
				prev_count = SLUICE_WIN_COUNT(prev);
			/* behind the state: as if at the start of its window */
			weight = d == 0 ? sluice_prev_weight(elapsed, window) : 1 << 16;
			next = cur + 1;
		} else {
			if (d == 1)
				prev_count = SLUICE_WIN_COUNT(cur);
			weight = sluice_prev_weight(elapsed, window);
			next = SLUICE_WIN_PACK(win, 1);
		}
		/* Admit while the estimate before this packet is below the
		 * limit. (Counting the packet in, "estimate + 1 <= limit",
		 * would keep every window of a steady flood one short, since
		 * the previous window's share never quite reaches 0.) */
		if (prev_count * weight + (cur_count << 16) >= budget)
			return SLUICE_DROP;
		if (d == 1)
			sluice_window_retire(s1, SLUICE_WIN_ID(cur), SLUICE_WIN_COUNT(cur));
		if (sluice_cas(s0, cur, next))
			return SLUICE_PASS;
	}
	return SLUICE_CONTENDED;
}

static __always_inline int sluice_sliding_window(__u64 *s, __u64 now, __u64 window, __u32 limit)
{
	return sluice_sliding_window_at(&s[0], &s[1], now, window, limit);
}

/*
 * Sliding log: the arrival ticks of the last `limit` admitted packets, one
 * slot each, each stored as its tick + 1 (SLUICE_LOG_STAMP), so that a
 * packet admitted at tick 0 is stamped 1 and a slot of 0 is only ever
 * empty. A slot is free when empty or when its packet left the window
 * (t + window <= now). Admitting claims a free slot by CAS. Exact: a packet
 * admitted at t holds its slot until t + window, so any trailing window holds
 * at most `limit` admissions. Without concurrency the oldest slot is always
 * at hint, so one probe decides; the extra probes only matter when two CPUs
 * race for the same slot, and running out of them drops, never admits.
 *
 * Logs written before the stamps were offset (stamp = now, and 1 at now 0)
 * read one tick early, which on the real clock (ns << 4: every now and
 * every window a multiple of 16 ticks) frees each slot at the same now as
 * before: no migration.
 */
#define SLUICE_LOG_PROBES 4
#define SLUICE_LOG_STAMP(now) ((now) + 1)

/* Does a slot stamped `ts` hold a packet of the window ending at now? Both
 * in stamps: n1 = SLUICE_LOG_STAMP(now). */
static __always_inline int sluice_log_held(__u64 ts, __u64 n1, __u64 window)
{
	return ts != 0 && (ts > n1 || n1 - ts < window);
}

static __always_inline int sluice_sliding_log(struct sluice_log *log, __u64 now, __u64 window,
					      __u32 limit)
{
	__u64 hint = SLUICE_READ(log->hint);
	__u64 stamp = SLUICE_LOG_STAMP(now);
	int i;

	if (limit == 0 || limit > SLUICE_LOG_MAX)
		return SLUICE_DROP;
	SLUICE_NOUNROLL
	for (i = 0; i < SLUICE_LOG_PROBES; i++) {
		__u32 idx = (__u32)((hint + i) % limit);
		__u64 ts;

		SLUICE_OPAQUE(idx);
		idx &= SLUICE_LOG_MAX - 1; /* idx < limit <= 64: for the verifier */
		ts = SLUICE_READ(log->ts[idx]);

		if (sluice_log_held(ts, stamp, window))
			continue;
		if (sluice_cas(&log->ts[idx], ts, stamp)) {
			SLUICE_WRITE(log->hint, idx + 1);
			return SLUICE_PASS;
		}
	}
	return SLUICE_DROP;
}

/*
 * Token bucket (GCRA) and leaky bucket (as a meter) share their state and
 * their decision: see docs/algorithms.md, "Leaky bucket". s[0] is the packet TAT, s[1]
 * the byte TAT. A packet passes only if both limits admit it; one the byte
 * limit refuses gets its packet charge back.
 *
 * A fleet policy decides on this box's share of the limit (sluice.h, struct
 * sluice_fleet): burst/div of the burst (div is N), at every cost times
 * `mult` (N in an outage: rate/N; else 1, the whole rate). burst/div units
 * of mult times the cost are a tolerance of tolerance / div x mult ticks
 * (mult is 1 or div, so that never exceeds the whole tolerance), but never
 * below one unit's cost, so the share always admits a packet into a full
 * bucket. used[] gets what an admitted packet cost the fleet: the costs of
 * the whole limit, before mult. sluice_bucket_admit() is the share 1/1,
 * which the compiler folds away.
 *
 * mult x cost cannot overflow, whatever mult (a sluice_fleet.live of
 * 2305843010 wrapped a 0.5 s packet to almost nothing): sluice_share_cost()
 * is the product, or SLUICE_MAX_TOLERANCE (9 years) where it would be more.
 * The datapath reads live as at most SLUICE_FLEET_MAX_BOXES (2^16), so the
 * division that saturates runs only for units dearer than 2^46 ticks (73
 * minutes: a rate of one packet an hour, or a few bytes a second); every
 * other packet pays two compares.
 */
static __always_inline __u64 sluice_share_cost(__u64 cost, __u32 mult)
{
	if (mult <= 1)
		return cost;
	if (cost <= SLUICE_MAX_TOLERANCE >> 16 && mult <= 1U << 16)
		return cost * mult;
	return cost >= SLUICE_MAX_TOLERANCE / mult ? SLUICE_MAX_TOLERANCE : cost * mult;
}

static __always_inline __u64 sluice_share_tolerance(__u64 tolerance, __u64 cost, __u32 mult,
						    __u32 div)
{
	__u64 t;

	if (div <= 1 && mult <= 1)
		return tolerance;
	t = (div > 1 ? tolerance / div : tolerance) * mult;
	return t < cost ? cost : t;
}

/*
 * A bucket policy's verdict (mult, div: a fleet policy's share, 1 and 1 for
 * the whole limit). An admitted packet's costs go to used[] (of the whole
 * limit) and the TATs its charges wrote to wrote[] ([0] packets, [1] bytes;
 * 0 where the policy has no such limit): what sluice_gcra_refund() needs to
 * give the charge back when a second key then refuses the packet.
 */
static __always_inline int sluice_bucket_admit_to(const struct sluice_policy *p, __u64 *s0,
						  __u64 *s1, __u64 now, __u32 len, __u32 mult,
						  __u32 div, __u64 *used, __u64 *wrote2)
{
	__u64 pkt_cost = 0, byte_cost = 0, local = 0, wrote = 0, bwrote = 0;
	int v;

	if (p->pkt.interval | p->pkt.interval_frac) {
		pkt_cost = sluice_limit_cost(&p->pkt, 1);
		local = sluice_share_cost(pkt_cost, mult);
		v = sluice_gcra_to(s0, now, local,
				   sluice_share_tolerance(p->pkt.tolerance, local, mult, div),
				   &wrote);
		if (v != SLUICE_PASS)
			return v;
	}
	if (p->bytes.interval | p->bytes.interval_frac) {
		__u64 blocal;

		byte_cost = sluice_limit_cost(&p->bytes, len);
		blocal = sluice_share_cost(byte_cost, mult);
		v = sluice_gcra_to(s1, now, blocal,
				   sluice_share_tolerance(p->bytes.tolerance, blocal, mult, div),
				   &bwrote);
		if (v != SLUICE_PASS) {
			if (local)
				sluice_gcra_refund(s0, wrote, local);
			return v;
		}
	}
	used[0] = pkt_cost;
	used[1] = byte_cost;
	wrote2[0] = wrote;
	wrote2[1] = bwrote;
	return SLUICE_PASS;
}

static __always_inline int sluice_bucket_admit_shared(const struct sluice_policy *p, __u64 *s0,
						      __u64 *s1, __u64 now, __u32 len, __u32 mult,
						      __u32 div, __u64 *used)
{
	__u64 wrote[2];

	return sluice_bucket_admit_to(p, s0, s1, now, len, mult, div, used, wrote);
}

static __always_inline int sluice_bucket_admit(const struct sluice_policy *p, __u64 *s, __u64 now,
					       __u32 len)
{
	__u64 used[2];

	return sluice_bucket_admit_shared(p, &s[0], &s[1], now, len, 1, 1, used);
}

/*
 * A shaper's GCRA: the leaky bucket with delay (nginx's limit_req with
 * burst= and delay=). The TAT is when the key's queue will have drained at
 * the rate; base = max(TAT, now) is when this packet's turn comes, so
 * base - now is the work queued ahead of it. A packet is accepted while
 * that is at most `tolerance` (burst x interval: burst packets may wait
 * beyond the one being sent, so burst + 1 go into an idle key at once, as
 * nginx's burst=), else dropped with the state untouched. An accepted
 * packet departs at base - delay (delay: the ticks of excess that go at
 * once), or now if that is earlier: the first excess units of a burst
 * leave at once, the rest are spaced at the rate. The CAS that advances
 * the TAT is what hands out the turns, so two CPUs never get the same one.
 */
static __always_inline int sluice_gcra_shape_max(__u64 *tat, __u64 now, __u64 cost, __u64 tolerance,
						 __u64 delay, __u64 max_wait, __u64 *depart,
						 __u64 *wrote)
{
	int i;

	SLUICE_NOUNROLL
	for (i = 0; i < SLUICE_CAS_TRIES; i++) {
		__u64 old = SLUICE_READ(*tat);
		__u64 base, d;

		if (old >= SLUICE_FRESH) {
			if (old == SLUICE_FROZEN)
				return SLUICE_RETRY;
			base = now; /* a new key's: an empty queue */
		} else {
			base = old > now ? old : now;
		}
		if (base - now > tolerance)
			return SLUICE_DROP;
		d = base - now > delay ? base - delay : now;
		/* A departure the qdisc would refuse (fq's horizon): refused
		 * here instead, with the state untouched, so it costs no turn. */
		if (d - now >= max_wait)
			return SLUICE_HORIZON;
		if (sluice_cas(tat, old, base + cost)) {
			*depart = d;
			*wrote = base + cost;
			return SLUICE_PASS;
		}
	}
	return SLUICE_CONTENDED;
}

static __always_inline int sluice_gcra_shape(__u64 *tat, __u64 now, __u64 cost, __u64 tolerance,
					     __u64 delay, __u64 *depart)
{
	__u64 w;

	return sluice_gcra_shape_max(tat, now, cost, tolerance, delay, ~0ULL, depart, &w);
}

/* The ticks of excess of limit l that go at once, for a shaper's delay
 * (SLUICE_NODELAY: every accepted unit). */
static __always_inline __u64 sluice_shape_delay(const struct sluice_limit *l, __u32 delay)
{
	if (delay == SLUICE_NODELAY)
		return ~0ULL;
	return sluice_limit_cost(l, delay);
}

/*
 * A shaper's verdict for `pkts` packets (a GSO packet's segments, >= 1) of
 * `len` bytes in all on a token or leaky bucket policy: both limits must
 * accept it (one the byte limit refuses gets its packet charge back), and
 * it departs when the later of the two says, *depart ticks (>= now). A
 * departure max_wait or more ticks after now is SLUICE_HORIZON, with
 * nothing charged (~0: no such bound). mult and div are a fleet policy's
 * share as in sluice_bucket_admit_shared() (1, 1: the whole limit; used[]
 * gets the costs of the whole limit, wrote[] the TATs its charges wrote, as
 * sluice_bucket_admit_to()'s).
 */
static __always_inline __u64 sluice_share_delay(__u64 delay, __u32 mult)
{
	return delay == ~0ULL ? delay : sluice_share_cost(delay, mult);
}

static __always_inline int sluice_bucket_shape_to(const struct sluice_policy *p, __u64 *s0,
						  __u64 *s1, __u64 now, __u32 len, __u32 pkts,
						  __u32 mult, __u32 div, __u64 max_wait,
						  __u64 *used, __u64 *depart, __u64 *wrote2)
{
	__u64 pkt_cost = 0, byte_cost = 0, local = 0, d = now, d2, wrote = 0, w2 = 0;
	int v;

	if (p->pkt.interval | p->pkt.interval_frac) {
		pkt_cost = sluice_limit_cost(&p->pkt, pkts);
		local = sluice_share_cost(pkt_cost, mult);
		v = sluice_gcra_shape_max(
			s0, now, local, sluice_share_tolerance(p->pkt.tolerance, local, mult, div),
			sluice_share_delay(sluice_shape_delay(&p->pkt, p->pkt_delay), mult),
			max_wait, &d, &wrote);
		if (v != SLUICE_PASS)
			return v;
	}
	if (p->bytes.interval | p->bytes.interval_frac) {
		__u64 blocal;

		byte_cost = sluice_limit_cost(&p->bytes, len);
		blocal = sluice_share_cost(byte_cost, mult);
		v = sluice_gcra_shape_max(
			s1, now, blocal,
			sluice_share_tolerance(p->bytes.tolerance, blocal, mult, div),
			sluice_share_delay(sluice_shape_delay(&p->bytes, p->byte_delay), mult),
			max_wait, &d2, &w2);
		if (v != SLUICE_PASS) {
			if (local)
				sluice_gcra_refund(s0, wrote, local);
			return v;
		}
		if (d2 > d)
			d = d2;
	}
	used[0] = pkt_cost;
	used[1] = byte_cost;
	wrote2[0] = wrote;
	wrote2[1] = w2;
	*depart = d;
	return SLUICE_PASS;
}

static __always_inline int sluice_bucket_shape_at(const struct sluice_policy *p, __u64 *s0,
						  __u64 *s1, __u64 now, __u32 len, __u32 pkts,
						  __u32 mult, __u32 div, __u64 max_wait,
						  __u64 *used, __u64 *depart)
{
	__u64 wrote[2];

	return sluice_bucket_shape_to(p, s0, s1, now, len, pkts, mult, div, max_wait, used, depart,
				      wrote);
}

static __always_inline int sluice_bucket_shape_shared(const struct sluice_policy *p, __u64 *s,
						      __u64 now, __u32 len, __u32 pkts, __u32 mult,
						      __u32 div, __u64 max_wait, __u64 *used,
						      __u64 *depart)
{
	return sluice_bucket_shape_at(p, &s[0], &s[1], now, len, pkts, mult, div, max_wait, used,
				      depart);
}

/* A shaper's verdict for one packet of `len` bytes, of the whole limit. */
static __always_inline int sluice_bucket_shape(const struct sluice_policy *p, __u64 *s, __u64 now,
					       __u32 len, __u64 *depart)
{
	__u64 used[2];

	return sluice_bucket_shape_shared(p, s, now, len, 1, 1, 1, ~0ULL, used, depart);
}

/* The verdict of policy p for a packet of `len` bytes on a key's state
 * (s0, s1: its two words, which need not be adjacent). */
static __always_inline int sluice_admit_at(const struct sluice_policy *p, __u64 *s0, __u64 *s1,
					   __u64 now, __u32 len)
{
	__u64 used[2];

	switch (p->algo) {
	case SLUICE_ALGO_TOKEN_BUCKET:
	case SLUICE_ALGO_LEAKY_BUCKET:
		return sluice_bucket_admit_shared(p, s0, s1, now, len, 1, 1, used);
	case SLUICE_ALGO_SLIDING_WINDOW:
		return sluice_sliding_window_at(s0, s1, now, p->window, p->window_limit);
	case SLUICE_ALGO_FIXED_WINDOW:
		return sluice_fixed_window(s0, now, p->window, p->window_limit);
	}
	return SLUICE_PASS; /* sliding-log keys live in sluice_logs */
}

static __always_inline int sluice_admit(const struct sluice_policy *p, __u64 *s, __u64 now,
					__u32 len)
{
	return sluice_admit_at(p, &s[0], &s[1], now, len);
}

#ifndef __bpf__
/* sluice_limit_cost() for any number of units (host only: 128-bit). */
static inline __u64 sluice_limit_cost_wide(const struct sluice_limit *l, __u64 units)
{
	unsigned __int128 frac = (unsigned __int128)units * l->interval_frac;

	return units * l->interval + (__u64)(frac >> 32) + ((__u32)frac != 0);
}
#endif

/* ---- Views of a key's state for `sluicectl show`/`top` (no side effects) ---- */

/* Whole units left in a GCRA bucket at `now`. */
static inline __u64 sluice_gcra_left(const struct sluice_limit *l, __u64 tat, __u64 now)
{
	__u64 per = sluice_limit_cost(l, 1);
	__u64 debt = tat > now ? tat - now : 0;

	if (!per || debt >= l->tolerance)
		return 0;
	return (l->tolerance - debt) / per;
}

/* Ticks from `now` until a GCRA bucket admits one more unit. */
static inline __u64 sluice_gcra_wait(const struct sluice_limit *l, __u64 tat, __u64 now)
{
	__u64 next = (tat > now ? tat : now) + sluice_limit_cost(l, 1);

	return next - now > l->tolerance ? next - now - l->tolerance : 0;
}

#endif /* SLUICE_ALGO_H */
