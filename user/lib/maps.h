/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Walking, counting and sizing a map; a shaper's counters (maps.c). Not the
 * list of pinned maps: that is <sluice/maps.h>.
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_LIB_MAPS_H
#define SLUICE_LIB_MAPS_H

#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

struct sluice_handle;

/* Called for each entry: 0 to go on, or -errno to stop the walk, which returns it. */
typedef int (*sluice_walk_fn)(const void *key, const void *val, void *ctx);
/*
 * Call fn for every entry of a hash, LRU hash or LPM trie map (not per-CPU):
 * with batched lookups where the kernel has them for the map, else one key
 * at a time. An entry added or removed during the walk may be seen or not.
 * With fn NULL it only counts. Returns how many entries it saw, or -errno.
 */
long sluice_map_walk(int fd, sluice_walk_fn fn, void *ctx);

/* Entries in a map; -errno on failure. */
long sluice_count_keys(int fd);
/* max_entries of a map, 0 on failure. */
__u32 sluice_map_max_entries(int fd);
/*
 * The memory a map holds. For a preallocated hash or array, from its own
 * geometry, as the kernel lays it out (a hash entry is a 48-byte header with
 * the key and the value, each rounded to 8 bytes, plus a 16-byte bucket per
 * entry rounded up to a power of two: 112 bytes a key in sluice_buckets),
 * the same figure on every kernel: /proc's memlock counts this way on 6.18
 * and counts less on 6.1. Otherwise (maps that allocate as they fill, the
 * ring buffer) the kernel's memlock. 0 when unknown.
 */
__u64 sluice_map_bytes(int fd);

/* Read sluice_shape_stats: summed over the CPUs, max_delay_ns the largest.
 * -ENOENT when the state has none (a limiter's, or pinned without it). */
int sluice_read_shape_stats(const struct sluice_handle *h, struct sluice_shape_stats *out);
/* Add one CPU's counters to sum, as sluice_read_shape_stats() does. */
void sluice_shape_stats_add(struct sluice_shape_stats *sum, const struct sluice_shape_stats *cpu);
/* The upper bound of delay histogram bucket i, in ns: 1000 << i ([0] < 1 us,
 * [i] < 2^i us), ~0 for the last (every longer delay). */
__u64 sluice_delay_bucket_le_ns(unsigned int i);

#endif /* SLUICE_LIB_MAPS_H */
