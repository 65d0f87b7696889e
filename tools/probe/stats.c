// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The receiver's statistics; tests/unit/probe.c checks them on known data. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double probe_quantile(double *v, size_t n, double q)
{
	size_t rank;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	if (q == 0.5 && n % 2 == 0)
		return (v[n / 2 - 1] + v[n / 2]) / 2;
	/* Nearest rank: the smallest value with at least q x n values at or
	 * below it. */
	rank = (size_t)ceil(q * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

int probe_stats(const int64_t *t_ns, size_t n, double expect_us, struct probe_stats *s)
{
	size_t i, g = n > 1 ? n - 1 : 0;
	double *gap, *err, sum = 0, esum = 0;

	memset(s, 0, sizeof(*s));
	s->count = n;
	if (n < 2)
		return 0;
	gap = calloc(g, sizeof(*gap));
	err = calloc(g, sizeof(*err));
	if (!gap || !err) {
		free(gap);
		free(err);
		return -ENOMEM;
	}
	s->span_us = (double)(t_ns[n - 1] - t_ns[0]) / 1e3;
	s->gap_min_us = INFINITY;
	s->gap_max_us = -INFINITY;
	for (i = 0; i < g; i++) {
		gap[i] = (double)(t_ns[i + 1] - t_ns[i]) / 1e3;
		sum += gap[i];
		if (gap[i] < s->gap_min_us)
			s->gap_min_us = gap[i];
		if (gap[i] > s->gap_max_us)
			s->gap_max_us = gap[i];
		err[i] = fabs(gap[i] - expect_us);
		esum += gap[i] - expect_us;
	}
	s->gap_mean_us = sum / (double)g;
	s->gap_median_us = probe_quantile(gap, g, 0.5);
	s->gap_p99_us = probe_quantile(gap, g, 0.99);
	if (expect_us > 0) {
		s->err_mean_us = esum / (double)g;
		s->err_median_us = probe_quantile(err, g, 0.5);
		s->err_p99_us = probe_quantile(err, g, 0.99);
		s->err_max_us = err[g - 1]; /* sorted by the quantile */
		s->span_err_us = s->span_us - (double)g * expect_us;
		s->span_err_pct = 100 * s->span_err_us / ((double)g * expect_us);
	}
	free(gap);
	free(err);
	return 0;
}
