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
 * Redis Cluster: every key of a fleet carries the hash tag {FLEET}
 * ("sluice:{F}:boxes", "sluice:{F}:p:198.18.0.7/32"), so all of them hash
 * to one slot and the script's multi-key call is legal there.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
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

#include "libsluice.h"
#include "redis.h"

#define DEFAULT_PORT "6379"
#define ADDR_FORMS "unix:/path, /path, host:port, [v6addr]:port or host (port " DEFAULT_PORT ")"
#define PASSWORD_MAX 4096

/*
 * One call for KEYS = [members zset, lane key 1..m], ARGV = [member, member
 * ttl ms, used_1..used_m] (microseconds). Redis's clock only: the answer is
 * durations (debt = tat - now), never times. Each lane's tat moves
 * unconditionally, GCRA's tat = max(tat, now) + used, since the usage has
 * already happened on some box; its TTL is the debt plus a second, so a key
 * outlives its debt and no longer. tat is ~1.8e15 us: '%.3f' keeps all a
 * double holds (0.25 us there). Every member of a fleet must use the same
 * ttl, since a call drops the members older than its own.
 */
static const char script[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local ttl = tonumber(ARGV[2])\n"
	"redis.call('ZADD', KEYS[1], string.format('%.0f', now), ARGV[1])\n"
	"redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now - ttl * 1000))\n"
	"redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	"local out = {redis.call('ZCARD', KEYS[1])}\n"
	"for i = 2, #KEYS do\n"
	"  local tat = tonumber(redis.call('GET', KEYS[i])) or 0\n"
	"  if tat < now then tat = now end\n"
	"  tat = tat + tonumber(ARGV[i + 1])\n"
	"  local debt = tat - now\n"
	"  redis.call('SET', KEYS[i], string.format('%.3f', tat), 'PX',\n"
	"             string.format('%.0f', math.ceil(debt / 1000) + 1000))\n"
	"  out[i] = math.ceil(debt)\n"
	"end\n"
	"return out\n";

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

struct sluice_redis {
	char *addr; /* as given */
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
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * SLUICE_NS_PER_SEC + ts.tv_nsec;
}

static struct timespec ts_of(__u64 ns)
{
	return (struct timespec){ .tv_sec = ns / SLUICE_NS_PER_SEC,
				  .tv_nsec = ns % SLUICE_NS_PER_SEC };
}

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
static void buf_cmd(struct buf *b, size_t argc)
{
	char head[32];

	buf_put(b, head, snprintf(head, sizeof(head), "*%zu\r\n", argc));
}

/* One argument, pre followed by s: keys are "sluice:{F}:" + the caller's. */
static void buf_arg2(struct buf *b, const char *pre, size_t plen, const char *s, size_t slen)
{
	char head[32];

	buf_put(b, head, snprintf(head, sizeof(head), "$%zu\r\n", plen + slen));
	buf_put(b, pre, plen);
	buf_put(b, s, slen);
	buf_put(b, "\r\n", 2);
}

static void buf_arg(struct buf *b, const char *s)
{
	buf_arg2(b, "", 0, s, strlen(s));
}

static void buf_script_load(struct buf *b)
{
	buf_cmd(b, 3);
	buf_arg(b, "SCRIPT");
	buf_arg(b, "LOAD");
	buf_arg(b, script);
}

/* ---- opening: the address and the password ---- */

static int bad_addr(const char *addr, const char *why, char *err, size_t len)
{
	return sluice_err(err, len, -EINVAL, "Redis address '%s' %s: give %s", addr, why,
			  ADDR_FORMS);
}

static int parse_port(const char *addr, const char *s, char *port, char *err, size_t len)
{
	char *end;
	long v;

	if (!*s)
		return bad_addr(addr, "has no port after the ':'", err, len);
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || *s < '0' || *s > '9' || errno || v < 1 || v > 65535)
		return bad_addr(addr, "has a port that is not a number from 1 to 65535", err, len);
	snprintf(port, 8, "%ld", v);
	return 0;
}

static int parse_addr(struct sluice_redis *r, const char *addr, char *err, size_t len)
{
	const char *path = NULL, *colon, *host = addr;
	size_t hlen, i;

	if (!addr || !*addr)
		return bad_addr(addr ? addr : "", "is empty", err, len);
	if (!strncmp(addr, "unix:", 5))
		path = addr + 5;
	else if (addr[0] == '/')
		path = addr;
	if (path) {
		if (!*path)
			return bad_addr(addr, "has no socket path after 'unix:'", err, len);
		if (strlen(path) >= sizeof(r->path))
			return sluice_err(err, len, -EINVAL,
					  "Redis socket path '%s' is %zu characters, more than a "
					  "unix socket holds (%zu): use a shorter path",
					  path, strlen(path), sizeof(r->path) - 1);
		r->is_unix = true;
		snprintf(r->path, sizeof(r->path), "%s", path);
		return 0;
	}
	if (addr[0] == '[') {
		struct in6_addr a6;
		const char *close = strchr(addr, ']');

		if (!close)
			return bad_addr(addr, "has a '[' without its ']'", err, len);
		hlen = close - addr - 1;
		if (hlen >= sizeof(r->host))
			return bad_addr(addr, "has too long an address", err, len);
		memcpy(r->host, addr + 1, hlen);
		r->host[hlen] = '\0';
		if (inet_pton(AF_INET6, r->host, &a6) != 1)
			return bad_addr(addr, "has no IPv6 address between '[' and ']'", err, len);
		r->numeric = true;
		if (!close[1]) {
			snprintf(r->port, sizeof(r->port), DEFAULT_PORT);
			return 0;
		}
		if (close[1] != ':')
			return bad_addr(addr, "has something other than ':port' after the ']'", err,
					len);
		return parse_port(addr, close + 2, r->port, err, len);
	}
	colon = strchr(addr, ':');
	if (colon && strchr(colon + 1, ':'))
		return bad_addr(addr, "has more than one ':' (an IPv6 address goes in [ ])", err,
				len);
	hlen = colon ? (size_t)(colon - host) : strlen(host);
	if (!hlen)
		return bad_addr(addr, "has no host before the ':'", err, len);
	if (hlen >= sizeof(r->host))
		return bad_addr(addr, "has too long a host name", err, len);
	for (i = 0; i < hlen; i++) {
		char c = host[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-' || c == '_'))
			return bad_addr(addr, "has a host that is not a name or an address", err,
					len);
	}
	memcpy(r->host, host, hlen);
	r->host[hlen] = '\0';
	if (colon) {
		int ret = parse_port(addr, colon + 1, r->port, err, len);

		if (ret)
			return ret;
	} else {
		snprintf(r->port, sizeof(r->port), DEFAULT_PORT);
	}
	{
		struct in_addr a4;

		r->numeric = inet_pton(AF_INET, r->host, &a4) == 1;
	}
	return 0;
}

/* The first line of path, which must be private to its owner. */
static int read_password(struct sluice_redis *r, const char *path, char *err, size_t len)
{
	char buf[PASSWORD_MAX + 2];
	struct stat st;
	size_t got = 0;
	ssize_t n;
	char *nl;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return sluice_err(err, len, -errno, "Couldn't open the Redis password file %s: %s",
				  path, strerror(errno));
	if (fstat(fd, &st)) {
		ret = sluice_err(err, len, -errno, "Couldn't stat the Redis password file %s: %s",
				 path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = sluice_err(err, len, -EINVAL,
				 "The Redis password file %s is not a regular file: give a file "
				 "with the password on its first line",
				 path);
		goto out;
	}
	if (st.st_mode & 077) {
		ret = sluice_err(err, len, -EACCES,
				 "The Redis password file %s has mode %04o, which lets others than "
				 "its owner read it: run 'chmod 600 %s'",
				 path, (unsigned int)(st.st_mode & 07777), path);
		goto out;
	}
	while (got < sizeof(buf) - 1) {
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = sluice_err(err, len, -errno,
					 "Couldn't read the Redis password file %s: %s", path,
					 strerror(errno));
			goto out;
		}
		if (!n)
			break;
		got += n;
	}
	buf[got] = '\0';
	nl = memchr(buf, '\n', got);
	if (nl)
		got = nl - buf;
	if (got && buf[got - 1] == '\r')
		got--;
	if (got > PASSWORD_MAX) {
		ret = sluice_err(err, len, -EINVAL,
				 "The first line of the Redis password file %s is longer than %d "
				 "bytes: put the password alone on it",
				 path, PASSWORD_MAX);
		goto out;
	}
	if (!got) {
		ret = sluice_err(err, len, -EINVAL,
				 "The Redis password file %s is empty: write the password on its "
				 "first line",
				 path);
		goto out;
	}
	r->password = malloc(got + 1);
	if (!r->password) {
		ret = sluice_err(err, len, -ENOMEM, "Couldn't allocate the Redis password");
		goto out;
	}
	memcpy(r->password, buf, got);
	r->password[got] = '\0';
	r->password_len = got;
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return ret;
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
	ret = parse_addr(r, o->addr, err, len);
	if (ret)
		goto fail;
	r->addr = strdup(o->addr);
	if (o->password_file)
		r->password_file = strdup(o->password_file);
	if (!r->addr || (o->password_file && !r->password_file)) {
		ret = sluice_err(err, len, -ENOMEM, "Couldn't allocate a Redis client");
		goto fail;
	}
	if (o->password_file) {
		ret = read_password(r, o->password_file, err, len);
		if (ret)
			goto fail;
	}
	*out = r;
	return 0;
fail:
	sluice_redis_close(r);
	return ret;
}

/* ---- connecting ---- */

static void drop(struct sluice_redis *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (r->rd)
		redisReaderFree(r->rd);
	r->rd = NULL;
}

/* Wait for events on fd until deadline: the revents, or -ETIMEDOUT. */
static int wait_fd(int fd, short events, __u64 deadline)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		__u64 now = now_ns();
		struct timespec ts;
		int n;

		if (now >= deadline)
			return -ETIMEDOUT;
		ts = ts_of(deadline - now);
		n = ppoll(&p, 1, &ts, NULL);
		if (n > 0)
			return p.revents & POLLNVAL ? -EBADF : p.revents;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* A non-blocking connect: wait for POLLOUT, then SO_ERROR says how it went. */
static int connect_one(int family, const struct sockaddr *sa, socklen_t salen, __u64 deadline)
{
	int fd, ret, soerr;
	socklen_t l = sizeof(soerr);

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (!connect(fd, sa, salen))
			return fd;
		if (errno == EINPROGRESS || errno == EINTR)
			break;
		/* A unix socket whose backlog is full (a stopped Redis) says
		 * EAGAIN, not EINPROGRESS: try again until the deadline. */
		if (errno == EAGAIN && family == AF_UNIX) {
			__u64 now = now_ns();
			struct timespec ts = ts_of(10 * 1000 * 1000);

			if (now >= deadline) {
				ret = -ETIMEDOUT;
				goto fail;
			}
			if (deadline - now < 10 * 1000 * 1000)
				ts = ts_of(deadline - now);
			nanosleep(&ts, NULL);
			continue;
		}
		ret = -errno;
		goto fail;
	}
	ret = wait_fd(fd, POLLOUT, deadline);
	if (ret < 0)
		goto fail;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &l)) {
		ret = -errno;
		goto fail;
	}
	if (soerr) {
		ret = -soerr;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return ret;
}

static void lookup_free(struct lookup *lk)
{
	struct gaicb *list[1] = { &lk->cb };

	/* A lookup glibc could not cancel still writes into lk: wait for it. */
	if (gai_cancel(&lk->cb) == EAI_NOTCANCELED)
		while (gai_error(&lk->cb) == EAI_INPROGRESS)
			gai_suspend((const struct gaicb *const *)list, 1, NULL);
	if (lk->cb.ar_result)
		freeaddrinfo(lk->cb.ar_result);
	free(lk);
}

/* r's host and port as addresses: an address literal at once, a name by
 * getaddrinfo_a() within the deadline. */
static int resolve(struct sluice_redis *r, __u64 deadline, struct addrinfo **res, char *err,
		   size_t len)
{
	struct gaicb *list[1];
	char d[32];
	int ret;

	if (r->numeric) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
					  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };

		ret = getaddrinfo(r->host, r->port, &hints, res);
		if (ret)
			return sluice_err(err, len, -EINVAL, "Redis address '%s' is not usable: %s",
					  r->addr, gai_strerror(ret));
		return 0;
	}
	if (!r->lk) {
		r->lk = calloc(1, sizeof(*r->lk));
		if (!r->lk)
			return sluice_err(err, len, -ENOMEM, "Couldn't allocate a name lookup");
		snprintf(r->lk->host, sizeof(r->lk->host), "%s", r->host);
		snprintf(r->lk->port, sizeof(r->lk->port), "%s", r->port);
		r->lk->hints.ai_socktype = SOCK_STREAM;
		r->lk->hints.ai_flags = AI_NUMERICSERV;
		r->lk->cb.ar_name = r->lk->host;
		r->lk->cb.ar_service = r->lk->port;
		r->lk->cb.ar_request = &r->lk->hints;
		list[0] = &r->lk->cb;
		ret = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
		if (ret) {
			free(r->lk);
			r->lk = NULL;
			return sluice_err(err, len, -EAGAIN, "Couldn't start looking up %s: %s",
					  r->host, gai_strerror(ret));
		}
	}
	list[0] = &r->lk->cb;
	while ((ret = gai_error(&r->lk->cb)) == EAI_INPROGRESS) {
		__u64 now = now_ns();
		struct timespec ts;

		if (now >= deadline) {
			sluice_format_duration(r->timeout_ns, d, sizeof(d));
			return sluice_err(err, len, -ETIMEDOUT,
					  "The lookup of Redis host %s did not finish within %s: "
					  "check the resolver, or give an address, not a name",
					  r->host, d);
		}
		ts = ts_of(deadline - now);
		gai_suspend((const struct gaicb *const *)list, 1, &ts);
	}
	*res = r->lk->cb.ar_result;
	r->lk->cb.ar_result = NULL;
	free(r->lk);
	r->lk = NULL;
	if (ret)
		return sluice_err(err, len, -EHOSTUNREACH,
				  "Couldn't look up Redis host %s (of address %s): %s: check the "
				  "name, or give an address",
				  r->host, r->addr, gai_strerror(ret));
	return 0;
}

static int connect_fail(struct sluice_redis *r, int ret, char *err, size_t len)
{
	const char *hint = "check the address";
	char d[32];

	if (ret == -ETIMEDOUT) {
		sluice_format_duration(r->timeout_ns, d, sizeof(d));
		return sluice_err(err, len, ret,
				  "Couldn't connect to Redis at %s within %s: is it up and "
				  "reachable?",
				  r->addr, d);
	}
	if (ret == -ENOENT)
		hint = "no socket is there: is redis-server running with this unixsocket?";
	else if (ret == -ECONNREFUSED)
		hint = "nothing listens there: is redis-server running on this address?";
	else if (ret == -EACCES)
		hint = "the socket's permissions refuse this user: see unixsocketperm";
	return sluice_err(err, len, ret, "Couldn't connect to Redis at %s: %s (%s)", r->addr,
			  strerror(-ret), hint);
}

static int open_socket(struct sluice_redis *r, __u64 deadline, char *err, size_t len)
{
	struct addrinfo *res = NULL, *ai;
	int fd = -ENOENT, one = 1, ret;

	if (r->is_unix) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		memcpy(sa.sun_path, r->path, sizeof(sa.sun_path));
		fd = connect_one(AF_UNIX, (struct sockaddr *)&sa, sizeof(sa), deadline);
		return fd < 0 ? connect_fail(r, fd, err, len) : fd;
	}
	ret = resolve(r, deadline, &res, err, len);
	if (ret)
		return ret;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = connect_one(ai->ai_family, ai->ai_addr, ai->ai_addrlen, deadline);
		if (fd >= 0 || fd == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return connect_fail(r, fd, err, len);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
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

static int exchange(struct sluice_redis *r, const struct buf *out, size_t nrep, redisReply **rep,
		    __u64 deadline, struct sluice_redis_sync_stats *st, char *err, size_t len)
{
	size_t sent = 0, got = 0;
	char in[65536];
	ssize_t n;

	if (out->oom)
		return sluice_err(err, len, -ENOMEM, "Couldn't allocate the commands for Redis");
	while (got < nrep) {
		int ev = wait_fd(r->fd, POLLIN | (sent < out->len ? POLLOUT : 0), deadline);

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
static int reply_error(struct sluice_redis *r, const redisReply *x, const char *what, char *err,
		       size_t len)
{
	const char *e = x->str ? x->str : "";

	if (starts(e, "NOAUTH") && !r->password)
		return sluice_err(err, len, -EACCES,
				  "Redis at %s wants a password ('%s') and no password file is "
				  "given: give one, private to its owner, with the password on its "
				  "first line",
				  r->addr, e);
	if (starts(e, "NOAUTH") || starts(e, "WRONGPASS") || strstr(e, "invalid password"))
		return sluice_err(err, len, -EACCES,
				  "Redis at %s refused the password in %s ('%s'): put its "
				  "requirepass (the default user's password) in that file",
				  r->addr, r->password_file, e);
	if (strstr(e, "without any password configured"))
		return sluice_err(err, len, -EPROTO,
				  "Redis at %s has no password but the password file %s gives one "
				  "('%s'): set requirepass there, or give no password file",
				  r->addr, r->password_file, e);
	return sluice_err(err, len, -EPROTO, "Redis at %s answered %s with an error: '%s'", r->addr,
			  what, e);
}

static void free_replies(redisReply **rep, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (rep[i])
			freeReplyObject(rep[i]);
	memset(rep, 0, n * sizeof(*rep));
}

/* The SHA1 SCRIPT LOAD answers, into r->sha. */
static int take_sha(struct sluice_redis *r, const redisReply *x, char *err, size_t len)
{
	if (x->type == REDIS_REPLY_ERROR)
		return reply_error(r, x, "SCRIPT LOAD", err, len);
	if (x->type != REDIS_REPLY_STRING || x->len != 40)
		return sluice_err(err, len, -EPROTO,
				  "Redis at %s answered SCRIPT LOAD with no SHA1: is it Redis?",
				  r->addr);
	memcpy(r->sha, x->str, 40);
	r->sha[40] = '\0';
	return 0;
}

static int do_connect(struct sluice_redis *r, __u64 deadline, char *err, size_t len)
{
	redisReply *rep[2] = { NULL, NULL };
	size_t nrep = r->password ? 2 : 1;
	int ret;

	drop(r);
	ret = open_socket(r, deadline, err, len);
	if (ret < 0)
		return ret;
	r->fd = ret;
	r->rd = redisReaderCreate();
	if (!r->rd) {
		ret = sluice_err(err, len, -ENOMEM, "Couldn't allocate a Redis reply reader");
		goto out;
	}
	/* AUTH and SCRIPT LOAD in one round trip: a refused AUTH makes SCRIPT
	 * LOAD fail too, and AUTH's reply is the one that says why. */
	r->out.len = 0;
	r->out.oom = false;
	if (r->password) {
		buf_cmd(&r->out, 2);
		buf_arg(&r->out, "AUTH");
		buf_arg2(&r->out, "", 0, r->password, r->password_len);
	}
	buf_script_load(&r->out);
	ret = exchange(r, &r->out, nrep, rep, deadline, NULL, err, len);
	explicit_bzero(r->out.p, r->out.len);
	if (ret)
		goto out;
	if (r->password && rep[0]->type == REDIS_REPLY_ERROR) {
		ret = reply_error(r, rep[0], "AUTH", err, len);
		goto out;
	}
	ret = take_sha(r, rep[nrep - 1], err, len);
out:
	free_replies(rep, nrep);
	if (ret)
		drop(r);
	return ret;
}

int sluice_redis_connect(struct sluice_redis *r, char *err, size_t len)
{
	return do_connect(r, now_ns() + r->timeout_ns, err, len);
}

bool sluice_redis_connected(const struct sluice_redis *r)
{
	return r->fd >= 0;
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
		/* "sluice:{F}:boxes" is the members' sorted set */
		if (!strcmp(keys[i], "boxes"))
			return sluice_err(err, len, -EINVAL,
					  "Fleet key 'boxes' is the name of the fleet's members "
					  "set: give keys another name");
		if (!(used[i] > 0) || !isfinite(used[i]))
			return sluice_err(err, len, -EINVAL,
					  "Usage %g us of fleet key '%s' is not a positive number: "
					  "leave out keys that used nothing",
					  used[i], keys[i]);
	}
	return 0;
}

/* One EVALSHA of keys [from, to) (none for a heartbeat). */
static void buf_call(struct buf *b, const char *sha, const char *pre, const char *member,
		     const char *ttl, const char *const *keys, const double *used, size_t from,
		     size_t to)
{
	size_t m = to - from, plen = strlen(pre), i;
	char num[40];

	buf_cmd(b, 3 + 1 + m + 2 + m);
	buf_arg(b, "EVALSHA");
	buf_arg(b, sha);
	snprintf(num, sizeof(num), "%zu", 1 + m);
	buf_arg(b, num);
	buf_arg2(b, pre, plen, "boxes", 5);
	for (i = from; i < to; i++)
		buf_arg2(b, pre, plen, keys[i], strlen(keys[i]));
	buf_arg(b, member);
	buf_arg(b, ttl);
	/* %.17g: the script reads back the very double given */
	for (i = from; i < to; i++) {
		snprintf(num, sizeof(num), "%.17g", used[i]);
		buf_arg(b, num);
	}
}

/* Call c's reply: {live, debt of each key} into debt[from..to) and *live. */
static int take_call(struct sluice_redis *r, const redisReply *x, size_t from, size_t to,
		     __s64 *debt, __u32 *live, char *err, size_t len)
{
	size_t i, m = to - from;

	if (x->type == REDIS_REPLY_ERROR)
		return reply_error(r, x, "the sync script", err, len);
	if (x->type != REDIS_REPLY_ARRAY || x->elements != 1 + m)
		return sluice_err(err, len, -EPROTO,
				  "Redis at %s answered the sync script with something other than "
				  "%zu integers",
				  r->addr, 1 + m);
	for (i = 0; i <= m; i++)
		if (x->element[i]->type != REDIS_REPLY_INTEGER)
			return sluice_err(err, len, -EPROTO,
					  "Redis at %s answered the sync script with a "
					  "non-integer",
					  r->addr);
	if (live)
		*live = x->element[0]->integer;
	for (i = 0; i < m; i++)
		debt[from + i] = x->element[1 + i]->integer;
	return 0;
}

static bool is_noscript(const redisReply *x)
{
	return x->type == REDIS_REPLY_ERROR && x->str && starts(x->str, "NOSCRIPT");
}

int sluice_redis_sync(struct sluice_redis *r, const char *fleet, const char *member,
		      __u64 member_ttl_ms, size_t n, const char *const *keys, const double *used_us,
		      size_t batch, __s64 *debt_us, __u32 *live, struct sluice_redis_sync_stats *st,
		      char *err, size_t len)
{
	__u64 t0 = now_ns(), deadline = t0 + r->timeout_ns;
	struct sluice_redis_sync_stats mine;
	size_t ncalls, nretry = 0, c, k;
	redisReply **rep = NULL, **rep2 = NULL;
	size_t *retry = NULL;
	char pre[SLUICE_REDIS_FLEET_MAX + 16], ttl[24];
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
	snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)member_ttl_ms);

	if (r->fd < 0) {
		st->reconnected = true;
		ret = do_connect(r, deadline, err, len);
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
		buf_call(&r->out, r->sha, pre, member, ttl, keys, used_us, c * batch,
			 c * batch + batch < n ? c * batch + batch : n);
	st->calls += ncalls;
	st->round_trips++;
	ret = exchange(r, &r->out, ncalls, rep, deadline, st, err, len);
	if (ret)
		goto out;
	for (c = 0; c < ncalls; c++) {
		size_t from = c * batch, to = from + batch < n ? from + batch : n;

		if (is_noscript(rep[c])) {
			retry[nretry++] = c;
			continue;
		}
		ret = take_call(r, rep[c], from, to, debt_us, live, err, len);
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

		buf_call(&r->out, r->sha, pre, member, ttl, keys, used_us, from, to);
	}
	st->calls += 1 + nretry;
	st->round_trips++;
	ret = exchange(r, &r->out, 1 + nretry, rep2, deadline, st, err, len);
	if (ret)
		goto out;
	ret = take_sha(r, rep2[0], err, len);
	for (k = 0; k < nretry && !ret; k++) {
		size_t from = retry[k] * batch, to = from + batch < n ? from + batch : n;

		ret = take_call(r, rep2[1 + k], from, to, debt_us, live, err, len);
	}
out:
	if (rep)
		free_replies(rep, ncalls);
	if (rep2)
		free_replies(rep2, ncalls + 1);
	free(rep);
	free(rep2);
	free(retry);
	if (ret)
		drop(r);
	st->duration_ns = now_ns() - t0;
	return ret;
}

void sluice_redis_close(struct sluice_redis *r)
{
	if (!r)
		return;
	drop(r);
	if (r->lk)
		lookup_free(r->lk);
	if (r->password) {
		explicit_bzero(r->password, r->password_len);
		free(r->password);
	}
	free(r->password_file);
	free(r->addr);
	free(r->out.p);
	free(r);
}

const char *sluice_redis_addr(const struct sluice_redis *r)
{
	return r->addr;
}
