// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The options of `sluice run` that start the fleet agent (fleet.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libsluice.h"
#include "agent.h"
#include "redis.h"

#define MIN_SYNC_NS (10ULL * 1000000ULL) /* 10 ms */
#define MAX_SYNC_NS (60ULL * SLUICE_NS_PER_SEC)
#define MIN_MEMBER_TTL_MS 1000ULL
#define DEFAULT_TIMEOUT_NS SLUICE_NS_PER_SEC

const char *const fleet_opt_help =
	"Fleet-wide limits (policies marked --fleet, see sluicectl(8)):\n"
	"  --redis ADDR        share the fleet policies' usage through the Redis at\n"
	"                      ADDR: host:port, [v6addr]:port, host (6379), unix:PATH\n"
	"                      or /PATH; needs --fleet\n"
	"  --fleet NAME        the fleet: boxes that give one NAME share one limit\n"
	"  --redis-password-file FILE  AUTH with the first line of FILE (mode 0600)\n"
	"  --fleet-member ID   this box in the fleet (default HOSTNAME/IFACE)\n"
	"  --sync-interval DUR time between syncs: 100ms (default), 10ms to 1m\n"
	"  --redis-timeout DUR deadline of a connect and of each sync (default 1s, or\n"
	"                      the sync interval if longer); a failed sync is an outage\n"
	"  --sync-keys K       most keys pushed per sync, the busiest first (default\n"
	"                      131072); the rest wait, counted as skipped\n"
	"  --redis-batch N     keys per script call (default 256); all calls of a\n"
	"                      sync go in one round trip\n"
	"  --fleet-size N      assume at least N boxes (the N of rate/N before Redis\n"
	"                      has answered once)\n"
	"  --fleet-max N       at most N boxes (default 1024, at most 65536): a sync\n"
	"                      whose Redis counts more fails, as an outage\n"
	"  --sync-threshold F  push a key once its usage reaches F of the box's share\n"
	"                      of the burst (burst/N; default 0.25, 0 to 1; 0: every\n"
	"                      sync), or while the fleet says it is in debt\n"
	"  --sync-max-age DUR  push a key's usage at the latest this old (default 10s,\n"
	"                      at most 1h)\n"
	"  --redis-sentinel HOST:PORT[,HOST:PORT...]  ask these sentinels for the\n"
	"                      primary of --redis-master NAME (instead of --redis),\n"
	"                      and follow it through a failover\n"
	"  --redis-master NAME the primary's name in the sentinels\n"
	"  --redis-cluster HOST:PORT[,HOST:PORT...]  nodes of a Redis Cluster (instead\n"
	"                      of --redis): the keys spread over its shards by slot;\n"
	"                      a shard down holds its keys to rate/N\n";

int fleet_parse_opt(int which, const char *arg, struct fleet_opts *o, char *err, size_t errlen)
{
	char inner[SLUICE_ERR_LEN];
	__u64 v;

	switch (which) {
	case FLEET_OPT_REDIS:
		o->redis = arg;
		return 0;
	case FLEET_OPT_FLEET:
		if (sluice_redis_check_fleet(arg, inner, sizeof(inner)))
			return sluice_err(err, errlen, -EINVAL,
					  "--fleet '%s' is not a fleet name: %s", arg, inner);
		o->fleet = arg;
		return 0;
	case FLEET_OPT_PASSWORD:
		o->password_file = arg;
		return 0;
	case FLEET_OPT_MEMBER:
		if (!*arg || strlen(arg) > 100)
			return sluice_err(err, errlen, -EINVAL,
					  "--fleet-member '%s': give 1 to 100 characters", arg);
		o->member = arg;
		return 0;
	case FLEET_OPT_SYNC:
	case FLEET_OPT_TIMEOUT: {
		const char *name = which == FLEET_OPT_SYNC ? "--sync-interval" : "--redis-timeout";

		if (sluice_parse_duration(name, arg, &v, err, errlen))
			return -EINVAL;
		if (v < MIN_SYNC_NS || v > MAX_SYNC_NS)
			return sluice_err(err, errlen, -EINVAL,
					  "%s '%s' is out of range: 10ms to 1m", name, arg);
		if (which == FLEET_OPT_SYNC)
			o->sync_ns = v;
		else
			o->timeout_ns = v;
		return 0;
	}
	case FLEET_OPT_THRESHOLD: {
		char *end;
		double d;

		errno = 0;
		d = strtod(arg, &end);
		if (errno || end == arg || *end || !(d >= 0 && d <= 1))
			return sluice_err(err, errlen, -EINVAL,
					  "--sync-threshold '%s': give a fraction of a box's share "
					  "of the burst, 0 to 1 (0.25 by default; 0 pushes every "
					  "key at every sync)",
					  arg);
		o->threshold = d;
		o->threshold_given = true;
		return 0;
	}
	case FLEET_OPT_MAX_AGE:
		if (sluice_parse_duration("--sync-max-age", arg, &v, err, errlen))
			return -EINVAL;
		if (v < MIN_SYNC_NS || v > 3600ULL * SLUICE_NS_PER_SEC)
			return sluice_err(err, errlen, -EINVAL,
					  "--sync-max-age '%s' is out of range: 10ms to 1h", arg);
		o->max_age_ns = v;
		return 0;
	case FLEET_OPT_SENTINEL:
		if (sluice_redis_check_sentinels(arg, inner, sizeof(inner)))
			return sluice_err(err, errlen, -EINVAL, "--redis-sentinel: %s", inner);
		o->sentinels = arg;
		return 0;
	case FLEET_OPT_CLUSTER:
		if (sluice_redis_check_cluster(arg, inner, sizeof(inner)))
			return sluice_err(err, errlen, -EINVAL, "--redis-cluster: %s", inner);
		o->cluster = arg;
		return 0;
	case FLEET_OPT_MASTER:
		if (!*arg || strlen(arg) > 64 || strpbrk(arg, " \t\r\n"))
			return sluice_err(err, errlen, -EINVAL,
					  "--redis-master '%s': give the primary's name as the "
					  "sentinels know it (1 to 64 characters, no space)",
					  arg);
		o->master = arg;
		return 0;
	case FLEET_OPT_KEYS:
	case FLEET_OPT_BATCH:
	case FLEET_OPT_SIZE:
	case FLEET_OPT_MAX: {
		const char *name = which == FLEET_OPT_KEYS  ? "--sync-keys" :
				   which == FLEET_OPT_BATCH ? "--redis-batch" :
				   which == FLEET_OPT_SIZE  ? "--fleet-size" :
							      "--fleet-max";
		__u64 max = which == FLEET_OPT_KEYS  ? (1ULL << 31) :
			    which == FLEET_OPT_BATCH ? 100000 :
						       SLUICE_FLEET_MAX_BOXES;

		if (sluice_parse_uint(name, arg, max, &v, err, errlen))
			return -EINVAL;
		if (!v)
			return sluice_err(err, errlen, -EINVAL, "%s 0: give at least 1", name);
		if (which == FLEET_OPT_KEYS)
			o->max_keys = v;
		else if (which == FLEET_OPT_BATCH)
			o->batch = (__u32)v;
		else if (which == FLEET_OPT_SIZE)
			o->fleet_size = (__u32)v;
		else
			o->fleet_max = (__u32)v;
		return 0;
	}
	}
	return sluice_err(err, errlen, -EINVAL, "unknown fleet option");
}

/* The first fleet option given, by name: NULL when none is. */
static const char *fleet_opt_given(const struct fleet_opts *o)
{
	return o->fleet           ? "--fleet" :
	       o->password_file   ? "--redis-password-file" :
	       o->member          ? "--fleet-member" :
	       o->sync_ns         ? "--sync-interval" :
	       o->timeout_ns      ? "--redis-timeout" :
	       o->max_keys        ? "--sync-keys" :
	       o->batch           ? "--redis-batch" :
	       o->fleet_size      ? "--fleet-size" :
	       o->fleet_max       ? "--fleet-max" :
	       o->threshold_given ? "--sync-threshold" :
	       o->max_age_ns      ? "--sync-max-age" :
	       o->master          ? "--redis-master" :
				    NULL;
}

int fleet_check_opts(struct fleet_opts *o, char *err, size_t errlen)
{
	const char *given = fleet_opt_given(o);
	char inner[SLUICE_ERR_LEN];

	if (o->redis && o->sentinels)
		return sluice_err(err, errlen, -EINVAL,
				  "--redis and --redis-sentinel both say where Redis is: give "
				  "--redis ADDR for one Redis, or --redis-sentinel and "
				  "--redis-master for the primary the sentinels name");
	if (o->cluster && (o->redis || o->sentinels))
		return sluice_err(err, errlen, -EINVAL,
				  "--redis-cluster and %s both say where Redis is: give one",
				  o->redis ? "--redis" : "--redis-sentinel");
	if (o->sentinels && !o->master)
		return sluice_err(err, errlen, -EINVAL,
				  "--redis-sentinel needs --redis-master NAME: the primary's "
				  "name as the sentinels know it");
	/* The agent's Redis is the sentinels' primary: "sentinel:NAME". */
	if (o->sentinels) {
		snprintf(o->sentinel_addr, sizeof(o->sentinel_addr), "sentinel:%s", o->master);
		o->redis = o->sentinel_addr;
	}
	/* Under Redis Cluster: "cluster:HOST:PORT,...", for messages. */
	if (o->cluster) {
		snprintf(o->sentinel_addr, sizeof(o->sentinel_addr), "cluster:%s", o->cluster);
		o->redis = o->sentinel_addr;
	}
	if (!o->redis && given)
		return sluice_err(err, errlen, -EINVAL,
				  "%s belongs to the fleet agent, which needs --redis ADDR%s: "
				  "give %s, or leave %s out",
				  given, o->fleet ? "" : " and --fleet NAME",
				  o->fleet ? "--redis" : "both", given);
	if (!o->redis)
		return 0;
	if (!o->fleet)
		return sluice_err(err, errlen, -EINVAL,
				  "--redis needs --fleet NAME: the boxes that give one name share "
				  "one limit, so no two fleets share by accident");
	/* Before anything is attached: a bad address is a usage error. */
	if (!o->sentinels && !o->cluster && sluice_redis_check_addr(o->redis, inner, sizeof(inner)))
		return sluice_err(err, errlen, -EINVAL, "--redis: %s", inner);
	if (o->fleet_max && o->fleet_size > o->fleet_max)
		return sluice_err(err, errlen, -EINVAL,
				  "--fleet-size %u is more than --fleet-max %u: the fleet cannot "
				  "have at least %u boxes and at most %u",
				  o->fleet_size, o->fleet_max, o->fleet_size, o->fleet_max);
	if (!o->fleet_max)
		o->fleet_max = o->fleet_size > FLEET_DEFAULT_MAX ? o->fleet_size :
								   FLEET_DEFAULT_MAX;
	if (!o->sync_ns)
		o->sync_ns = FLEET_DEFAULT_SYNC_NS;
	/* The datapath's fallback does not wait for the deadline (it follows
	 * ok_until): the deadline only bounds how long a call may take, and a
	 * loaded box must not declare an outage for one slow sync. */
	if (!o->timeout_ns)
		o->timeout_ns = o->sync_ns > DEFAULT_TIMEOUT_NS ? o->sync_ns : DEFAULT_TIMEOUT_NS;
	if (!o->max_keys)
		o->max_keys = SLUICE_DEFAULT_FLEET_KEYS;
	if (!o->batch)
		o->batch = FLEET_DEFAULT_BATCH;
	if (!o->threshold_given)
		o->threshold = FLEET_DEFAULT_THRESHOLD;
	if (!o->max_age_ns)
		o->max_age_ns = FLEET_DEFAULT_MAX_AGE_NS;
	/* A box is counted while it synced within three intervals and a
	 * deadline: a slow sync or two does not shrink N. */
	o->member_ttl_ms = (3 * o->sync_ns + o->timeout_ns) / 1000000;
	if (o->member_ttl_ms < MIN_MEMBER_TTL_MS)
		o->member_ttl_ms = MIN_MEMBER_TTL_MS;
	return 0;
}

int fleet_check_files(const struct fleet_opts *o, char *err, size_t errlen)
{
	if (!o->redis || !o->password_file)
		return 0;
	return sluice_redis_check_password_file(o->password_file, err, errlen);
}
