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
	memset(v, 0, sizeof(*v));
	if (!h->fleet)
		return -ENOENT;
	memcpy(&v->f, h->fleet, sizeof(v->f));
	v->f.fleet[sizeof(v->f.fleet) - 1] = '\0';
	v->f.redis[sizeof(v->f.redis) - 1] = '\0';
	v->f.last_error[sizeof(v->f.last_error) - 1] = '\0';
	v->n = v->f.live > 1 ? v->f.live : 1;
	v->shared = v->n > 1 && now >= v->f.ok_until;
	v->state_code = v->f.state < sizeof(state_names) / sizeof(state_names[0]) ?
				v->f.state :
				SLUICE_FLEET_NONE;
	v->state = state_names[v->state_code];
	if (v->state_code == SLUICE_FLEET_SYNCED && now >= v->f.ok_until) {
		v->state = "stale";
		v->state_code = SLUICE_FLEET_STALE;
	}
	v->last_ok_age_s = -1;
	if (v->f.last_ok_ns) {
		__u64 t = sluice_realtime_ns();

		v->last_ok_age_s = t > v->f.last_ok_ns ? (double)(t - v->f.last_ok_ns) / 1e9 : 0;
	}
	return 0;
}

bool sluice_has_fleet_policy(struct sluice_handle *h)
{
	struct sluice_policies pol;
	bool any;
	__u32 i;

	if (sluice_read_policies(h, &pol, false, NULL, 0))
		return false;
	any = pol.set.def.flags & SLUICE_POLICY_FLEET;
	for (i = 0; i < pol.nr_rules && !any; i++)
		any = pol.rules[i].rule.policy.flags & SLUICE_POLICY_FLEET;
	sluice_free_policies(&pol);
	return any;
}

void sluice_fleet_summary(const struct sluice_fleet_view *v, bool fleet_policies, char *buf,
			  size_t len)
{
	char age[32] = "never";

	if (v->state_code == SLUICE_FLEET_NONE) {
		snprintf(
			buf, len, "%s",
			fleet_policies ?
				"off: no agent has run ('sluice run IFACE --redis ADDR --fleet NAME'), so "
				"the fleet policies hold the whole limit on this box alone" :
				"off");
		return;
	}
	if (v->last_ok_age_s >= 0)
		snprintf(age, sizeof(age), "%.1f s ago", v->last_ok_age_s);
	if (!v->shared && v->f.silent)
		snprintf(buf, len,
			 "%s via %s: %s, %u box%s (%u silent: %s held in reserve), "
			 "last sync %s, rtt %.1f ms",
			 v->f.fleet, v->f.redis, v->state, v->n, v->n == 1 ? "" : "es", v->f.silent,
			 v->f.silent == 1 ? "its share" : "their shares", age,
			 (double)v->f.last_rtt_ns / 1e6);
	else if (!v->shared)
		snprintf(buf, len, "%s via %s: %s, %u box%s, last sync %s, rtt %.1f ms", v->f.fleet,
			 v->f.redis, v->state, v->n, v->n == 1 ? "" : "es", age,
			 (double)v->f.last_rtt_ns / 1e6);
	/* Redis Cluster: a shard down fails its keys alone (rate/N for them) */
	if (!v->shared && v->f.shards_down) {
		size_t at = strlen(buf);

		snprintf(buf + at, len > at ? len - at : 0,
			 "; %u of %u shards down, their keys admit rate/%u and burst/%u (%s)",
			 v->f.shards_down, v->f.shards, v->n, v->n, v->f.last_error);
	} else
		snprintf(buf, len,
			 "%s via %s: %s, fleet policies admit rate/%u and burst/%u; "
			 "last sync %s%s%s",
			 v->f.fleet, v->f.redis, v->state, v->n, v->n, age,
			 v->f.last_error[0] ? "; " : "", v->f.last_error);
}

void sluice_fleet_out(struct sluice_rec *r, const struct sluice_fleet_view *v)
{
	sluice_rec_begin(r, "fleet");
	sluice_rec_str(r, "state", v->state);
	/* the datapath admits rate/N now (an outage, stale, stopped) */
	sluice_rec_bool(r, "outage_share", v->shared);
	sluice_rec_u64(r, "boxes", v->n);
	sluice_rec_u64(r, "silent", v->f.silent);
	sluice_rec_str(r, "name", v->f.fleet);
	sluice_rec_str(r, "redis", v->f.redis);
	sluice_rec_f64(r, "last_sync_age_s", v->last_ok_age_s);
	sluice_rec_u64(r, "syncs", v->f.syncs);
	sluice_rec_u64(r, "sync_errors", v->f.sync_errors);
	sluice_rec_u64(r, "outages", v->f.outages);
	sluice_rec_u64(r, "keys_pushed", v->f.keys_pushed);
	sluice_rec_u64(r, "keys_skipped", v->f.keys_skipped);
	sluice_rec_f64(r, "rtt_ms", (double)v->f.last_rtt_ns / 1e6);
	sluice_rec_str(r, "last_error", v->f.last_error);
	sluice_rec_u64(r, "shards", v->f.shards);
	sluice_rec_u64(r, "shards_down", v->f.shards_down);
	sluice_rec_u64(r, "shard_faults", v->f.shard_faults);
	sluice_rec_u64(r, "moved", v->f.moved);
	sluice_rec_u64(r, "asked", v->f.asked);
	sluice_rec_u64(r, "agent_pid", v->f.agent_pid);
	sluice_rec_end(r);
}

void sluice_fleet_json(struct sluice_json *j, const struct sluice_fleet_view *v)
{
	struct sluice_rec r;

	sluice_rec_init(&r, j, NULL, 0);
	sluice_fleet_out(&r, v);
}
