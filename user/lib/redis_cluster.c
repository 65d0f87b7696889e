// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fleet agent's Redis client on a Redis Cluster (--redis-cluster
 * HOST:PORT[,...]). hiredis 0.14 has no cluster client: this is the little
 * of one the agent needs, on redis.c's connect and exchange (the one
 * deadline, the replies' shape checked), one sluice_redis a node.
 *
 * The slot map: CLUSTER SLOTS, asked of the nodes of the map, then of the
 * nodes given, in turn, at the first sync and after any MOVED or any shard
 * that failed a sync (the cluster may have failed it over). The agent hashes
 * each key's slot itself (crc16.c) and sends each primary its calls, all
 * primaries at once (a thread a primary, for the sync's one deadline), every
 * call of a primary before the first reply is read. It follows MOVED (to the
 * node named, and the map is read again) and ASK (ASKING, then the call, on
 * the node named); a call that gets TRYAGAIN (keys of a slot being migrated,
 * some here and some there) is sent again one key a call, which a node
 * always serves or redirects. At most CLUSTER_ROUNDS exchanges a sync.
 *
 * Where the keys live. Redis Cluster runs a script on one slot: every key a
 * call names must hash to it. One key a call would spread keys over all
 * 16384 slots but cost Redis a script call a key; so a fleet's keys are
 * spread over SLUICE_CLUSTER_GROUPS groups by the CRC16 of their own name,
 * each group one hash tag, "sluice:{FLEET#gG}:" + the key: a thousand
 * slots, spread over the primaries as the cluster spreads its slots, and
 * still many keys a call under a flood. The members and N stay in one
 * place, the fleet's own keys "sluice:{FLEET}:boxes" and ":share", on the
 * one shard of slot CRC16(FLEET): every box asks the same shard, so N is
 * one count (were each shard to keep its members, a box that reaches only
 * some shards would be counted by some and not others, and the boxes would
 * hold different N). A sync first asks that shard (the sync script with no
 * key: N, the silent members and their reserve), then the others with
 * the lanes' script, given the share the live members hold.
 *
 * Faults. The members' shard not answering is an outage of the whole box,
 * rate/N, as with one Redis. Any other shard not answering (down, hung
 * past the deadline, an error reply, a redirection not followed in time)
 * fails only its keys: their debt is -1, the caller's to fall back to rate/N
 * for them (user/sluice/fleet.c), and the sync succeeds for the others.
 * sluice_redis_fault() says which and why.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <hiredis/hiredis.h>

#include "redis_int.h"
#include "redis_cluster.h"

#define SHOWN 200 /* r->addr's size */

/* ---- the nodes ---- */

int sluice_redis_check_cluster(const char *s, char *err, size_t len)
{
	struct redis_ep eps[CLUSTER_SEEDS_MAX];
	size_t n, i;
	int ret = redis_parse_eps(s, "cluster node", eps, CLUSTER_SEEDS_MAX, &n, err, len);

	for (i = 0; !ret && i < n; i++)
		if (eps[i].is_unix)
			ret = sluice_err(err, len, -EINVAL,
					 "cluster node unix:%s: give the nodes' HOST:PORT, as "
					 "the cluster knows them",
					 eps[i].path);
	return ret;
}

int redis_cluster_open(struct sluice_redis *r, const char *seeds, char *err, size_t len)
{
	struct redis_cluster *c;
	int ret = sluice_redis_check_cluster(seeds, err, len);

	if (ret)
		return ret;
	c = calloc(1, sizeof(*c));
	r->addr = calloc(1, SHOWN);
	if (!c || !r->addr) {
		free(c);
		return sluice_err(err, len, -ENOMEM, "Couldn't allocate a Redis Cluster client");
	}
	redis_parse_eps(seeds, "cluster node", c->seeds, CLUSTER_SEEDS_MAX, &c->nseeds, err, len);
	memset(c->owner, 0xff, sizeof(c->owner));
	snprintf(r->addr, SHOWN, "cluster %s", seeds);
	r->cl = c;
	return 0;
}

void redis_cluster_close(struct sluice_redis *r)
{
	struct redis_cluster *c = r->cl;
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nnodes; i++)
		sluice_redis_close(c->node[i]);
	free(c);
	r->cl = NULL;
}

bool redis_cluster_ready(const struct sluice_redis *r)
{
	return r->cl && r->cl->have_map;
}

const char *sluice_redis_fault(const struct sluice_redis *r)
{
	return r->cl ? r->cl->fault : "";
}

/* The node at host:port (a literal): its index, added when new; -1 when
 * the table is full or no memory. */
int redis_cluster_node_at(struct sluice_redis *r, const char *host, const char *port)
{
	struct redis_cluster *c = r->cl;
	struct sluice_redis *n;
	size_t i;

	for (i = 0; i < c->nnodes; i++)
		if (!strcmp(c->node[i]->host, host) && !strcmp(c->node[i]->port, port))
			return (int)i;
	if (c->nnodes >= CLUSTER_NODES_MAX)
		return -1;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -1;
	n->fd = -1;
	n->timeout_ns = r->timeout_ns;
	n->cluster_node = true;
	n->addr = malloc(80);
	n->password_file = r->password_file ? strdup(r->password_file) : NULL;
	if (!n->addr || (r->password_file && !n->password_file)) {
		sluice_redis_close(n);
		return -1;
	}
	redis_use_host(n, host, port);
	snprintf(n->addr, 80, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
	c->node[c->nnodes] = n;
	return (int)c->nnodes++;
}

/* Ask node i for the slot map, by deadline: the map is then its answer. */
static int map_from(struct sluice_redis *r, size_t i, __u64 deadline, char *err, size_t len)
{
	static struct sluice_slot_range ranges[SLUICE_CLUSTER_RANGES];
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct redis_cluster *c = r->cl;
	struct sluice_redis *n = c->node[i];
	__u16 owner[SLUICE_CLUSTER_SLOTS];
	char why[SLUICE_ERR_LEN];
	redisReply *rep = NULL;
	size_t nr = 0, k;
	__u32 s;
	int ret;

	if (n->fd < 0) {
		ret = redis_connect(n, deadline, err, len);
		if (ret)
			return ret;
	}
	n->out.len = 0;
	n->out.oom = false;
	redis_buf_cmd(&n->out, 2);
	redis_buf_arg(&n->out, "CLUSTER");
	redis_buf_arg(&n->out, "SLOTS");
	ret = redis_exchange(n, &n->out, 1, SLUICE_CLUSTER_RANGES, REDIS_SCAN_DEPTH, &rep, deadline,
			     NULL, err, len);
	if (ret) {
		redis_drop(n);
		return ret;
	}
	/* ranges: one table for the agent's one client (the agent has one) */
	pthread_mutex_lock(&lock);
	ret = sluice_cluster_parse_slots(rep, n->host, ranges, SLUICE_CLUSTER_RANGES, &nr, why,
					 sizeof(why));
	freeReplyObject(rep);
	if (ret) {
		pthread_mutex_unlock(&lock);
		redis_drop(n);
		return sluice_err(err, len, ret, "Redis at %s: %s", n->addr, why);
	}
	memset(owner, 0xff, sizeof(owner));
	for (k = 0; k < nr; k++) {
		int o = redis_cluster_node_at(r, ranges[k].host, ranges[k].port);

		if (o < 0) {
			pthread_mutex_unlock(&lock);
			return sluice_err(err, len, -ENOMEM,
					  "Redis at %s names more than %d primaries", n->addr,
					  CLUSTER_NODES_MAX);
		}
		for (s = ranges[k].from; s <= ranges[k].to; s++)
			owner[s] = (__u16)o;
	}
	pthread_mutex_unlock(&lock);
	memcpy(c->owner, owner, sizeof(owner));
	memset(c->primary, 0, sizeof(c->primary));
	for (s = 0; s < SLUICE_CLUSTER_SLOTS; s++)
		if (c->owner[s] != CLUSTER_NO_NODE)
			c->primary[c->owner[s]] = true;
	c->shards = 0;
	for (k = 0; k < c->nnodes; k++)
		c->shards += c->primary[k];
	c->have_map = true;
	c->stale = false;
	return 0;
}

/* Read the slot map: of the primaries it names, then of the nodes given. */
int redis_cluster_read_map(struct sluice_redis *r, __u64 deadline, char *err, size_t len)
{
	struct redis_cluster *c = r->cl;
	size_t cand[CLUSTER_NODES_MAX + CLUSTER_SEEDS_MAX], nc = 0, i, k;
	char why[SLUICE_ERR_LEN] = "no node to ask";
	int ret = -ENOENT;

	for (i = 0; i < c->nnodes; i++)
		for (k = 0; k < SLUICE_CLUSTER_SLOTS; k++)
			if (c->owner[k] == i) {
				cand[nc++] = i;
				break;
			}
	for (i = 0; i < c->nseeds; i++) {
		int o = redis_cluster_node_at(r, c->seeds[i].host, c->seeds[i].port);
		bool dup = false;

		for (k = 0; k < nc; k++)
			dup |= o >= 0 && cand[k] == (size_t)o;
		if (o >= 0 && !dup)
			cand[nc++] = (size_t)o;
	}
	for (i = 0; i < nc; i++) {
		__u64 now = sluice_now_ns();
		/* a node that hangs leaves the others their share of the time */
		__u64 mine = now >= deadline ? deadline : now + (deadline - now) / (nc - i);

		ret = map_from(r, cand[i], mine, why, sizeof(why));
		if (!ret)
			return 0;
	}
	return sluice_err(err, len, ret == -EACCES ? -EACCES : -EHOSTUNREACH,
			  "No node of Redis Cluster %s gave its slot map (the last: %s)",
			  r->addr + 8, why);
}

int redis_cluster_connect(struct sluice_redis *r, __u64 deadline, char *err, size_t len)
{
	return redis_cluster_read_map(r, deadline, err, len);
}
