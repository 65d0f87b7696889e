/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The fleet agent's Redis client (redis.c): one pipelined round trip a sync
 * interval that pushes each key's local usage to a Lua script, which advances
 * the key's global GCRA state in Redis and answers with its debt.
 *
 * Every call has its own deadline (opts.timeout_ns) and nothing blocks past it:
 * not a connect, not a stopped Redis, not a name lookup. Functions return 0 or
 * -errno, and write a sentence into err that names the address, the value that
 * was wrong and what to do.
 *
 * Keys in Redis: "sluice:{FLEET}:" + the caller's key, the members in the
 * sorted set "sluice:{FLEET}:boxes" and their shares in the hash
 * "sluice:{FLEET}:share". Debts are durations (the key's
 * global theoretical arrival time minus Redis's own clock, in microseconds),
 * so the boxes' clocks never have to agree with each other or with Redis.
 */
#ifndef SLUICE_REDIS_H
#define SLUICE_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* What sluice_redis_sync() sends when the caller's batch is 0. */
#define SLUICE_REDIS_BATCH 256
/* A fleet name: 1 to this many characters of [A-Za-z0-9._-]. */
#define SLUICE_REDIS_FLEET_MAX 64

struct sluice_redis; /* opaque */

struct sluice_redis_opts {
	/* "unix:/path", "/path", "host:port", "[v6addr]:port", "host" (port 6379) */
	const char *addr;
	/* NULL: no AUTH. Else its first line (without the newline) is the
	 * password; the file must be private to its owner (mode & 077 == 0). */
	const char *password_file;
	/* The deadline of a connect and of each whole sync (> 0). */
	__u64 timeout_ns;
	/* Sentinel: "HOST:PORT[,HOST:PORT...]" (address literals, or unix:PATH)
	 * and the primary's name; addr is then not read. Every connect asks
	 * the sentinels in turn for the primary (SENTINEL
	 * get-master-addr-by-name) and checks its ROLE: a replica fails the
	 * connect (-EAGAIN), as does no sentinel answering. */
	const char *sentinels;
	const char *master;
	/* Redis Cluster: "HOST:PORT[,HOST:PORT...]" (address literals) of
	 * some of its nodes, which the slot map is asked of first; addr and
	 * sentinels are then not read. See redis_cluster.c. */
	const char *cluster;
};

/* What one sync did, for the agent's metrics. Filled on errors too, as far
 * as the sync got. */
struct sluice_redis_sync_stats {
	__u64 calls; /* commands sent: one EVALSHA per batch, plus a SCRIPT LOAD
		      * and the EVALSHAs sent again after a NOSCRIPT */
	__u64 round_trips; /* 1, or 2 after a NOSCRIPT */
	__u64 bytes_out; /* of the sync's commands (not of a reconnect) */
	__u64 bytes_in;
	__u64 duration_ns; /* of the whole sync, a reconnect included */
	bool reconnected; /* the sync connected first (AUTH and SCRIPT LOAD, not
			   * counted in calls, round_trips or bytes) */
	/* The fleet's answer besides N and the debts (of a successful sync
	 * of a member that gives its share; else 0): the members past their
	 * horizon, and their shares of each limit, in millionths, which the
	 * live members hold in reserve. */
	__u32 silent;
	__u32 reserve_ppm;
	/* Redis Cluster (else 0): the primaries of the slot map, those that
	 * did not answer this sync (their keys' debt_us is -1), and the
	 * redirections followed */
	__u32 shards;
	__u32 shards_down;
	__u32 moved;
	__u32 asked;
};

/* Parse o->addr and read the password file; does not connect. -EINVAL for
 * a bad address or timeout, -errno (or -EACCES for a file others can read,
 * -EINVAL for an empty one) for the password file. *out is freed with
 * sluice_redis_close(). */
int sluice_redis_open(const struct sluice_redis_opts *o, struct sluice_redis **out, char *err,
		      size_t len);
/* What sluice_redis_open() checks, for a caller that must refuse bad input
 * before it does anything else: the address (-EINVAL), and the password
 * file (-errno, as sluice_redis_open()). */
int sluice_redis_check_addr(const char *addr, char *err, size_t len);
int sluice_redis_check_password_file(const char *path, char *err, size_t len);
/* (Re)connect within the deadline, AUTH when there is a password, SCRIPT
 * LOAD. The password file is read again first, with the same checks, so a
 * rotated password (a new requirepass and the new password in the file)
 * needs no restart; a file that fails them fails the connect. -EACCES when
 * Redis refuses the password or wants one we do not have; -ETIMEDOUT;
 * -ECONNREFUSED, -ENOENT, -EHOSTUNREACH... for the address. */
int sluice_redis_connect(struct sluice_redis *r, char *err, size_t len);
bool sluice_redis_connected(const struct sluice_redis *r);
/*
 * Push keys[i]'s usage used_us[i] (microseconds of the rate, > 0) for i < n
 * and read each one's global debt into debt_us[i], and the number of
 * members of the fleet (member included) into *live. Without a share
 * (sluice_redis_set_member()) member stays a member for member_ttl_ms after
 * this sync. The keys go `batch` to a script call
 * (SLUICE_REDIS_BATCH when 0), every call sent before the first reply is
 * read. n == 0 is a heartbeat: one call, only *live.
 *
 * Connects first when not connected, within the same deadline. On any error
 * but a bad argument (-EINVAL, checked before anything is sent) the
 * connection is dropped, the next sync reconnects, and nothing in debt_us is
 * valid: -ETIMEDOUT (the deadline), -EPIPE or -ECONNRESET (Redis went away),
 * -EACCES (auth), -EPROTO (an error reply, quoted: OOM, a READONLY replica;
 * or a reply the script cannot give: not its shape, larger than what was
 * asked (checked before hiredis parses it), a count of boxes below 1 or
 * above 2^32 - 1, a debt below 0; or bytes after the replies asked for,
 * which would be taken for the next call's answer). *live is in 1 to
 * 2^32 - 1 and every debt_us[i] >= 0: the caller bounds them further;
 * but under Redis Cluster a key whose shard did not answer (down, hung,
 * a redirection not followed within the deadline) has debt_us[i] == -1,
 * and the sync still succeeds while the shard of the members answered:
 * sluice_redis_fault() says why.
 * st may be NULL.
 */
int sluice_redis_sync(struct sluice_redis *r, const char *fleet, const char *member,
		      __u64 member_ttl_ms, size_t n, const char *const *keys, const double *used_us,
		      size_t batch, __s64 *debt_us, __u32 *live, struct sluice_redis_sync_stats *st,
		      char *err, size_t len);
/*
 * From the next sync on, this member gives the fleet its share: on its own
 * (no agent) its datapath admits 1/share of each limit (share >= 1: the N it
 * holds), and it does so at the latest horizon_ms after a sync's call began.
 * The fleet then keeps it as a member until it leaves, and once it has been
 * silent past its horizon holds its share in reserve (the other members
 * share the rest). A member that never calls this is dropped after the
 * member ttl without a sync and never reserved.
 */
void sluice_redis_set_member(struct sluice_redis *r, __u64 horizon_ms, __u32 share);
/* member leaves fleet: its datapath admits nothing on its own any more (it is
 * being detached). 0 or -errno as a sync (connects first when it must). */
int sluice_redis_leave(struct sluice_redis *r, const char *fleet, const char *member, char *err,
		       size_t len);
/* Is s a list of sentinels, as sluice_redis_opts.sentinels? */
int sluice_redis_check_sentinels(const char *s, char *err, size_t len);
/* Is s a fleet name? Else -EINVAL and a message that says what is allowed. */
int sluice_redis_check_fleet(const char *s, char *err, size_t len);
/* Under Redis Cluster, why the shards that failed the last sync did ("" when
 * none did); "" without a cluster. */
const char *sluice_redis_fault(const struct sluice_redis *r);
/* Is s a list of cluster nodes, as sluice_redis_opts.cluster? */
int sluice_redis_check_cluster(const char *s, char *err, size_t len);
void sluice_redis_close(struct sluice_redis *r);
/* The address as given, for messages (under Sentinel, "NAME at HOST:PORT"
 * of the primary last named, or "NAME (via sentinels)"). */
const char *sluice_redis_addr(const struct sluice_redis *r);

#endif /* SLUICE_REDIS_H */
