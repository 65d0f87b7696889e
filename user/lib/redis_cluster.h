/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the fleet agent's Redis Cluster client (redis_cluster.c) reads from
 * the cluster, for it and for its tests: the slot map of CLUSTER SLOTS, a
 * MOVED or ASK redirection, and the name a fleet key has in a cluster. No
 * connection here: a reply in, its meaning out, or -EPROTO / -EINVAL and a
 * sentence that says what was wrong with it.
 */
#ifndef SLUICE_REDIS_CLUSTER_H
#define SLUICE_REDIS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <hiredis/hiredis.h>

#include "crc16.h"

/* Fleet keys go in this many groups, each one hash tag (one slot): see
 * redis_cluster.c for why not one slot a key. */
#define SLUICE_CLUSTER_GROUPS 1024
/* The most slot ranges a CLUSTER SLOTS answer may hold: one per slot. */
#define SLUICE_CLUSTER_RANGES SLUICE_CLUSTER_SLOTS

struct sluice_slot_range {
	__u16 from, to; /* slots, both included */
	char host[64]; /* the primary's address literal */
	char port[8];
};

/*
 * CLUSTER SLOTS's answer x: {{from, to, {ip, port, id...}, replicas...}...}
 * into out (at most max ranges), *n of them. An empty ip is the node that
 * was asked (asked_host). Refused with -EPROTO: no array, a range out of
 * 0..16383 or backwards, two ranges that share a slot, an ip that is no
 * address literal, a port out of 1..65535, more ranges than max.
 */
int sluice_cluster_parse_slots(const redisReply *x, const char *asked_host,
			       struct sluice_slot_range *out, size_t max, size_t *n, char *err,
			       size_t len);
/*
 * An error reply's text s: "MOVED SLOT HOST:PORT" or "ASK SLOT HOST:PORT"
 * (HOST may be empty: the node asked, asked_host). 0 and *ask, *slot, host
 * (64 bytes) and port (8); -EINVAL for any other text or a malformed one.
 */
int sluice_cluster_parse_redirect(const char *s, const char *asked_host, bool *ask, __u16 *slot,
				  char *host, char *port);
/* Which of the SLUICE_CLUSTER_GROUPS groups key (the caller's name of it,
 * without the prefix) is in. */
unsigned int sluice_cluster_group(const char *key);
/* The prefix of a key of group g of fleet: "sluice:{FLEET#gG}:". */
void sluice_cluster_prefix(const char *fleet, unsigned int g, char *buf, size_t len);

#endif /* SLUICE_REDIS_CLUSTER_H */
