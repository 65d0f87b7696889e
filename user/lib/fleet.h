/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Fleet-wide limits as a state holds them (fleet.c).
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_FLEET_H
#define SLUICE_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

#include "state.h"

#define SLUICE_FLEET_STALE 4 /* a view only: synced, but not renewed in time */

/* The agent's state as it stands now: what the datapath decides on. */
struct sluice_fleet_view {
	struct sluice_fleet f; /* a copy, strings terminated */
	__u32 n; /* the N of rate/N and burst/N (at least 1) */
	bool shared; /* the datapath admits rate/N now (outage, stale, stopped) */
	int state_code; /* enum sluice_fleet_state, or SLUICE_FLEET_STALE */
	const char *state; /* "off", "synced", "outage", "stopped", "stale" */
	double last_ok_age_s; /* seconds since the last successful sync; -1: none */
};

/* -ENOENT when the state has no sluice_fleet (pinned by an older sluice). */
int sluice_fleet_view(const struct sluice_handle *h, struct sluice_fleet_view *v);
/* Is the default policy or a rule fleet-wide? */
bool sluice_has_fleet_policy(struct sluice_handle *h);
/* One line: "edge via unix:/run/redis.sock: synced, 3 boxes, ..." */
void sluice_fleet_summary(const struct sluice_fleet_view *v, bool fleet_policies, char *buf,
			  size_t len);
struct sluice_json;
struct sluice_rec;
/* "fleet": {state, outage_share (rate/N now), boxes, ...}, as JSON or as text
 * lines fleet_state, fleet_outage_share, ... (struct sluice_rec) */
void sluice_fleet_out(struct sluice_rec *r, const struct sluice_fleet_view *v);
void sluice_fleet_json(struct sluice_json *j, const struct sluice_fleet_view *v);

#endif /* SLUICE_FLEET_H */
