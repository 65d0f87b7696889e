/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The metrics server of sluice run (metrics.c, metrics_conn.c): what its
 * two files share. */
#ifndef SLUICE_METRICS_PRIV_H
#define SLUICE_METRICS_PRIV_H

#include <netdb.h>
#include <pthread.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <microhttpd.h>

#include "cli.h"
#include "metrics.h"

#define METRICS_DEADLINE_SEC 5
#define METRICS_MAX_CONN 16
#define METRICS_MAX_CONN_PER_NET 4
/* MHD's own cap: room for connections cut and not yet closed by MHD. */
#define METRICS_MHD_LIMIT (2 * METRICS_MAX_CONN)
#define METRICS_MAX_ALLOW 32

/* A connection MHD has accepted and not yet closed: its socket stays open
 * while it is on the list (MHD tells us of the close before it closes). */
struct conn {
	struct conn *next, **pprev;
	int fd;
	struct timespec start; /* CLOCK_MONOTONIC, at accept */
	__u8 net[17]; /* its source network (net_of()) */
	bool answered; /* its request came (answer() ran) */
	bool cut; /* shut down by the watcher or to make room */
};

struct metrics_server {
	int listen_fd; /* ours until MHD takes it (MHD_stop_daemon() closes it) */
	char url[NI_MAXHOST * 3 + NI_MAXSERV + 32]; /* room for bound_url() */
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* "" on TCP */
	struct stat unix_st; /* the socket we made there (removed on close) */
	struct sluice_cidr allow[METRICS_MAX_ALLOW]; /* --metrics-allow */
	int nr_allow; /* 0: any source */
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

/* ---- metrics_conn.c: who may connect, slots, deadlines (MHD's callbacks) ---- */

/* MHD_AcceptPolicyCallback: --metrics-allow, and the slots (cls: m). */
enum MHD_Result metrics_admit(void *cls, const struct sockaddr *sa, socklen_t len);
/* MHD_OPTION_NOTIFY_CONNECTION (cls: m). */
void metrics_on_connection(void *cls, struct MHD_Connection *c, void **ctx,
			   enum MHD_ConnectionNotificationCode code);
/* The request of c came (from the access handler). */
void metrics_mark_answered(struct metrics_server *m, struct MHD_Connection *c);
/* The watcher thread: cuts connections past their deadline (arg: m). */
void *metrics_watch(void *arg);

#endif /* SLUICE_METRICS_PRIV_H */
