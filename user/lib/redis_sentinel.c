// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fleet agent's Redis client under Sentinel (--redis-sentinel
 * HOST:PORT[,...] --redis-master NAME): every connect asks the sentinels,
 * one after the other, for the address of the primary (SENTINEL
 * get-master-addr-by-name NAME), and connects there; redis.c then checks its
 * ROLE in the connect's round trip. After a failover the old primary is gone
 * (a failed sync) or a replica (a write refused with READONLY, a failed
 * sync): either drops the connection, so the next sync asks again and finds
 * the new one. Meanwhile the box is in an outage, rate/N, as for any other.
 *
 * hiredis 0.14 has no Sentinel client: this is the little of one the agent
 * needs, on redis.c's exchange (the one deadline, the replies' shape
 * checked). Sentinels and the primary are address literals (or a unix
 * socket for a sentinel): no name lookup runs beside the connect's own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <hiredis/hiredis.h>

#include "redis_int.h"

#define SENTINELS_MAX 16

/* One address of a list (a sentinel's, a cluster node's) into e; -EINVAL
 * and why. */
static int parse_one(const char *s, size_t n, const char *what, struct redis_ep *e, char *err,
		     size_t len)
{
	struct sluice_redis *t = calloc(1, sizeof(*t));
	char one[300];
	int ret;

	if (!t)
		return sluice_err(err, len, -ENOMEM, "Couldn't allocate a sentinel's address");
	if (!n || n >= sizeof(one)) {
		free(t);
		return sluice_err(err, len, -EINVAL,
				  "a %s's address is empty or too long: give "
				  "HOST:PORT[,HOST:PORT...]",
				  what);
	}
	memcpy(one, s, n);
	one[n] = '\0';
	ret = redis_parse_addr(t, one, err, len);
	if (!ret && !t->is_unix && !t->numeric)
		ret = sluice_err(err, len, -EINVAL,
				 "%s '%s' is a name: give its address (IPv4, [IPv6]:port, "
				 "or unix:PATH)",
				 what, one);
	if (!ret && !t->is_unix && !strchr(one + (one[0] == '[' ? strcspn(one, "]") : 0), ':'))
		ret = sluice_err(err, len, -EINVAL,
				 "%s '%s' has no port: give HOST:PORT (a sentinel listens on "
				 "26379 by default, a cluster node on 6379)",
				 what, one);
	if (!ret) {
		e->is_unix = t->is_unix;
		memcpy(e->path, t->path, sizeof(e->path));
		size_t hl = strnlen(t->host, sizeof(e->host) - 1); /* an address: short */

		memcpy(e->host, t->host, hl);
		e->host[hl] = '\0';
		memcpy(e->port, t->port, sizeof(e->port));
	}
	free(t);
	return ret;
}

int redis_parse_eps(const char *list, const char *what, struct redis_ep *eps, size_t max, size_t *n,
		    char *err, size_t len)
{
	const char *p = list;
	int ret;

	*n = 0;
	if (!list || !*list)
		return sluice_err(err, len, -EINVAL, "no %s given: give HOST:PORT[,...]", what);
	for (;;) {
		size_t k = strcspn(p, ",");

		if (*n >= max)
			return sluice_err(err, len, -EINVAL, "more than %zu %ss", max, what);
		ret = parse_one(p, k, what, &eps[*n], err, len);
		if (ret)
			return ret;
		++*n;
		if (!p[k])
			return 0;
		p += k + 1;
	}
}

static int parse_list(const char *list, struct redis_ep *eps, size_t *n, char *err, size_t len)
{
	return redis_parse_eps(list, "sentinel", eps, SENTINELS_MAX, n, err, len);
}

int sluice_redis_check_sentinels(const char *s, char *err, size_t len)
{
	struct redis_ep eps[SENTINELS_MAX];
	size_t n;

	return parse_list(s, eps, &n, err, len);
}

int redis_sentinel_open(struct sluice_redis *r, const char *list, const char *master, char *err,
			size_t len)
{
	struct redis_ep eps[SENTINELS_MAX];
	int ret;

	if (!master || !*master)
		return sluice_err(err, len, -EINVAL,
				  "Sentinel needs the primary's name (--redis-master)");
	ret = parse_list(list, eps, &r->nsentinels, err, len);
	if (ret)
		return ret;
	r->sentinels = calloc(r->nsentinels, sizeof(*r->sentinels));
	r->master = strdup(master);
	r->addr = calloc(1, REDIS_ADDR_SHOWN);
	if (!r->sentinels || !r->master || !r->addr)
		return sluice_err(err, len, -ENOMEM, "Couldn't allocate a Redis client");
	memcpy(r->sentinels, eps, r->nsentinels * sizeof(*eps));
	snprintf(r->addr, REDIS_ADDR_SHOWN, "%s (via sentinels)", master);
	return 0;
}

void redis_use_host(struct sluice_redis *r, const char *host, const char *port)
{
	r->is_unix = false;
	r->numeric = true;
	snprintf(r->host, sizeof(r->host), "%s", host);
	snprintf(r->port, sizeof(r->port), "%s", port);
}

/* r's endpoint: sentinel e, or the primary host:port (an address). */
static void use_ep(struct sluice_redis *r, const struct redis_ep *e)
{
	r->is_unix = e->is_unix;
	memcpy(r->path, e->path, sizeof(r->path));
	snprintf(r->host, sizeof(r->host), "%s", e->host);
	snprintf(r->port, sizeof(r->port), "%s", e->port);
	r->numeric = !e->is_unix;
	if (e->is_unix)
		snprintf(r->addr, REDIS_ADDR_SHOWN, "sentinel unix:%s", e->path);
	else
		snprintf(r->addr, REDIS_ADDR_SHOWN,
			 strchr(e->host, ':') ? "sentinel [%s]:%s" : "sentinel %s:%s", e->host,
			 e->port);
}

/* The sentinel's answer x: {ip, port} into e. */
static int take_primary(struct sluice_redis *r, const redisReply *x, struct redis_ep *e, char *err,
			size_t len)
{
	struct in6_addr a6;
	struct in_addr a4;
	char *end;
	long port;

	if (x->type == REDIS_REPLY_ERROR)
		return sluice_err(err, len, -EPROTO, "%s answered with an error: '%s'", r->addr,
				  x->str);
	if (x->type == REDIS_REPLY_NIL)
		return sluice_err(err, len, -ENOENT,
				  "%s knows no primary named %s: check --redis-master", r->addr,
				  r->master);
	if (x->type != REDIS_REPLY_ARRAY || x->elements != 2 ||
	    x->element[0]->type != REDIS_REPLY_STRING || x->element[1]->type != REDIS_REPLY_STRING)
		return sluice_err(err, len, -EPROTO,
				  "%s answered with no address: is it a sentinel?", r->addr);
	errno = 0;
	port = strtol(x->element[1]->str, &end, 10);
	if (x->element[0]->len >= sizeof(e->host) || *end || errno || port < 1 || port > 65535 ||
	    (inet_pton(AF_INET, x->element[0]->str, &a4) != 1 &&
	     inet_pton(AF_INET6, x->element[0]->str, &a6) != 1))
		return sluice_err(err, len, -EPROTO,
				  "%s named the primary of %s '%s' port '%s', which is no "
				  "address: give the sentinels addresses, not names "
				  "(resolve-hostnames no)",
				  r->addr, r->master, x->element[0]->str, x->element[1]->str);
	memset(e, 0, sizeof(*e));
	snprintf(e->host, sizeof(e->host), "%s", x->element[0]->str);
	snprintf(e->port, sizeof(e->port), "%ld", port);
	return 0;
}

/* Ask sentinel s for the primary, by the deadline. */
static int ask_one(struct sluice_redis *r, const struct redis_ep *s, struct redis_ep *primary,
		   __u64 deadline, char *err, size_t len)
{
	redisReply *rep = NULL;
	int ret;

	use_ep(r, s);
	ret = redis_open(r, deadline, err, len);
	if (ret)
		return ret;
	redis_buf_cmd(&r->out, 3);
	redis_buf_arg(&r->out, "SENTINEL");
	redis_buf_arg(&r->out, "get-master-addr-by-name");
	redis_buf_arg(&r->out, r->master);
	ret = redis_exchange(r, &r->out, 1, 2, 1, &rep, deadline, NULL, err, len);
	if (!ret)
		ret = take_primary(r, rep, primary, err, len);
	if (rep)
		freeReplyObject(rep);
	redis_drop(r);
	return ret;
}

int redis_sentinel_primary(struct sluice_redis *r, __u64 deadline, char *err, size_t len)
{
	char why[SLUICE_ERR_LEN] = "", d[32];
	struct redis_ep primary;
	size_t i;
	int ret = -ENOENT;

	for (i = 0; i < r->nsentinels; i++) {
		__u64 now = sluice_now_ns();
		/* The deadline shared among the sentinels left to ask: one
		 * that hangs leaves the others their time. */
		__u64 mine = now >= deadline ? deadline :
					       now + (deadline - now) / (r->nsentinels - i);

		ret = ask_one(r, &r->sentinels[i], &primary, mine, why, sizeof(why));
		if (!ret)
			break;
	}
	if (ret) {
		sluice_format_duration(r->timeout_ns, d, sizeof(d));
		snprintf(r->addr, REDIS_ADDR_SHOWN, "%s (via sentinels)", r->master);
		return sluice_err(err, len, ret == -EACCES ? -EPROTO : ret,
				  "No sentinel named the primary of %s within %s (the last: %s)",
				  r->master, d, why);
	}
	/* The primary's address, for the connect and every message after. */
	redis_use_host(r, primary.host, primary.port);
	snprintf(r->addr, REDIS_ADDR_SHOWN,
		 strchr(primary.host, ':') ? "%s at [%s]:%s" : "%s at %s:%s", r->master,
		 primary.host, primary.port);
	return 0;
}
