/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sluice-probe: a UDP sender and receiver for the shaper's tests
 * (tests/shape). The sender numbers its packets; the receiver keeps every
 * packet's kernel receive time (SO_TIMESTAMPNS) and reports, per source, the
 * inter-arrival gaps against an expected interval.
 */
#ifndef SLUICE_PROBE_H
#define SLUICE_PROBE_H

#include <stddef.h>
#include <stdint.h>

#define PROBE_MAGIC 0x534c5042U /* "SLPB" */
#define PROBE_MAX_SOURCES 64
#define PROBE_MIN_PAYLOAD ((unsigned)sizeof(struct probe_hdr))
#define PROBE_MAX_PAYLOAD 1472U

/* The start of every payload, network byte order. */
struct probe_hdr {
	uint32_t magic;
	uint32_t seq; /* 0 .. count - 1, per source */
	uint32_t count; /* how many this source sends */
	uint32_t pad;
	uint64_t send_ns; /* CLOCK_REALTIME before sendto() */
};
_Static_assert(sizeof(struct probe_hdr) == 24, "probe_hdr layout");

/* The statistics of one source's arrivals (stats.c). */
struct probe_stats {
	size_t count; /* arrivals */
	double span_us; /* last - first arrival */
	double gap_mean_us, gap_median_us, gap_p99_us, gap_min_us, gap_max_us;
	/* Against the expected interval (when one is given): e = gap - interval;
	 * the mean of e, the median, 99th percentile and maximum of |e|, and the
	 * span against (count - 1) x interval. */
	double err_mean_us, err_median_us, err_p99_us, err_max_us;
	double span_err_us, span_err_pct;
};

/* probe_quantile: the q-quantile (0 < q <= 1) of v[0..n-1] by nearest rank,
 * the median (q = 0.5) of an even count the mean of the middle two. Sorts v. */
double probe_quantile(double *v, size_t n, double q);
/* probe_stats: statistics of the arrival times t_ns[0..n-1] (ascending).
 * expect_us 0: no expected interval (the err_* stay 0). Returns 0, or
 * -ENOMEM. */
int probe_stats(const int64_t *t_ns, size_t n, double expect_us, struct probe_stats *s);

int probe_help(void); /* the usage on stdout; 0 */
int probe_send(int argc, char **argv);
int probe_recv(int argc, char **argv);
/* A usage error (exit status 2): the message, then "try ... --help". */
int probe_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A runtime failure (exit status 1). */
int probe_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* probe_addr: parse an IPv4 or IPv6 address into ss (port set); 0 or -1. */
struct sockaddr_storage;
int probe_addr(const char *text, uint16_t port, struct sockaddr_storage *ss);
/* probe_num: a decimal in [min, max] (a double); 0 or -1. */
int probe_num(const char *text, double min, double max, double *out);

#endif
