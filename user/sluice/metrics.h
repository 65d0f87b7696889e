/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The Prometheus server of sluice run (metrics.c, metrics_conn.c). */
#ifndef SLUICE_METRICS_H
#define SLUICE_METRICS_H

#include <stddef.h>

struct metrics_server;
/* Listen on ADDR:PORT ("127.0.0.1:9100", "[::1]:9100", port 0: any free
 * one) or unix:PATH (mode 0600, or 0660 for group's members when group is
 * given), serving nothing yet; allow (NULL: any) lists the sources that may
 * connect over TCP ("127.0.0.1,198.18.0.0/24"). Returns 0,
 * SLUICE_EXIT_USAGE when the text is not ADDR:PORT, or SLUICE_EXIT_RUNTIME
 * when it cannot listen, with err saying why (and, for bind errors, what to
 * do). */
int metrics_open(const char *spec, const char *allow, const char *group, struct metrics_server **m,
		 char *err, size_t errlen);
/* "http://127.0.0.1:41234/metrics": the address and port as bound. */
const char *metrics_url(const struct metrics_server *m);
/* Serve the counters of ifname (sluice_prometheus()) from threads of the
 * server's own, on a handle of its own: the caller never waits for a
 * client. 0 or -errno. */
int metrics_start(struct metrics_server *m, const char *ifname, char *err, size_t errlen);
/* Stop serving, close every connection and the socket, free m (may be NULL). */
void metrics_close(struct metrics_server *m);
/* The interface was renamed: label the counters with its new name (m may
 * be NULL). */
void metrics_rename(struct metrics_server *m, const char *ifname);

#endif /* SLUICE_METRICS_H */
