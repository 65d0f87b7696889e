// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The table of pinned maps (loader.h): which maps a state has, and which a
 * newer sluice added to an older layout. */
#include "loader.h"

/*
 * Every pinned map, from the registry (<sluice/maps.h>). One added in a
 * later layout than the oldest is `added_later`: attach creates and pins it
 * in an existing state that lacks it (keeping every other map) instead of
 * calling the state incomplete, and readers (sluice_open()) do without it.
 */
const struct sluice_map_spec sluice_maps[] = {
#define MAP_SPEC(name, layout, fd) { name, SLUICE_MAP_ADDED_LATER(layout) },
	SLUICE_MAPS(MAP_SPEC)
#undef MAP_SPEC
};
const size_t sluice_nr_maps = sizeof(sluice_maps) / sizeof(sluice_maps[0]);
_Static_assert(sizeof(sluice_maps) / sizeof(sluice_maps[0]) <= SLUICE_MAX_MAPS,
	       "SLUICE_MAX_MAPS holds every map");
