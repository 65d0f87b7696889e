// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * From what an operator writes (rate, burst, window) to what the datapath
 * reads (intervals and tolerances in ticks). Every product the datapath will
 * form is checked here, so the program itself never overflows.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sluice/algo.h>

#include "libsluice.h"

/* Largest packet the datapath charges for; byte costs are computed for it. */
#define MAX_PKT_LEN 65535ULL

__u64 sluice_default_burst(__u64 count, __u64 period_ns)
{
	unsigned __int128 per_sec = (unsigned __int128)count * SLUICE_NS_PER_SEC / period_ns;

	if (per_sec < 1)
		return 1;
	return per_sec > 0xffffffffULL ? 0xffffffffULL : (__u64)per_sec;
}

int sluice_limit_set(struct sluice_limit *l, __u64 count, __u64 period_ns, __u64 burst, char *err,
		     size_t errlen)
{
	unsigned __int128 ticks = (unsigned __int128)period_ns << SLUICE_TICK_SHIFT;
	unsigned __int128 interval, rem, frac, tol, unit;

	if (!count || !period_ns)
		return sluice_err(err, errlen, -ERANGE, "a rate must be positive");
	if (!burst)
		return sluice_err(err, errlen, -ERANGE, "burst is 0: it must be at least 1");
	if (burst > 0xffffffffULL)
		return sluice_err(err, errlen, -ERANGE, "burst %llu is too large: at most %u",
				  (unsigned long long)burst, 0xffffffffU);
	interval = ticks / count;
	rem = ticks % count;
	/* The fraction of a tick, rounded up: rounding may only admit less. */
	frac = ((rem << 32) + count - 1) / count;
	if (frac >> 32) {
		interval++;
		frac = 0;
	}
	if (interval == 0 && frac < (1ULL << 28))
		return sluice_err(
			err, errlen, -ERANGE,
			"rate is too high: at most %llu units per second per key can be told apart",
			(unsigned long long)(SLUICE_TICKS_PER_SEC << 4));
	if (interval * MAX_PKT_LEN > SLUICE_MAX_TOLERANCE)
		return sluice_err(err, errlen, -ERANGE,
				  "rate is too slow: one unit per more than %llu hours",
				  (unsigned long long)(SLUICE_MAX_TOLERANCE / MAX_PKT_LEN /
						       SLUICE_TICKS_PER_SEC / 3600));
	/* Whole units: burst x the per-unit cost, which is what burst back-to-back
	 * units cost (sluice_limit_cost rounds each one up). */
	unit = interval + (frac != 0);
	tol = unit * burst;
	if (tol > SLUICE_MAX_TOLERANCE)
		return sluice_err(
			err, errlen, -ERANGE,
			"burst %llu at this rate takes too long to refill (over %llu years): "
			"lower --burst or raise --rate",
			(unsigned long long)burst,
			(unsigned long long)(SLUICE_MAX_TOLERANCE / SLUICE_TICKS_PER_SEC /
					     (365ULL * 86400)));
	l->interval = (__u64)interval;
	l->interval_frac = (__u32)frac;
	l->burst = (__u32)burst;
	l->tolerance = (__u64)tol;
	l->rate = count;
	l->period_ns = period_ns;
	return 0;
}

/*
 * A byte limit's tolerance must be what `burst` bytes cost, ceil(burst x
 * interval), not burst x the rounded-up cost of one byte: at 100 Gbit/s a
 * byte costs 1.28 ticks and rounding each byte up would let 56% more through
 * at once. Packets are always charged one at a time, so for them burst x the
 * per-packet cost is exact.
 */
int sluice_limit_set_bytes(struct sluice_limit *l, __u64 count, __u64 period_ns, __u64 burst,
			   char *err, size_t errlen)
{
	int ret = sluice_limit_set(l, count, period_ns, burst, err, errlen);

	if (!ret)
		l->tolerance = sluice_limit_cost_wide(l, burst);
	return ret;
}

/* "100/s" for count per period_ns, as the operator would write it. */
static void rate_text(__u64 count, __u64 period_ns, char *buf, size_t len)
{
	struct sluice_limit l = { .rate = count, .period_ns = period_ns };

	sluice_format_rate(&l, false, buf, len);
}

int sluice_window_set(struct sluice_policy *p, __u64 count, __u64 period_ns, char *err,
		      size_t errlen)
{
	__u64 window_ns = p->window ? p->window >> SLUICE_TICK_SHIFT : 0;
	char rate[48], win[32], fit[64], per[32];
	unsigned __int128 limit;
	__u64 max;

	if (!window_ns)
		window_ns = period_ns < SLUICE_MIN_WINDOW_NS ? SLUICE_NS_PER_SEC : period_ns;
	sluice_format_duration(window_ns, win, sizeof(win));
	if (window_ns < SLUICE_MIN_WINDOW_NS || window_ns > SLUICE_MAX_WINDOW_NS)
		return sluice_err(err, errlen, -ERANGE,
				  "window %s is out of range: give a --window from 100ms "
				  "to 1h",
				  win);
	rate_text(count, period_ns, rate, sizeof(rate));
	limit = (unsigned __int128)count * window_ns;
	if (limit % period_ns) {
		sluice_format_duration(period_ns, per, sizeof(per));
		return sluice_err(
			err, errlen, -ERANGE,
			"%s is not a whole number of packets per %s window: give a --window "
			"that holds whole packets (--window %s does) or a rate that divides it",
			rate, win, per);
	}
	limit /= period_ns;
	max = p->algo == SLUICE_ALGO_SLIDING_LOG ? SLUICE_LOG_MAX : SLUICE_MAX_WINDOW_LIMIT;
	if (limit <= max) {
		p->window = window_ns << SLUICE_TICK_SHIFT;
		p->window_limit = (__u32)limit;
		return 0;
	}
	/* The longest whole-millisecond window that holds at most max. */
	{
		unsigned __int128 fit_ns = (unsigned __int128)max * period_ns / count;

		fit_ns -= fit_ns % 1000000ULL;
		if (fit_ns >= SLUICE_MIN_WINDOW_NS) {
			char w[32];

			sluice_format_duration((__u64)fit_ns, w, sizeof(w));
			snprintf(fit, sizeof(fit), "a --window of at most %s", w);
		} else {
			/* No window fits: the fastest rate the window in force
			 * holds in whole packets per window, in the unit that
			 * comes closest to max (9/s for a 7s window: 63). */
			static const struct {
				const char *unit;
				__u64 ns;
			} units[] = { { "s", SLUICE_NS_PER_SEC },
				      { "m", 60 * SLUICE_NS_PER_SEC },
				      { "h", 3600 * SLUICE_NS_PER_SEC } };
			unsigned __int128 best = 0, best_n = 0;
			size_t i, best_i = 0;

			for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
				unsigned __int128 n;
				unsigned int steps = 0;

				n = (unsigned __int128)max * units[i].ns / window_ns;

				while (n && (n * window_ns) % units[i].ns && ++steps < 100000)
					n--;
				if (!n || (n * window_ns) % units[i].ns)
					continue;
				if (n * window_ns / units[i].ns > best) {
					best = n * window_ns / units[i].ns;
					best_n = n;
					best_i = i;
				}
			}
			if (best_n)
				snprintf(fit, sizeof(fit), "a --rate of at most %llu/%s",
					 (unsigned long long)best_n, units[best_i].unit);
			else
				snprintf(fit, sizeof(fit), "a lower --rate and a --window of 1s");
		}
	}
	if (p->algo == SLUICE_ALGO_SLIDING_LOG)
		return sluice_err(
			err, errlen, -ERANGE,
			"sliding-log keeps at most %d timestamps per key, and %s over its %s "
			"window needs %llu: use %s, or another --algo (sliding-window keeps "
			"a count, not timestamps)",
			SLUICE_LOG_MAX, rate, win, (unsigned long long)limit, fit);
	return sluice_err(err, errlen, -ERANGE,
			  "%s over a %s window is %llu packets per window, more than the %llu one "
			  "window counts: use %s",
			  rate, win, (unsigned long long)limit,
			  (unsigned long long)SLUICE_MAX_WINDOW_LIMIT, fit);
}

int sluice_policy_check(const struct sluice_policy *p, char *err, size_t errlen)
{
	if (p->algo >= SLUICE_ALGO_MAX)
		return sluice_err(err, errlen, -ERANGE, "unknown algorithm %u", p->algo);
	if (p->prefix4 < 1 || p->prefix4 > 32)
		return sluice_err(err, errlen, -ERANGE,
				  "IPv4 key prefix /%u is out of range: 1 to 32", p->prefix4);
	if (p->prefix6 < 1 || p->prefix6 > 128)
		return sluice_err(err, errlen, -ERANGE,
				  "IPv6 key prefix /%u is out of range: 1 to 128", p->prefix6);
	if (SLUICE_POLICY_KEY(p) >= SLUICE_KEY_MODES)
		return sluice_err(err, errlen, -ERANGE, "unknown key mode %u",
				  SLUICE_POLICY_KEY(p));
	if (SLUICE_POLICY_ALSO(p) &&
	    (p->action != SLUICE_ACT_LIMIT || p->algo > SLUICE_ALGO_LEAKY_BUCKET))
		return sluice_err(err, errlen, -ERANGE,
				  "a second key (--also-rate) is for a token-bucket or "
				  "leaky-bucket limit: not %s",
				  p->action != SLUICE_ACT_LIMIT ? sluice_action_name(p->action) :
								  sluice_algo_name(p->algo));
	if (p->action != SLUICE_ACT_LIMIT)
		return 0;
	if (SLUICE_POLICY_KEY(p) != SLUICE_KEY_SRC && p->algo == SLUICE_ALGO_SLIDING_LOG)
		return sluice_err(err, errlen, -ERANGE,
				  "sliding-log keeps its timestamps per source only, and this "
				  "policy is keyed by %s (--key %s): give --key src with it, or "
				  "another --algo (sliding-window keeps a count per key)",
				  sluice_key_mode_words(SLUICE_POLICY_KEY(p)),
				  sluice_key_mode_name(SLUICE_POLICY_KEY(p)));
	if (SLUICE_POLICY_KEY(p) != SLUICE_KEY_SRC && (p->flags & SLUICE_POLICY_FLEET))
		return sluice_err(err, errlen, -ERANGE,
				  "a fleet-wide limit is shared per source only (not yet per "
				  "--key %s): give --key src with --fleet, or --fleet off",
				  sluice_key_mode_name(SLUICE_POLICY_KEY(p)));
	if ((p->flags & SLUICE_POLICY_FLEET) && sluice_algo_is_window(p->algo))
		return sluice_err(err, errlen, -ERANGE,
				  "%s counts within one box and cannot be shared by a fleet: "
				  "--fleet needs token-bucket or leaky-bucket",
				  sluice_algo_name(p->algo));
	if (sluice_algo_is_window(p->algo)) {
		if (p->bytes.period_ns)
			return sluice_err(err, errlen, -ERANGE,
					  "%s counts packets: byte limits need token-bucket "
					  "or leaky-bucket",
					  sluice_algo_name(p->algo));
		if (!p->window || !p->window_limit)
			return sluice_err(err, errlen, -ERANGE, "%s needs a packet rate",
					  sluice_algo_name(p->algo));
		if (p->algo == SLUICE_ALGO_SLIDING_LOG && p->window_limit > SLUICE_LOG_MAX)
			return sluice_err(err, errlen, -ERANGE,
					  "sliding-log allows at most %d packets per window",
					  SLUICE_LOG_MAX);
		return 0;
	}
	if (!p->pkt.period_ns && !p->bytes.period_ns)
		return sluice_err(err, errlen, -ERANGE,
				  "the policy has neither a packet nor a byte rate");
	return 0;
}

void sluice_settings_init(struct sluice_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->def.algo = SLUICE_ALGO_TOKEN_BUCKET;
	s->def.action = SLUICE_ACT_LIMIT;
	s->def.prefix4 = 32;
	s->def.prefix6 = 64;
	s->def.tag = 1; /* slot 0, generation 1 */
	/* --rate 100/s, and its burst by the one rule every --rate without
	 * --burst follows: one second's worth (100) */
	sluice_limit_set(&s->def.pkt, SLUICE_DEFAULT_RATE, SLUICE_NS_PER_SEC,
			 sluice_default_burst(SLUICE_DEFAULT_RATE, SLUICE_NS_PER_SEC), NULL, 0);
	s->agg4 = 24;
	s->agg6 = 48;
	s->event_mask = 63; /* one event per 64 drops per CPU */
}

/*
 * `window` is read only by the window algorithms: for the token and leaky
 * bucket the same bytes hold a shaper's delays (a union), and a change of
 * --delay keeps every bucket, as a change of rate or burst does.
 */
bool sluice_same_state_format(const struct sluice_policy *a, const struct sluice_policy *b)
{
	return a->algo == b->algo && (!sluice_algo_is_window(a->algo) || a->window == b->window) &&
	       a->prefix4 == b->prefix4 && a->prefix6 == b->prefix6 &&
	       /* the key mode: another table, and keys of another shape */
	       SLUICE_POLICY_KEY(a) == SLUICE_POLICY_KEY(b);
}

static __u64 ticks_to_ns_up(__u64 t)
{
	return (t >> SLUICE_TICK_SHIFT) + ((t & (SLUICE_TICKS_PER_NS - 1)) != 0);
}

/* The ticks of excess of l that go at once (algo.h, sluice_shape_delay()). */
static __u64 delay_ticks(const struct sluice_limit *l, __u32 delay)
{
	return delay == SLUICE_NODELAY ? ~0ULL : sluice_limit_cost_wide(l, delay);
}

__u64 sluice_shape_longest_ns(const struct sluice_limit *l, __u32 delay)
{
	__u64 d = delay_ticks(l, delay);

	return d >= l->tolerance ? 0 : ticks_to_ns_up(l->tolerance - d);
}

void sluice_shape_queue(const struct sluice_limit *l, __u32 delay, __u64 tat, __u64 now,
			struct sluice_shape_queue *q)
{
	__u64 base = tat > now ? tat : now, ahead = base - now, per = sluice_limit_cost(l, 1);
	__u64 d = delay_ticks(l, delay);

	memset(q, 0, sizeof(*q));
	q->ahead_ns = ticks_to_ns_up(ahead);
	q->ahead_units = per ? ahead / per + (ahead % per != 0) : 0;
	q->accepts = ahead <= l->tolerance;
	q->delay_ns = ahead > d ? ticks_to_ns_up(ahead - d) : 0;
}
