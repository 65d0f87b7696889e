// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The metrics server's connections (metrics.c says what the server does):
 * who may connect (--metrics-allow), the slots each source network may
 * hold and who makes room for whom, and the deadline of each connection.
 * MHD's thread calls the first three; the watcher thread is the last. They
 * share the list of connections under m->lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "metrics_priv.h"

static bool before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static struct timespec plus_ms(const struct timespec *t, long ms)
{
	struct timespec r = *t;

	r.tv_sec += ms / 1000;
	r.tv_nsec += (ms % 1000) * 1000000L;
	if (r.tv_nsec >= 1000000000L) {
		r.tv_sec++;
		r.tv_nsec -= 1000000000L;
	}
	return r;
}

/* An IPv4 address of an IPv6 socket (::ffff:a.b.c.d), as IPv4. */
static bool v4_of(const struct sockaddr *sa, __u8 a[4])
{
	static const __u8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const struct sockaddr_in6 *s6 = (const void *)sa;

	if (sa->sa_family == AF_INET) {
		memcpy(a, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6 && !memcmp(s6->sin6_addr.s6_addr, mapped, 12)) {
		memcpy(a, s6->sin6_addr.s6_addr + 12, 4);
		return true;
	}
	return false;
}

/*
 * The source network a connection counts against: an IPv4 /24, an IPv6
 * /64, and every loopback address one network (127.0.0.0/8 and ::1: the
 * addresses of one host, which anyone on it can pick). A unix socket's
 * clients are one too.
 */
static void net_of(const struct sockaddr *sa, __u8 net[17])
{
	const struct sockaddr_in6 *s6 = (const void *)sa;
	__u8 a[4];

	memset(net, 0, 17);
	if (sa && v4_of(sa, a)) {
		net[0] = a[0] == 127 ? 'L' : 4;
		if (a[0] != 127)
			memcpy(net + 1, a, 3);
	} else if (sa && sa->sa_family == AF_INET6) {
		net[0] = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) ? 'L' : 6;
		if (net[0] == 6)
			memcpy(net + 1, s6->sin6_addr.s6_addr, 8);
	} else {
		net[0] = 'U';
	}
}

static bool allowed(const struct metrics_server *m, const struct sockaddr *sa)
{
	struct sluice_cidr c = { 0 };
	const struct sockaddr_in6 *s6 = (const void *)sa;
	int i;

	if (!m->nr_allow)
		return true;
	if (v4_of(sa, c.addr)) {
		c.family = 4;
		c.prefixlen = 32;
	} else if (sa->sa_family == AF_INET6) {
		c.family = 6;
		c.prefixlen = 128;
		memcpy(c.addr, s6->sin6_addr.s6_addr, 16);
	} else {
		return false;
	}
	for (i = 0; i < m->nr_allow; i++) {
		struct sluice_cidr k = c;

		if (m->allow[i].family != c.family)
			continue;
		sluice_mask(k.addr, m->allow[i].prefixlen);
		if (!memcmp(k.addr, m->allow[i].addr, 16))
			return true;
	}
	return false;
}

/*
 * A connection that holds a slot without having asked anything: the first
 * to go when room is needed, the oldest first. A scraper sends its request
 * as it connects, and is read within the same turn of MHD's loop: a flood
 * cuts its own connections, not the scraper's.
 */
static bool stalled(const struct conn *n)
{
	return !n->cut && !n->answered;
}

/* The oldest stalled connection of net, or NULL. */
static struct conn *oldest_stalled(struct metrics_server *m, const __u8 *net)
{
	struct conn *n;

	for (n = m->conns; n; n = n->next)
		if (stalled(n) && !memcmp(n->net, net, sizeof(n->net)))
			return n;
	return NULL;
}

/* Room for one more: the oldest stalled connection of the network that
 * holds the most (a flood from many addresses of one network pays first). */
static struct conn *victim_global(struct metrics_server *m)
{
	struct conn *n, *k, *best = NULL;
	int most = 0;

	for (n = m->conns; n; n = n->next) {
		int count = 0;

		if (!stalled(n))
			continue;
		for (k = m->conns; k; k = k->next)
			count += !k->cut && !memcmp(k->net, n->net, sizeof(n->net));
		if (count > most) { /* the oldest of the biggest: strictly more */
			most = count;
			best = n;
		}
	}
	return best;
}

static void cut(struct conn *n)
{
	shutdown(n->fd, SHUT_RDWR);
	n->cut = true;
}

/*
 * MHD's thread asks before it takes a connection in: one from outside
 * --metrics-allow is closed; one past its network's share or the whole
 * limit takes the slot of a stalled one, or is closed when none is.
 */
enum MHD_Result metrics_admit(void *cls, const struct sockaddr *sa, socklen_t len)
{
	struct metrics_server *m = cls;
	__u8 net[17];
	struct conn *n, *victim = NULL;
	int total = 0, in_net = 0;
	bool ok = true;

	(void)len;
	if (!allowed(m, sa))
		return MHD_NO;
	net_of(sa, net);
	pthread_mutex_lock(&m->lock);
	for (n = m->conns; n; n = n->next) {
		if (n->cut)
			continue;
		total++;
		in_net += !memcmp(n->net, net, sizeof(net));
	}
	if (in_net >= METRICS_MAX_CONN_PER_NET)
		victim = oldest_stalled(m, net);
	else if (total >= METRICS_MAX_CONN)
		victim = victim_global(m);
	if (victim)
		cut(victim);
	else if (in_net >= METRICS_MAX_CONN_PER_NET || total >= METRICS_MAX_CONN)
		ok = false;
	pthread_mutex_unlock(&m->lock);
	return ok ? MHD_YES : MHD_NO;
}

/*
 * MHD's thread tells of each connection as it starts and as it closes. The
 * watcher shuts down the socket of one past a deadline: MHD then reads its
 * end and closes it. The socket cannot have been closed (and its number
 * reused) meanwhile: MHD closes it only after NOTIFY_CLOSED, which takes it
 * off the list under the same lock.
 */
void metrics_on_connection(void *cls, struct MHD_Connection *c, void **ctx,
			   enum MHD_ConnectionNotificationCode code)
{
	struct metrics_server *m = cls;
	const union MHD_ConnectionInfo *ci, *ca;
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
	ca = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	n = calloc(1, sizeof(*n));
	if (!ci || !n) {
		/* No deadline to keep: no connection either. */
		free(n);
		if (ci)
			shutdown(ci->connect_fd, SHUT_RDWR);
		return;
	}
	n->fd = ci->connect_fd;
	net_of(ca ? ca->client_addr : NULL, n->net);
	clock_gettime(CLOCK_MONOTONIC, &n->start);
	pthread_mutex_lock(&m->lock);
	/* Appended: the list stays in order of accept. */
	n->pprev = &m->conns;
	while (*n->pprev)
		n->pprev = &(*n->pprev)->next;
	*n->pprev = n;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
	*ctx = n;
}

/* Its request came: it is no longer stalled (answer()'s, in MHD's
 * thread). */
void metrics_mark_answered(struct metrics_server *m, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *n = ci ? ci->socket_context : NULL;

	if (!n)
		return;
	pthread_mutex_lock(&m->lock);
	n->answered = true;
	pthread_mutex_unlock(&m->lock);
}

void *metrics_watch(void *arg)
{
	struct metrics_server *m = arg;
	struct timespec now, next, d;
	struct conn *n;
	bool have;

	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		have = false;
		for (n = m->conns; n; n = n->next) {
			if (n->cut)
				continue;
			d = plus_ms(&n->start, METRICS_DEADLINE_SEC * 1000L);
			if (!before(&now, &d)) {
				cut(n);
				continue;
			}
			if (!have || before(&d, &next))
				next = d;
			have = true;
		}
		if (have)
			pthread_cond_timedwait(&m->wake, &m->lock, &next);
		else
			pthread_cond_wait(&m->wake, &m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}
