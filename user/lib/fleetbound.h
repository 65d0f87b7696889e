/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The most debt Redis can rightly answer for a fleet key (fleetbound.c):
 * the fleet agent folds no more than this into a bucket, whatever Redis
 * says, so a bad answer (a debt of a year: Redis's clock stepped back,
 * another program writing the fleet's keys) holds a source no longer than
 * the fleet could have made it wait.
 */
#ifndef SLUICE_FLEETBOUND_H
#define SLUICE_FLEETBOUND_H

#include <stdbool.h>
#include <linux/types.h>
#include <sluice/sluice.h>

struct sluice_handle;
struct sluice_policies;
struct sluice_fleet_bound; /* opaque: what each slot's fleet policy allows */

/*
 * The bound, in microseconds, for one limit of a key: every box admits at
 * most its share's tolerance ahead of now (at most w = max(tolerance, one
 * unit's cost) ticks, whatever its view of N: sluice_share_tolerance()),
 * and between the collect that pushes a usage and the apply that folds the
 * debt it comes back with at most one interval and a sync pass, so
 *
 *   debt <= n x (w + S + 2 T)
 *
 * n the boxes that push, S the sync interval, T the Redis timeout (docs/fleet.md,
 * "Fleet-wide limits"). At least 1 us; at most SLUICE_MAX_TOLERANCE.
 */
__u64 sluice_fleet_debt_bound_us(__u64 w_ticks, __u32 n, __u64 sync_ns, __u64 timeout_ns);

int sluice_fleet_bound_new(struct sluice_fleet_bound **out);
void sluice_fleet_bound_free(struct sluice_fleet_bound *b);
/* Take p (a rule's or the default) as the policy of its tag's slot, al its
 * second key (--also-rate; NULL: none). */
void sluice_fleet_bound_set(struct sluice_fleet_bound *b, const struct sluice_policy *p,
			    const struct sluice_also *al);
/* The bounds of the policies pol alone (every kind of rule, the default,
 * their second keys), of a shaper's state when shape. */
void sluice_fleet_bound_set_all(struct sluice_fleet_bound *b, const struct sluice_policies *pol,
				bool shape);
/* Read h's policies again when its settings changed since the last read:
 * 0, or -errno (the bounds of the last read stay). */
int sluice_fleet_bound_refresh(struct sluice_fleet_bound *b, struct sluice_handle *h);
/* w of key k's limit (lane 0 packets, 1 bytes): its policy's, found by the
 * tag, or for a key of a second key (SLUICE_TAG_IS_ALSO()) the second
 * key's; a key of a tag no current policy has, the widest of them all,
 * second keys included. */
__u64 sluice_fleet_bound_w(const struct sluice_fleet_bound *b, const struct sluice_key *k,
			   int lane);

#endif /* SLUICE_FLEETBOUND_H */
