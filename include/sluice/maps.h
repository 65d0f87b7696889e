/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The pinned maps of a state, in one list: the loader's table (user/sluice,
 * sluice_maps[]: what attach creates, reuses and removes), the table
 * sluice_open() reads them by (user/lib/state.c) and the fds of struct
 * sluice_handle (user/lib/state.h) are all expanded from it. A new map is
 * one line here.
 *
 * SLUICE_MAP(X) calls X(name, layout, fd) for each map, in the order attach
 * pins them:
 *   name    its pin's name and the map's name in the object (sluice.h)
 *   layout  the layout it was added in: SLUICE_MAPS_BASE for the maps that
 *           every state attach upgrades has; a map added in a later one may
 *           be missing from a state pinned before it (attach creates it,
 *           keeping the others; a reader does without it, its fd -1)
 *   fd      the field of struct sluice_handle that holds its fd
 */
#ifndef SLUICE_MAPS_H
#define SLUICE_MAPS_H

#include <sluice/sluice.h>

/* The oldest layout attach upgrades in place (sluice.h, SLUICE_LAYOUT_OWNER). */
#define SLUICE_MAPS_BASE 3

#define SLUICE_MAPS(X)                                                                  \
	X(SLUICE_MAP_BUCKETS, 3, buckets_fd)                                            \
	X(SLUICE_MAP_LOGS, 3, logs_fd)                                                  \
	X(SLUICE_MAP_CONFIG, 3, config_fd)                                              \
	X(SLUICE_MAP_RULES, 3, rules_fd)                                                \
	X(SLUICE_MAP_STATS, 3, stats_fd)                                                \
	X(SLUICE_MAP_RSTATS, 3, rstats_fd)                                              \
	X(SLUICE_MAP_EVENTS, 3, events_fd)                                              \
	X(SLUICE_MAP_RWOULD, 4, rwould_fd) /* per-rule would-drop counters */           \
	X(SLUICE_MAP_RULETAB, 5, ruletab_fd) /* the rules, read in one copy */          \
	X(SLUICE_MAP_RULEHASH, 5, hash_fd) /* the /32 and /128 rules */                 \
	X(SLUICE_MAP_FLEET, 5, fleet_fd) /* the fleet agent's state */                  \
	X(SLUICE_MAP_FLEET_USE, 5, fleet_use_fd) /* usage of fleet policies, per key */ \
	X(SLUICE_MAP_SHAPE_STATS, 5, shape_stats_fd) /* a shaper's delay counters */    \
	/* the set-associative key table (--table sets); 1 entry each in a state   \
	 * of the LRU table, which is what an older state gets */    \
	X(SLUICE_MAP_SETS4, 5, sets4_fd)                                                \
	X(SLUICE_MAP_SETS6, 5, sets6_fd)                                                \
	/* rules that match on the transport header: tables, rules, policies */         \
	X(SLUICE_MAP_L4BM, 5, l4bm_fd)                                                  \
	X(SLUICE_MAP_L4RULES, 5, l4rules_fd)                                            \
	X(SLUICE_MAP_L4POL, 5, l4pol_fd)                                                \
	/* the policy of each slot under each settings half: the datapath's */          \
	X(SLUICE_MAP_POLICIES, 5, policies_fd)                                          \
	X(SLUICE_MAP_PENALTY, 5, penalty_fd) /* the penalty box (--penalty) */          \
	X(SLUICE_MAP_XSTATS, 5, xstats_fd) /* counters sluice_stats has no room for */  \
	/* wide keys (--key src,dport|flow): SLUICE_FLOWS_OFF entries while     \
	 * off, and in the table a state's key table does not use */       \
	X(SLUICE_MAP_FLOWS, 5, flows_fd)                                                \
	X(SLUICE_MAP_SETSF, 5, setsf_fd)                                                \
	X(SLUICE_MAP_ALSO, 5, also_fd) /* policies' second keys (--also-rate) */

/* Is a map of `layout` one that a state pinned by an older sluice may lack? */
#define SLUICE_MAP_ADDED_LATER(layout) ((layout) > SLUICE_MAPS_BASE)

#endif /* SLUICE_MAPS_H */
