/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Which keys a sync pushes (fleetpush.c): a key's usage stays on the box
 * until it could move the fleet's bound (docs/fleet.md, "Pushing only what
 * matters").
 */
#ifndef SLUICE_FLEETPUSH_H
#define SLUICE_FLEETPUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

struct sluice_fleet_push; /* opaque */

/* A key's hash, for the agent's tables of keys (this one, fleetalone.c). */
__u64 sluice_key_hash(const struct sluice_key *k);

/* Room for cap keys held back or in debt (sluice_fleet_use's size): a key
 * beyond it is pushed, as if there were no threshold. */
int sluice_fleet_push_new(size_t cap, struct sluice_fleet_push **out);
void sluice_fleet_push_free(struct sluice_fleet_push *p);
/* A sync begins at now (monotonic ns): what the last one kept is read,
 * what this one keeps is written from here on. */
void sluice_fleet_push_begin(struct sluice_fleet_push *p, __u64 now);
/*
 * Does key k, with used[lane] ticks not pushed yet, go in this sync? Yes
 * when a lane's usage has reached theta[lane] (0: that lane has no
 * threshold, any usage goes), when the fleet answered the key a debt that
 * has not run out yet (sluice_fleet_push_debt()), or when its oldest usage
 * not pushed is max_age_ns old or more (0: no age). Else it stays, and its
 * usage waits on the box. Call once per key and sync.
 */
bool sluice_fleet_push_want(struct sluice_fleet_push *p, const struct sluice_key *k,
			    const __u64 used[2], const __u64 theta[2], __u64 max_age_ns);
/* The fleet answered key k (pushed in this sync) a debt of debt_ns: pushed
 * at every sync until it has run out. */
void sluice_fleet_push_debt(struct sluice_fleet_push *p, const struct sluice_key *k, __u64 debt_ns);
/* The sync is over (or failed: then without sluice_fleet_push_debt()):
 * keys in debt that used nothing this time are carried to the next.
 * Returns the keys held back (not pushed) in this sync. */
size_t sluice_fleet_push_end(struct sluice_fleet_push *p);

#endif /* SLUICE_FLEETPUSH_H */
