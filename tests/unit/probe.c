// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluice-probe's statistics (tools/probe/stats.c) on arrivals whose gaps
 * are known: the numbers the shaper's tests judge spacing by. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../lib/tap.h"
#include "../../tools/probe/stats.c"

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-6;
}

int main(void)
{
	/* Gaps 1000 us but one of 3000 and one of 500 (in that order). */
	int64_t t[12];
	double v[] = { 5, 1, 4, 2, 3 }, w[] = { 4, 1, 3, 2 };
	struct probe_stats s;
	size_t i;

	t[0] = 1000000;
	for (i = 1; i < 12; i++)
		t[i] = t[i - 1] + (i == 4 ? 3000000 : i == 7 ? 500000 : 1000000);
	tap_ok(!probe_stats(t, 12, 1000, &s), "11 gaps: computed");
	TAP_EQ(s.count, 12, "11 gaps: count");
	tap_ok(near(s.span_us, 12500), "11 gaps: span 12500 us (%.3f)", s.span_us);
	tap_ok(near(s.gap_mean_us, 12500.0 / 11), "11 gaps: mean (%.3f)", s.gap_mean_us);
	tap_ok(near(s.gap_median_us, 1000), "11 gaps: median 1000 us (%.3f)", s.gap_median_us);
	tap_ok(near(s.gap_p99_us, 3000), "11 gaps: p99 the largest of 11 (%.3f)", s.gap_p99_us);
	tap_ok(near(s.gap_min_us, 500) && near(s.gap_max_us, 3000), "11 gaps: min 500, max 3000");
	tap_ok(near(s.err_mean_us, 1500.0 / 11), "11 gaps: mean error (%.3f)", s.err_mean_us);
	tap_ok(near(s.err_median_us, 0), "11 gaps: median |e| 0 (%.3f)", s.err_median_us);
	tap_ok(near(s.err_p99_us, 2000) && near(s.err_max_us, 2000),
	       "11 gaps: p99 and max |e| 2000 us (%.3f, %.3f)", s.err_p99_us, s.err_max_us);
	tap_ok(near(s.span_err_us, 1500) && near(s.span_err_pct, 100.0 * 1500 / 11000),
	       "11 gaps: span error +1500 us, %.4f %%", s.span_err_pct);

	tap_ok(!probe_stats(t, 12, 0, &s) && s.err_median_us == 0 && s.span_err_us == 0 &&
		       near(s.gap_median_us, 1000),
	       "no expected interval: gaps only, no error");
	tap_ok(!probe_stats(t, 1, 1000, &s) && s.count == 1 && s.span_us == 0 && s.gap_mean_us == 0,
	       "one arrival: no gap");
	tap_ok(!probe_stats(t, 0, 1000, &s) && s.count == 0, "no arrival");

	tap_ok(near(probe_quantile(v, 5, 0.5), 3), "median of 5 odd values: the middle");
	tap_ok(near(probe_quantile(w, 4, 0.5), 2.5), "median of 4: the mean of the middle two");
	tap_ok(near(probe_quantile(w, 4, 0.99), 4) && near(probe_quantile(w, 4, 0.25), 1),
	       "nearest rank: p99 of 4 the largest, p25 the smallest");

	/* 200 gaps: 198 of 1000 us, two of 5000 us: p99 (rank 198) is still 1000. */
	{
		int64_t *u = calloc(201, sizeof(*u));

		if (!u)
			return 1;
		for (i = 1; i < 201; i++)
			u[i] = u[i - 1] + (i == 50 || i == 150 ? 5000000 : 1000000);
		int r = probe_stats(u, 201, 1000, &s);

		tap_ok(!r && near(s.gap_p99_us, 1000) && near(s.err_p99_us, 0) &&
			       near(s.err_max_us, 4000),
		       "200 gaps, 2 outliers: p99 1000 us, max |e| 4000 us (%.1f, %.1f)",
		       s.gap_p99_us, s.err_max_us);
		free(u);
	}
	return tap_done();
}
