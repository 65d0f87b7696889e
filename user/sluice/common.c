// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The table of pinned maps (loader.h): which maps a state has, and which a
 * newer sluice added to an older layout. */
#include "loader.h"

/*
 * Every pinned map. One that a newer sluice added to a layout already pinned
 * is `added_later`: attach creates and pins it in an existing state that
 * lacks it (keeping every other map) instead of calling the state
 * incomplete, and readers (sluice_open()) do without it. A new map goes at
 * the end, added_later, and into sluice_open()'s table.
 */
const struct sluice_map_spec sluice_maps[] = {
	{ SLUICE_MAP_BUCKETS, false }, { SLUICE_MAP_LOGS, false },
	{ SLUICE_MAP_CONFIG, false },  { SLUICE_MAP_RULES, false },
	{ SLUICE_MAP_STATS, false },   { SLUICE_MAP_RSTATS, false },
	{ SLUICE_MAP_EVENTS, false },
	{ SLUICE_MAP_RWOULD, true }, /* per-rule would-drop counters */
	{ SLUICE_MAP_RULETAB, true }, /* the rules, read in one copy (layout 5) */
	{ SLUICE_MAP_RULEHASH, true }, /* the /32 and /128 rules (layout 5) */
	{ SLUICE_MAP_FLEET, true }, /* the fleet agent's state */
	{ SLUICE_MAP_FLEET_USE, true }, /* usage of fleet policies, per key */
	{ SLUICE_MAP_SHAPE_STATS, true }, /* a shaper's delay counters */
	/* the set-associative key table (--table sets); 1 entry each in a state
	 * of the LRU table, which is what an older state gets */
	{ SLUICE_MAP_SETS4, true },
	{ SLUICE_MAP_SETS6, true },
};
const size_t sluice_nr_maps = sizeof(sluice_maps) / sizeof(sluice_maps[0]);
_Static_assert(sizeof(sluice_maps) / sizeof(sluice_maps[0]) <= SLUICE_MAX_MAPS,
	       "SLUICE_MAX_MAPS holds every map");
