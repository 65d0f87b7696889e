// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What the fleet agent's state (struct sluice_fleet) means right now, for
 * `sluice status`, `sluicectl stats` and the metrics: one reading, so that
 * every view says the same. The datapath decides on rate/N whenever the
 * last successful sync is older than ok_until, whatever the agent last
 * wrote; so a state the agent left "synced" and then stopped updating (it
 * was killed) reads "stale", and shares like an outage.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "libsluice.h"

static const char *const state_names[] = {
	[SLUICE_FLEET_NONE] = "off",
	[SLUICE_FLEET_SYNCED] = "synced",
	[SLUICE_FLEET_OUTAGE] = "outage",
	[SLUICE_FLEET_STOPPED] = "stopped",
};

int sluice_fleet_view(const struct sluice_handle *h, struct sluice_fleet_view *v)
{
	__u64 now = sluice_now_ticks();
	struct timespec ts;

	memset(v, 0, sizeof(*v));
	if (!h->fleet)
		return -ENOENT;
	memcpy(&v->f, h->fleet, sizeof(v->f));
	v->f.fleet[sizeof(v->f.fleet) - 1] = '\0';
	v->f.redis[sizeof(v->f.redis) - 1] = '\0';
	v->f.last_error[sizeof(v->f.last_error) - 1] = '\0';
	v->n = v->f.live > 1 ? v->f.live : 1;
	v->shared = v->n > 1 && now >= v->f.ok_until;
	v->state_code = v->f.state < sizeof(state_names) / sizeof(state_names[0]) ? v->f.state :
										  SLUICE_FLEET_NONE;
	v->state = state_names[v->state_code];
	if (v->state_code == SLUICE_FLEET_SYNCED && now >= v->f.ok_until) {
		v->state = "stale";
		v->state_code = SLUICE_FLEET_STALE;
	}
	v->last_ok_age_s = -1;
	if (v->f.last_ok_ns && !clock_gettime(CLOCK_REALTIME, &ts)) {
		__u64 t = (__u64)ts.tv_sec * SLUICE_NS_PER_SEC + (__u64)ts.tv_nsec;

		v->last_ok_age_s = t > v->f.last_ok_ns ? (double)(t - v->f.last_ok_ns) / 1e9 : 0;
	}
	return 0;
}
