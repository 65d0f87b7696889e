/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The counters of a state (counters.c): the datapath's, each policy's,
 * the keys its tables hold; and the clocks they are read by.
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_COUNTERS_H
#define SLUICE_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

struct sluice_handle;

/* The sum over every CPU of the `nr` u64s of a per-CPU map's value at key. */
int sluice_percpu_sum(int fd, __u32 key, __u64 *out, size_t nr);
/* A key's dropped counter is exact below one sample of drops; from there
 * each drop adds a sample with chance 1/sample (the datapath spares the hot
 * bucket's cache line): an unbiased estimate, standard deviation about
 * sqrt(sample x (N - sample)). The sample size, and whether a count is still
 * exact (a count of one sample may already stand for more drops). */
static inline __u64 sluice_drop_sample(const struct sluice_settings *s)
{
	return (__u64)s->event_mask + 1;
}

static inline bool sluice_drops_exact(const struct sluice_settings *s, __u64 dropped)
{
	return dropped < sluice_drop_sample(s);
}

/* Sum of the per-CPU counters. */
int sluice_read_stats(const struct sluice_handle *h, struct sluice_stats *out);
int sluice_read_rstats(const struct sluice_handle *h, __u32 slot, struct sluice_rstats *out);
/* Zero the counters of one policy slot (a new rule must start from 0). */
int sluice_clear_rstats(const struct sluice_handle *h, __u32 slot);
/* A named u64 of a struct, for printing, JSON and Prometheus' HELP lines. */
struct sluice_field {
	const char *name;
	size_t offset;
	const char *help; /* what it counts, one sentence */
};

/*
 * What `sluice status`, `sluicectl stats` and the Prometheus output show: the
 * counters of the datapath and what the key tables hold now.
 */
struct sluice_counters {
	struct sluice_stats stats; /* first: its field offsets hold here too */
	struct sluice_xstats xstats; /* zero in a state pinned without sluice_xstats */
	__u64 keys; /* entries now in sluice_buckets + sluice_logs */
	__u64 evicted_estimate; /* stats.new_keys - keys, 0 when negative */
	__u64 log_keys; /* of keys, those in sluice_logs */
	__u64 table_keys[2]; /* of keys, the key table's: IPv4, IPv6 */
	__u64 wide_keys; /* of keys, the wide keys' table's (0 while they are off) */
};
/*
 * Read the counters, then count the keys (in that order: a key created
 * during the count is then not taken for an eviction). keys walks both
 * tables, about 0.3 s per million keys. Keys leave the tables by LRU
 * eviction and by `sluicectl flush`, so evicted_estimate counts flushed keys
 * too; it is an estimate since the walk is not atomic.
 */
int sluice_read_counters(const struct sluice_handle *h, struct sluice_counters *c);
/* The fields of struct sluice_counters: the first sluice_stats_nfields are
 * the counters, those of struct sluice_stats and then of struct
 * sluice_xstats (by the names bpftool shows; not the spare words), then
 * keys and evicted_estimate; sluice_counters_nfields in all. */
extern const struct sluice_field sluice_stats_fields[];
extern const size_t sluice_stats_nfields;
extern const size_t sluice_counters_nfields;
/* The value of field f of the struct at base. */
__u64 sluice_field_get(const void *base, const struct sluice_field *f);

/* The would-drop counters of one policy slot (sluice_clear_rstats() zeroes
 * them with the others); -ENOENT when the state has no sluice_rwould (pinned
 * by an older sluice: unknown until the next attach adds it). */
int sluice_read_rwould(const struct sluice_handle *h, __u32 slot, struct sluice_rwould *out);

/* Now, in ns of CLOCK_MONOTONIC (bpf_ktime_get_ns()'s clock), and in the
 * datapath's ticks. */
__u64 sluice_now_ns(void);
/* CLOCK_REALTIME in ns: for times shown to people (a last sync's age). */
__u64 sluice_realtime_ns(void);
__u64 sluice_now_ticks(void);

#endif /* SLUICE_COUNTERS_H */
