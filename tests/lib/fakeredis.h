/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A fake Redis for the fleet agent's tests: a thread that listens on a unix
 * socket in a temporary directory of its own, reads the RESP commands of
 * each connection, and answers each one as the test's handler says: with
 * any bytes at all (a huge aggregate header, an extra reply, a wrong type, a
 * debt of a year, a count of boxes of -1), not at all (a hang), or by
 * closing the connection. fr_sane() answers as a real Redis running the
 * agent's script would, with the box count and debts the test gives, so a
 * handler only writes what differs.
 *
 * Plain sockets and a pthread: nothing to install beyond what the build
 * needs. tests/tools/fakeredis.c makes it a program for the shell tests.
 */
#ifndef SLUICE_TEST_FAKEREDIS_H
#define SLUICE_TEST_FAKEREDIS_H

#include <stdbool.h>
#include <stddef.h>

#define FR_MAX_ARGS 1024 /* arguments of one command the fake reads */

/* One command as the client sent it. */
struct fr_cmd {
	int argc;
	char *argv[FR_MAX_ARGS]; /* NUL-terminated copies */
	size_t len[FR_MAX_ARGS];
	unsigned int conn; /* which connection: 1, 2, ... since the start */
	unsigned int nth; /* which command of that connection: 1, 2, ... */
};

/* Is c the command name (case-insensitive)? */
bool fr_is(const struct fr_cmd *c, const char *name);
/* The number of fleet keys of a sync call (EVALSHA sha numkeys boxes k...
 * member ttl used...): numkeys - 1, or -1 if c is not one. */
int fr_sync_keys(const struct fr_cmd *c);

enum fr_action {
	FR_ANSWERED, /* the handler wrote its answer (or none) with fr_send*() */
	FR_HANG, /* never answer this connection again (keep it open) */
	FR_CLOSE, /* close the connection */
};

struct fakeredis;
/* Called on the fake's thread for every command. */
typedef enum fr_action (*fr_handler)(struct fakeredis *f, const struct fr_cmd *c, void *ctx);

/* Listen on a fresh socket; 0 or -errno. */
int fakeredis_start(struct fakeredis **out, fr_handler h, void *ctx);
/* Listen on path (which must not exist yet); 0 or -errno. */
int fakeredis_start_at(struct fakeredis **out, const char *path, fr_handler h, void *ctx);
/* Listen on TCP at host (an IPv4 literal), a port of the kernel's choice:
 * the address is then "HOST:PORT" (a cluster node's). 0 or -errno. */
int fakeredis_start_tcp(struct fakeredis **out, const char *host, fr_handler h, void *ctx);
/* "unix:/tmp/sluice-fakeredis.XXXXXX/redis.sock" */
const char *fakeredis_addr(const struct fakeredis *f);
/* Connections accepted, and commands read, so far. */
unsigned int fakeredis_conns(const struct fakeredis *f);
unsigned int fakeredis_cmds(const struct fakeredis *f);
/* Stop the thread, close everything, remove the socket and its directory. */
void fakeredis_stop(struct fakeredis *f);

/* Bytes for the connection of the command being handled. */
void fr_send(struct fakeredis *f, const void *p, size_t n);
void fr_sendf(struct fakeredis *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* From fr_cork() to fr_uncork(), what is sent goes out in one write (on a
 * unix socket, what one read gets: "in the same write" for real). */
void fr_cork(struct fakeredis *f);
void fr_uncork(struct fakeredis *f);

/* What a real Redis with the agent's script answers. */
struct fr_sane {
	const char *password; /* NULL: no requirepass */
	long long live; /* the count of boxes a sync call answers */
	long long debt; /* the debt of every key, microseconds */
};
/* AUTH (+OK, or WRONGPASS/the error without a password), SCRIPT LOAD (a
 * SHA1), EVALSHA (live and a debt for each key; NOAUTH before AUTH when
 * there is a password), PING; anything else an error. */
enum fr_action fr_sane(struct fakeredis *f, const struct fr_cmd *c, const struct fr_sane *s);

#endif /* SLUICE_TEST_FAKEREDIS_H */
