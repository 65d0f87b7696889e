// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `sluice run --metrics ADDR:PORT`: the counters of one interface in the
 * Prometheus text format (sluice_prometheus()), served by libmicrohttpd from
 * its own thread, so that no client, however slow, delays run's reports.
 *
 * GET (or HEAD) /metrics answers 200; another path 404, another method 405.
 * Each connection serves one request and lives at most METRICS_DEADLINE_SEC
 * seconds from its accept, whatever it sends: MHD's own connection timeout
 * only counts idle time, and a client sending a byte a second would never
 * be idle, so a watcher thread ends connections past their deadline (see
 * watch()). At most METRICS_MAX_CONN connections at once,
 * METRICS_MAX_CONN_PER_IP from one address; MHD closes others on accept.
 *
 * Threads: the render runs in MHD's thread, on a handle of its own (opened
 * in metrics_start()); it reads the pinned maps and the mmapped config only
 * (the settings through their seqlock, as any other reader does), and
 * shares nothing with run's loop. The watcher shares the list of
 * connections with MHD's thread, under m->lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "loader.h"

#define METRICS_DEADLINE_SEC 5
#define METRICS_MAX_CONN 16
#define METRICS_MAX_CONN_PER_IP 4
#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_EXAMPLE "e.g. 127.0.0.1:9100 or [::1]:9100"

/* A connection MHD has accepted and not yet closed: its socket stays open
 * while it is on the list (MHD tells us of the close before it closes). */
struct conn {
	struct conn *next, **pprev;
	int fd;
	struct timespec deadline; /* CLOCK_MONOTONIC */
	bool cut; /* shut down by the watcher */
};

struct metrics_server {
	int listen_fd; /* ours until MHD takes it (MHD_stop_daemon() closes it) */
	char url[NI_MAXHOST * 3 + NI_MAXSERV + 32]; /* room for bound_url() */
	struct MHD_Daemon *daemon;
	struct sluice_handle h; /* MHD's thread's only */
	bool have_h;
	pthread_t watcher;
	bool have_watcher;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* a new connection, or stop */
	struct conn *conns; /* in order of accept, so of deadline */
	bool stop;
};

/* ---- ADDR:PORT ---- */

/* The port: decimal digits, 0..65535 (0: any free port). */
static int parse_port(const char *arg, const char *port, char *err, size_t errlen)
{
	unsigned long v = 0;
	const char *p;

	for (p = port; *p >= '0' && *p <= '9' && v <= 65535; p++)
		v = v * 10 + (unsigned long)(*p - '0');
	if (!*port || *p || v > 65535) {
		snprintf(err, errlen, "--metrics %s: the port '%s' is not a number in 0..65535 "
			 "(0: any free port, the one printed on start)", arg, port);
		return SLUICE_EXIT_USAGE;
	}
	return 0;
}

/* Split "HOST:PORT" or "[HOST]:PORT" into host and port (in buf). */
static int split(const char *arg, char *buf, size_t len, char **host, char **port, char *err,
		 size_t errlen)
{
	struct in6_addr a6;
	char *p;

	if (strlen(arg) >= len)
		goto bad;
	strcpy(buf, arg);
	if (buf[0] == '[') {
		p = strchr(buf, ']');
		if (!p || p == buf + 1 || p[1] != ':')
			goto bad;
		*p = '\0';
		*host = buf + 1;
		*port = p + 2;
		return 0;
	}
	p = strrchr(buf, ':');
	if (!p || p == buf)
		goto bad;
	*p = '\0';
	if (strchr(buf, ':')) {
		/* "::1:9158" reads as an address and a port, or as one IPv6
		 * address: brackets say which. "::1" alone has no port. */
		if (inet_pton(AF_INET6, arg, &a6) == 1 && inet_pton(AF_INET6, buf, &a6) != 1)
			snprintf(err, errlen, "--metrics %s: an IPv6 address needs brackets and a "
				 "port: write [%s]:PORT", arg, arg);
		else
			snprintf(err, errlen, "--metrics %s: an IPv6 address needs brackets: write "
				 "[%s]:%s", arg, buf, p + 1);
		return SLUICE_EXIT_USAGE;
	}
	*host = buf;
	*port = p + 1;
	return 0;
bad:
	snprintf(err, errlen, "--metrics '%s' is not ADDR:PORT (%s; 0.0.0.0:PORT or [::]:PORT "
		 "for every address)", arg, METRICS_EXAMPLE);
	return SLUICE_EXIT_USAGE;
}

/* Why bind() or listen() failed, and what to do about it. */
static const char *bind_hint(int e)
{
	switch (e) {
	case EADDRINUSE:
		return "the port is in use: pick another one, or 0 for any free port";
	case EADDRNOTAVAIL:
		return "not an address of this host in this network namespace (see 'ip address'): "
		       "use one of its addresses, 127.0.0.1 or 0.0.0.0";
	case EACCES:
		return "a port below 1024 needs CAP_NET_BIND_SERVICE: use a port of 1024 or more";
	case EAFNOSUPPORT:
		return "this host has no IPv6 (disabled?): use an IPv4 address";
	default:
		return NULL;
	}
}

/* "http://ADDR:PORT/metrics" of the socket as bound: the real port after a
 * port 0, IPv6 in brackets, a zone's % escaped as a URL wants (RFC 6874). */
static int bound_url(int fd, char *url, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[NI_MAXHOST], port[NI_MAXSERV], esc[NI_MAXHOST * 3], *pct;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		return -errno;
	if (getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV))
		return -EINVAL;
	if (ss.ss_family != AF_INET6) {
		snprintf(url, len, "http://%s:%s/metrics", host, port);
		return 0;
	}
	pct = strchr(host, '%');
	if (pct) {
		*pct = '\0';
		snprintf(esc, sizeof(esc), "%s%%25%s", host, pct + 1);
	} else {
		snprintf(esc, sizeof(esc), "%s", host);
	}
	snprintf(url, len, "http://[%s]:%s/metrics", esc, port);
	return 0;
}

int metrics_open(const char *addr_port, struct metrics_server **out, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *ai = NULL;
	struct metrics_server *m;
	char buf[512], *host, *port;
	const char *what = "open a socket for", *hint;
	int fd = -1, one = 1, ret, e;

	*out = NULL;
	ret = split(addr_port, buf, sizeof(buf), &host, &port, err, errlen);
	if (ret)
		return ret;
	ret = parse_port(addr_port, port, err, errlen);
	if (ret)
		return ret;
	ret = getaddrinfo(host, port, &hints, &ai);
	if (ret) {
		snprintf(err, errlen, "--metrics %s: '%s' is not an address: %s (%s)", addr_port,
			 host, gai_strerror(ret), METRICS_EXAMPLE);
		return SLUICE_EXIT_USAGE;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto sys_err;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	what = "listen on";
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64))
		goto sys_err;
	freeaddrinfo(ai);
	m = calloc(1, sizeof(*m));
	if (!m) {
		close(fd);
		snprintf(err, errlen, "Couldn't serve --metrics %s: out of memory", addr_port);
		return SLUICE_EXIT_RUNTIME;
	}
	m->listen_fd = fd;
	ret = bound_url(fd, m->url, sizeof(m->url));
	if (ret) {
		snprintf(err, errlen, "Couldn't read the address --metrics %s is bound to: %s",
			 addr_port, strerror(-ret));
		close(fd);
		free(m);
		return SLUICE_EXIT_RUNTIME;
	}
	*out = m;
	return 0;

sys_err:
	e = errno;
	hint = bind_hint(e);
	snprintf(err, errlen, "Couldn't %s --metrics %s: %s%s%s", what, addr_port, strerror(e),
		 hint ? ": " : "", hint ? hint : "");
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return SLUICE_EXIT_RUNTIME;
}

const char *metrics_url(const struct metrics_server *m)
{
	return m->url;
}

/* ---- the deadline of each connection ---- */

static bool before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/*
 * MHD's thread tells of each connection as it starts and as it closes. The
 * watcher shuts down the socket of one past its deadline: MHD then reads
 * its end and closes it. The socket cannot have been closed (and its number
 * reused) meanwhile: MHD closes it only after NOTIFY_CLOSED, which takes it
 * off the list under the same lock.
 */
static void on_connection(void *cls, struct MHD_Connection *c, void **ctx,
			  enum MHD_ConnectionNotificationCode code)
{
	struct metrics_server *m = cls;
	const union MHD_ConnectionInfo *ci;
	struct conn *n = *ctx;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!n)
			return;
		pthread_mutex_lock(&m->lock);
		*n->pprev = n->next;
		if (n->next)
			n->next->pprev = n->pprev;
		pthread_mutex_unlock(&m->lock);
		free(n);
		*ctx = NULL;
		return;
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	n = calloc(1, sizeof(*n));
	if (!ci || !n) {
		/* No deadline to keep: no connection either. */
		free(n);
		if (ci)
			shutdown(ci->connect_fd, SHUT_RDWR);
		return;
	}
	n->fd = ci->connect_fd;
	clock_gettime(CLOCK_MONOTONIC, &n->deadline);
	n->deadline.tv_sec += METRICS_DEADLINE_SEC;
	pthread_mutex_lock(&m->lock);
	/* Appended: the list stays in order of deadline. */
	n->pprev = &m->conns;
	while (*n->pprev)
		n->pprev = &(*n->pprev)->next;
	*n->pprev = n;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
	*ctx = n;
}

static void *watch(void *arg)
{
	struct metrics_server *m = arg;
	struct timespec now;
	struct conn *n;

	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		for (n = m->conns; n && n->cut; n = n->next)
			;
		for (; n && !before(&now, &n->deadline); n = n->next) {
			shutdown(n->fd, SHUT_RDWR);
			n->cut = true;
		}
		if (n)
			pthread_cond_timedwait(&m->wake, &m->lock, &n->deadline);
		else
			pthread_cond_wait(&m->wake, &m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* ---- the requests ---- */

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned int status, const char *text)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_ctx)
{
	struct metrics_server *m = cls;
	char err[SLUICE_ERR_LEN], msg[SLUICE_ERR_LEN + 1];
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *body = NULL;
	size_t len = 0;
	FILE *f;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)req_ctx;
	/* Answered at the headers: a body sent with another method is not
	 * read (MHD closes the connection after the answer). */
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				   "only GET (and HEAD) here: GET /metrics\n");
	if (strcmp(url, "/metrics"))
		return answer_text(c, MHD_HTTP_NOT_FOUND, "the counters are at /metrics\n");
	f = open_memstream(&body, &len);
	if (!f)
		return answer_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	/* Under the lock: metrics_rename() may change the name it labels. */
	pthread_mutex_lock(&m->lock);
	ret = sluice_prometheus(f, &m->h, err, sizeof(err)) ? MHD_NO : MHD_YES;
	pthread_mutex_unlock(&m->lock);
	if (ret == MHD_NO) {
		fclose(f);
		free(body);
		snprintf(msg, sizeof(msg), "%s\n", err);
		return answer_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
	}
	fclose(f);
	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_TYPE);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* ---- start and stop ---- */

int metrics_start(struct metrics_server *m, const char *ifname, char *err, size_t errlen)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int ret;

	ret = sluice_open(ifname, &m->h, err, errlen);
	if (ret)
		return ret;
	m->have_h = true;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->wake, &ca);
	pthread_condattr_destroy(&ca);
	/* The threads take no signal: SIGINT, SIGTERM and SIGHUP must reach
	 * the run loop's thread, whose poll() they end. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&m->watcher, NULL, watch, m);
	if (ret) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return sluice_err(err, errlen, -ret, "Couldn't start the metrics server: %s",
				  strerror(ret));
	}
	m->have_watcher = true;
	errno = 0;
	m->daemon = MHD_start_daemon(
		MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, answer, m,
		MHD_OPTION_LISTEN_SOCKET, m->listen_fd,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_DEADLINE_SEC,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_MAX_CONN,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)METRICS_MAX_CONN_PER_IP,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
		MHD_OPTION_END);
	ret = errno ? errno : EIO;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!m->daemon)
		return sluice_err(err, errlen, -ret, "Couldn't start the metrics server on %s: %s",
				  m->url, strerror(ret));
	m->listen_fd = -1; /* MHD's now */
	return 0;
}

void metrics_close(struct metrics_server *m)
{
	if (!m)
		return;
	/* Joins MHD's thread and closes every connection (each one's
	 * NOTIFY_CLOSED taking it off the list) and the listening socket. */
	if (m->daemon)
		MHD_stop_daemon(m->daemon);
	if (m->have_watcher) {
		pthread_mutex_lock(&m->lock);
		m->stop = true;
		pthread_cond_signal(&m->wake);
		pthread_mutex_unlock(&m->lock);
		pthread_join(m->watcher, NULL);
	}
	if (m->have_watcher || m->have_h) {
		pthread_cond_destroy(&m->wake);
		pthread_mutex_destroy(&m->lock);
	}
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	if (m->have_h)
		sluice_close(&m->h);
	free(m);
}

void metrics_rename(struct metrics_server *m, const char *ifname)
{
	if (!m || !m->have_h)
		return;
	pthread_mutex_lock(&m->lock);
	snprintf(m->h.ifname, sizeof(m->h.ifname), "%s", ifname);
	snprintf(m->h.name, sizeof(m->h.name), "%s", ifname);
	sluice_pin_dir(ifname, m->h.dir, sizeof(m->h.dir), NULL, 0);
	pthread_mutex_unlock(&m->lock);
}
