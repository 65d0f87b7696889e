// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * One sync of the fleet agent on a Redis Cluster (redis_cluster.c has the
 * nodes and the slot map; the top of that file says where the keys live,
 * and what a shard that fails does). The members' call first, on the shard
 * of the fleet's own slot; then the keys by group, a call per batch of a
 * group, every primary's calls in one exchange on a thread of its own, all
 * primaries at once, under the sync's one deadline; MOVED, ASK, TRYAGAIN
 * and NOSCRIPT followed for at most CLUSTER_ROUNDS exchanges; and a PING to
 * each shard down at the last sync that has no key now.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>

#include "redis_int.h"
#include "redis_cluster.h"

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
 * failed (node: an index, or CLUSTER_NODES_MAX for a slot with no primary). */
static void fault(struct sluice_redis *r, size_t node, const char *why, __u32 *down)
{
	struct redis_cluster *c = r->cl;

	if (node < CLUSTER_NODES_MAX && c->down[node])
		return;
	if (node < CLUSTER_NODES_MAX)
		c->down[node] = true;
	if (!(*down)++)
		snprintf(c->fault, sizeof(c->fault), "shard %s: %s",
			 node < CLUSTER_NODES_MAX ? c->node[node]->addr : "(none)", why);
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
	struct job *jobs = calloc(CLUSTER_NODES_MAX, sizeof(*jobs));
	pthread_t th[CLUSTER_NODES_MAX];
	bool started[CLUSTER_NODES_MAX];
	int member_ret = 0, round;
	size_t i;

	if (!next || !rep || !jobs) {
		free(next);
		free(rep);
		free(jobs);
		return sluice_err(err, len, -ENOMEM, "Couldn't allocate %zu cluster calls", cap);
	}
	for (round = 0; ncalls && round < CLUSTER_ROUNDS; round++) {
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
		for (i = 0; i < CLUSTER_NODES_MAX; i++) {
			if (!started[i])
				continue;
			/* one thread a node, so that the shards work at once */
			if (pthread_create(&th[i], NULL, run_job, &jobs[i])) {
				run_job(&jobs[i]);
				started[i] = false; /* done: nothing to join */
				jobs[i].node = i;
			}
		}
		for (i = 0; i < CLUSTER_NODES_MAX; i++)
			if (started[i])
				pthread_join(th[i], NULL);
		st->round_trips++;
		for (i = 0; i < CLUSTER_NODES_MAX; i++) {
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
			    slot == k->slot && (o = redis_cluster_node_at(r, host, port)) >= 0) {
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
		for (i = 0; i < CLUSTER_NODES_MAX; i++)
			if (jobs[i].x && jobs[i].node == i && (jobs[i].ret || jobs[i].bad))
				fault(r, i, jobs[i].ret ? jobs[i].err : jobs[i].bad_err,
				      &st->shards_down);
		memset(jobs, 0, CLUSTER_NODES_MAX * sizeof(*jobs));
		redis_free_replies(rep, ncalls);
		if (any_moved) {
			char why[SLUICE_ERR_LEN];

			/* MOVED: the map is read again, and each call goes
			 * where it says now (the node named, when it cannot) */
			if (!redis_cluster_read_map(r, x->deadline, why, sizeof(why)))
				for (i = 0; i < nnext; i++)
					if (!next[i].asking &&
					    c->owner[next[i].slot] != CLUSTER_NO_NODE)
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
					   r->addr + 8, CLUSTER_ROUNDS);
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
		ret = redis_cluster_read_map(r, deadline, err, len);
		if (ret && !c->have_map)
			return ret;
	}
	st->shards = c->shards;
	group_slots(c, fleet);
	cap = 2 * (n + SLUICE_CLUSTER_GROUPS) + 2 + CLUSTER_NODES_MAX;
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
	if (calls[0].node == CLUSTER_NO_NODE) {
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
		if (c->owner[slot] == CLUSTER_NO_NODE) {
			struct call k = { .from = from, .cnt = i - from };

			lanes_down(&x, &k, debt_us);
			fault(r, CLUSTER_NODES_MAX, "a slot with no primary in the map",
			      &st->shards_down);
			continue;
		}
		calls[ncalls++] = (struct call){
			.node = c->owner[slot], .slot = slot, .from = from, .cnt = i - from
		};
	}
	/*
	 * A shard down at the last sync with no key now (its keys are held,
	 * their buckets raised: nothing to push) is asked PING, so that it is
	 * said down until it answers, not up because it was not asked. Only
	 * while the map still names it a primary: once the cluster has failed
	 * it over (the map read again after its fault gives its slots to its
	 * replica), its keys are the new primary's, and the dead node, which
	 * would never answer, must not keep the shard said down for ever.
	 */
	for (g = 0; g < CLUSTER_NODES_MAX; g++) {
		bool asked = false;

		for (i = 0; i < ncalls && !asked; i++)
			asked = calls[i].node == g;
		if (c->was_down[g] && !asked && g < c->nnodes && c->primary[g])
			calls[ncalls++] = (struct call){ .node = (__u16)g, .ping = true };
	}
	ret = run_calls(&x, calls, ncalls, cap, debt_us, live, st, err, len);
out:
	free(calls);
	free(idx);
	free(group);
	return ret;
}
