// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What the fleet agent's Redis Cluster client (redis_cluster.c) reads from
 * the cluster: the slot map of CLUSTER SLOTS, a MOVED or ASK redirection,
 * checked against what a node can say (address literals, slots and ports
 * in range, no slot given two primaries), and the name a fleet key has in
 * a cluster. No connection here: see redis_cluster.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <hiredis/hiredis.h>

#include "libsluice.h"
#include "redis_cluster.h"

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
