/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The fleet agent of sluice run (fleet.c) and its options (fleet_opts.c):
 * fleet-wide limits shared through Redis.
 */
#ifndef SLUICE_LOADER_AGENT_H
#define SLUICE_LOADER_AGENT_H

#include <stddef.h>
#include <linux/types.h>

struct fleet_opts {
	const char *redis; /* --redis ADDR: NULL, no agent */
	const char *fleet; /* --fleet NAME */
	const char *password_file; /* --redis-password-file */
	const char *member; /* --fleet-member ID: default HOSTNAME/IFACE */
	__u64 sync_ns; /* --sync-interval */
	__u64 timeout_ns; /* --redis-timeout */
	__u64 max_keys; /* --sync-keys */
	__u64 member_ttl_ms; /* a box not heard from for this long is not counted */
	__u32 batch; /* --redis-batch: keys per script call */
	__u32 fleet_size; /* --fleet-size: N is at least this */
	__u32 fleet_max; /* --fleet-max: a count of boxes above it fails the sync */
	/* --sync-threshold: a key's usage is pushed once it reaches this
	 * fraction of the box's share of the burst (0: every sync) */
	double threshold;
	bool threshold_given;
	__u64 max_age_ns; /* --sync-max-age: pushed at the latest this old */
	/* --redis-sentinel HOST:PORT[,...] and --redis-master NAME: the
	 * primary is asked of the sentinels (then --redis is not given) */
	const char *sentinels;
	const char *master;
	char sentinel_addr[80]; /* redis then: "sentinel:NAME", for messages */
	/* --redis-cluster HOST:PORT[,...]: some nodes of a Redis Cluster, which
	 * the slot map is asked of (then --redis is not given) */
	const char *cluster;
};

#define FLEET_DEFAULT_SYNC_NS (100ULL * 1000000ULL)
#define FLEET_DEFAULT_BATCH 256
#define FLEET_DEFAULT_MAX 1024 /* --fleet-max (or --fleet-size, if more) */
/* N x theta = 0.25 burst: the bound's added term stays under half a burst */
#define FLEET_DEFAULT_THRESHOLD 0.25
#define FLEET_DEFAULT_MAX_AGE_NS (10ULL * 1000000000ULL)

/* run's fleet options, parsed by fleet_opts.c in this order */
enum {
	FLEET_OPT_REDIS,
	FLEET_OPT_FLEET,
	FLEET_OPT_PASSWORD,
	FLEET_OPT_MEMBER,
	FLEET_OPT_SYNC,
	FLEET_OPT_TIMEOUT,
	FLEET_OPT_KEYS,
	FLEET_OPT_BATCH,
	FLEET_OPT_SIZE,
	FLEET_OPT_MAX,
	FLEET_OPT_THRESHOLD,
	FLEET_OPT_MAX_AGE,
	FLEET_OPT_SENTINEL,
	FLEET_OPT_MASTER,
	FLEET_OPT_CLUSTER,
	FLEET_NR_OPTS,
};
int fleet_parse_opt(int which, const char *arg, struct fleet_opts *o, char *err, size_t errlen);
/* After every option: --fleet with --redis, the address, the defaults. */
int fleet_check_opts(struct fleet_opts *o, char *err, size_t errlen);
/* Before anything is attached: the password file as the agent will read it
 * (-errno and why: a file problem, not a usage error). */
int fleet_check_files(const struct fleet_opts *o, char *err, size_t errlen);
extern const char *const fleet_opt_help;

struct fleet_agent;
/* Start the agent on the limiter of ifname (attached). A refused password
 * fails; an unreachable Redis starts in an outage (rate/N), said once. */
int fleet_start(const struct fleet_opts *o, const char *ifname, struct fleet_agent **out, char *err,
		size_t errlen);
/* "; fleet NAME synced, 3 boxes, rtt 0.4 ms" for run's report ("" for none). */
void fleet_report(const struct fleet_agent *a, char *buf, size_t len);
/* Stop, leaving the state "stopped" (rate/N until an agent runs again). */
void fleet_stop(struct fleet_agent *a);

#endif /* SLUICE_LOADER_AGENT_H */
