/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Folding the fleet's debt into a box's bucket (fleetfold.c).
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_FLEETFOLD_H
#define SLUICE_FLEETFOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

#include "state.h"

/* The fleet policies' tolerances by tag, as of the settings of version seq:
 * each policy's own keys' by its tag, its second key's (--also-rate) by
 * SLUICE_ALSO_TAG() of it. */
struct sluice_fleet_tol;
struct sluice_fleet_tols {
	struct sluice_fleet_tol *v;
	size_t n;
	__u64 seq;
	bool read;
};

struct sluice_policies;
/* The table of the policies pol: 0, or -ENOMEM (t is as it was). */
int sluice_fleet_tols_set(struct sluice_fleet_tols *t, const struct sluice_policies *pol);
/* Read the tolerances again when the settings changed since (a failed read
 * keeps the old table: a tag it lacks folds the whole debt). */
void sluice_fleet_tols_refresh(struct sluice_fleet_tols *t, struct sluice_handle *h);
void sluice_fleet_tols_free(struct sluice_fleet_tols *t);
/*
 * How far above now the fleet's debt d (ticks) raises a box's bucket, for a
 * limit of tolerance tol (the whole burst) of which the box's share holds
 * lt: within the burst (d <= tol) d x lt / tol, its share of the room the
 * fleet has left, rounded up; past it, lt plus all the debt beyond tol.
 * tol 0 or lt >= tol: d.
 */
__u64 sluice_fold_debt(__u64 d, __u64 tol, __u64 lt);
/* The fold of key k's lane (0 packets, 1 bytes) for a box holding 1/n of
 * the burst; the debt itself for a tag of no fleet policy (changed since). */
__u64 sluice_fleet_fold(const struct sluice_fleet_tols *t, const struct sluice_key *k, int lane,
			__u32 n, __u64 debt);

/* The share of key k's lane's burst a box holding 1/n of it has (ticks, as
 * the datapath's: at least one packet); 0 for a tag of no fleet policy or a
 * lane without a limit. The fleet agent's threshold is a fraction of it. */
__u64 sluice_fleet_share_tol(const struct sluice_fleet_tols *t, const struct sluice_key *k,
			     int lane, __u32 n);

#endif /* SLUICE_FLEETFOLD_H */
