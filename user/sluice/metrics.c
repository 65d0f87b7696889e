// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `sluice run --metrics ADDR:PORT | unix:PATH`: the counters of one
 * interface in the Prometheus text format (sluice_prometheus()), served by
 * libmicrohttpd from its own thread, so that no client, however slow,
 * delays run's reports.
 *
 * GET (or HEAD) /metrics answers 200; another path 404, another method 405.
 *
 * Who may ask: the counters name every rule's CIDR, so anyone who can
 * connect learns the policy. On TCP that is every local user (and more, on
 * another address than loopback) unless --metrics-allow lists the sources
 * allowed; the others are closed at accept, before they take any slot. On
 * a unix socket it is whoever the socket's mode lets in: root (0600), or
 * --metrics-group's members too (0660).
 *
 * Holding the slots (see admit()): at most METRICS_MAX_CONN connections at
 * once, at most METRICS_MAX_CONN_PER_NET from one source network (an IPv4
 * /24, an IPv6 /64; every loopback address is one, so 127.0.0.2, .3, ...
 * are one source, not many). A connection past either limit makes room by
 * cutting a stalled one (no request yet: the oldest), of its network or of
 * the network that holds the most; only when there is none (every slot is
 * being answered) is it refused. A connection lives at most
 * METRICS_DEADLINE_SEC from its accept, whatever it sends: MHD's own
 * timeout only counts idle time, and a client sending a byte a second would
 * never be idle, so a watcher thread cuts connections past their deadline
 * (see watch()).
 *
 * Threads: the render runs in MHD's thread, on a handle of its own (opened
 * in metrics_start()); it reads the pinned maps and the mmapped config only
 * (the settings through their seqlock, as any other reader does), and
 * shares nothing with run's loop. The watcher shares the list of
 * connections with MHD's thread, under m->lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
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
#include <sys/stat.h>
#include <sys/un.h>
#include <microhttpd.h>

#include "metrics_priv.h"

#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_EXAMPLE "e.g. 127.0.0.1:9100, [::1]:9100 or unix:/run/sluice/IFACE.sock"

/* ---- ADDR:PORT ---- */

/* The port: decimal digits, 0..65535 (0: any free port). */
static int parse_port(const char *arg, const char *port, char *err, size_t errlen)
{
	unsigned long v = 0;
	const char *p;

	for (p = port; *p >= '0' && *p <= '9' && v <= 65535; p++)
		v = v * 10 + (unsigned long)(*p - '0');
	if (!*port || *p || v > 65535) {
		snprintf(err, errlen,
			 "--metrics %s: the port '%s' is not a number in 0..65535 "
			 "(0: any free port, the one printed on start)",
			 arg, port);
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
			snprintf(err, errlen,
				 "--metrics %s: an IPv6 address needs brackets and a "
				 "port: write [%s]:PORT",
				 arg, arg);
		else
			snprintf(err, errlen,
				 "--metrics %s: an IPv6 address needs brackets: write "
				 "[%s]:%s",
				 arg, buf, p + 1);
		return SLUICE_EXIT_USAGE;
	}
	*host = buf;
	*port = p + 1;
	return 0;
bad:
	snprintf(err, errlen,
		 "--metrics '%s' is not ADDR:PORT (%s; 0.0.0.0:PORT or [::]:PORT "
		 "for every address)",
		 arg, METRICS_EXAMPLE);
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

/* --metrics-allow CIDR[,CIDR...]: the sources that may connect. */
static int parse_allow(struct metrics_server *m, const char *list, char *err, size_t errlen)
{
	char buf[1024], inner[SLUICE_ERR_LEN], *tok, *save = NULL;

	if (strlen(list) >= sizeof(buf)) {
		snprintf(err, errlen,
			 "--metrics-allow: the list is too long (at most %d "
			 "addresses or CIDRs)",
			 METRICS_MAX_ALLOW);
		return SLUICE_EXIT_USAGE;
	}
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (m->nr_allow == METRICS_MAX_ALLOW) {
			snprintf(err, errlen, "--metrics-allow: at most %d addresses or CIDRs",
				 METRICS_MAX_ALLOW);
			return SLUICE_EXIT_USAGE;
		}
		if (sluice_parse_cidr(tok, &m->allow[m->nr_allow], inner, sizeof(inner))) {
			snprintf(err, errlen,
				 "--metrics-allow '%s': %s (give addresses or CIDRs, "
				 "comma-separated: 127.0.0.1,198.18.0.0/24)",
				 tok, inner);
			return SLUICE_EXIT_USAGE;
		}
		m->nr_allow++;
	}
	if (!m->nr_allow) {
		snprintf(err, errlen,
			 "--metrics-allow '%s' lists no address: give addresses or "
			 "CIDRs, comma-separated (127.0.0.1,198.18.0.0/24)",
			 list);
		return SLUICE_EXIT_USAGE;
	}
	return 0;
}

/* ADDR:PORT: a TCP socket, listening. */
static int open_tcp(struct metrics_server *m, const char *addr_port, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char buf[512], *host, *port;
	const char *what = "open a socket for", *hint;
	int fd = -1, one = 1, ret, e;

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
	m->listen_fd = fd;
	ret = bound_url(fd, m->url, sizeof(m->url));
	if (ret) {
		snprintf(err, errlen, "Couldn't read the address --metrics %s is bound to: %s",
			 addr_port, strerror(-ret));
		return SLUICE_EXIT_RUNTIME;
	}
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

/*
 * unix:PATH: a unix socket of mode 0600 (root's), or 0660 with group's
 * members let in too. A socket left at PATH by a run that died is replaced;
 * one that answers is another run's, and anything else is not ours.
 */
static int open_unix(struct metrics_server *m, const char *spec, const char *group, char *err,
		     size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = spec + strlen("unix:");
	struct group *gr = NULL;
	struct stat st;
	mode_t old;
	int fd, ret;

	if (path[0] != '/' || strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen,
			 "--metrics %s: give an absolute path of at most %zu "
			 "characters after unix: (%s)",
			 spec, sizeof(sa.sun_path) - 1, METRICS_EXAMPLE);
		return SLUICE_EXIT_USAGE;
	}
	if (group) {
		errno = 0;
		gr = getgrnam(group);
		if (!gr) {
			snprintf(err, errlen,
				 "--metrics-group '%s': there is no such group (see "
				 "'getent group')",
				 group);
			return SLUICE_EXIT_USAGE;
		}
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto sys_err;
	if (lstat(path, &st) == 0) {
		int probe;

		if (!S_ISSOCK(st.st_mode)) {
			close(fd);
			snprintf(err, errlen,
				 "Couldn't listen on --metrics %s: %s exists and "
				 "is not a socket: pick another path, or remove it",
				 spec, path);
			return SLUICE_EXIT_RUNTIME;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ret = probe < 0 ? -1 : connect(probe, (struct sockaddr *)&sa, sizeof(sa));
		if (probe >= 0)
			close(probe);
		if (ret == 0) {
			close(fd);
			snprintf(err, errlen,
				 "Couldn't listen on --metrics %s: another process "
				 "serves it (another sluice run?): pick another path",
				 spec);
			return SLUICE_EXIT_RUNTIME;
		}
		unlink(path); /* left by a run that died */
	}
	/* Made 0600 from the start: no moment in which others may connect. */
	old = umask(0177);
	ret = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (ret)
		goto sys_err;
	if (stat(path, &m->unix_st))
		goto sys_err_made;
	snprintf(m->unix_path, sizeof(m->unix_path), "%s", path);
	if (gr && (chown(path, (uid_t)-1, gr->gr_gid) || chmod(path, 0660)))
		goto sys_err_made;
	if (listen(fd, 64))
		goto sys_err_made;
	m->listen_fd = fd;
	snprintf(m->url, sizeof(m->url),
		 "unix:%s (mode %s; e.g. 'curl --unix-socket %s "
		 "http://localhost/metrics')",
		 path, gr ? "0660" : "0600", path);
	return 0;

sys_err_made:
	unlink(path);
	m->unix_path[0] = '\0';
sys_err:
	ret = errno;
	if (fd >= 0)
		close(fd);
	snprintf(err, errlen, "Couldn't listen on --metrics %s: %s", spec, strerror(ret));
	return SLUICE_EXIT_RUNTIME;
}

int metrics_open(const char *spec, const char *allow, const char *group,
		 struct metrics_server **out, char *err, size_t errlen)
{
	bool is_unix = !strncmp(spec, "unix:", strlen("unix:"));
	struct metrics_server *m;
	int ret;

	*out = NULL;
	if (allow && is_unix) {
		snprintf(err, errlen,
			 "--metrics-allow is for a TCP address: who may connect to "
			 "a unix socket is its mode (0600, root; --metrics-group GROUP: 0660)");
		return SLUICE_EXIT_USAGE;
	}
	if (group && !is_unix) {
		snprintf(err, errlen,
			 "--metrics-group is for --metrics unix:PATH: on a TCP "
			 "address, --metrics-allow says who may connect");
		return SLUICE_EXIT_USAGE;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "Couldn't serve --metrics %s: out of memory", spec);
		return SLUICE_EXIT_RUNTIME;
	}
	m->listen_fd = -1;
	ret = allow ? parse_allow(m, allow, err, errlen) : 0;
	if (!ret)
		ret = is_unix ? open_unix(m, spec, group, err, errlen) :
				open_tcp(m, spec, err, errlen);
	if (ret) {
		metrics_close(m);
		return ret;
	}
	*out = m;
	return 0;
}

const char *metrics_url(const struct metrics_server *m)
{
	return m->url;
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
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		metrics_mark_answered(m, c);
		return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				   "only GET (and HEAD) here: GET /metrics\n");
	}
	metrics_mark_answered(m, c);
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
	ret = pthread_create(&m->watcher, NULL, metrics_watch, m);
	if (ret) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return sluice_err(err, errlen, -ret, "Couldn't start the metrics server: %s",
				  strerror(ret));
	}
	m->have_watcher = true;
	errno = 0;
	/* MHD's own per-IP limit counts exact addresses (dodged with 127.0.0.2,
	 * .3, ...) and its connection limit refuses before admit() could make
	 * room: admit() holds the limits, MHD only a cap above them. */
	m->daemon = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, metrics_admit, m, answer, m,
				     MHD_OPTION_LISTEN_SOCKET, m->listen_fd,
				     MHD_OPTION_CONNECTION_TIMEOUT,
				     (unsigned int)METRICS_DEADLINE_SEC,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_MHD_LIMIT,
				     MHD_OPTION_NOTIFY_CONNECTION, metrics_on_connection, m,
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
	/* Our socket's path, if it is still ours (not a later run's). */
	if (m->unix_path[0]) {
		struct stat st;

		if (lstat(m->unix_path, &st) == 0 && st.st_ino == m->unix_st.st_ino &&
		    st.st_dev == m->unix_st.st_dev)
			unlink(m->unix_path);
	}
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
