/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A policy's datapath fields from rates and bursts, checked (policy.c), and
 * the shaper's queue as the datapath sees it.
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_POLICY_H
#define SLUICE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

/* sliding-window, fixed-window and sliding-log: a count per window, no burst. */
static inline bool sluice_algo_is_window(unsigned int algo)
{
	return algo == SLUICE_ALGO_SLIDING_WINDOW || algo == SLUICE_ALGO_FIXED_WINDOW ||
	       algo == SLUICE_ALGO_SLIDING_LOG;
}

/* Set l from a rate and a burst; refuses rates or bursts whose arithmetic
 * would overflow the datapath's u64s, with a message saying which. */
int sluice_limit_set(struct sluice_limit *l, __u64 count, __u64 period_ns, __u64 burst, char *err,
		     size_t errlen);
/* The same for a byte rate (burst in bytes): the tolerance is exactly what
 * `burst` bytes cost, since bytes are charged a whole packet at a time. */
int sluice_limit_set_bytes(struct sluice_limit *l, __u64 count, __u64 period_ns, __u64 burst,
			   char *err, size_t errlen);
/* Fill the window fields of p from a rate (count per period = per window). */
int sluice_window_set(struct sluice_policy *p, __u64 count, __u64 period_ns, char *err,
		      size_t errlen);
/* Check p is self-consistent for its algorithm (e.g. sliding-log limit <= 64,
 * byte limits only with the bucket algorithms). */
int sluice_policy_check(const struct sluice_policy *p, char *err, size_t errlen);
/* Do a and b read their sources' state the same way (algorithm, window,
 * key prefixes, key mode)? Then a change from one to the other keeps the
 * buckets. */
bool sluice_same_state_format(const struct sluice_policy *a, const struct sluice_policy *b);
/*
 * A shaper's token/leaky bucket limit l with `delay` excess units going at
 * once (SLUICE_NODELAY: all): the longest a packet it accepts waits, in ns,
 * tolerance - delay x interval (0 with --nodelay).
 */
__u64 sluice_shape_longest_ns(const struct sluice_limit *l, __u32 delay);
/* The queue of a shaper's key on limit l, from its TAT (ticks) at `now`,
 * as the datapath would treat the next packet (algo.h, sluice_gcra_shape()):
 * base = max(TAT, now); ahead = base - now; the next packet is accepted
 * while ahead <= tolerance and waits max(0, ahead - delay x interval). */
struct sluice_shape_queue {
	__u64 ahead_units; /* packets (bytes) queued ahead, rounded up */
	__u64 ahead_ns; /* base - now */
	__u64 delay_ns; /* the delay the next packet would get */
	bool accepts; /* whether the next packet would be accepted (else dropped) */
};
void sluice_shape_queue(const struct sluice_limit *l, __u32 delay, __u64 tat, __u64 now,
			struct sluice_shape_queue *q);
/* The default policy's rate: --rate 100/s, packets per second. */
#define SLUICE_DEFAULT_RATE 100
/* Fresh default settings: token bucket 100/s burst 100 (its burst by
 * sluice_default_burst(), as any --rate without --burst), /32 and /64 keys. */
void sluice_settings_init(struct sluice_settings *s);
/* A policy's default burst for a rate when --burst is not given: one
 * second's worth of the rate, at least 1. */
__u64 sluice_default_burst(__u64 count, __u64 period_ns);

#endif /* SLUICE_POLICY_H */
