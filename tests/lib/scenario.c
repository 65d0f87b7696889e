// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The scenario tables both the unit and the bpf suite run (see scenario.h).
 * Every expected verdict below was worked out from the algorithm's
 * definition, not copied from a run: the comments carry the arithmetic.
 * I is the packet interval (1/rate), B the burst, "tat" GCRA's theoretical
 * arrival time relative to SCN_T0.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "scenario.h"
#include "tap.h"

#define T0 SCN_T0
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define TEN_P "PPPPPPPPPP"

/* The packet sequences, one burst a line: clang-format would pack them in columns. */
/* clang-format off */
/*
 * Token bucket 10/s burst 5, I = 100 ms: a packet passes while
 * tat' - now <= 5I, with tat' = max(tat, now) + I.
 */
static const struct scn_burst tb_steady[] = {
	{ T0, 60, "PPPPPDD" }, /* tat 1I..5I pass, 6I - 0 > 5I drops */
	{ T0 + SCN_MS(50), 60, "D" }, /* 6I - 0.5I = 5.5I */
	{ T0 + SCN_MS(100), 60, "PD" }, /* 6I - 1I = 5I passes; 7I - 1I drops */
	{ T0 + SCN_MS(350), 60, "PPD" }, /* 7I, 8I: 3.5I, 4.5I; 9I: 5.5I */
	{ T0 + SCN_MS(400), 60, "PD" }, /* 9I - 4I = 5I; 10I - 4I */
	{ T0 + SCN_MS(500), 60, "P" }, /* steady: one every I */
	{ T0 + SCN_MS(600), 60, "P" },
	{ T0 + SCN_MS(700), 60, "PD" },
	{ T0 + SCN_S(10), 60, "PPPPPD" }, /* idle 9.3 s: full again, exactly B */
};

/* The clock moving back counts as no time elapsed: it never refills. */
static const struct scn_burst tb_clock_back[] = {
	{ T0 + SCN_S(10), 60, "PPPPP" }, /* tat = 100I + 5I */
	{ T0 + SCN_S(5), 60, "D" }, /* 106I - 50I */
	{ T0, 60, "D" }, /* 106I - 0 */
	{ T0 + SCN_MS(10100), 60, "PD" }, /* 106I - 101I = 5I passes, then 6I */
};

/*
 * 3/s burst 3: 16e9 ticks / 3 = 5333333333 + 1/3 ticks, so a packet costs
 * c = 5333333334 ticks (rounded up) and the tolerance is 3c = 16000000002.
 * One second after the burst: 4c - 16e9 and 5c - 16e9 pass, 6c - 16e9 =
 * 16000000004 > 3c drops: rounding up costs the third packet 2 ticks, and
 * one nanosecond (16 ticks) later it passes. Never more than the rate.
 */
static const struct scn_burst tb_third[] = {
	{ T0, 60, "PPPD" },
	{ T0 + SCN_S(1), 60, "PPD" },
	{ T0 + SCN_S(1) + 1, 60, "PD" },
};

/* 1/h burst 1: I = 3600 s exactly. */
static const struct scn_burst tb_hour[] = {
	{ T0, 60, "P" },
	{ T0 + SCN_S(1), 60, "D" },
	{ T0 + SCN_S(3600) - 1, 60, "D" }, /* 2I - (I - 1 ns) > I */
	{ T0 + SCN_S(3600), 60, "PD" },
};

/* 1e9/s burst 4: I = 1 ns = 16 ticks, tolerance 64 ticks. */
static const struct scn_burst tb_giga[] = {
	{ T0, 60, "PPPPD" },
	{ T0 + 1, 60, "PD" }, /* 5I - 1I = 4I; 6I - 1I */
	{ T0 + 3, 60, "PPD" }, /* 6I - 3I, 7I - 3I pass; 8I - 3I */
};

/*
 * Bytes only, 1gbit = 125e6 B/s: 8 ns (128 ticks) a byte, burst 3000 B =
 * 24000 ns. A 1500 B frame costs 12000 ns, a 60 B frame 480 ns.
 */
static const struct scn_burst bytes_gbit[] = {
	{ T0, 1500, "PPD" }, /* tat 12000, 24000; 36000 - 0 > 24000 */
	{ T0 + 11999, 1500, "D" }, /* 36000 - 11999 = 24001 */
	{ T0 + 12000, 1500, "PD" }, /* 36000 - 12000; 48000 - 12000 */
	{ T0 + 12000, 60, "D" }, /* 36480 - 12000 */
	{ T0 + 12480, 60, "P" }, /* 36480 - 12480 = 24000 */
};

/*
 * Packets 1/h burst 3 and bytes 8000bit (1000 B/s) burst 1000. The second
 * frame is refused by the byte limit and must get its packet charge back:
 * otherwise the 100 B frame, the third admitted, would find no packet left.
 */
static const struct scn_burst mixed_sizes[] = {
	{ T0, 600, "P" }, /* packets 1/3, bytes 600/1000 */
	{ T0, 600, "D" }, /* bytes 1200 > 1000: refused, packet refunded */
	{ T0, 300, "P" }, /* packets 2/3, bytes 900 */
	{ T0, 100, "P" }, /* packets 3/3, bytes 1000 */
	{ T0, 60, "D" }, /* packets 4 > 3 */
	{ T0 + SCN_S(1), 60, "D" }, /* bytes are back, packets are not */
};

/*
 * A client spends a full limit at the end of one 1 s window and another at
 * the start of the next. Windows are aligned: T0 + 999 ms is in window 1,
 * T0 + 1 s is window 2.
 */
static const struct scn_burst fixed_boundary[] = {
	{ T0 + SCN_MS(999), 60, TEN_P "D" },
	{ T0 + SCN_S(1), 60, TEN_P "D" }, /* the pitfall: 20 within 1 ms */
	{ T0 + SCN_MS(1500), 60, "D" },
	{ T0 + SCN_S(2), 60, "P" },
};

/* The same flood under token bucket 10/s burst 10 (I = 100 ms). */
static const struct scn_burst tb_boundary[] = {
	{ T0 + SCN_MS(999), 60, TEN_P "D" },
	{ T0 + SCN_S(1), 60, "D" }, /* 1 ms refills 0.01 of a packet */
	{ T0 + SCN_MS(1099), 60, "PD" }, /* 100 ms: one */
};

/*
 * Sliding window 10 per 1 s: a packet passes while the estimate before it,
 * prev x (1 - elapsed/W) + cur, is below 10.
 */
static const struct scn_burst sliding_boundary[] = {
	{ T0 + SCN_MS(999), 60, TEN_P "D" }, /* window 1, prev 0 */
	{ T0 + SCN_S(1), 60, "DD" }, /* window 2 at 0: 10 x 1 + 0 is not < 10 */
	{ T0 + SCN_MS(1250), 60, "PPPD" }, /* 7.5 + cur < 10: cur 0..2 */
	{ T0 + SCN_MS(1500), 60, "PPD" }, /* 5 + cur < 10: cur 3, 4 */
	{ T0 + SCN_S(2), 60, "PPPPPD" }, /* window 3, prev 5: cur 0..4 */
	{ T0 + SCN_MS(3500), 60, "PPPPPPPPD" }, /* window 4 at .5, prev 5: 2.5 + cur, cur 0..7 */
	{ T0 + SCN_S(5), 60, TEN_P "D" }, /* window 6: window 5 was empty */
};

/* Sliding log 10 per 1 s: exact over every trailing window (t - 1 s, t]. */
static const struct scn_burst log_boundary[] = {
	{ T0 + SCN_MS(999), 60, TEN_P "D" },
	{ T0 + SCN_S(1), 60, "D" },
	{ T0 + SCN_MS(1998), 60, "D" }, /* (0.998, 1.998] still holds all 10 */
	{ T0 + SCN_MS(1999), 60, TEN_P "D" }, /* (0.999, 1.999] holds none */
};

/* Sliding log 3 per 1 s, staggered: each slot frees exactly W after use. */
static const struct scn_burst log_staggered[] = {
	{ T0, 60, "P" },
	{ T0 + SCN_MS(300), 60, "P" },
	{ T0 + SCN_MS(600), 60, "P" },
	{ T0 + SCN_MS(900), 60, "D" }, /* 0, 0.3, 0.6 in (-0.1, 0.9] */
	{ T0 + SCN_MS(1000), 60, "PD" }, /* 0 left (0, 1]; then 0.3, 0.6, 1.0 */
	{ T0 + SCN_MS(1200), 60, "D" },
	{ T0 + SCN_MS(1300), 60, "P" }, /* 0.3 left */
	{ T0 + SCN_MS(1600), 60, "PD" }, /* 0.6 left */
	{ T0 + SCN_MS(2300), 60, "PPD" }, /* (1.3, 2.3]: only 1.6 is in */
};

/* The window algorithms with the clock moving back: never a refill. */
static const struct scn_burst window_clock_back[] = {
	{ T0 + SCN_S(10), 60, "PPPD" }, /* limit 3 */
	{ T0 + SCN_S(5), 60, "D" },
	{ T0, 60, "D" },
};

/*
 * From a clock at 0: the first window of uptime is window 0, a time of 0 is
 * a time, and neither means "empty" (issue 20 A4). Each algorithm at 0,
 * inside the first window, at each boundary, one ns before and past it.
 */
static const struct scn_burst tb_zero[] = {
	{ 0, 60, "PPPPPD" }, /* tat 1I..5I - 0 <= 5I pass; 6I drops: a whole burst at 0 */
	{ SCN_MS(100) - 1, 60, "D" }, /* 6I - (I - 1 ns) > 5I */
	{ SCN_MS(100), 60, "PD" }, /* 6I - I = 5I; 7I - I */
	{ SCN_MS(100) + 1, 60, "D" }, /* 7I - (I + 1 ns) > 5I */
	{ SCN_MS(200), 60, "PD" }, /* 7I - 2I = 5I; 8I - 2I */
	{ SCN_S(10), 60, "PPPPPD" }, /* full again */
};

/* Bytes only (the packet clock never charged), 1gbit burst 3000: bytes_gbit at 0. */
static const struct scn_burst bytes_zero[] = {
	{ 0, 1500, "PPD" }, /* tat 12000, 24000 ns; 36000 - 0 > 24000 */
	{ 11999, 1500, "D" },
	{ 12000, 1500, "PD" },
	{ 12480, 60, "P" }, /* 36480 - 12480 = 24000 */
};

/* Fixed window 10 per 1 s from 0: window 0 is [0, 1 s), a window like the rest. */
static const struct scn_burst fixed_zero[] = {
	{ 0, 60, "P" }, /* window 0, count 1 */
	{ SCN_MS(500), 60, "PPPPPPPPPD" }, /* inside the first window: 10 in all */
	{ SCN_S(1) - 1, 60, "D" }, /* its last ns */
	{ SCN_S(1), 60, TEN_P "D" }, /* window 1 at its first ns: a new count */
	{ SCN_S(1) + 1, 60, "D" },
	{ SCN_S(2) - 1, 60, "D" },
	{ SCN_S(2), 60, "PP" }, /* window 2 */
	{ SCN_S(2) + 1, 60, "PPPPPPPPD" }, /* 10 in window 2 */
	{ SCN_S(4), 60, TEN_P "D" }, /* window 4 after an idle window 3 */
};

/*
 * Sliding window 10 per 1 s from 0. Window 0 has no window before it (its
 * previous count is 0); the weight of the previous window at e ticks into
 * one is ceil((W - e) x 65536 / W).
 */
static const struct scn_burst sliding_zero[] = {
	{ 0, 60, TEN_P "D" }, /* window 0: 0 x 1 + cur < 10, cur 0..9 */
	{ SCN_MS(999), 60, "D" },
	{ SCN_S(1) - 1, 60, "D" },
	{ SCN_S(1), 60, "DD" }, /* window 1 at 0: 10 x 1 + 0 */
	{ SCN_S(1) + 1, 60, "D" }, /* weight ceil(65536 - 6.6e-5) = 65536: still 10 */
	{ SCN_MS(1500), 60, "PPPPPD" }, /* 10 x 1/2 + cur < 10: cur 0..4 */
	{ SCN_S(2), 60, "PPPPPD" }, /* window 2 at 0: 5 x 1 + cur, cur 0..4 */
	{ SCN_S(2) + 1, 60, "D" }, /* 5 x 1 + 5 */
	{ SCN_S(4), 60, TEN_P "D" }, /* window 4: window 3 was empty */
};

/* Sliding log 10 per 1 s from 0: a packet at 0 holds its slot for (0, 1 s). */
static const struct scn_burst log_zero[] = {
	{ 0, 60, TEN_P "D" },
	{ SCN_MS(999), 60, "D" },
	{ SCN_S(1) - 1, 60, "D" }, /* (-1 ns, 1 s - 1 ns] holds all 10 */
	{ SCN_S(1), 60, TEN_P "D" }, /* (0, 1 s] holds none: every slot free at once */
	{ SCN_S(1) + 1, 60, "D" },
	{ SCN_S(2) - 1, 60, "D" },
	{ SCN_S(2), 60, TEN_P "D" },
};

/*
 * A box up 19 minutes, a 1 h window: the clock is inside window 0 (the case
 * issue 20 found: 19 of 30 passed on the sets table). 20 per 1 h.
 */
static const struct scn_burst first_window_19m[] = {
	{ SCN_S(19 * 60), 60, TEN_P TEN_P "DDDDDDDDDD" },
	{ SCN_S(3600) - 1, 60, "D" }, /* still window 0 */
	{ SCN_S(3600), 60, "P" }, /* window 1 */
};

/* The sliding log of it: each slot held until 19 min + 1 h. */
static const struct scn_burst log_19m[] = {
	{ SCN_S(19 * 60), 60, TEN_P TEN_P "DDDDDDDDDD" },
	{ SCN_S(3600), 60, "D" },
	{ SCN_S(79 * 60) - 1, 60, "D" },
	{ SCN_S(79 * 60), 60, TEN_P TEN_P "D" },
};

/* The sliding window of it: 20 in window 0, none before. */
static const struct scn_burst sliding_19m[] = {
	{ SCN_S(19 * 60), 60, TEN_P TEN_P "DDDDDDDDDD" },
	{ SCN_S(3600), 60, "D" }, /* window 1 at 0: 20 x 1 */
	{ SCN_S(5400), 60, TEN_P "D" }, /* 20 x 1/2 + cur < 20: cur 0..9 */
};
/* clang-format on */

#define FIXED(tbl) .bursts = (tbl), .nr_bursts = ARRAY_SIZE(tbl)
#define RANDOM(n, s, gap, lo, hi) \
	.nr_random = (n), .seed = (s), .gap_ns = (gap), .len_min = (lo), .len_max = (hi)
#define RANDOM0(n, s, gap, lo, hi) RANDOM(n, s, gap, lo, hi), .from_zero = true

const struct scn scn_tables[] = {
	{ "token-bucket 10/s burst 5: burst, then the steady rate", SLUICE_ALGO_TOKEN_BUCKET,
	  "10/s", 5, FIXED(tb_steady) },
	{ "leaky-bucket 10/s capacity 5: as token-bucket", SLUICE_ALGO_LEAKY_BUCKET, "10/s", 5,
	  FIXED(tb_steady) },
	{ "token-bucket 10/s burst 5: clock moving back", SLUICE_ALGO_TOKEN_BUCKET, "10/s", 5,
	  FIXED(tb_clock_back) },
	{ "token-bucket 3/s burst 3: fractional interval", SLUICE_ALGO_TOKEN_BUCKET, "3/s", 3,
	  FIXED(tb_third) },
	{ "token-bucket 1/h burst 1", SLUICE_ALGO_TOKEN_BUCKET, "1/h", 1, FIXED(tb_hour) },
	{ "token-bucket 1000000000/s burst 4", SLUICE_ALGO_TOKEN_BUCKET, "1000000000/s", 4,
	  FIXED(tb_giga) },
	{ "token-bucket bytes 1gbit burst 3000", SLUICE_ALGO_TOKEN_BUCKET, NULL, 0, "1gbit", 3000,
	  FIXED(bytes_gbit) },
	{ "token-bucket 1/h burst 3 + 8000bit burst 1000: mixed sizes", SLUICE_ALGO_TOKEN_BUCKET,
	  "1/h", 3, "8000bit", 1000, FIXED(mixed_sizes) },
	{ "leaky-bucket 1/h burst 3 + 8000bit burst 1000: mixed sizes", SLUICE_ALGO_LEAKY_BUCKET,
	  "1/h", 3, "8000bit", 1000, FIXED(mixed_sizes) },
	{ "fixed-window 10/s: 2x at the boundary", SLUICE_ALGO_FIXED_WINDOW, "10/s", 0, NULL, 0,
	  "1s", FIXED(fixed_boundary) },
	{ "token-bucket 10/s burst 10: no 2x at the boundary", SLUICE_ALGO_TOKEN_BUCKET, "10/s", 10,
	  FIXED(tb_boundary) },
	{ "sliding-window 10/s: no 2x at the boundary", SLUICE_ALGO_SLIDING_WINDOW, "10/s", 0, NULL,
	  0, "1s", FIXED(sliding_boundary) },
	{ "sliding-log 10/s: no 2x at the boundary", SLUICE_ALGO_SLIDING_LOG, "10/s", 0, NULL, 0,
	  "1s", FIXED(log_boundary) },
	{ "sliding-log 3/s: staggered", SLUICE_ALGO_SLIDING_LOG, "3/s", 0, NULL, 0, "1s",
	  FIXED(log_staggered) },
	{ "fixed-window 3/s: clock moving back", SLUICE_ALGO_FIXED_WINDOW, "3/s", 0, NULL, 0, "1s",
	  FIXED(window_clock_back) },
	{ "sliding-window 3/s: clock moving back", SLUICE_ALGO_SLIDING_WINDOW, "3/s", 0, NULL, 0,
	  "1s", FIXED(window_clock_back) },
	{ "sliding-log 3/s: clock moving back", SLUICE_ALGO_SLIDING_LOG, "3/s", 0, NULL, 0, "1s",
	  FIXED(window_clock_back) },
	{ "token-bucket 10/s burst 5 from a clock at 0", SLUICE_ALGO_TOKEN_BUCKET, "10/s", 5,
	  FIXED(tb_zero) },
	{ "leaky-bucket 10/s capacity 5 from a clock at 0", SLUICE_ALGO_LEAKY_BUCKET, "10/s", 5,
	  FIXED(tb_zero) },
	{ "token-bucket bytes 1gbit burst 3000 from a clock at 0", SLUICE_ALGO_TOKEN_BUCKET, NULL,
	  0, "1gbit", 3000, FIXED(bytes_zero) },
	{ "fixed-window 10/s from a clock at 0: window 0 and its boundaries",
	  SLUICE_ALGO_FIXED_WINDOW, "10/s", 0, NULL, 0, "1s", FIXED(fixed_zero) },
	{ "sliding-window 10/s from a clock at 0: window 0 and its boundaries",
	  SLUICE_ALGO_SLIDING_WINDOW, "10/s", 0, NULL, 0, "1s", FIXED(sliding_zero) },
	{ "sliding-log 10/s from a clock at 0: a slot of tick 0 frees at 1 s",
	  SLUICE_ALGO_SLIDING_LOG, "10/s", 0, NULL, 0, "1s", FIXED(log_zero) },
	{ "fixed-window 20/h in 1h, up 19 minutes: inside window 0", SLUICE_ALGO_FIXED_WINDOW,
	  "20/h", 0, NULL, 0, "1h", FIXED(first_window_19m) },
	{ "sliding-window 20/h in 1h, up 19 minutes: inside window 0", SLUICE_ALGO_SLIDING_WINDOW,
	  "20/h", 0, NULL, 0, "1h", FIXED(sliding_19m) },
	{ "sliding-log 20/h in 1h, up 19 minutes", SLUICE_ALGO_SLIDING_LOG, "20/h", 0, NULL, 0,
	  "1h", FIXED(log_19m) },

	{ "random token-bucket 1000/s burst 20", SLUICE_ALGO_TOKEN_BUCKET, "1000/s", 20,
	  RANDOM(2000, 1, SCN_MS(1), 60, 60) },
	{ "random token-bucket 7/s burst 3", SLUICE_ALGO_TOKEN_BUCKET, "7/s", 3,
	  RANDOM(1000, 2, SCN_MS(143), 60, 60) },
	{ "random leaky-bucket 1000/s burst 20", SLUICE_ALGO_LEAKY_BUCKET, "1000/s", 20,
	  RANDOM(2000, 3, SCN_MS(1), 60, 60) },
	{ "random token-bucket 1000/s burst 10 + 10mbit burst 6000", SLUICE_ALGO_TOKEN_BUCKET,
	  "1000/s", 10, "10mbit", 6000, RANDOM(2000, 4, SCN_US(700), SCN_MIN_LEN, SCN_MAX_LEN) },
	{ "random leaky-bucket 1000/s burst 10 + 10mbit burst 6000", SLUICE_ALGO_LEAKY_BUCKET,
	  "1000/s", 10, "10mbit", 6000, RANDOM(2000, 5, SCN_US(700), SCN_MIN_LEN, SCN_MAX_LEN) },
	{ "random sliding-window 100/s in 100ms", SLUICE_ALGO_SLIDING_WINDOW, "100/s", 0, NULL, 0,
	  "100ms", RANDOM(2000, 6, SCN_MS(10), 60, 60) },
	{ "random sliding-window 7/s in 1s", SLUICE_ALGO_SLIDING_WINDOW, "7/s", 0, NULL, 0, "1s",
	  RANDOM(1000, 7, SCN_MS(143), 60, 60) },
	{ "random fixed-window 100/s in 100ms", SLUICE_ALGO_FIXED_WINDOW, "100/s", 0, NULL, 0,
	  "100ms", RANDOM(2000, 8, SCN_MS(10), 60, 60) },
	{ "random sliding-log 100/s in 100ms", SLUICE_ALGO_SLIDING_LOG, "100/s", 0, NULL, 0,
	  "100ms", RANDOM(2000, 9, SCN_MS(10), 60, 60) },
	{ "random sliding-log 64/s in 1s", SLUICE_ALGO_SLIDING_LOG, "64/s", 0, NULL, 0, "1s",
	  RANDOM(2000, 10, SCN_MS(16), 60, 60) },
	/* The same from a clock at 0: the first window of uptime, its boundaries. */
	{ "random token-bucket 1000/s burst 20 from 0", SLUICE_ALGO_TOKEN_BUCKET, "1000/s", 20,
	  RANDOM0(2000, 11, SCN_MS(1), 60, 60) },
	{ "random leaky-bucket 7/s burst 3 from 0", SLUICE_ALGO_LEAKY_BUCKET, "7/s", 3,
	  RANDOM0(1000, 12, SCN_MS(143), 60, 60) },
	{ "random token-bucket 1000/s burst 10 + 10mbit burst 6000 from 0",
	  SLUICE_ALGO_TOKEN_BUCKET, "1000/s", 10, "10mbit", 6000,
	  RANDOM0(2000, 13, SCN_US(700), SCN_MIN_LEN, SCN_MAX_LEN) },
	{ "random sliding-window 100/s in 100ms from 0", SLUICE_ALGO_SLIDING_WINDOW, "100/s", 0,
	  NULL, 0, "100ms", RANDOM0(2000, 14, SCN_MS(10), 60, 60) },
	{ "random fixed-window 100/s in 100ms from 0", SLUICE_ALGO_FIXED_WINDOW, "100/s", 0, NULL,
	  0, "100ms", RANDOM0(2000, 15, SCN_MS(10), 60, 60) },
	{ "random sliding-log 100/s in 100ms from 0", SLUICE_ALGO_SLIDING_LOG, "100/s", 0, NULL, 0,
	  "100ms", RANDOM0(2000, 16, SCN_MS(10), 60, 60) },
	{ "random fixed-window 20/h in 1h from 0", SLUICE_ALGO_FIXED_WINDOW, "20/h", 0, NULL, 0,
	  "1h", RANDOM0(1000, 17, SCN_S(120), 60, 60) },
	{ "random sliding-window 20/h in 1h from 0", SLUICE_ALGO_SLIDING_WINDOW, "20/h", 0, NULL, 0,
	  "1h", RANDOM0(1000, 18, SCN_S(120), 60, 60) },
};
const size_t scn_nr_tables = ARRAY_SIZE(scn_tables);

__u64 scn_rand(__u64 *state)
{
	__u64 x = *state ? *state : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

__u64 scn_rand_range(__u64 *state, __u64 lo, __u64 hi)
{
	if (hi <= lo)
		return lo;
	return lo + scn_rand(state) % (hi - lo + 1);
}

int scn_policy(const struct scn *s, struct sluice_policy *p, char *err, size_t errlen)
{
	struct sluice_rate rate;
	__u64 window_ns;
	int ret;

	memset(p, 0, sizeof(*p));
	p->tag = SLUICE_TAG(0, s->algo, 1);
	p->algo = s->algo;
	p->action = SLUICE_ACT_LIMIT;
	p->prefix4 = 32;
	p->prefix6 = 64;
	if (s->rate) {
		ret = sluice_parse_rate(s->rate, &rate, err, errlen);
		if (ret)
			return ret;
		if (sluice_algo_is_window(s->algo)) {
			if (s->window) {
				ret = sluice_parse_duration("window", s->window, &window_ns, err,
							    errlen);
				if (ret)
					return ret;
				p->window = window_ns << SLUICE_TICK_SHIFT;
			}
			ret = sluice_window_set(p, rate.count, rate.period_ns, err, errlen);
		} else {
			ret = sluice_limit_set(&p->pkt, rate.count, rate.period_ns,
					       s->burst ? s->burst :
							  sluice_default_burst(rate.count,
									       rate.period_ns),
					       err, errlen);
		}
		if (ret)
			return ret;
	}
	if (s->byte_rate) {
		ret = sluice_parse_rate(s->byte_rate, &rate, err, errlen);
		if (ret)
			return ret;
		ret = sluice_limit_set_bytes(&p->bytes, rate.count, rate.period_ns, s->byte_burst,
					     err, errlen);
		if (ret)
			return ret;
	}
	return sluice_policy_check(p, err, errlen);
}

int scn_packets(const struct scn *s, struct scn_pkt **pkts, size_t *nr)
{
	struct scn_pkt *out;
	size_t n = 0, i, k;

	if (s->nr_random) {
		__u64 rnd = s->seed, t = s->from_zero ? 0 : SCN_T0;

		out = calloc(s->nr_random, sizeof(*out));
		if (!out)
			return -ENOMEM;
		for (i = 0; i < s->nr_random; i++) {
			__u64 pick = scn_rand_range(&rnd, 0, 99);

			/* Mostly near the rate, with floods (same instant or
			 * far below the gap) and idle spells mixed in. */
			if (pick < 10)
				t += 0;
			else if (pick < 55)
				t += scn_rand_range(&rnd, 1, s->gap_ns / 4);
			else if (pick < 95)
				t += scn_rand_range(&rnd, 1, 2 * s->gap_ns);
			else
				t += scn_rand_range(&rnd, 1, 30 * s->gap_ns);
			out[i].t_ns = t;
			out[i].len = (__u32)scn_rand_range(&rnd, s->len_min, s->len_max);
			out[i].want = SCN_WANT_ANY;
		}
		*pkts = out;
		*nr = s->nr_random;
		return 0;
	}
	for (i = 0; i < s->nr_bursts; i++)
		n += strlen(s->bursts[i].want);
	out = calloc(n ? n : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	n = 0;
	for (i = 0; i < s->nr_bursts; i++) {
		const struct scn_burst *b = &s->bursts[i];

		for (k = 0; b->want[k]; k++, n++) {
			out[n].t_ns = b->t_ns;
			out[n].len = b->len;
			out[n].want = b->want[k] == 'P' ? SLUICE_PASS : SLUICE_DROP;
		}
	}
	*pkts = out;
	*nr = n;
	return 0;
}

void scn_host_run(const struct sluice_policy *p, const struct scn_pkt *pkts, size_t nr,
		  int *verdicts)
{
	struct sluice_log log;
	__u64 s[2] = { 0, 0 };
	size_t i;

	memset(&log, 0, sizeof(log));
	for (i = 0; i < nr; i++) {
		__u64 now = pkts[i].t_ns << SLUICE_TICK_SHIFT;

		if (p->algo == SLUICE_ALGO_SLIDING_LOG)
			verdicts[i] = sluice_sliding_log(&log, now, p->window, p->window_limit);
		else
			verdicts[i] = sluice_admit(p, s, now, pkts[i].len);
	}
}

bool scn_run_host(const struct scn *s, struct scn_run *r)
{
	char err[SLUICE_ERR_LEN] = "";

	memset(r, 0, sizeof(*r));
	if (scn_policy(s, &r->p, err, sizeof(err)) || scn_packets(s, &r->pk, &r->n)) {
		tap_ok(false, "%s: setup: %s", s->name, err);
		return false;
	}
	r->v = calloc(r->n ? r->n : 1, sizeof(*r->v));
	if (!r->v) {
		free(r->pk);
		r->pk = NULL;
		tap_ok(false, "%s: setup: out of memory", s->name);
		return false;
	}
	scn_host_run(&r->p, r->pk, r->n, r->v);
	return true;
}

void scn_run_free(struct scn_run *r)
{
	free(r->pk);
	free(r->v);
	r->pk = NULL;
	r->v = NULL;
}

size_t scn_run_passed(const struct scn_run *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->n; i++)
		n += r->v[i] == SLUICE_PASS;
	return n;
}

long scn_first_unwanted(const struct scn_pkt *pkts, const int *verdicts, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (verdicts[i] != pkts[i].want)
			return (long)i;
	return -1;
}

long scn_first_mismatch(const int *a, const int *b, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (a[i] != b[i])
			return (long)i;
	return -1;
}

const char *scn_verdict_name(int v)
{
	switch (v) {
	case SLUICE_PASS:
		return "PASS";
	case SLUICE_DROP:
		return "DROP";
	case SLUICE_CONTENDED:
		return "CONTENDED";
	}
	return "?";
}
