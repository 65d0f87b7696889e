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
struct sluice_redis_sync_stats;
int redis_exchange(struct sluice_redis *r, const struct buf *out, size_t nrep, size_t max_elems,
		   int depth, redisReply **rep, __u64 deadline, struct sluice_redis_sync_stats *st,
		   char *err, size_t len);

/* redis_sentinel.c */
int redis_sentinel_open(struct sluice_redis *r, const char *list, const char *master, char *err,
			size_t len);
/* Ask the sentinels, in turn, for the primary: r's address is then its. */
int redis_sentinel_primary(struct sluice_redis *r, __u64 deadline, char *err, size_t len);

#endif /* SLUICE_REDIS_INT_H */
