// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libsluice's parsers and policy derivation: every rate form of the command
 * line contract, the refusals (each with a message naming the input), the
 * overflow limits of sluice_limit_set and sluice_window_set, CIDRs, and
 * sluice_policy_check.
 */
#include <errno.h>
#include <string.h>

#include "libsluice.h"
#include "../lib/tap.h"

#define NS SLUICE_NS_PER_SEC

/* A rate is `per_s` units a second when count x 1e9 == per_s x period. */
static void rate_ok(const char *s, unsigned __int128 per_s, bool bytes)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_rate r = { 0 };
	int ret = sluice_parse_rate(s, &r, err, sizeof(err));
	bool ok = ret == 0 && r.is_bytes == bytes &&
		  (unsigned __int128)r.count * NS == per_s * r.period_ns;

	if (!tap_ok(ok, "rate '%s' is %llu %s/s", s, (unsigned long long)per_s,
		    bytes ? "bytes" : "packets"))
		tap_diag("  ret %d, count %llu per %llu ns, bytes %d: %s", ret,
			 (unsigned long long)r.count, (unsigned long long)r.period_ns, r.is_bytes,
			 err);
}

/* A refusal: -EINVAL and a message that quotes the input and says `word`. */
static void rate_bad(const char *s, const char *word)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_rate r = { 0 };
	int ret = sluice_parse_rate(s, &r, err, sizeof(err));
	bool ok = ret == -EINVAL && strstr(err, word) && (!*s || strstr(err, s));

	if (!tap_ok(ok, "rate '%s' is refused: %s", s, word))
		tap_diag("  ret %d, message: %s", ret, err);
}

static void test_parse_rate(void)
{
	rate_ok("100/s", 100, false);
	rate_ok("6000/m", 100, false);
	rate_ok("100pps", 100, false);
	rate_ok("10mbit", 1250000, true);
	rate_ok("1gbit", 125000000, true);
	rate_ok("100gbit", 12500000000ULL, true);
	rate_ok("500kbps", 500000, true);
	rate_ok("8000bit", 1000, true);

	rate_bad("0/s", "zero");
	rate_bad("0pps", "zero");
	rate_bad("0mbit", "zero");
	rate_bad("-5/s", "negative");
	rate_bad("-1mbit", "negative");
	rate_bad("abc", "not a number");
	rate_bad("/s", "not a number");
	rate_bad("", "missing");
	rate_bad("1.5/s", "whole number");
	rate_bad("2,5mbit", "whole number");
	rate_bad("99999999999999999999/s", "too large");
	rate_bad("20000000000tbit", "too large");
	rate_bad("100/fortnight", "unknown unit");
	rate_bad("100 /s", "unknown unit");
	rate_bad("100", "no unit");
	/* every unit is lower case; 10Mbps (megabits to most, megabytes to
	 * tc) is refused with both readings named, never taken as either */
	rate_bad("100/S", "write '100/s'");
	rate_bad("100PPS", "write '100pps'");
	rate_bad("10MBIT", "write '10mbit'");
	rate_bad("10Mbps", "'10mbps' for megabytes a second or '10mbit' for megabits");
	rate_bad("1Gbps", "'1gbps' for gigabytes a second or '1gbit' for gigabits");
}

/* A duration that reads to exactly ns, or a refusal saying `word`. */
static void duration_is(const char *s, __u64 ns)
{
	char err[SLUICE_ERR_LEN] = "";
	__u64 v = 0;
	int ret = sluice_parse_duration("--window", s, &v, err, sizeof(err));

	if (!tap_ok(!ret && v == ns, "duration '%s' is exactly %llu ns", s, (unsigned long long)ns))
		tap_diag("  ret %d, %llu ns: %s", ret, (unsigned long long)v, err);
}

static void duration_bad(const char *s, const char *word)
{
	char err[SLUICE_ERR_LEN] = "";
	__u64 v = 0;
	int ret = sluice_parse_duration("--window", s, &v, err, sizeof(err));

	if (!tap_ok(ret == -EINVAL && strstr(err, word) && strstr(err, s),
		    "duration '%s' is refused: %s", s, word))
		tap_diag("  ret %d, message: %s", ret, err);
}

static void test_parse_duration(void)
{
	duration_is("1.5s", 1500000000ULL);
	duration_is("1.5", 1500000000ULL);
	duration_is("0.1s", 100000000ULL);
	duration_is("0.3s", 300000000ULL); /* 0.3 has no exact double: no 299999999 */
	duration_is("2.5", 2500000000ULL);
	duration_is("1.25m", 75 * NS);
	duration_is("1.5h", 5400 * NS);
	duration_is("0.0001h", 360000000ULL);
	duration_is("1.000000001s", 1000000001ULL);
	duration_is("1.50000s", 1500000000ULL); /* trailing zeros are exact */
	duration_is("2500us", 2500000ULL);
	duration_is("1.5ms", 1500000ULL);
	duration_is("7ns", 7ULL);
	duration_is("100ms", 100000000ULL);
	duration_bad("1.0000000001s", "finer than a nanosecond");
	duration_bad("1.5ns", "finer than a nanosecond");
	duration_bad("1.s", "no digit after the point");
	duration_bad("1,5s", "comma");
	duration_bad("1.5S", "write '1.5s'");
	duration_bad("1H", "write '1h'");
	duration_bad("0.0s", "is 0");
	duration_bad("1.5fortnights", "unknown unit");
}

/* A byte size (or a count) that reads to v, sized or not. */
static void size_is(const char *s, __u64 want, bool want_sized)
{
	char err[SLUICE_ERR_LEN] = "";
	bool sized = !want_sized;
	__u64 v = 1;
	int ret = sluice_parse_size("--burst", s, 0xffffffffULL, &v, &sized, err, sizeof(err));

	if (!tap_ok(!ret && v == want && sized == want_sized, "size '%s' is %llu%s", s,
		    (unsigned long long)want, want_sized ? " bytes" : ""))
		tap_diag("  ret %d, %llu, sized %d: %s", ret, (unsigned long long)v, sized, err);
}

static void size_bad(const char *s, const char *word)
{
	char err[SLUICE_ERR_LEN] = "";
	bool sized;
	__u64 v;
	int ret = sluice_parse_size("--burst", s, 0xffffffffULL, &v, &sized, err, sizeof(err));

	if (!tap_ok(ret == -EINVAL && strstr(err, word) && strstr(err, s),
		    "size '%s' is refused: %s", s, word))
		tap_diag("  ret %d, message: %s", ret, err);
}

static void test_parse_size(void)
{
	size_is("1514", 1514, false);
	size_is("0", 0, false);
	size_is("64k", 65536, true);
	size_is("16kb", 16384, true);
	size_is("2m", 2097152, true);
	size_is("3g", 3221225472ULL, true);
	size_bad("4g", "too large");
	size_bad("64K", "write '64k'");
	size_bad("1.5k", "not a whole number");
	size_bad("64x", "unknown unit");
	size_bad("-1k", "negative");
}

/* Every keyword is lower case: the one refused in another case names it. */
static void test_case(void)
{
	char err[SLUICE_ERR_LEN] = "";
	bool on;

	TAP_TRUE(sluice_parse_onoff("--dry-run", "ON", &on, err, sizeof(err)) == -EINVAL &&
			 strstr(err, "write 'on'"),
		 "on|off: 'ON' is refused, naming 'on'");
	TAP_TRUE(sluice_parse_onoff("--dry-run", "Off", &on, err, sizeof(err)) == -EINVAL &&
			 strstr(err, "write 'off'"),
		 "on|off: 'Off' is refused, naming 'off'");
	TAP_TRUE(sluice_parse_algo("Token-Bucket", err, sizeof(err)) == -EINVAL &&
			 strstr(err, "write 'token-bucket'"),
		 "algo 'Token-Bucket' is refused, naming 'token-bucket'");
}

/* Rates that are not a whole number a second: count x 3600 s == 1 x period. */
static void test_parse_rate_slow(void)
{
	struct sluice_rate r = { 0 };

	TAP_TRUE(!sluice_parse_rate("1/h", &r, NULL, 0) && !r.is_bytes &&
			 (unsigned __int128)r.count * 3600 * NS == r.period_ns,
		 "rate '1/h' is 1 per 3600 s");
	TAP_TRUE(!sluice_parse_rate("7/m", &r, NULL, 0) && !r.is_bytes &&
			 (unsigned __int128)r.count * 60 * NS == 7 * (unsigned __int128)r.period_ns,
		 "rate '7/m' is 7 per 60 s");
}

static void test_parse_other(void)
{
	char err[SLUICE_ERR_LEN] = "";
	__u64 v = 0;
	int i;

	for (i = 0; i < SLUICE_ALGO_MAX; i++)
		TAP_EQ(sluice_parse_algo(sluice_algo_name(i), NULL, 0), i, "algo '%s' round-trips",
		       sluice_algo_name(i));
	TAP_TRUE(sluice_parse_algo("token_bucket", err, sizeof(err)) == -EINVAL &&
			 strstr(err, "token_bucket"),
		 "algo 'token_bucket' is refused, named in the message");
	TAP_TRUE(!sluice_parse_duration("window", "100ms", &v, NULL, 0) && v == 100000000ULL,
		 "duration '100ms'");
	TAP_TRUE(!sluice_parse_duration("window", "1h", &v, NULL, 0) && v == 3600ULL * NS,
		 "duration '1h'");
	TAP_TRUE(sluice_parse_duration("window", "0s", &v, NULL, 0) == -EINVAL,
		 "duration '0s' refused");
	TAP_TRUE(sluice_parse_uint("--burst", "4294967295", 0xffffffffULL, &v, NULL, 0) == 0 &&
			 v == 0xffffffffULL,
		 "burst 4294967295 is accepted");
	TAP_TRUE(sluice_parse_uint("--burst", "4294967296", 0xffffffffULL, &v, err, sizeof(err)) ==
				 -EINVAL &&
			 strstr(err, "--burst"),
		 "burst 4294967296 is refused, naming --burst");
	TAP_TRUE(sluice_parse_uint("--burst", "0", 10, &v, NULL, 0) == -EINVAL, "burst 0 refused");
}

static void test_limit_set(void)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_limit l;
	int ret;

	memset(&l, 0, sizeof(l));
	ret = sluice_limit_set(&l, 10, NS, 5, err, sizeof(err));
	TAP_TRUE(!ret && l.interval == 1600000000ULL && l.interval_frac == 0 &&
			 l.tolerance == 8000000000ULL && l.burst == 5 && l.rate == 10 &&
			 l.period_ns == NS,
		 "10/s burst 5: interval 100 ms in ticks, tolerance 5 intervals");
	ret = sluice_limit_set(&l, 3, NS, 3, err, sizeof(err));
	TAP_TRUE(!ret && l.interval == 5333333333ULL && l.interval_frac == 1431655766U &&
			 l.tolerance == 3 * 5333333334ULL,
		 "3/s burst 3: 5333333333 + ceil(2^32/3)/2^32 ticks, tolerance 3 x 5333333334");

	/* refusals */
	TAP_TRUE(sluice_limit_set(&l, 0, NS, 1, NULL, 0) == -ERANGE, "rate 0 refused");
	TAP_TRUE(sluice_limit_set(&l, 1, 0, 1, NULL, 0) == -ERANGE, "period 0 refused");
	TAP_TRUE(sluice_limit_set(&l, 10, NS, 0, NULL, 0) == -ERANGE, "burst 0 refused");
	TAP_TRUE(sluice_limit_set(&l, 1000000, NS, 0xffffffffULL, NULL, 0) == 0,
		 "burst 2^32-1 accepted at 1000000/s");
	ret = sluice_limit_set(&l, 10, NS, 0x100000000ULL, err, sizeof(err));
	TAP_TRUE(ret == -ERANGE && strstr(err, "burst"), "burst 2^32 refused, naming the burst");

	/* The highest rate: 1/16 of a tick a unit (256e9 units/s). */
	TAP_EQ(sluice_limit_set(&l, 256000000000ULL, NS, 1, NULL, 0), 0,
	       "256000000000/s (1/16 tick a unit) accepted");
	ret = sluice_limit_set(&l, 300000000000ULL, NS, 1, err, sizeof(err));
	TAP_TRUE(ret == -ERANGE && strstr(err, "too high"), "300000000000/s refused: too high");
	ret = sluice_limit_set(&l, ~0ULL, NS, 1, err, sizeof(err));
	TAP_TRUE(ret == -ERANGE && strstr(err, "too high"), "2^64-1/s refused: too high");

	/* The slowest: a 65535 B frame's cost must fit 2^62 ticks. */
	/* (2^62 / 65535) ticks is 4398.11 s */
	TAP_EQ(sluice_limit_set(&l, 1, 4398ULL * NS, 1, NULL, 0), 0, "1 per 4398 s accepted");
	ret = sluice_limit_set(&l, 1, 4399ULL * NS, 1, err, sizeof(err));
	TAP_TRUE(ret == -ERANGE && strstr(err, "too slow"), "1 per 4399 s refused: too slow");

	/* burst x interval <= 2^62 ticks: at 1/h (5.76e13 ticks) burst 80063. */
	TAP_EQ(sluice_limit_set(&l, 1, 3600ULL * NS, 80063, NULL, 0), 0,
	       "1/h burst 80063 accepted (tolerance < 2^62)");
	ret = sluice_limit_set(&l, 1, 3600ULL * NS, 80064, err, sizeof(err));
	TAP_TRUE(ret == -ERANGE && strstr(err, "burst"), "1/h burst 80064 refused (over 2^62)");

	TAP_EQ(sluice_default_burst(100, NS), 100, "default burst of 100/s: 100");
	TAP_EQ(sluice_default_burst(1, 3600ULL * NS), 1, "default burst of 1/h: 1");
	TAP_EQ(sluice_default_burst(1250000, NS), 1250000, "default burst of 10mbit: 1250000 B");
}

/*
 * A byte limit's tolerance is what `burst` bytes cost, ceil(burst x P /
 * count) with P the period in ticks, give or take the one tick the rounded-up
 * fraction may add; never burst x the rounded-up cost of one byte, which at
 * 100gbit (1.28 ticks a byte) would be 2 ticks a byte.
 */
static void test_limit_set_bytes(void)
{
	static const char *const rates[] = { "100gbit", "3mbit",   "1gbit",
					     "10mbit",  "500kbps", "1tbit" };
	static const __u64 bursts[] = { 1, 1500, 3000, 65535, 150000, 10000000 };
	size_t i, j;

	for (i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		unsigned int good = 0, total = 0;
		struct sluice_rate r;

		if (sluice_parse_rate(rates[i], &r, NULL, 0)) {
			tap_ok(false, "byte tolerance %s: parse", rates[i]);
			continue;
		}
		for (j = 0; j < sizeof(bursts) / sizeof(bursts[0]); j++) {
			unsigned __int128 P = (unsigned __int128)r.period_ns << SLUICE_TICK_SHIFT;
			unsigned __int128 exact = (bursts[j] * P + r.count - 1) / r.count;
			struct sluice_limit l;

			total++;
			if (sluice_limit_set_bytes(&l, r.count, r.period_ns, bursts[j], NULL, 0))
				continue;
			if (l.tolerance >= exact && l.tolerance <= exact + 1)
				good++;
			else
				tap_diag("  %s burst %llu: tolerance %llu, exact %llu", rates[i],
					 (unsigned long long)bursts[j],
					 (unsigned long long)l.tolerance,
					 (unsigned long long)exact);
		}
		TAP_EQ(good, total, "byte tolerance %s: what the burst costs, for %u bursts",
		       rates[i], total);
	}
}

/* sluice_window_set() on a policy of algo with window_ns (0: from the rate). */
static int window_set(struct sluice_policy *p, __u8 algo, __u64 count, __u64 period_ns,
		      __u64 window_ns, char *err)
{
	memset(p, 0, sizeof(*p));
	p->algo = algo;
	p->window = window_ns << SLUICE_TICK_SHIFT;
	return sluice_window_set(p, count, period_ns, err, SLUICE_ERR_LEN);
}

static void window_ok(__u8 algo, __u64 count, __u64 period_ns, __u64 window_ns,
		      __u64 want_window_ns, __u32 want_limit, const char *what)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_policy p;
	int ret;

	ret = window_set(&p, algo, count, period_ns, window_ns, err);
	if (!tap_ok(!ret && p.window == want_window_ns << SLUICE_TICK_SHIFT &&
			    p.window_limit == want_limit,
		    "window: %s", what))
		tap_diag("  ret %d window %llu ticks limit %u: %s", ret,
			 (unsigned long long)p.window, p.window_limit, err);
}

static void window_bad(__u8 algo, __u64 count, __u64 period_ns, __u64 window_ns, const char *word,
		       const char *what)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_policy p;
	int ret;

	ret = window_set(&p, algo, count, period_ns, window_ns, err);
	if (!tap_ok(ret == -ERANGE && strstr(err, word), "window refused: %s", what))
		tap_diag("  ret %d: %s", ret, err);
}

static void test_window_set(void)
{
	const __u8 SW = SLUICE_ALGO_SLIDING_WINDOW, SL = SLUICE_ALGO_SLIDING_LOG;

	window_ok(SW, 100, NS, 0, NS, 100, "100/s, no window: 1 s, 100");
	window_ok(SW, 1, 10000000, 0, NS, 100, "1 per 10 ms (as parsed), no window: 1 s, 100");
	window_ok(SW, 1, 3600 * NS, 0, 3600 * NS, 1, "1/h, no window: 1 h, 1");
	window_ok(SW, 100, NS, 100000000, 100000000, 10, "100/s in 100ms: 10");
	window_ok(SL, 64, NS, 0, NS, 64, "sliding-log 64/s: 64");
	window_ok(SL, 640, NS, 100000000, 100000000, 64, "sliding-log 640/s in 100ms: 64");
	window_ok(SW, 4294967295ULL, NS, 0, NS, 0xffffffffU, "2^32-1 per window accepted");

	window_bad(SW, 3, NS, 100000000, "whole number", "3/s in 100ms is 0.3 a window");
	window_bad(SW, 100, NS, 50000000, "100ms to 1h", "a 50ms window");
	window_bad(SW, 100, NS, 7200 * NS, "100ms to 1h", "a 2h window");
	window_bad(SW, 4294967296ULL, NS, 0, "packets per window", "2^32 per window");
	window_bad(SL, 65, NS, 0, "64", "sliding-log 65/s (over 64 slots)");
}

static void cidr_ok(const char *s, __u8 family, __u8 len, const char *addr_hex)
{
	char err[SLUICE_ERR_LEN] = "", hex[33] = "";
	struct sluice_cidr c;
	int ret, i;

	memset(&c, 0xaa, sizeof(c));
	ret = sluice_parse_cidr(s, &c, err, sizeof(err));
	for (i = 0; i < 16; i++)
		sprintf(hex + 2 * i, "%02x", c.addr[i]);
	if (!tap_ok(!ret && c.family == family && c.prefixlen == len && !strcmp(hex, addr_hex),
		    "cidr '%s' is family %u /%u", s, family, len))
		tap_diag("  ret %d family %u /%u addr %s: %s", ret, c.family, c.prefixlen, hex,
			 err);
}

static void cidr_bad(const char *s, const char *word)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_cidr c;
	int ret = sluice_parse_cidr(s, &c, err, sizeof(err));

	if (!tap_ok(ret == -EINVAL && strstr(err, word), "cidr '%s' refused: %s", s, word))
		tap_diag("  ret %d: %s", ret, err);
}

static void test_cidr(void)
{
	cidr_ok("198.18.0.0/15", 4, 15, "c6120000000000000000000000000000");
	cidr_ok("198.18.7.9", 4, 32, "c6120709000000000000000000000000");
	cidr_ok("0.0.0.0/0", 4, 0, "00000000000000000000000000000000");
	cidr_ok("2001:2::/48", 6, 48, "20010002000000000000000000000000");
	cidr_ok("2001:2::1", 6, 128, "20010002000000000000000000000001");
	cidr_ok("2001:2:0:1::/64", 6, 64, "20010002000000010000000000000000");

	cidr_bad("198.18.0.1/15", "did you mean 198.18.0.0/15");
	cidr_bad("198.19.255.255/15", "did you mean 198.18.0.0/15");
	cidr_bad("2001:2::1/48", "did you mean 2001:2::/48");
	cidr_bad("198.18.0.0/33", "0 to 32");
	cidr_bad("2001:2::/129", "0 to 128");
	cidr_bad("198.18.0.0/", "0 to 32");
	cidr_bad("198.18.0.0/-1", "0 to 32");
	cidr_bad("198.18.0.0/1x", "0 to 32");
	cidr_bad("198.18.0.256", "not an IPv4 or IPv6");
	cidr_bad("eth0", "not an IPv4 or IPv6");
	cidr_bad("", "not an IPv4 or IPv6");
}

static void check_bad(const struct sluice_policy *p, const char *word, const char *what)
{
	char err[SLUICE_ERR_LEN] = "";
	int ret = sluice_policy_check(p, err, sizeof(err));

	if (!tap_ok(ret < 0 && strstr(err, word), "policy refused: %s", what))
		tap_diag("  ret %d: %s", ret, err);
}

static void test_policy_check(void)
{
	struct sluice_settings set;
	struct sluice_policy p, w;
	char err[SLUICE_ERR_LEN] = "";

	sluice_settings_init(&set);
	TAP_TRUE(set.def.algo == SLUICE_ALGO_TOKEN_BUCKET && set.def.prefix4 == 32 &&
			 set.def.prefix6 == 64 &&
			 set.def.pkt.rate * NS == 100 * set.def.pkt.period_ns &&
			 set.def.pkt.burst == 100 && set.agg4 == 24 && set.agg6 == 48,
		 "default settings: token bucket 100/s burst 100, keys /32 and /64");
	/* One rule for a burst not given: the default policy's is what
	 * --rate 100/s alone gets anywhere. */
	TAP_EQ(set.def.pkt.burst, sluice_default_burst(100, NS),
	       "the default policy's burst is --rate 100/s's default burst (one second's worth)");
	TAP_EQ(sluice_policy_check(&set.def, err, sizeof(err)), 0,
	       "default policy passes the check");

	p = set.def;
	p.algo = SLUICE_ALGO_MAX;
	check_bad(&p, "unknown algorithm", "algo 5");
	p = set.def;
	p.prefix4 = 0;
	check_bad(&p, "/0", "prefix4 0");
	p.prefix4 = 33;
	check_bad(&p, "/33", "prefix4 33");
	p = set.def;
	p.prefix6 = 0;
	check_bad(&p, "/0", "prefix6 0");
	p.prefix6 = 129;
	check_bad(&p, "/129", "prefix6 129");
	p = set.def;
	p.prefix4 = 1;
	p.prefix6 = 128;
	TAP_EQ(sluice_policy_check(&p, NULL, 0), 0, "prefix4 1 and prefix6 128 pass");
	p = set.def;
	memset(&p.pkt, 0, sizeof(p.pkt));
	check_bad(&p, "neither", "a bucket with no rate");
	p.action = SLUICE_ACT_EXEMPT;
	TAP_EQ(sluice_policy_check(&p, NULL, 0), 0, "an exempt rule needs no rate");

	memset(&w, 0, sizeof(w));
	w.tag = 1;
	w.prefix4 = 32;
	w.prefix6 = 64;
	w.algo = SLUICE_ALGO_SLIDING_WINDOW;
	check_bad(&w, "needs a packet rate", "sliding-window without a window");
	TAP_EQ(sluice_window_set(&w, 100, NS, NULL, 0), 0, "sliding-window 100/s: set");
	TAP_EQ(sluice_policy_check(&w, NULL, 0), 0, "sliding-window 100/s passes");
	p = w;
	sluice_limit_set(&p.bytes, 1, 800, 3000, NULL, 0);
	check_bad(&p, "byte limits", "sliding-window with a byte limit");
	p = w;
	p.algo = SLUICE_ALGO_SLIDING_LOG;
	p.window_limit = 65;
	check_bad(&p, "64", "sliding-log with 65 a window");
	p.window_limit = 64;
	TAP_EQ(sluice_policy_check(&p, NULL, 0), 0, "sliding-log with 64 a window passes");
}

/* What sluicectl prints must read back as the same rate. */
static void test_format_roundtrip(void)
{
	static const char *const forms[] = { "100/s", "6000/m",  "1/h", "100pps", "10mbit",
					     "1gbit", "500kbps", "3/s", "7/m",    "100gbit" };
	size_t i;

	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct sluice_rate a = { 0 }, b = { 0 };
		struct sluice_limit l;
		char buf[64] = "";
		bool ok;

		ok = !sluice_parse_rate(forms[i], &a, NULL, 0) &&
		     !sluice_limit_set(&l, a.count, a.period_ns, 1, NULL, 0);
		if (ok) {
			sluice_format_rate(&l, a.is_bytes, buf, sizeof(buf));
			ok = !sluice_parse_rate(buf, &b, NULL, 0) && a.is_bytes == b.is_bytes &&
			     (unsigned __int128)a.count * b.period_ns ==
				     (unsigned __int128)b.count * a.period_ns;
		}
		TAP_TRUE(ok, "rate '%s' prints as '%s', which reads back as the same rate",
			 forms[i], buf);
	}
}

int main(void)
{
	test_parse_rate();
	test_parse_rate_slow();
	test_parse_duration();
	test_parse_size();
	test_case();
	test_parse_other();
	test_limit_set();
	test_limit_set_bytes();
	test_window_set();
	test_cidr();
	test_policy_check();
	test_format_roundtrip();
	return tap_done();
}
