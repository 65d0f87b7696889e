/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Keys whose Redis is down while the fleet agent still syncs (a shard of a
 * Redis Cluster, user/lib/redis_cluster.c): each is held to its outage
 * share, rate/N and burst/N, on this box alone (user/lib/fleetalone.c).
 */
#ifndef SLUICE_FLEETALONE_H
#define SLUICE_FLEETALONE_H

#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

struct sluice_fleet_alone; /* opaque */

/* A table for at most max lanes at once (it grows to that from a little). */
int sluice_fleet_alone_new(size_t max, struct sluice_fleet_alone **out);
void sluice_fleet_alone_free(struct sluice_fleet_alone *a);
/*
 * Lane (k, lane) used used_us (microseconds of the whole rate) since the
 * last sync, which its shard did not answer: charged n-fold to the key's
 * bucket of its own, tat = max(tat, now) + n x used (GCRA at rate/N). The
 * debt (us after now_us) the box's bucket of the key is to be raised to: the
 * box admits it again once that bucket is within its burst/N.
 */
__u64 sluice_fleet_alone_charge(struct sluice_fleet_alone *a, const struct sluice_key *k,
				unsigned int lane, double used_us, __u32 n, __u64 now_us);
/* Lanes whose own bucket is not full yet. */
size_t sluice_fleet_alone_count(const struct sluice_fleet_alone *a, __u64 now_us);

#endif /* SLUICE_FLEETALONE_H */
