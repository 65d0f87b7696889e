// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A fake Redis for the fleet agent's tests: see fakeredis.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "fakeredis.h"

#define MAX_CONNS 16
#define SHA1 "5c1ce5c1ce5c1ce5c1ce5c1ce5c1ce5c1ce5c1ce"

struct conn {
	int fd; /* -1: free */
	bool hung, authed;
	unsigned int id, nth;
	char *buf;
	size_t len, cap;
};

struct fakeredis {
	char dir[64]; /* ours to remove, or "" */
	char path[108];
	char addr[120];
	int lfd;
	bool bound; /* path is our socket, to remove */
	int wake[2];
	pthread_t thread;
	fr_handler handler;
	void *ctx;
	struct conn conns[MAX_CONNS];
	struct conn *cur; /* the connection whose command is being handled */
	unsigned int nconns, ncmds;
	/* fr_cork()ed: what fr_send() is given waits here for fr_uncork() */
	bool corked;
	char cork[4096];
	size_t cork_len;
};

bool fr_is(const struct fr_cmd *c, const char *name)
{
	return c->argc > 0 && !strcasecmp(c->argv[0], name);
}

int fr_sync_keys(const struct fr_cmd *c)
{
	long k;

	if (!fr_is(c, "EVALSHA") || c->argc < 4)
		return -1;
	k = strtol(c->argv[2], NULL, 10);
	if (k < 2 || 3 + k + 4 + (k - 2) != c->argc)
		return -1;
	return (int)(k - 2);
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };

			poll(&pf, 1, 1000);
			continue;
		}
		if (w <= 0)
			return; /* the client went away: its business */
		p += w;
		n -= (size_t)w;
	}
}

void fr_send(struct fakeredis *f, const void *p, size_t n)
{
	if (f->corked && f->cork_len + n <= sizeof(f->cork)) {
		memcpy(f->cork + f->cork_len, p, n);
		f->cork_len += n;
		return;
	}
	if (f->cur && f->cur->fd >= 0)
		send_all(f->cur->fd, p, n);
}

void fr_cork(struct fakeredis *f)
{
	f->corked = true;
	f->cork_len = 0;
}

void fr_uncork(struct fakeredis *f)
{
	f->corked = false;
	if (f->cork_len && f->cur && f->cur->fd >= 0)
		send_all(f->cur->fd, f->cork, f->cork_len);
	f->cork_len = 0;
}

void fr_sendf(struct fakeredis *f, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n > 0)
		fr_send(f, s, (size_t)n);
	free(s);
}

enum fr_action fr_sane(struct fakeredis *f, const struct fr_cmd *c, const struct fr_sane *s)
{
	int k = fr_sync_keys(c), i;

	if (fr_is(c, "AUTH")) {
		if (!s->password) {
			fr_sendf(f, "-ERR AUTH <password> called without any password configured "
				    "for the default user. Are you sure your configuration is "
				    "correct?\r\n");
		} else if (c->argc == 2 && !strcmp(c->argv[1], s->password)) {
			f->cur->authed = true;
			fr_sendf(f, "+OK\r\n");
		} else {
			fr_sendf(f, "-WRONGPASS invalid username-password pair or user is "
				    "disabled.\r\n");
		}
		return FR_ANSWERED;
	}
	if (s->password && !f->cur->authed) {
		fr_sendf(f, "-NOAUTH Authentication required.\r\n");
		return FR_ANSWERED;
	}
	if (fr_is(c, "SCRIPT") && c->argc == 3 && !strcasecmp(c->argv[1], "LOAD")) {
		fr_sendf(f, "$40\r\n%s\r\n", SHA1);
		return FR_ANSWERED;
	}
	if (fr_is(c, "PING")) {
		fr_sendf(f, "+PONG\r\n");
		return FR_ANSWERED;
	}
	if (k >= 0) {
		fr_sendf(f, "*%d\r\n:%lld\r\n", 1 + k, s->live);
		for (i = 0; i < k; i++)
			fr_sendf(f, ":%lld\r\n", s->debt);
		return FR_ANSWERED;
	}
	fr_sendf(f, "-ERR unknown command '%s' (a fake Redis)\r\n", c->argc ? c->argv[0] : "");
	return FR_ANSWERED;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
}

/* "%c%ld\r\n" at p (of n bytes): the number, and *used; 0 when incomplete,
 * -1 when it is not that. */
static int header(const char *p, size_t n, char type, long *v, size_t *used)
{
	const char *nl;
	char *end;

	if (!n)
		return 0;
	if (p[0] != type)
		return -1;
	nl = memchr(p, '\n', n);
	if (!nl)
		return n > 32 ? -1 : 0;
	if (nl - p < 3 || nl[-1] != '\r')
		return -1;
	*v = strtol(p + 1, &end, 10);
	if (end != nl - 1)
		return -1;
	*used = (size_t)(nl - p) + 1;
	return 1;
}

/* One whole command at the start of c->buf into cmd: its length, 0 when
 * incomplete, -1 when it is not a RESP array of bulk strings. */
static long parse_cmd(const struct conn *c, struct fr_cmd *cmd)
{
	size_t at = 0, used;
	long argc, l, i;
	int h;

	h = header(c->buf, c->len, '*', &argc, &used);
	if (h <= 0)
		return h;
	if (argc < 1 || argc > FR_MAX_ARGS)
		return -1;
	at = used;
	for (i = 0; i < argc; i++) {
		h = header(c->buf + at, c->len - at, '$', &l, &used);
		if (h <= 0)
			return h;
		if (l < 0 || l > (1L << 26))
			return -1;
		if (c->len - at - used < (size_t)l + 2)
			return 0;
		at += used + (size_t)l + 2;
	}
	/* Whole: copy the arguments out. */
	at = 0;
	header(c->buf, c->len, '*', &argc, &used);
	at = used;
	cmd->argc = (int)argc;
	for (i = 0; i < argc; i++) {
		header(c->buf + at, c->len - at, '$', &l, &used);
		at += used;
		cmd->argv[i] = malloc((size_t)l + 1);
		if (cmd->argv[i]) {
			memcpy(cmd->argv[i], c->buf + at, (size_t)l);
			cmd->argv[i][l] = '\0';
		}
		cmd->len[i] = (size_t)l;
		at += (size_t)l + 2;
	}
	return (long)at;
}

static void free_cmd(struct fr_cmd *cmd)
{
	int i;

	for (i = 0; i < cmd->argc; i++)
		free(cmd->argv[i]);
	cmd->argc = 0;
}

/* Read what came on c and answer every whole command in it. */
static void serve(struct fakeredis *f, struct conn *c)
{
	char in[65536];
	ssize_t n = recv(c->fd, in, sizeof(in), MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	if (c->hung)
		return; /* read and ignored: the client waits for its deadline */
	if (c->len + (size_t)n > c->cap) {
		size_t cap = c->cap ? c->cap : 65536;
		char *p;

		while (cap < c->len + (size_t)n)
			cap *= 2;
		p = realloc(c->buf, cap);
		if (!p) {
			conn_close(c);
			return;
		}
		c->buf = p;
		c->cap = cap;
	}
	memcpy(c->buf + c->len, in, (size_t)n);
	c->len += (size_t)n;
	for (;;) {
		struct fr_cmd *cmd = calloc(1, sizeof(*cmd));
		enum fr_action a;
		long used;

		if (!cmd) {
			conn_close(c);
			return;
		}
		used = parse_cmd(c, cmd);
		if (used <= 0) {
			free(cmd);
			if (used < 0) {
				fr_sendf(f, "-ERR Protocol error (a fake Redis)\r\n");
				conn_close(c);
			}
			return;
		}
		memmove(c->buf, c->buf + used, c->len - (size_t)used);
		c->len -= (size_t)used;
		cmd->conn = c->id;
		cmd->nth = ++c->nth;
		__atomic_add_fetch(&f->ncmds, 1, __ATOMIC_RELAXED);
		a = f->handler(f, cmd, f->ctx);
		free_cmd(cmd);
		free(cmd);
		if (a == FR_CLOSE) {
			conn_close(c);
			return;
		}
		if (a == FR_HANG) {
			c->hung = true;
			return;
		}
	}
}

static void *fake_main(void *arg)
{
	struct fakeredis *f = arg;

	for (;;) {
		struct pollfd p[2 + MAX_CONNS];
		int map[2 + MAX_CONNS];
		int n = 0, i;

		p[n].fd = f->wake[0];
		p[n++].events = POLLIN;
		p[n].fd = f->lfd;
		p[n++].events = POLLIN;
		for (i = 0; i < MAX_CONNS; i++) {
			if (f->conns[i].fd < 0)
				continue;
			map[n] = i;
			p[n].fd = f->conns[i].fd;
			p[n++].events = POLLIN;
		}
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[0].revents)
			return NULL;
		if (p[1].revents & POLLIN) {
			int fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			for (i = 0; fd >= 0 && i < MAX_CONNS && f->conns[i].fd >= 0; i++)
				;
			if (fd >= 0 && i == MAX_CONNS) {
				close(fd);
			} else if (fd >= 0) {
				memset(&f->conns[i], 0, sizeof(f->conns[i]));
				f->conns[i].fd = fd;
				f->conns[i].id =
					__atomic_add_fetch(&f->nconns, 1, __ATOMIC_RELAXED);
			}
		}
		for (i = 2; i < n; i++) {
			if (!p[i].revents)
				continue;
			f->cur = &f->conns[map[i]];
			serve(f, f->cur);
			f->cur = NULL;
		}
	}
}

/* Listen on f->path, or with tcp on tcp:0 (the port then in f->addr). */
static int start(struct fakeredis *f, fr_handler h, void *ctx, const char *tcp)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sockaddr_in si = { .sin_family = AF_INET };
	socklen_t sl = sizeof(si);
	int ret, i;

	f->handler = h;
	f->ctx = ctx;
	f->lfd = f->wake[0] = f->wake[1] = -1;
	for (i = 0; i < MAX_CONNS; i++)
		f->conns[i].fd = -1;
	if (tcp) {
		if (inet_pton(AF_INET, tcp, &si.sin_addr) != 1)
			return -EINVAL;
		f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&si, sizeof(si)) ||
		    getsockname(f->lfd, (struct sockaddr *)&si, &sl))
			return -errno;
		snprintf(f->addr, sizeof(f->addr), "%s:%u", tcp, ntohs(si.sin_port));
	} else {
		snprintf(f->addr, sizeof(f->addr), "unix:%s", f->path);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
		f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)))
			return -errno;
		f->bound = true;
	}
	if (listen(f->lfd, 16) || pipe2(f->wake, O_CLOEXEC))
		return -errno;
	ret = pthread_create(&f->thread, NULL, fake_main, f);
	return -ret;
}

static void release(struct fakeredis *f)
{
	int i;

	for (i = 0; i < MAX_CONNS; i++)
		conn_close(&f->conns[i]);
	if (f->lfd >= 0)
		close(f->lfd);
	if (f->wake[0] >= 0)
		close(f->wake[0]);
	if (f->wake[1] >= 0)
		close(f->wake[1]);
	if (f->bound)
		unlink(f->path);
	if (f->dir[0])
		rmdir(f->dir);
	free(f);
}

int fakeredis_start_at(struct fakeredis **out, const char *path, fr_handler h, void *ctx)
{
	struct fakeredis *f = calloc(1, sizeof(*f));
	int ret;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	if (strlen(path) >= sizeof(f->path)) {
		free(f);
		return -ENAMETOOLONG;
	}
	snprintf(f->path, sizeof(f->path), "%s", path);
	ret = start(f, h, ctx, NULL);
	if (ret) {
		release(f);
		return ret;
	}
	*out = f;
	return 0;
}

int fakeredis_start(struct fakeredis **out, fr_handler h, void *ctx)
{
	struct fakeredis *f = calloc(1, sizeof(*f));
	int ret;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	snprintf(f->dir, sizeof(f->dir), "/tmp/sluice-fakeredis.XXXXXX");
	if (!mkdtemp(f->dir)) {
		ret = -errno;
		free(f);
		return ret;
	}
	snprintf(f->path, sizeof(f->path), "%s/redis.sock", f->dir);
	ret = start(f, h, ctx, NULL);
	if (ret) {
		release(f);
		return ret;
	}
	*out = f;
	return 0;
}

const char *fakeredis_addr(const struct fakeredis *f)
{
	return f->addr;
}

unsigned int fakeredis_conns(const struct fakeredis *f)
{
	return __atomic_load_n(&f->nconns, __ATOMIC_RELAXED);
}

unsigned int fakeredis_cmds(const struct fakeredis *f)
{
	return __atomic_load_n(&f->ncmds, __ATOMIC_RELAXED);
}

void fakeredis_stop(struct fakeredis *f)
{
	char b = 1;

	if (!f)
		return;
	if (write(f->wake[1], &b, 1) == 1)
		pthread_join(f->thread, NULL);
	release(f);
}

int fakeredis_start_tcp(struct fakeredis **out, const char *host, fr_handler h, void *ctx)
{
	struct fakeredis *f = calloc(1, sizeof(*f));
	int ret;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	ret = start(f, h, ctx, host);
	if (ret) {
		release(f);
		return ret;
	}
	*out = f;
	return 0;
}
