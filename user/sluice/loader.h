/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The loader `sluice`: every module's header (cli.h: the command line and
 * the subcommands; opts.h: the attach options; fleet.h; metrics.h; xdp.h:
 * finding sluice on an interface; target.h: the attach targets; owner.h;
 * pins.h; shape.h: the shaper's files), and the table of pinned maps (pinned_maps.c).
 */
#ifndef SLUICE_LOADER_H
#define SLUICE_LOADER_H

#include <stdbool.h>
#include <net/if.h>
#include <linux/types.h>
#include <xdp/libxdp.h>

#include "libsluice.h"
#include "cli.h"
#include "agent.h"
#include "metrics.h"
#include "opts.h"
#include "owner.h"
#include "pinlock.h"
#include "shape.h"
#include "target.h"
#include "xdp.h"

/* The pinned maps, in one place (pinned_maps.c says what added_later means). */
struct sluice_map_spec {
	const char *name;
	bool added_later; /* created by attach when an existing state lacks it */
};
#define SLUICE_MAX_MAPS 24
extern const struct sluice_map_spec sluice_maps[];
extern const size_t sluice_nr_maps;

#endif /* SLUICE_LOADER_H */
