/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Inside the fleet agent's Redis client: what redis.c (commands, the
 * exchange, the script and the sync) and redis_net.c (the address, the
 * password file and the socket under the deadline) share. Not for users of
 * the client: see redis.h.
 */
#ifndef SLUICE_REDIS_INT_H
#define SLUICE_REDIS_INT_H

#include <netdb.h>
#include <stdbool.h>
#include <time.h>
#include <sys/un.h>
#include <hiredis/hiredis.h>

#include "libsluice.h"
#include "redis.h"
#include "crc16.h"
#include "redis_cluster.h"

#define DEFAULT_PORT "6379"
#define ADDR_FORMS "unix:/path, /path, host:port, [v6addr]:port or host (port " DEFAULT_PORT ")"
#define PASSWORD_MAX 4096

/* A name lookup (getaddrinfo_a) that may outlive the connect that started it:
 * the next connect waits for the same one. */
struct lookup {
	struct gaicb cb;
	struct addrinfo hints;
	char host[256];
	char port[8];
};

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

/* A sentinel's address (an address literal, or a unix socket). */
struct redis_ep {
	bool is_unix;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char host[64];
	char port[8];
};

struct sluice_redis {
	char *addr; /* as given; under Sentinel "NAME at HOST:PORT", rewritten */
	bool is_unix;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char host[256];
	char port[8];
	bool numeric; /* host is an address literal: no lookup */
	char *password_file;
	char *password;
	size_t password_len;
	__u64 timeout_ns;
	int fd; /* -1: not connected */
	redisReader *rd;
	char sha[41]; /* of the script, from SCRIPT LOAD */
	struct lookup *lk;
	struct buf out;
	/* sluice_redis_set_member(): what each sync tells the fleet */
	__u64 horizon_ms;
	__u32 share;
	bool share_given;
	/* Redis Cluster (redis_cluster.c): the client's nodes, NULL without;
	 * a node itself is a sluice_redis with cluster_node set, which loads
	 * the lanes' script too (sha_lanes) */
	struct redis_cluster *cl;
	bool cluster_node;
	char sha_lanes[41];
	/* Sentinel (redis_sentinel.c): the primary's name, NULL without */
	char *master;
	struct redis_ep *sentinels;
	size_t nsentinels;
};

#define REDIS_ADDR_SHOWN 200 /* r->addr's size under Sentinel */

static inline struct timespec redis_ts_of(__u64 ns)
{
	return (struct timespec){ .tv_sec = ns / SLUICE_NS_PER_SEC,
				  .tv_nsec = ns % SLUICE_NS_PER_SEC };
}

/* redis_net.c */
int redis_parse_addr(struct sluice_redis *r, const char *addr, char *err, size_t len);
int redis_read_password(struct sluice_redis *r, const char *path, char *err, size_t len);
void redis_forget_password(struct sluice_redis *r);
void redis_drop(struct sluice_redis *r);
int redis_wait_fd(int fd, short events, __u64 deadline);
void redis_lookup_free(struct lookup *lk);
int redis_open_socket(struct sluice_redis *r, __u64 deadline, char *err, size_t len);
/* A connection to r's address (r->fd), its reply reader, its output
 * emptied: 0, or -errno with nothing open (err says why). */
int redis_open(struct sluice_redis *r, __u64 deadline, char *err, size_t len);

/* redis.c */
void redis_buf_cmd(struct buf *b, size_t argc);
void redis_buf_arg(struct buf *b, const char *s);
void redis_buf_arg2(struct buf *b, const char *pre, size_t plen, const char *s, size_t slen);
struct sluice_redis_sync_stats;
int redis_connect(struct sluice_redis *r, __u64 deadline, char *err, size_t len);
int redis_reply_error(struct sluice_redis *r, const redisReply *x, const char *what, char *err,
		      size_t len);
void redis_free_replies(redisReply **rep, size_t n);
bool redis_is_noscript(const redisReply *x);
/* The member's ttl, horizon and share as the sync script takes them. */
void redis_member_args(const struct sluice_redis *r, __u64 ttl_ms, char (*mem)[24]);
/* One EVALSHA of the sync script: keys [from, to) with prefix pre (none:
 * the members only), and its answer's checks. */
void redis_buf_call(struct buf *b, const char *sha, const char *pre, const char *member,
		    const char (*mem)[24], const char *const *keys, const double *used, size_t from,
		    size_t to);
int redis_take_call(struct sluice_redis *r, const redisReply *x, const char *fleet,
		    const char *const *keys, size_t from, size_t to, __s64 *debt, __u32 *live,
		    struct sluice_redis_sync_stats *st, char *err, size_t len);
/* The largest array the replies' scan lets through, and how deep */
#define REDIS_SCAN_DEPTH 4
int redis_exchange(struct sluice_redis *r, const struct buf *out, size_t nrep, size_t max_elems,
		   int depth, redisReply **rep, __u64 deadline, struct sluice_redis_sync_stats *st,
		   char *err, size_t len);

/* redis_sentinel.c: lists of "HOST:PORT[,...]" (what: "sentinel", "cluster
 * node"), address literals, a port given, or unix:PATH */
int redis_parse_eps(const char *list, const char *what, struct redis_ep *eps, size_t max, size_t *n,
		    char *err, size_t len);
/* r's address: the literal host and port */
void redis_use_host(struct sluice_redis *r, const char *host, const char *port);

/* redis_cluster.c: the nodes and the slot map (redis_cluster_sync.c: a sync) */
#define CLUSTER_NODES_MAX 64
#define CLUSTER_SEEDS_MAX 16
#define CLUSTER_NO_NODE 0xffff
#define CLUSTER_ROUNDS 5 /* exchanges a sync, redirections followed */

struct redis_cluster {
	struct redis_ep seeds[CLUSTER_SEEDS_MAX];
	size_t nseeds;
	struct sluice_redis *node[CLUSTER_NODES_MAX];
	size_t nnodes;
	__u16 owner[SLUICE_CLUSTER_SLOTS]; /* node index, CLUSTER_NO_NODE: no primary */
	bool have_map;
	bool stale; /* read the map again at the next sync */
	__u32 shards;
	/* the group slots of this fleet (computed once: the name is fixed) */
	char fleet[SLUICE_REDIS_FLEET_MAX + 1];
	__u16 group_slot[SLUICE_CLUSTER_GROUPS];
	char fault[SLUICE_ERR_LEN];
	/* the nodes that own a slot in the map: a primary failed over by the
	 * cluster owns none, is a shard no more, and is not asked PING */
	bool primary[CLUSTER_NODES_MAX];
	bool down[CLUSTER_NODES_MAX]; /* the nodes that failed this sync */
	bool was_down[CLUSTER_NODES_MAX]; /* and the last one */
};
/* The node at host:port (a literal): its index, added when new; -1 when
 * the table is full or no memory. */
int redis_cluster_node_at(struct sluice_redis *r, const char *host, const char *port);
/* Read the slot map: of the primaries it names, then of the nodes given. */
int redis_cluster_read_map(struct sluice_redis *r, __u64 deadline, char *err, size_t len);
int redis_cluster_open(struct sluice_redis *r, const char *seeds, char *err, size_t len);
int redis_cluster_connect(struct sluice_redis *r, __u64 deadline, char *err, size_t len);
int redis_cluster_sync(struct sluice_redis *r, const char *fleet, const char *member,
		       const char (*mem)[24], size_t n, const char *const *keys,
		       const double *used_us, size_t batch, __s64 *debt_us, __u32 *live,
		       struct sluice_redis_sync_stats *st, __u64 deadline, char *err, size_t len);
void redis_cluster_close(struct sluice_redis *r);
bool redis_cluster_ready(const struct sluice_redis *r);

/* redis_sentinel.c */
int redis_sentinel_open(struct sluice_redis *r, const char *list, const char *master, char *err,
			size_t len);
/* Ask the sentinels, in turn, for the primary: r's address is then its. */
int redis_sentinel_primary(struct sluice_redis *r, __u64 deadline, char *err, size_t len);

#endif /* SLUICE_REDIS_INT_H */
