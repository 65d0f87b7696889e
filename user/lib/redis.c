// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fleet agent's Redis client: one pipelined round trip a sync, under one
 * deadline.
 *
 * hiredis 0.14 (Debian 12) has no timeouts on its non-blocking calls, and
 * its redisBufferWrite() uses write(), which raises SIGPIPE (and kills the
 * agent) when Redis has gone away. So hiredis reads the replies (its
 * redisReader) and this file does the rest: a non-blocking socket, RESP
 * commands written into one buffer, send(MSG_NOSIGNAL) and recv() driven by
 * ppoll() against the one deadline of the whole connect or sync, errno kept
 * exactly (ECONNREFUSED, ENOENT...), and the bytes counted. A host name is
 * looked up with getaddrinfo_a(), so a slow resolver is under the deadline
 * too; an address literal is never looked up.
 *
 * The address, the password file and the socket are redis_net.c's.
 *
 * Redis Cluster: every key of a fleet carries the hash tag {FLEET}
 * ("sluice:{F}:boxes", "sluice:{F}:p:198.18.0.7/32"), so all of them hash
 * to one slot and the script's multi-key call is legal there.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <hiredis/hiredis.h>

#include "redis_int.h"

/*
 * One call for KEYS = [members zset, shares hash, lane key 1..m], ARGV =
 * [member, member ttl ms, horizon ms, share, used_1..used_m] (microseconds).
 * Redis's clock only: the answer is durations (debt = tat - now), never
 * times. Each lane's tat moves unconditionally, GCRA's tat = max(tat, now) +
 * used, since the usage has already happened on some box; its TTL is the
 * debt plus a second, so a key outlives its debt and no longer. tat is
 * ~1.8e15 us: '%.3f' keeps all a double holds (0.25 us there).
 *
 * The members: a member that gives its share (sluice_redis_set_member()) is
 * scored with the end of its horizon, now + horizon, and kept until it
 * leaves (share 0): past its horizon it is silent, and its datapath admits
 * 1/share of every limit on its own (rate/N of the N it knew), which the
 * fleet must hold in reserve, so every lane is charged used / (1 - the
 * silent members' shares), the rest being what the live members share. Its
 * share is the smaller of the N it holds now and the N this call answers
 * (the agent never holds less than either). A member without a share (a
 * caller that does not give one, or an agent from before shares) is
 * scored with now and dropped after the member ttl, never reserved: every
 * member of a fleet must use the same ttl. The members' set expires after
 * the ttl only while no member has a share.
 *
 * The answer: {N (every member, silent ones too), debt of each lane}, and
 * for a member that gives its share, then the silent members and their
 * shares in millionths of a limit.
 */
#define NOW_LUA                          \
	"local t = redis.call('TIME')\n" \
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
/* KEYS[first..] and their usage ARGV[i + argoff]: each debt appended to out */
#define LANES_LUA                                                              \
	"for i = first, #KEYS do\n"                                            \
	"  local tat = tonumber(redis.call('GET', KEYS[i])) or 0\n"            \
	"  if tat < now then tat = now end\n"                                  \
	"  tat = tat + tonumber(ARGV[i + argoff]) / live\n"                    \
	"  local debt = tat - now\n"                                           \
	"  redis.call('SET', KEYS[i], string.format('%.3f', tat), 'PX',\n"     \
	"             string.format('%.0f', math.ceil(debt / 1000) + 1000))\n" \
	"  out[#out + 1] = math.ceil(debt)\n"                                  \
	"end\n"

static const char script[] = NOW_LUA
	"local ttl = tonumber(ARGV[2])\n"
	"local share = tonumber(ARGV[4])\n"
	"if share == 0 then\n"
	"  redis.call('ZREM', KEYS[1], ARGV[1])\n"
	"  redis.call('HDEL', KEYS[2], ARGV[1])\n"
	"  return {redis.call('ZCARD', KEYS[1])}\n"
	"end\n"
	"if share then\n"
	"  redis.call('ZADD', KEYS[1], string.format('%.0f', now + tonumber(ARGV[3]) * 1000),\n"
	"             ARGV[1])\n"
	"  redis.call('PERSIST', KEYS[1])\n"
	"else\n"
	"  redis.call('ZADD', KEYS[1], string.format('%.0f', now), ARGV[1])\n"
	"  redis.call('HDEL', KEYS[2], ARGV[1])\n"
	"  if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end\n"
	"end\n"
	"local past = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf',\n"
	"                        '(' .. string.format('%.0f', now), 'WITHSCORES')\n"
	"local silent, rho = 0, 0\n"
	"for i = 1, #past, 2 do\n"
	"  local s = tonumber(redis.call('HGET', KEYS[2], past[i]))\n"
	"  if s then\n"
	"    silent = silent + 1\n"
	"    rho = rho + 1 / math.max(s, 1)\n"
	"  elseif tonumber(past[i + 1]) < now - ttl * 1000 then\n"
	"    redis.call('ZREM', KEYS[1], past[i])\n"
	"  end\n"
	"end\n"
	"local n = redis.call('ZCARD', KEYS[1])\n"
	"if share then redis.call('HSET', KEYS[2], ARGV[1], math.min(share, n)) end\n"
	"local live = 1 - rho\n"
	"if live < 1 / 65536 then live = 1 / 65536 end\n"
	"local out = {n}\n"
	"local first, argoff = 3, 2\n" LANES_LUA "if share then\n"
	"  out[#out + 1] = silent\n"
	"  out[#out + 1] = math.floor(rho * 1000000 + 0.5)\n"
	"end\n"
	"return out\n";

/*
 * Redis Cluster's (redis_cluster.c): the lanes alone, KEYS = lane keys of
 * one slot, ARGV = [live, used_1..used_m], the answer {debt of each lane}.
 * The members live in one place, the fleet's hash-tagged keys on one shard
 * (the script above, with no lane), whose answer gives live: the share of
 * each limit the live members hold, 1 - the silent members' shares.
 */
static const char lanes_script[] = NOW_LUA "local live = tonumber(ARGV[1])\n"
					   "local out = {}\n"
					   "local first, argoff = 1, 1\n" LANES_LUA "return out\n";

/* ---- RESP commands into one buffer ---- */

static void buf_put(struct buf *b, const void *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* "*argc\r\n", the head of a command of argc arguments */
void redis_buf_cmd(struct buf *b, size_t argc)
{
	char head[32];

	buf_put(b, head, snprintf(head, sizeof(head), "*%zu\r\n", argc));
}

/* One argument, pre followed by s: keys are "sluice:{F}:" + the caller's. */
void redis_buf_arg2(struct buf *b, const char *pre, size_t plen, const char *s, size_t slen)
{
	char head[32];

	buf_put(b, head, snprintf(head, sizeof(head), "$%zu\r\n", plen + slen));
	buf_put(b, pre, plen);
	buf_put(b, s, slen);
	buf_put(b, "\r\n", 2);
}

void redis_buf_arg(struct buf *b, const char *s)
{
	redis_buf_arg2(b, "", 0, s, strlen(s));
}

static void buf_load(struct buf *b, const char *text)
{
	redis_buf_cmd(b, 3);
	redis_buf_arg(b, "SCRIPT");
	redis_buf_arg(b, "LOAD");
	redis_buf_arg(b, text);
}

static void buf_script_load(struct buf *b)
{
	buf_load(b, script);
}

int sluice_redis_open(const struct sluice_redis_opts *o, struct sluice_redis **out, char *err,
		      size_t len)
{
	struct sluice_redis *r;
	int ret;

	*out = NULL;
	if (!o->timeout_ns)
		return sluice_err(err, len, -EINVAL,
				  "The Redis timeout is 0: give a deadline such as 100ms");
	r = calloc(1, sizeof(*r));
	if (!r)
		return sluice_err(err, len, -ENOMEM, "Couldn't allocate a Redis client");
	r->fd = -1;
	r->timeout_ns = o->timeout_ns;
	if (o->cluster) {
		ret = redis_cluster_open(r, o->cluster, err, len);
		if (ret)
			goto fail;
	} else if (o->sentinels) {
		ret = redis_sentinel_open(r, o->sentinels, o->master, err, len);
		if (ret)
			goto fail;
	} else {
		ret = redis_parse_addr(r, o->addr, err, len);
		if (ret)
			goto fail;
		r->addr = strdup(o->addr);
	}
	if (o->password_file)
		r->password_file = strdup(o->password_file);
	if (!r->addr || (o->password_file && !r->password_file)) {
		ret = sluice_err(err, len, -ENOMEM, "Couldn't allocate a Redis client");
		goto fail;
	}
	if (o->password_file) {
		ret = redis_read_password(r, o->password_file, err, len);
		if (ret)
			goto fail;
	}
	*out = r;
	return 0;
fail:
	sluice_redis_close(r);
	return ret;
}

/* ---- the replies' shape, checked before hiredis sees a byte ---- */

/*
 * hiredis 0.14 believes a reply's header: "*2147483647" makes it allocate
 * 2^31 element pointers and parse elements for as long as they come, 7 s at
 * 100% CPU and 16 GB of address space between two reads, past any deadline;
 * it has no limit to set (maxelements came in hiredis 1.0). The agent knows
 * the shape of every reply it asks for: +OK or an error to AUTH, a 40-byte
 * SHA1 to SCRIPT LOAD, an array of 1 + m integers (3 + m to a member
 * that gives its share; or an error) to a sync call. So every byte is
 * scanned here first, and hiredis is fed only what fits that shape: arrays
 * only at the top and of at most max_elems
 * elements, numbers of at most SCAN_NUM_MAX digits, short strings, and no
 * byte after the last reply asked for (it would be taken for the answer to
 * the next call).
 */
#define SCAN_TOP_LINE 65536 /* a status or an error reply */
#define SCAN_TOP_BULK 4096 /* a bulk string (SCRIPT LOAD's SHA1: 40 bytes) */
#define SCAN_ELEM_LINE 64 /* inside an array: an integer, or a short error */
#define SCAN_ELEM_BULK 64
#define SCAN_NUM_MAX 20 /* "-9223372036854775808" */

/* ROLE's answer: an array of arrays of its replicas; CLUSTER SLOTS': of
 * ranges, of their nodes, of each node's metadata */
#define SCAN_DEPTH REDIS_SCAN_DEPTH
#define ROLE_ELEMS 1024 /* ROLE's: a primary's replicas */

struct scan {
	size_t max_elems; /* the largest array asked for */
	int max_depth; /* arrays in arrays: 1, only at the top (ROLE: 3) */
	int depth; /* arrays open */
	size_t done; /* whole replies */
	bool in_line, cr, neg, digits, bad;
	char type; /* of the line being read: + - : $ * */
	size_t line; /* its bytes so far, after the type */
	unsigned long long num; /* its number ($ * :) */
	unsigned long long bulk; /* bytes of a bulk string to come, its CRLF included */
	unsigned long long elems[SCAN_DEPTH]; /* elements to come of each open array */
};

static int bad_shape(struct sluice_redis *r, char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int bad_shape(struct sluice_redis *r, char *err, size_t len, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return sluice_err(err, len, -EPROTO,
			  "Redis at %s sent %s, not the reply the agent asked for: dropped the "
			  "connection (is it Redis, and is no proxy in between changing replies?)",
			  r->addr, what);
}

/* A value of the current reply is whole: maybe its arrays, and the reply, too. */
static void scan_value(struct scan *s)
{
	while (s->depth) {
		if (--s->elems[s->depth - 1])
			return;
		s->depth--;
	}
	s->done++;
}

static int scan_line_end(struct sluice_redis *r, struct scan *s, char *err, size_t len)
{
	bool inner = s->depth > 0;

	if (s->type == '+' || s->type == '-') {
		scan_value(s);
		return 0;
	}
	if (!s->digits || s->bad)
		return bad_shape(r, err, len, "'%c' with no number after it", s->type);
	if (s->type == ':') {
		scan_value(s);
		return 0;
	}
	if (s->neg) {
		/* $-1 and *-1: a nil, which the reply checks refuse by name */
		if (s->num != 1)
			return bad_shape(r, err, len, "a length of -%llu", s->num);
		scan_value(s);
		return 0;
	}
	if (s->type == '$') {
		if (s->num > (inner ? SCAN_ELEM_BULK : SCAN_TOP_BULK))
			return bad_shape(r, err, len, "a string of %llu bytes%s", s->num,
					 inner ? " in an array" : "");
		s->bulk = s->num + 2;
		return 0;
	}
	if (s->depth >= s->max_depth)
		return bad_shape(r, err, len, "an array inside an array");
	if (s->num > s->max_elems)
		return bad_shape(r, err, len,
				 "an array of %llu elements where at most %zu were "
				 "asked for",
				 s->num, s->max_elems);
	if (!s->num)
		scan_value(s);
	else
		s->elems[s->depth++] = s->num;
	return 0;
}

/* Scan the n bytes at p, which come after what s has seen, for nrep replies. */
static int scan(struct sluice_redis *r, struct scan *s, const char *p, size_t n, size_t nrep,
		char *err, size_t len)
{
	size_t i = 0, max;
	int ret;

	while (i < n) {
		char c;

		if (s->done >= nrep)
			return sluice_err(err, len, -EPROTO,
					  "Redis at %s sent %zu bytes after the %zu repl%s asked "
					  "for (an answer to no call): dropped the connection, so "
					  "that it is not taken for the next call's answer",
					  r->addr, n - i, nrep, nrep == 1 ? "y" : "ies");
		if (s->bulk) {
			size_t k = s->bulk < n - i ? (size_t)s->bulk : n - i;

			i += k;
			s->bulk -= k;
			if (!s->bulk)
				scan_value(s);
			continue;
		}
		c = p[i++];
		if (!s->in_line) {
			if (c != '+' && c != '-' && c != ':' && c != '$' && c != '*')
				return bad_shape(r, err, len,
						 "byte 0x%02x where a reply or an "
						 "element begins",
						 (unsigned char)c);
			s->in_line = true;
			s->type = c;
			s->line = 0;
			s->num = 0;
			s->cr = s->neg = s->digits = s->bad = false;
			continue;
		}
		if (s->cr) {
			if (c != '\n')
				return bad_shape(r, err, len, "a '\\r' not followed by '\\n'");
			s->in_line = false;
			ret = scan_line_end(r, s, err, len);
			if (ret)
				return ret;
			continue;
		}
		if (c == '\r') {
			s->cr = true;
			continue;
		}
		max = s->type == '+' || s->type == '-' ?
			      (s->depth ? SCAN_ELEM_LINE : SCAN_TOP_LINE) :
			      SCAN_NUM_MAX;
		if (++s->line > max)
			return bad_shape(r, err, len, "a '%c' line longer than %zu bytes", s->type,
					 max);
		if (s->type == '+' || s->type == '-')
			continue;
		if (c == '-' && s->line == 1) {
			s->neg = true;
		} else if (c >= '0' && c <= '9') {
			s->digits = true;
			/* SCAN_NUM_MAX digits: 10^20 would overflow, 19 do not */
			if (s->num >= 1000000000000000000ULL)
				s->bad = true;
			else
				s->num = s->num * 10 + (unsigned int)(c - '0');
		} else {
			s->bad = true;
		}
	}
	return 0;
}

/* ---- one exchange: send out, read nrep replies ---- */

static int timed_out(struct sluice_redis *r, char *err, size_t len)
{
	char d[32];

	sluice_format_duration(r->timeout_ns, d, sizeof(d));
	return sluice_err(err, len, -ETIMEDOUT,
			  "Redis at %s did not answer within %s: is it stopped, overloaded or "
			  "unreachable?",
			  r->addr, d);
}

/* Send out, read nrep replies into rep[], none an array of more than
 * max_elems elements, nor arrays deeper than depth (see scan()). */
int redis_exchange(struct sluice_redis *r, const struct buf *out, size_t nrep, size_t max_elems,
		   int depth, redisReply **rep, __u64 deadline, struct sluice_redis_sync_stats *st,
		   char *err, size_t len)
{
	struct scan sc = { .max_elems = max_elems, .max_depth = depth };
	size_t sent = 0, got = 0;
	char in[65536];
	ssize_t n;
	int ret;

	if (out->oom)
		return sluice_err(err, len, -ENOMEM, "Couldn't allocate the commands for Redis");
	/* Every reply to the last exchange was read and no byte after it: one
	 * waiting now answers nothing this box asked (a late extra reply). */
	n = recv(r->fd, in, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0)
		return sluice_err(err, len, -EPROTO,
				  "Redis at %s sent a reply to no call, after the last sync's "
				  "replies: dropped the connection, so that it is not taken for "
				  "this sync's answer",
				  r->addr);
	while (got < nrep) {
		int ev = redis_wait_fd(r->fd, POLLIN | (sent < out->len ? POLLOUT : 0), deadline);

		if (ev == -ETIMEDOUT)
			return timed_out(r, err, len);
		if (ev < 0)
			return sluice_err(err, len, ev, "Couldn't wait for Redis at %s: %s",
					  r->addr, strerror(-ev));
		if ((ev & (POLLOUT | POLLERR)) && sent < out->len) {
			n = send(r->fd, out->p + sent, out->len - sent,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return sluice_err(err, len, -errno,
						  "Couldn't send to Redis at %s: %s (did it go "
						  "away?)",
						  r->addr, strerror(errno));
			if (n > 0) {
				sent += n;
				if (st)
					st->bytes_out += n;
			}
		}
		if (!(ev & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = recv(r->fd, in, sizeof(in), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return sluice_err(err, len, -errno,
					  "Couldn't read from Redis at %s: %s (did it go away?)",
					  r->addr, strerror(errno));
		if (!n)
			return sluice_err(err, len, -ECONNRESET,
					  "Redis at %s closed the connection (restarted, or it "
					  "dropped this client: see its log)",
					  r->addr);
		if (st)
			st->bytes_in += n;
		ret = scan(r, &sc, in, (size_t)n, nrep, err, len);
		if (ret)
			return ret;
		if (redisReaderFeed(r->rd, in, n) != REDIS_OK)
			return sluice_err(err, len, -ENOMEM, "Couldn't buffer Redis's reply");
		while (got < nrep) {
			void *x = NULL;

			if (redisReaderGetReply(r->rd, &x) != REDIS_OK)
				return sluice_err(err, len, -EPROTO,
						  "Redis at %s sent what is not RESP (%s): is it "
						  "Redis?",
						  r->addr, r->rd->errstr);
			if (!x)
				break;
			rep[got++] = x;
		}
	}
	if (sent < out->len)
		return sluice_err(err, len, -EPROTO,
				  "Redis at %s answered commands it had not been sent: is it "
				  "Redis?",
				  r->addr);
	return 0;
}

static bool starts(const char *s, const char *word)
{
	return !strncmp(s, word, strlen(word));
}

/* An error reply x to `what`: -EACCES for auth, else -EPROTO, quoted. */
int redis_reply_error(struct sluice_redis *r, const redisReply *x, const char *what, char *err,
		      size_t len)
{
	const char *e = x->str ? x->str : "";

	if (starts(e, "NOAUTH") && !r->password)
		return sluice_err(err, len, -EACCES,
				  "Redis at %s wants a password ('%s') and none is given: give "
				  "--redis-password-file FILE, a file private to its owner (mode "
				  "0600) with the password on its first line",
				  r->addr, e);
	if (starts(e, "NOAUTH") || starts(e, "WRONGPASS") || strstr(e, "invalid password"))
		return sluice_err(err, len, -EACCES,
				  "Redis at %s refused the password in %s ('%s'): put its "
				  "requirepass (the default user's password) in that file, which "
				  "is read again at every connect",
				  r->addr, r->password_file, e);
	if (strstr(e, "without any password configured"))
		return sluice_err(err, len, -EPROTO,
				  "Redis at %s has no password but the password file %s gives one "
				  "('%s'): set requirepass there, or give no password file",
				  r->addr, r->password_file, e);
	return sluice_err(err, len, -EPROTO, "Redis at %s answered %s with an error: '%s'", r->addr,
			  what, e);
}

void redis_free_replies(redisReply **rep, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (rep[i])
			freeReplyObject(rep[i]);
	memset(rep, 0, n * sizeof(*rep));
}

/* The SHA1 SCRIPT LOAD answers, into sha. */
static int take_sha(struct sluice_redis *r, const redisReply *x, char *sha, char *err, size_t len)
{
	if (x->type == REDIS_REPLY_ERROR)
		return redis_reply_error(r, x, "SCRIPT LOAD", err, len);
	if (x->type != REDIS_REPLY_STRING || x->len != 40)
		return sluice_err(err, len, -EPROTO,
				  "Redis at %s answered SCRIPT LOAD with no SHA1: is it Redis?",
				  r->addr);
	memcpy(sha, x->str, 40);
	sha[40] = '\0';
	return 0;
}

/*
 * ROLE's answer (under Sentinel): the primary says "master". A replica
 * (the sentinels' answer is older than a failover, or the primary was
 * demoted since) fails the connect, as an outage, until the sentinels name
 * the new one.
 */
static int take_role(struct sluice_redis *r, const redisReply *x, char *err, size_t len)
{
	const redisReply *e;

	if (x->type == REDIS_REPLY_ERROR)
		return redis_reply_error(r, x, "ROLE", err, len);
	e = x->type == REDIS_REPLY_ARRAY && x->elements ? x->element[0] : NULL;
	if (!e || (e->type != REDIS_REPLY_STRING && e->type != REDIS_REPLY_STATUS))
		return sluice_err(err, len, -EPROTO,
				  "Redis at %s answered ROLE with no role: is it Redis?", r->addr);
	if (strcmp(e->str, "master"))
		return sluice_err(err, len, -EAGAIN,
				  "Redis at %s, which the sentinels named the primary of %s, is a "
				  "%s: a failover is under way (the sentinels are asked again at "
				  "the next sync)",
				  r->addr, r->master, e->str);
	return 0;
}

/* (Re)connect r within deadline: AUTH, ROLE under Sentinel, SCRIPT LOAD
 * (and the lanes' script on a cluster node). */
int redis_connect(struct sluice_redis *r, __u64 deadline, char *err, size_t len)
{
	redisReply *rep[4] = { NULL, NULL, NULL, NULL };
	size_t nrep = (r->password ? 2 : 1) + (r->master ? 1 : 0) + (r->cluster_node ? 1 : 0);
	size_t sha_at = nrep - 1 - (r->cluster_node ? 1 : 0);
	int ret;

	redis_drop(r);
	/* A rotated password: the file as it is now, checked as at the start. */
	if (r->password_file) {
		ret = redis_read_password(r, r->password_file, err, len);
		if (ret)
			return ret;
	}
	/* Under Sentinel, the primary they name now (every connect asks). */
	if (r->master) {
		ret = redis_sentinel_primary(r, deadline, err, len);
		if (ret)
			return ret;
	}
	ret = redis_open(r, deadline, err, len);
	if (ret)
		return ret;
	/* AUTH, ROLE (under Sentinel) and SCRIPT LOAD in one round trip: a
	 * refused AUTH makes the others fail too, and AUTH's reply is the one
	 * that says why. */
	if (r->password) {
		redis_buf_cmd(&r->out, 2);
		redis_buf_arg(&r->out, "AUTH");
		redis_buf_arg2(&r->out, "", 0, r->password, r->password_len);
	}
	if (r->master) {
		redis_buf_cmd(&r->out, 1);
		redis_buf_arg(&r->out, "ROLE");
	}
	buf_script_load(&r->out);
	if (r->cluster_node)
		buf_load(&r->out, lanes_script);
	ret = redis_exchange(r, &r->out, nrep, r->master ? ROLE_ELEMS : 0,
			     r->master ? SCAN_DEPTH : 1, rep, deadline, NULL, err, len);
	explicit_bzero(r->out.p, r->out.len);
	if (ret)
		goto out;
	if (r->password && rep[0]->type == REDIS_REPLY_ERROR) {
		ret = redis_reply_error(r, rep[0], "AUTH", err, len);
		goto out;
	}
	if (r->master) {
		ret = take_role(r, rep[nrep - 2], err, len);
		if (ret)
			goto out;
	}
	ret = take_sha(r, rep[sha_at], r->sha, err, len);
	if (!ret && r->cluster_node)
		ret = take_sha(r, rep[sha_at + 1], r->sha_lanes, err, len);
out:
	redis_free_replies(rep, nrep);
	if (ret)
		redis_drop(r);
	return ret;
}

int redis_open(struct sluice_redis *r, __u64 deadline, char *err, size_t len)
{
	int fd = redis_open_socket(r, deadline, err, len);

	if (fd < 0)
		return fd;
	r->rd = redisReaderCreate();
	if (!r->rd) {
		close(fd);
		return sluice_err(err, len, -ENOMEM, "Couldn't allocate a Redis reply reader");
	}
	r->fd = fd;
	r->out.len = 0;
	r->out.oom = false;
	return 0;
}

int sluice_redis_connect(struct sluice_redis *r, char *err, size_t len)
{
	if (r->cl)
		return redis_cluster_connect(r, sluice_now_ns() + r->timeout_ns, err, len);
	return redis_connect(r, sluice_now_ns() + r->timeout_ns, err, len);
}

bool sluice_redis_connected(const struct sluice_redis *r)
{
	return r->cl ? redis_cluster_ready(r) : r->fd >= 0;
}

/* ---- the sync ---- */

int sluice_redis_check_fleet(const char *s, char *err, size_t len)
{
	size_t i, n = s ? strlen(s) : 0;

	if (!n || n > SLUICE_REDIS_FLEET_MAX)
		return sluice_err(err, len, -EINVAL,
				  "Fleet name '%s' is %zu characters: give 1 to %d of A-Z a-z 0-9 "
				  ". _ -",
				  s ? s : "", n, SLUICE_REDIS_FLEET_MAX);
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return sluice_err(err, len, -EINVAL,
					  "Fleet name '%s' has '%c': give 1 to %d of A-Z a-z 0-9 . "
					  "_ -",
					  s, c, SLUICE_REDIS_FLEET_MAX);
	}
	return 0;
}

static int check_sync_args(const char *fleet, const char *member, __u64 ttl_ms, size_t n,
			   const char *const *keys, const double *used, __s64 *debt, char *err,
			   size_t len)
{
	size_t i;
	int ret;

	ret = sluice_redis_check_fleet(fleet, err, len);
	if (ret)
		return ret;
	if (!member || !*member)
		return sluice_err(err, len, -EINVAL,
				  "The fleet member's name is empty: give each box its own name");
	if (!ttl_ms)
		return sluice_err(err, len, -EINVAL,
				  "The fleet member's TTL is 0: give some sync intervals' worth");
	if (n && (!keys || !used || !debt))
		return sluice_err(err, len, -EINVAL, "%zu keys to sync but no arrays for them", n);
	for (i = 0; i < n; i++) {
		if (!keys[i] || !*keys[i])
			return sluice_err(err, len, -EINVAL, "Fleet key %zu of %zu is empty", i, n);
		/* "sluice:{F}:boxes" and ":share" are the members' */
		if (!strcmp(keys[i], "boxes") || !strcmp(keys[i], "share"))
			return sluice_err(err, len, -EINVAL,
					  "Fleet key '%s' is the name of the fleet's members' %s: "
					  "give keys another name",
					  keys[i], keys[i][0] == 'b' ? "set" : "shares");
		if (!(used[i] > 0) || !isfinite(used[i]))
			return sluice_err(err, len, -EINVAL,
					  "Usage %g us of fleet key '%s' is not a positive number: "
					  "leave out keys that used nothing",
					  used[i], keys[i]);
	}
	return 0;
}

/* One EVALSHA of keys [from, to) (none for a heartbeat); mem: the member's
 * ttl, horizon and share, as the script takes them. */
void redis_buf_call(struct buf *b, const char *sha, const char *pre, const char *member,
		    const char (*mem)[24], const char *const *keys, const double *used, size_t from,
		    size_t to)
{
	size_t m = to - from, plen = strlen(pre), i;
	char num[40];

	redis_buf_cmd(b, 3 + 2 + m + 4 + m);
	redis_buf_arg(b, "EVALSHA");
	redis_buf_arg(b, sha);
	snprintf(num, sizeof(num), "%zu", 2 + m);
	redis_buf_arg(b, num);
	redis_buf_arg2(b, pre, plen, "boxes", 5);
	redis_buf_arg2(b, pre, plen, "share", 5);
	for (i = from; i < to; i++)
		redis_buf_arg2(b, pre, plen, keys[i], strlen(keys[i]));
	redis_buf_arg(b, member);
	for (i = 0; i < 3; i++)
		redis_buf_arg(b, mem[i]);
	/* %.17g: the script reads back the very double given */
	for (i = from; i < to; i++) {
		snprintf(num, sizeof(num), "%.17g", used[i]);
		redis_buf_arg(b, num);
	}
}

/* Call c's reply: {live, debt of each key} into debt[from..to) and *live,
 * and then, when the member gave its share, {silent, reserve} into st.
 * The script counts this box among the members and answers debts of at
 * least the usage just pushed: anything else is not its answer. */
int redis_take_call(struct sluice_redis *r, const redisReply *x, const char *fleet,
		    const char *const *keys, size_t from, size_t to, __s64 *debt, __u32 *live,
		    struct sluice_redis_sync_stats *st, char *err, size_t len)
{
	size_t i, m = to - from;
	long long n;

	if (x->type == REDIS_REPLY_ERROR)
		return redis_reply_error(r, x, "the sync script", err, len);
	if (x->type != REDIS_REPLY_ARRAY || (x->elements != 1 + m && x->elements != 3 + m))
		return sluice_err(err, len, -EPROTO,
				  "Redis at %s answered the sync script with something other than "
				  "%zu integers",
				  r->addr, 1 + m);
	for (i = 0; i < x->elements; i++)
		if (x->element[i]->type != REDIS_REPLY_INTEGER)
			return sluice_err(err, len, -EPROTO,
					  "Redis at %s answered the sync script with a "
					  "non-integer",
					  r->addr);
	n = x->element[0]->integer;
	if (n < 1 || n > (long long)UINT32_MAX)
		return sluice_err(err, len, -EPROTO,
				  "Redis at %s counted %lld boxes in fleet %s (the members of "
				  "sluice:{%s}:boxes, this box among them), which is no count of "
				  "boxes: is another program writing that key?",
				  r->addr, n, fleet, fleet);
	for (i = 0; i < m; i++)
		if (x->element[1 + i]->integer < 0)
			return sluice_err(err, len, -EPROTO,
					  "Redis at %s answered a debt of %lld us for fleet key "
					  "'%s', below 0, which the sync script never answers: is "
					  "another program writing sluice:{%s}:%s?",
					  r->addr, x->element[1 + i]->integer, keys[from + i],
					  fleet, keys[from + i]);
	if (live)
		*live = (__u32)n;
	for (i = 0; i < m; i++)
		debt[from + i] = x->element[1 + i]->integer;
	/* For the agent's log and status only: the script applies the
	 * reserve itself. */
	if (x->elements == 3 + m) {
		long long sl = x->element[1 + m]->integer, rs = x->element[2 + m]->integer;

		st->silent = sl < 0 ? 0 : sl > UINT32_MAX ? UINT32_MAX : (__u32)sl;
		st->reserve_ppm = rs < 0 ? 0 : rs > UINT32_MAX ? UINT32_MAX : (__u32)rs;
	}
	return 0;
}

bool redis_is_noscript(const redisReply *x)
{
	return x->type == REDIS_REPLY_ERROR && x->str && starts(x->str, "NOSCRIPT");
}

void redis_member_args(const struct sluice_redis *r, __u64 ttl_ms, char (*mem)[24])
{
	snprintf(mem[0], 24, "%llu", (unsigned long long)ttl_ms);
	snprintf(mem[1], 24, "%llu", (unsigned long long)r->horizon_ms);
	if (r->share_given)
		snprintf(mem[2], 24, "%u", r->share);
	else
		mem[2][0] = '\0'; /* a member that gives no share */
}

int sluice_redis_sync(struct sluice_redis *r, const char *fleet, const char *member,
		      __u64 member_ttl_ms, size_t n, const char *const *keys, const double *used_us,
		      size_t batch, __s64 *debt_us, __u32 *live, struct sluice_redis_sync_stats *st,
		      char *err, size_t len)
{
	__u64 t0 = sluice_now_ns(), deadline = t0 + r->timeout_ns;
	struct sluice_redis_sync_stats mine;
	size_t ncalls, nretry = 0, c, k, elems;
	redisReply **rep = NULL, **rep2 = NULL;
	size_t *retry = NULL;
	char pre[SLUICE_REDIS_FLEET_MAX + 16], mem[3][24];
	int ret;

	if (!st)
		st = &mine;
	memset(st, 0, sizeof(*st));
	ret = check_sync_args(fleet, member, member_ttl_ms, n, keys, used_us, debt_us, err, len);
	if (ret)
		return ret;
	if (!batch)
		batch = SLUICE_REDIS_BATCH;
	ncalls = n ? (n + batch - 1) / batch : 1;
	snprintf(pre, sizeof(pre), "sluice:{%s}:", fleet);
	redis_member_args(r, member_ttl_ms, mem);
	if (r->cl) {
		ret = redis_cluster_sync(r, fleet, member, (const char(*)[24])mem, n, keys, used_us,
					 batch, debt_us, live, st, deadline, err, len);
		st->duration_ns = sluice_now_ns() - t0;
		return ret;
	}

	if (r->fd < 0) {
		st->reconnected = true;
		ret = redis_connect(r, deadline, err, len);
		if (ret)
			goto out;
	}
	rep = calloc(ncalls, sizeof(*rep));
	rep2 = calloc(ncalls + 1, sizeof(*rep2));
	retry = calloc(ncalls, sizeof(*retry));
	if (!rep || !rep2 || !retry) {
		ret = sluice_err(err, len, -ENOMEM, "Couldn't allocate %zu Redis replies", ncalls);
		goto out;
	}
	/* Every call goes out before the first reply is read: one round trip. */
	r->out.len = 0;
	r->out.oom = false;
	for (c = 0; c < ncalls; c++)
		redis_buf_call(&r->out, r->sha, pre, member, mem, keys, used_us, c * batch,
			       c * batch + batch < n ? c * batch + batch : n);
	st->calls += ncalls;
	st->round_trips++;
	/* {N, debts}, and {silent, reserve} after them to a member that gives
	 * its share */
	elems = (r->share_given ? 3 : 1) + (n < batch ? n : batch);
	ret = redis_exchange(r, &r->out, ncalls, elems, 1, rep, deadline, st, err, len);
	if (ret)
		goto out;
	for (c = 0; c < ncalls; c++) {
		size_t from = c * batch, to = from + batch < n ? from + batch : n;

		if (redis_is_noscript(rep[c])) {
			retry[nretry++] = c;
			continue;
		}
		ret = redis_take_call(r, rep[c], fleet, keys, from, to, debt_us, live, st, err,
				      len);
		if (ret)
			goto out;
	}
	if (!nretry)
		goto out;
	/*
	 * Redis lost the script (restarted, failed over, SCRIPT FLUSH): load it
	 * again and send once more the calls that got NOSCRIPT, and only those,
	 * since the others have already charged their keys.
	 */
	r->out.len = 0;
	r->out.oom = false;
	buf_script_load(&r->out);
	for (k = 0; k < nretry; k++) {
		size_t from = retry[k] * batch, to = from + batch < n ? from + batch : n;

		redis_buf_call(&r->out, r->sha, pre, member, mem, keys, used_us, from, to);
	}
	st->calls += 1 + nretry;
	st->round_trips++;
	ret = redis_exchange(r, &r->out, 1 + nretry, elems, 1, rep2, deadline, st, err, len);
	if (ret)
		goto out;
	ret = take_sha(r, rep2[0], r->sha, err, len);
	for (k = 0; k < nretry && !ret; k++) {
		size_t from = retry[k] * batch, to = from + batch < n ? from + batch : n;

		ret = redis_take_call(r, rep2[1 + k], fleet, keys, from, to, debt_us, live, st, err,
				      len);
	}
out:
	if (rep)
		redis_free_replies(rep, ncalls);
	if (rep2)
		redis_free_replies(rep2, ncalls + 1);
	free(rep);
	free(rep2);
	free(retry);
	if (ret)
		redis_drop(r);
	st->duration_ns = sluice_now_ns() - t0;
	return ret;
}

void sluice_redis_set_member(struct sluice_redis *r, __u64 horizon_ms, __u32 share)
{
	r->horizon_ms = horizon_ms;
	r->share = share;
	r->share_given = true;
}

int sluice_redis_leave(struct sluice_redis *r, const char *fleet, const char *member, char *err,
		       size_t len)
{
	__u32 share = r->share, n;
	bool given = r->share_given;
	int ret;

	r->share = 0; /* the script's "leave" */
	r->share_given = true;
	ret = sluice_redis_sync(r, fleet, member, 1, 0, NULL, NULL, 0, NULL, &n, NULL, err, len);
	r->share = share;
	r->share_given = given;
	return ret;
}

void sluice_redis_close(struct sluice_redis *r)
{
	if (!r)
		return;
	redis_drop(r);
	redis_cluster_close(r);
	if (r->lk)
		redis_lookup_free(r->lk);
	redis_forget_password(r);
	free(r->password_file);
	free(r->addr);
	free(r->sentinels);
	free(r->master);
	free(r->out.p);
	free(r);
}

const char *sluice_redis_addr(const struct sluice_redis *r)
{
	return r->addr;
}
