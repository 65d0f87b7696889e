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
 * always serves or redirects. At most ROUNDS exchanges a sync.
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

#define NODES_MAX 64
#define SEEDS_MAX 16
#define NO_NODE 0xffff
#define ROUNDS 5
#define SHOWN 200 /* r->addr's size */

struct redis_cluster {
	struct redis_ep seeds[SEEDS_MAX];
	size_t nseeds;
	struct sluice_redis *node[NODES_MAX];
	size_t nnodes;
	__u16 owner[SLUICE_CLUSTER_SLOTS]; /* node index, NO_NODE: no primary */
	bool have_map;
	bool stale; /* read the map again at the next sync */
	__u32 shards;
	/* the group slots of this fleet (computed once: the name is fixed) */
	char fleet[SLUICE_REDIS_FLEET_MAX + 1];
	__u16 group_slot[SLUICE_CLUSTER_GROUPS];
	char fault[SLUICE_ERR_LEN];
	bool down[NODES_MAX]; /* the nodes that failed this sync */
	bool was_down[NODES_MAX]; /* and the last one */
};

/* ---- what the cluster says: the map, a redirection, a key's name ---- */

static bool is_literal(const char *h)
{
	struct in6_addr a6;
	struct in_addr a4;

	return inet_pton(AF_INET, h, &a4) == 1 || inet_pton(AF_INET6, h, &a6) == 1;
}

static int take_node(const redisReply *x, const char *asked_host, struct sluice_slot_range *o,
		     char *err, size_t len)
{
	const redisReply *ip, *port;
	const char *h;

	if (x->type != REDIS_REPLY_ARRAY || x->elements < 2)
		return sluice_err(err, len, -EPROTO, "a slot range's primary is not {ip, port...}");
	ip = x->element[0];
	port = x->element[1];
	if (ip->type != REDIS_REPLY_STRING || port->type != REDIS_REPLY_INTEGER)
		return sluice_err(err, len, -EPROTO, "a slot range's primary is not {ip, port...}");
	h = ip->len ? ip->str : asked_host;
	if (strlen(h) >= sizeof(o->host) || !is_literal(h))
		return sluice_err(err, len, -EPROTO,
				  "a slot range's primary '%s' is no address (give the nodes "
				  "cluster-preferred-endpoint-type ip)",
				  h);
	if (port->integer < 1 || port->integer > 65535)
		return sluice_err(err, len, -EPROTO, "a slot range's primary has port %lld",
				  port->integer);
	snprintf(o->host, sizeof(o->host), "%s", h);
	snprintf(o->port, sizeof(o->port), "%lld", port->integer);
	return 0;
}

int sluice_cluster_parse_slots(const redisReply *x, const char *asked_host,
			       struct sluice_slot_range *out, size_t max, size_t *n, char *err,
			       size_t len)
{
	static __thread __u8 seen[SLUICE_CLUSTER_SLOTS / 8];
	size_t i;
	int ret;

	*n = 0;
	memset(seen, 0, sizeof(seen));
	if (x->type == REDIS_REPLY_ERROR)
		return sluice_err(err, len, -EPROTO,
				  "CLUSTER SLOTS answered '%s' (is it a node of a "
				  "cluster, cluster-enabled yes?)",
				  x->str);
	if (x->type != REDIS_REPLY_ARRAY)
		return sluice_err(err, len, -EPROTO, "CLUSTER SLOTS answered no array");
	if (x->elements > max)
		return sluice_err(err, len, -EPROTO,
				  "CLUSTER SLOTS answered %zu ranges, more than "
				  "the %zu slots",
				  x->elements, max);
	for (i = 0; i < x->elements; i++) {
		const redisReply *e = x->element[i];
		long long from, to, s;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER)
			return sluice_err(err, len, -EPROTO,
					  "CLUSTER SLOTS range %zu is not {from, to, primary...}",
					  i);
		from = e->element[0]->integer;
		to = e->element[1]->integer;
		if (from < 0 || to >= SLUICE_CLUSTER_SLOTS || from > to)
			return sluice_err(
				err, len, -EPROTO,
				"CLUSTER SLOTS range %zu is slots %lld to %lld, not within "
				"0 to %d",
				i, from, to, SLUICE_CLUSTER_SLOTS - 1);
		for (s = from; s <= to; s++) {
			if (seen[s / 8] & (1U << (s % 8)))
				return sluice_err(err, len, -EPROTO,
						  "CLUSTER SLOTS gives slot %lld two primaries", s);
			seen[s / 8] |= (__u8)(1U << (s % 8));
		}
		ret = take_node(e->element[2], asked_host, &out[i], err, len);
		if (ret)
			return ret;
		out[i].from = (__u16)from;
		out[i].to = (__u16)to;
	}
	*n = x->elements;
	return 0;
}

int sluice_cluster_parse_redirect(const char *s, const char *asked_host, bool *ask, __u16 *slot,
				  char *host, char *port)
{
	const char *p, *colon, *sp;
	char *end;
	long v;

	if (!strncmp(s, "MOVED ", 6)) {
		*ask = false;
		p = s + 6;
	} else if (!strncmp(s, "ASK ", 4)) {
		*ask = true;
		p = s + 4;
	} else {
		return -EINVAL;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || *end != ' ' || v < 0 || v >= SLUICE_CLUSTER_SLOTS)
		return -EINVAL;
	*slot = (__u16)v;
	p = end + 1;
	sp = strchr(p, ' ');
	colon = strrchr(p, ':');
	if (sp || !colon || (size_t)(colon - p) >= 64)
		return -EINVAL;
	if (colon == p) {
		snprintf(host, 64, "%s", asked_host);
	} else {
		memcpy(host, p, (size_t)(colon - p));
		host[colon - p] = '\0';
	}
	if (!is_literal(host) || colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	v = strtol(colon + 1, &end, 10);
	if (*end || v < 1 || v > 65535)
		return -EINVAL;
	snprintf(port, 8, "%ld", v);
	return 0;
}

unsigned int sluice_cluster_group(const char *key)
{
	return sluice_crc16(key, strlen(key)) % SLUICE_CLUSTER_GROUPS;
}

void sluice_cluster_prefix(const char *fleet, unsigned int g, char *buf, size_t len)
{
	snprintf(buf, len, "sluice:{%s#g%u}:", fleet, g);
}

/* ---- the nodes ---- */

int sluice_redis_check_cluster(const char *s, char *err, size_t len)
{
	struct redis_ep eps[SEEDS_MAX];
	size_t n, i;
	int ret = redis_parse_eps(s, "cluster node", eps, SEEDS_MAX, &n, err, len);

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
	redis_parse_eps(seeds, "cluster node", c->seeds, SEEDS_MAX, &c->nseeds, err, len);
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
static int node_at(struct sluice_redis *r, const char *host, const char *port)
{
	struct redis_cluster *c = r->cl;
	struct sluice_redis *n;
	size_t i;

	for (i = 0; i < c->nnodes; i++)
		if (!strcmp(c->node[i]->host, host) && !strcmp(c->node[i]->port, port))
			return (int)i;
	if (c->nnodes >= NODES_MAX)
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
		int o = node_at(r, ranges[k].host, ranges[k].port);

		if (o < 0) {
			pthread_mutex_unlock(&lock);
			return sluice_err(err, len, -ENOMEM,
					  "Redis at %s names more than %d primaries", n->addr,
					  NODES_MAX);
		}
		for (s = ranges[k].from; s <= ranges[k].to; s++)
			owner[s] = (__u16)o;
	}
	pthread_mutex_unlock(&lock);
	memcpy(c->owner, owner, sizeof(owner));
	c->shards = 0;
	for (k = 0; k < c->nnodes; k++)
		for (s = 0; s < SLUICE_CLUSTER_SLOTS; s++)
			if (c->owner[s] == k) {
				c->shards++;
				break;
			}
	c->have_map = true;
	c->stale = false;
	return 0;
}

/* Read the slot map: of the primaries it names, then of the nodes given. */
static int read_map(struct sluice_redis *r, __u64 deadline, char *err, size_t len)
{
	struct redis_cluster *c = r->cl;
	size_t cand[NODES_MAX + SEEDS_MAX], nc = 0, i, k;
	char why[SLUICE_ERR_LEN] = "no node to ask";
	int ret = -ENOENT;

	for (i = 0; i < c->nnodes; i++)
		for (k = 0; k < SLUICE_CLUSTER_SLOTS; k++)
			if (c->owner[k] == i) {
				cand[nc++] = i;
				break;
			}
	for (i = 0; i < c->nseeds; i++) {
		int o = node_at(r, c->seeds[i].host, c->seeds[i].port);
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
	return read_map(r, deadline, err, len);
}

/* ---- one sync ---- */

struct call {
	__u16 node;
	__u16 slot;
	bool asking;
	bool member; /* the members' call (no key) */
	bool ping; /* a PING to a node down at the last sync that has no key now */
	size_t from, cnt; /* lanes idx[from..from + cnt) */
};

struct sync_ctx {
	struct sluice_redis *r;
	const char *fleet, *member;
	const char (*mem)[24];
	const char *const *keys;
	const double *used;
	const size_t *idx; /* lanes by group */
	const __u16 *group; /* each lane's group */
	char live[40]; /* the share the live members hold */
	size_t max_elems;
	__u64 deadline;
};

/* What one node does in a round: its calls, in one exchange. */
struct job {
	struct sync_ctx *x;
	size_t node;
	struct call *calls; /* the round's, this node's among them */
	size_t ncalls;
	redisReply **rep; /* a reply a call (ASKING's +OK dropped) */
	struct sluice_redis_sync_stats st;
	int ret; /* the exchange failed: every call of the node is down */
	char err[SLUICE_ERR_LEN];
	bool bad; /* a reply was no answer: that call is down */
	char bad_err[SLUICE_ERR_LEN];
};

static void buf_lanes(struct sync_ctx *x, struct buf *b, const char *sha, const struct call *k)
{
	char pre[SLUICE_REDIS_FLEET_MAX + 32], num[40];
	size_t i, plen;

	sluice_cluster_prefix(x->fleet, x->group[x->idx[k->from]], pre, sizeof(pre));
	plen = strlen(pre);
	redis_buf_cmd(b, 3 + k->cnt + 1 + k->cnt);
	redis_buf_arg(b, "EVALSHA");
	redis_buf_arg(b, sha);
	snprintf(num, sizeof(num), "%zu", k->cnt);
	redis_buf_arg(b, num);
	for (i = 0; i < k->cnt; i++) {
		const char *key = x->keys[x->idx[k->from + i]];

		redis_buf_arg2(b, pre, plen, key, strlen(key));
	}
	redis_buf_arg(b, x->live);
	for (i = 0; i < k->cnt; i++) {
		snprintf(num, sizeof(num), "%.17g", x->used[x->idx[k->from + i]]);
		redis_buf_arg(b, num);
	}
}

static void *run_job(void *arg)
{
	struct job *j = arg;
	struct sync_ctx *x = j->x;
	struct sluice_redis *n = x->r->cl->node[j->node];
	char pre[SLUICE_REDIS_FLEET_MAX + 16];
	redisReply **all;
	size_t i, nrep = 0, at = 0;

	if (n->fd < 0) {
		j->ret = redis_connect(n, x->deadline, j->err, sizeof(j->err));
		if (j->ret)
			return NULL;
	}
	snprintf(pre, sizeof(pre), "sluice:{%s}:", x->fleet);
	n->out.len = 0;
	n->out.oom = false;
	for (i = 0; i < j->ncalls; i++) {
		const struct call *k = &j->calls[i];

		if (k->node != j->node)
			continue;
		if (k->asking) {
			redis_buf_cmd(&n->out, 1);
			redis_buf_arg(&n->out, "ASKING");
			nrep++;
		}
		if (k->member) {
			redis_buf_call(&n->out, n->sha, pre, x->member, x->mem, NULL, NULL, 0, 0);
		} else if (k->ping) {
			redis_buf_cmd(&n->out, 1);
			redis_buf_arg(&n->out, "PING");
		} else
			buf_lanes(x, &n->out, n->sha_lanes, k);
		nrep++;
		j->st.calls++;
	}
	all = calloc(nrep ? nrep : 1, sizeof(*all));
	if (!all) {
		j->ret = sluice_err(j->err, sizeof(j->err), -ENOMEM, "Couldn't allocate replies");
		return NULL;
	}
	j->ret = redis_exchange(n, &n->out, nrep, x->max_elems, 1, all, x->deadline, &j->st, j->err,
				sizeof(j->err));
	if (j->ret) {
		redis_drop(n);
	} else {
		for (i = 0; i < j->ncalls; i++) {
			if (j->calls[i].node != j->node)
				continue;
			if (j->calls[i].asking) {
				/* ASKING's +OK; an error there shows in the call's */
				freeReplyObject(all[at]);
				all[at++] = NULL;
			}
			j->rep[i] = all[at];
			all[at++] = NULL;
		}
	}
	redis_free_replies(all, nrep);
	free(all);
	return NULL;
}

/* Say a shard's fault, the first of the sync, and count the shards that
 * failed (node: an index, or NODES_MAX for a slot with no primary). */
static void fault(struct sluice_redis *r, size_t node, const char *why, __u32 *down)
{
	struct redis_cluster *c = r->cl;

	if (node < NODES_MAX && c->down[node])
		return;
	if (node < NODES_MAX)
		c->down[node] = true;
	if (!(*down)++)
		snprintf(c->fault, sizeof(c->fault), "shard %s: %s",
			 node < NODES_MAX ? c->node[node]->addr : "(none)", why);
	c->stale = true;
}

/* The lanes of call k get no answer this sync: -1 (the caller falls back). */
static void lanes_down(struct sync_ctx *x, const struct call *k, __s64 *debt)
{
	size_t i;

	for (i = 0; i < k->cnt; i++)
		debt[x->idx[k->from + i]] = -1;
}

/* Call k's lanes answer, x a reply of m integers >= 0. */
static int take_lanes(struct sync_ctx *x, struct sluice_redis *n, const struct call *k,
		      const redisReply *y, __s64 *debt, char *err, size_t len)
{
	size_t i;

	if (y->type != REDIS_REPLY_ARRAY || y->elements != k->cnt)
		return sluice_err(err, len, -EPROTO,
				  "Redis at %s answered the lanes' script with something other "
				  "than %zu integers",
				  n->addr, k->cnt);
	for (i = 0; i < k->cnt; i++)
		if (y->element[i]->type != REDIS_REPLY_INTEGER || y->element[i]->integer < 0)
			return sluice_err(err, len, -EPROTO,
					  "Redis at %s answered a debt that is no integer of 0 "
					  "or more for '%s'",
					  n->addr, x->keys[x->idx[k->from + i]]);
	for (i = 0; i < k->cnt; i++)
		debt[x->idx[k->from + i]] = y->element[i]->integer;
	return 0;
}

/*
 * Run the calls (*ncalls of them in calls, room for cap) until each is
 * answered or out of rounds: the lanes' debts into debt, the members'
 * answer into *live and st. Returns the members' call's result (0 when
 * there is none).
 */
static int run_calls(struct sync_ctx *x, struct call *calls, size_t ncalls, size_t cap, __s64 *debt,
		     __u32 *live, struct sluice_redis_sync_stats *st, char *err, size_t len)
{
	struct sluice_redis *r = x->r;
	struct redis_cluster *c = r->cl;
	struct call *next = calloc(cap, sizeof(*next));
	redisReply **rep = calloc(cap, sizeof(*rep));
	struct job *jobs = calloc(NODES_MAX, sizeof(*jobs));
	pthread_t th[NODES_MAX];
	bool started[NODES_MAX];
	int member_ret = 0, round;
	size_t i;

	if (!next || !rep || !jobs) {
		free(next);
		free(rep);
		free(jobs);
		return sluice_err(err, len, -ENOMEM, "Couldn't allocate %zu cluster calls", cap);
	}
	for (round = 0; ncalls && round < ROUNDS; round++) {
		bool any_moved = false;
		size_t nnext = 0;

		memset(rep, 0, ncalls * sizeof(*rep));
		memset(started, 0, sizeof(started));
		for (i = 0; i < ncalls; i++) {
			struct job *j = &jobs[calls[i].node];

			if (started[calls[i].node])
				continue;
			memset(j, 0, sizeof(*j));
			j->x = x;
			j->node = calls[i].node;
			j->calls = calls;
			j->ncalls = ncalls;
			j->rep = rep;
			started[j->node] = true;
		}
		for (i = 0; i < NODES_MAX; i++) {
			if (!started[i])
				continue;
			/* one thread a node, so that the shards work at once */
			if (pthread_create(&th[i], NULL, run_job, &jobs[i])) {
				run_job(&jobs[i]);
				started[i] = false; /* done: nothing to join */
				jobs[i].node = i;
			}
		}
		for (i = 0; i < NODES_MAX; i++)
			if (started[i])
				pthread_join(th[i], NULL);
		st->round_trips++;
		for (i = 0; i < NODES_MAX; i++) {
			if (!jobs[i].x || jobs[i].node != i)
				continue;
			st->calls += jobs[i].st.calls;
			st->bytes_in += jobs[i].st.bytes_in;
			st->bytes_out += jobs[i].st.bytes_out;
		}
		for (i = 0; i < ncalls; i++) {
			struct call *k = &calls[i];
			struct job *j = &jobs[k->node];
			struct sluice_redis *n = c->node[k->node];
			const redisReply *y = rep[i];
			char host[64], port[8], why[SLUICE_ERR_LEN];
			bool ask;
			__u16 slot;
			int o, ret;

			if (j->ret) {
				/* the node failed the exchange: its calls are down */
				if (k->member)
					member_ret = sluice_err(err, len, j->ret, "%s", j->err);
				else
					lanes_down(x, k, debt);
				continue;
			}
			if (y->type == REDIS_REPLY_ERROR &&
			    !sluice_cluster_parse_redirect(y->str, n->host, &ask, &slot, host,
							   port) &&
			    slot == k->slot && (o = node_at(r, host, port)) >= 0) {
				next[nnext] = *k;
				next[nnext].node = (__u16)o;
				next[nnext].asking = ask;
				nnext++;
				if (ask) {
					st->asked++;
				} else {
					st->moved++;
					any_moved = true;
				}
				continue;
			}
			if (y->type == REDIS_REPLY_ERROR && y->str &&
			    (!strncmp(y->str, "TRYAGAIN", 8) || redis_is_noscript(y))) {
				/* keys of a slot half migrated: one a call, which the
				 * node serves or redirects; NOSCRIPT: the node
				 * reconnects, and loads the scripts again */
				size_t m = k->cnt > 1 ? k->cnt : 1, q;

				if (redis_is_noscript(y))
					redis_drop(n);
				for (q = 0; q < m && nnext < cap; q++) {
					next[nnext] = *k;
					if (k->cnt > 1) {
						next[nnext].from = k->from + q;
						next[nnext].cnt = 1;
					}
					nnext++;
				}
				continue;
			}
			if (k->member) {
				member_ret = redis_take_call(n, y, x->fleet, NULL, 0, 0, NULL, live,
							     st, err, len);
				continue;
			}
			if (k->ping) {
				if (y->type == REDIS_REPLY_STATUS && !strcmp(y->str, "PONG"))
					continue;
				ret = y->type == REDIS_REPLY_ERROR ?
					      redis_reply_error(n, y, "PING", why, sizeof(why)) :
					      sluice_err(why, sizeof(why), -EPROTO,
							 "Redis at %s answered PING with no PONG",
							 n->addr);
				if (!j->bad)
					snprintf(j->bad_err, sizeof(j->bad_err), "%s", why);
				j->bad = true;
				continue;
			}
			ret = take_lanes(x, n, k, y, debt, why, sizeof(why));
			if (ret && y->type == REDIS_REPLY_ERROR)
				redis_reply_error(n, y, "the lanes' script", why, sizeof(why));
			if (ret) {
				lanes_down(x, k, debt);
				if (!j->bad)
					snprintf(j->bad_err, sizeof(j->bad_err), "%s", why);
				j->bad = true;
			}
		}
		for (i = 0; i < NODES_MAX; i++)
			if (jobs[i].x && jobs[i].node == i && (jobs[i].ret || jobs[i].bad))
				fault(r, i, jobs[i].ret ? jobs[i].err : jobs[i].bad_err,
				      &st->shards_down);
		memset(jobs, 0, NODES_MAX * sizeof(*jobs));
		redis_free_replies(rep, ncalls);
		if (any_moved) {
			char why[SLUICE_ERR_LEN];

			/* MOVED: the map is read again, and each call goes
			 * where it says now (the node named, when it cannot) */
			if (!read_map(r, x->deadline, why, sizeof(why)))
				for (i = 0; i < nnext; i++)
					if (!next[i].asking && c->owner[next[i].slot] != NO_NODE)
						next[i].node = c->owner[next[i].slot];
		}
		memcpy(calls, next, nnext * sizeof(*next));
		ncalls = nnext;
	}
	/* out of rounds: what is left is down */
	for (i = 0; i < ncalls; i++) {
		if (calls[i].member)
			member_ret =
				sluice_err(err, len, -EPROTO,
					   "Redis Cluster %s redirected the members' call more "
					   "than %d times",
					   r->addr + 8, ROUNDS);
		else
			lanes_down(x, &calls[i], debt);
		fault(r, calls[i].node, "redirected past the sync's rounds", &st->shards_down);
	}
	free(next);
	free(rep);
	free(jobs);
	return member_ret;
}

static void group_slots(struct redis_cluster *c, const char *fleet)
{
	char pre[SLUICE_REDIS_FLEET_MAX + 32];
	unsigned int g;

	if (!strcmp(c->fleet, fleet))
		return;
	snprintf(c->fleet, sizeof(c->fleet), "%s", fleet);
	for (g = 0; g < SLUICE_CLUSTER_GROUPS; g++) {
		sluice_cluster_prefix(fleet, g, pre, sizeof(pre));
		c->group_slot[g] = sluice_key_slot(pre, strlen(pre));
	}
}

int redis_cluster_sync(struct sluice_redis *r, const char *fleet, const char *member,
		       const char (*mem)[24], size_t n, const char *const *keys,
		       const double *used_us, size_t batch, __s64 *debt_us, __u32 *live,
		       struct sluice_redis_sync_stats *st, __u64 deadline, char *err, size_t len)
{
	struct redis_cluster *c = r->cl;
	struct sync_ctx x = { .r = r,
			      .fleet = fleet,
			      .member = member,
			      .mem = mem,
			      .keys = keys,
			      .used = used_us,
			      .deadline = deadline };
	size_t count[SLUICE_CLUSTER_GROUPS + 1] = { 0 }, cap, ncalls = 0, i, g;
	size_t *idx = NULL;
	__u16 *group = NULL;
	struct call *calls = NULL;
	char boxes[SLUICE_REDIS_FLEET_MAX + 16];
	double share;
	int ret;

	c->fault[0] = '\0';
	memcpy(c->was_down, c->down, sizeof(c->down));
	memset(c->down, 0, sizeof(c->down));
	if (!c->have_map || c->stale) {
		st->reconnected = true;
		ret = read_map(r, deadline, err, len);
		if (ret && !c->have_map)
			return ret;
	}
	st->shards = c->shards;
	group_slots(c, fleet);
	cap = 2 * (n + SLUICE_CLUSTER_GROUPS) + 2 + NODES_MAX;
	calls = calloc(cap, sizeof(*calls));
	idx = calloc(n ? n : 1, sizeof(*idx));
	group = calloc(n ? n : 1, sizeof(*group));
	if (!calls || !idx || !group) {
		ret = sluice_err(err, len, -ENOMEM, "Couldn't allocate a sync of %zu keys", n);
		goto out;
	}
	x.idx = idx;
	x.group = group;
	x.max_elems = 3 + (batch < n ? batch : n);
	/* The members first, on the shard of slot CRC16(FLEET): N, and the
	 * share the live members hold, for the lanes' calls. */
	snprintf(boxes, sizeof(boxes), "sluice:{%s}:boxes", fleet);
	calls[0] = (struct call){ .member = true, .slot = sluice_key_slot(boxes, strlen(boxes)) };
	calls[0].node = c->owner[calls[0].slot];
	if (calls[0].node == NO_NODE) {
		c->stale = true;
		ret = sluice_err(err, len, -EHOSTUNREACH,
				 "Redis Cluster %s has no primary for slot %u, where the members "
				 "of fleet %s live",
				 r->addr + 8, calls[0].slot, fleet);
		goto out;
	}
	ret = run_calls(&x, calls, 1, cap, debt_us, live, st, err, len);
	if (ret)
		goto out;
	share = 1.0 - (double)st->reserve_ppm / 1e6;
	snprintf(x.live, sizeof(x.live), "%.17g", share < 1.0 / 65536 ? 1.0 / 65536 : share);
	/* The lanes by group (a counting sort), then a call per batch of a group. */
	for (i = 0; i < n; i++) {
		group[i] = (__u16)sluice_cluster_group(keys[i]);
		count[group[i] + 1]++;
	}
	for (g = 0; g < SLUICE_CLUSTER_GROUPS; g++)
		count[g + 1] += count[g];
	for (i = 0; i < n; i++)
		idx[count[group[i]]++] = i;
	for (i = 0; i < n;) {
		size_t from = i, gr = group[idx[i]];
		__u16 slot = c->group_slot[gr];

		while (i < n && group[idx[i]] == gr && i - from < batch)
			i++;
		if (c->owner[slot] == NO_NODE) {
			struct call k = { .from = from, .cnt = i - from };

			lanes_down(&x, &k, debt_us);
			fault(r, NODES_MAX, "a slot with no primary in the map", &st->shards_down);
			continue;
		}
		calls[ncalls++] = (struct call){
			.node = c->owner[slot], .slot = slot, .from = from, .cnt = i - from
		};
	}
	/*
	 * A shard down at the last sync with no key now (its keys are held,
	 * their buckets raised: nothing to push) is asked PING, so that it is
	 * said down until it answers, not up because it was not asked.
	 */
	for (g = 0; g < NODES_MAX; g++) {
		bool asked = false;

		for (i = 0; i < ncalls && !asked; i++)
			asked = calls[i].node == g;
		if (c->was_down[g] && !asked && g < c->nnodes)
			calls[ncalls++] = (struct call){ .node = (__u16)g, .ping = true };
	}
	ret = run_calls(&x, calls, ncalls, cap, debt_us, live, st, err, len);
out:
	free(calls);
	free(idx);
	free(group);
	return ret;
}
