// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fleet agent's Redis client, its network half: the address (unix:PATH,
 * /PATH, host:port, [v6addr]:port, host), the password file, and a
 * non-blocking socket connected under the deadline of the connect or sync
 * (a host name looked up with getaddrinfo_a(), so a slow resolver is under
 * it too). redis.c holds the commands, the exchange and the sync.
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

#include "redis_int.h"

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

int redis_parse_addr(struct sluice_redis *r, const char *addr, char *err, size_t len)
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

void redis_forget_password(struct sluice_redis *r)
{
	if (r->password) {
		explicit_bzero(r->password, r->password_len);
		free(r->password);
	}
	r->password = NULL;
	r->password_len = 0;
}

/* The first line of path, which must be private to its owner, into
 * r->password (which keeps what it had on an error). */
int redis_read_password(struct sluice_redis *r, const char *path, char *err, size_t len)
{
	char buf[PASSWORD_MAX + 2];
	struct stat st;
	size_t got = 0;
	ssize_t n;
	char *nl, *pw;
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
	pw = malloc(got + 1);
	if (!pw) {
		ret = sluice_err(err, len, -ENOMEM, "Couldn't allocate the Redis password");
		goto out;
	}
	memcpy(pw, buf, got);
	pw[got] = '\0';
	/* Read again at every connect (a rotated password): the old one goes
	 * only once the new one passed every check. */
	redis_forget_password(r);
	r->password = pw;
	r->password_len = got;
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return ret;
}

int sluice_redis_check_addr(const char *addr, char *err, size_t len)
{
	struct sluice_redis r;

	memset(&r, 0, sizeof(r));
	return redis_parse_addr(&r, addr, err, len);
}

int sluice_redis_check_password_file(const char *path, char *err, size_t len)
{
	struct sluice_redis r;
	int ret;

	memset(&r, 0, sizeof(r));
	ret = redis_read_password(&r, path, err, len);
	redis_forget_password(&r);
	return ret;
}

/* ---- connecting ---- */

void redis_drop(struct sluice_redis *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (r->rd)
		redisReaderFree(r->rd);
	r->rd = NULL;
}

/* Wait for events on fd until deadline: the revents, or -ETIMEDOUT. */
int redis_wait_fd(int fd, short events, __u64 deadline)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		__u64 now = sluice_now_ns();
		struct timespec ts;
		int n;

		if (now >= deadline)
			return -ETIMEDOUT;
		ts = redis_ts_of(deadline - now);
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
			__u64 now = sluice_now_ns();
			struct timespec ts = redis_ts_of(10 * 1000 * 1000);

			if (now >= deadline) {
				ret = -ETIMEDOUT;
				goto fail;
			}
			if (deadline - now < 10 * 1000 * 1000)
				ts = redis_ts_of(deadline - now);
			nanosleep(&ts, NULL);
			continue;
		}
		ret = -errno;
		goto fail;
	}
	ret = redis_wait_fd(fd, POLLOUT, deadline);
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

void redis_lookup_free(struct lookup *lk)
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
		__u64 now = sluice_now_ns();
		struct timespec ts;

		if (now >= deadline) {
			sluice_format_duration(r->timeout_ns, d, sizeof(d));
			return sluice_err(err, len, -ETIMEDOUT,
					  "The lookup of Redis host %s did not finish within %s: "
					  "check the resolver, or give an address, not a name",
					  r->host, d);
		}
		ts = redis_ts_of(deadline - now);
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

int redis_open_socket(struct sluice_redis *r, __u64 deadline, char *err, size_t len)
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
