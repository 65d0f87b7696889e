// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Parsing of command-line values: every refusal says what was wrong. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "libsluice.h"

/* Leading decimal digits of s as a u64: -ERANGE on overflow, -EINVAL if none. */
static int parse_digits(const char **sp, __u64 *out)
{
	const char *s = *sp;
	__u64 v = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		__u64 d = *s - '0';

		if (v > (~0ULL - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*sp = s;
	*out = v;
	return 0;
}

struct unit {
	const char *name;
	__u64 mult; /* count multiplier */
	__u64 period_ns;
	bool bytes;
	bool bits; /* count is in bits: bytes = bits / 8 */
};

static const struct unit rate_units[] = {
	{ "/s", 1, SLUICE_NS_PER_SEC, false, false },
	{ "/sec", 1, SLUICE_NS_PER_SEC, false, false },
	{ "/m", 1, 60 * SLUICE_NS_PER_SEC, false, false },
	{ "/min", 1, 60 * SLUICE_NS_PER_SEC, false, false },
	{ "/h", 1, 3600 * SLUICE_NS_PER_SEC, false, false },
	{ "/hour", 1, 3600 * SLUICE_NS_PER_SEC, false, false },
	{ "pps", 1, SLUICE_NS_PER_SEC, false, false },
	/* tc's convention: "bit" units are bits, "bps" units are bytes. */
	{ "bit", 1, SLUICE_NS_PER_SEC, true, true },
	{ "kbit", 1000ULL, SLUICE_NS_PER_SEC, true, true },
	{ "mbit", 1000000ULL, SLUICE_NS_PER_SEC, true, true },
	{ "gbit", 1000000000ULL, SLUICE_NS_PER_SEC, true, true },
	{ "tbit", 1000000000000ULL, SLUICE_NS_PER_SEC, true, true },
	{ "bps", 1, SLUICE_NS_PER_SEC, true, false },
	{ "kbps", 1000ULL, SLUICE_NS_PER_SEC, true, false },
	{ "mbps", 1000000ULL, SLUICE_NS_PER_SEC, true, false },
	{ "gbps", 1000000000ULL, SLUICE_NS_PER_SEC, true, false },
	{ "tbps", 1000000000000ULL, SLUICE_NS_PER_SEC, true, false },
};

#define RATE_FORMS "100/s, 6000/m, 1/h, 100pps; bytes: 10mbit, 1gbit, 500kbps"

/*
 * The largest count of unit u that sluice_limit_set() takes (a rate must
 * leave a packet or byte at least 1/16 tick apart), found by bisection:
 * what a too-large rate's message names is exactly what is accepted.
 */
static __u64 max_rate_count(const struct unit *u)
{
	__u64 period_ns = u->period_ns * (u->bits ? 8 : 1), lo = 1, hi = ~0ULL / u->mult;
	struct sluice_limit l;

	if (!sluice_limit_set(&l, hi * u->mult, period_ns, 1, NULL, 0))
		return hi;
	while (hi - lo > 1) {
		__u64 mid = lo + (hi - lo) / 2;

		if (sluice_limit_set(&l, mid * u->mult, period_ns, 1, NULL, 0))
			hi = mid;
		else
			lo = mid;
	}
	return lo;
}

/* Units are lower case, as every word sluice takes: 10Mbps is refused, not
 * read as the megabytes it would be in tc (or the megabits it says). */
static const struct unit *rate_unit(const char *name, bool any_case)
{
	size_t i;

	for (i = 0; i < sizeof(rate_units) / sizeof(rate_units[0]); i++)
		if (any_case ? !strcasecmp(name, rate_units[i].name) :
			       !strcmp(name, rate_units[i].name))
			return &rate_units[i];
	return NULL;
}

const char *sluice_case_hint(const char *word, const char *const *names, size_t n)
{
	size_t i;

	for (i = 0; word && *word && i < n; i++)
		if (!strcasecmp(word, names[i]) && strcmp(word, names[i]))
			return names[i];
	return NULL;
}

static const char *mult_name(__u64 mult)
{
	return mult == 1000ULL       ? "kilo" :
	       mult == 1000000ULL    ? "mega" :
	       mult == 1000000000ULL ? "giga" :
				       "tera";
}

int sluice_parse_rate(const char *s, struct sluice_rate *rate, char *err, size_t errlen)
{
	const struct unit *u, *other;
	const char *p = s;
	__u64 count;
	int ret;

	if (!s || !*s)
		return sluice_err(err, errlen, -EINVAL, "missing rate: write it as " RATE_FORMS);
	if (*p == '-')
		return sluice_err(err, errlen, -EINVAL,
				  "rate '%s' is negative: a rate must be positive", s);
	ret = parse_digits(&p, &count);
	if (ret == -ERANGE) {
		/* Skip the digits to the unit, to name the largest of it. */
		while (isdigit((unsigned char)*p))
			p++;
	} else if (ret) {
		return sluice_err(err, errlen, -EINVAL,
				  "rate '%s' is not a number: write it as " RATE_FORMS, s);
	}
	if (*p == '.' || *p == ',')
		return sluice_err(
			err, errlen, -EINVAL,
			"rate '%s' is not a whole number: use a longer period (90/m, not 1.5/s)",
			s);
	u = rate_unit(p, false);
	other = u ? NULL : rate_unit(p, true);
	if (!u && !*p)
		return sluice_err(err, errlen, -EINVAL,
				  "rate '%s' has no unit: write it as " RATE_FORMS, s);
	if (other && other->bytes && !other->bits && other->mult > 1)
		return sluice_err(
			err, errlen, -EINVAL,
			"rate '%s': units are lower case; write '%.*s%s' for %sbytes a second "
			"or '%.*s%.*sbit' for %sbits",
			s, (int)(p - s), s, other->name, mult_name(other->mult), (int)(p - s), s,
			(int)(strlen(other->name) - 3), other->name, mult_name(other->mult));
	if (other)
		return sluice_err(err, errlen, -EINVAL,
				  "rate '%s': units are lower case, write '%.*s%s'", s,
				  (int)(p - s), s, other->name);
	if (!u)
		return sluice_err(err, errlen, -EINVAL,
				  "rate '%s' has an unknown unit '%s': write it as " RATE_FORMS, s,
				  p);
	if (ret != -ERANGE && count == 0)
		return sluice_err(err, errlen, -EINVAL,
				  "rate '%s' is zero: a limit must admit something "
				  "(to drop everything use a --deny rule)",
				  s);
	if (ret == -ERANGE || count > max_rate_count(u))
		return sluice_err(err, errlen, -EINVAL,
				  "rate '%s' is too large: at most %llu%s per source key (the "
				  "datapath tells no faster %s apart)",
				  s, (unsigned long long)max_rate_count(u), u->name,
				  u->bytes ? "bytes" : "packets");
	/* Kept as written (30/m stays 30 per minute): the period is what a
	 * window algorithm's window defaults to. */
	rate->count = count * u->mult;
	rate->period_ns = u->period_ns * (u->bits ? 8 : 1);
	rate->is_bytes = u->bytes;
	return 0;
}

int sluice_parse_uint(const char *what, const char *s, __u64 max, __u64 *out, char *err,
		      size_t errlen)
{
	const char *p = s;
	__u64 v;
	int ret;

	if (!s || !*s)
		return sluice_err(err, errlen, -EINVAL, "missing value for %s", what);
	if (*p == '-')
		return sluice_err(err, errlen, -EINVAL,
				  "%s '%s' is negative: it must be a positive whole number", what,
				  s);
	ret = parse_digits(&p, &v);
	if (ret == -ERANGE || (!ret && !*p && v > max))
		return sluice_err(err, errlen, -EINVAL, "%s '%s' is too large: at most %llu", what,
				  s, (unsigned long long)max);
	if (ret || *p)
		return sluice_err(err, errlen, -EINVAL, "%s '%s' is not a whole number", what, s);
	if (v == 0)
		return sluice_err(err, errlen, -EINVAL,
				  "%s is 0: it must be at least 1 (1 to %llu)", what,
				  (unsigned long long)max);
	*out = v;
	return 0;
}

int sluice_parse_size(const char *what, const char *s, __u64 max, __u64 *out, bool *sized,
		      char *err, size_t errlen)
{
	static const struct {
		const char *name;
		unsigned int shift;
	} units[] = { { "k", 10 },  { "kb", 10 }, { "m", 20 },
		      { "mb", 20 }, { "g", 30 },  { "gb", 30 } };
	const char *p = s;
	size_t i;
	__u64 v;
	int ret;

	*sized = false;
	if (!s || !*s)
		return sluice_err(err, errlen, -EINVAL, "missing value for %s", what);
	if (*p == '-')
		return sluice_err(err, errlen, -EINVAL,
				  "%s '%s' is negative: it must be a positive whole number", what,
				  s);
	ret = parse_digits(&p, &v);
	if (ret == -EINVAL)
		return sluice_err(err, errlen, -EINVAL, "%s '%s' is not a whole number", what, s);
	if (*p == '.' || *p == ',')
		return sluice_err(err, errlen, -EINVAL,
				  "%s '%s' is not a whole number (a byte size is whole "
				  "bytes: 1536 or 64k, not 1.5k)",
				  what, s);
	for (i = 0; *p && i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(p, units[i].name))
			break;
	if (*p && i == sizeof(units) / sizeof(units[0])) {
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcasecmp(p, units[i].name))
				return sluice_err(err, errlen, -EINVAL,
						  "%s '%s': units are lower case, write "
						  "'%.*s%s'",
						  what, s, (int)(p - s), s, units[i].name);
		return sluice_err(
			err, errlen, -EINVAL,
			"%s '%s' has an unknown unit '%s': a count is a whole "
			"number, a byte size may end in k, m or g (1024, 1024^2, 1024^3 bytes)",
			what, s, p);
	}
	if (*p) {
		*sized = true;
		if (ret == -ERANGE || v > (max >> units[i].shift))
			return sluice_err(err, errlen, -EINVAL,
					  "%s '%s' is too large: at most %llu bytes", what, s,
					  (unsigned long long)max);
		v <<= units[i].shift;
	} else if (ret == -ERANGE || v > max) {
		return sluice_err(err, errlen, -EINVAL, "%s '%s' is too large: at most %llu", what,
				  s, (unsigned long long)max);
	}
	*out = v;
	return 0;
}

/*
 * A duration: digits, an optional fraction, a unit (none: seconds). Read in
 * integers (the fraction's digits scaled by the unit), so that 1.5s is
 * exactly 1500000000 ns and 0.1s exactly 100 ms, never a float's nearest
 * neighbour; a fraction finer than the nanosecond is refused, not rounded.
 */
int sluice_parse_duration(const char *what, const char *s, __u64 *ns, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		__u64 ns;
	} units[] = {
		{ "", SLUICE_NS_PER_SEC },
		{ "s", SLUICE_NS_PER_SEC },
		{ "ms", 1000000ULL },
		{ "us", 1000ULL },
		{ "ns", 1ULL },
		{ "m", 60 * SLUICE_NS_PER_SEC },
		{ "min", 60 * SLUICE_NS_PER_SEC },
		{ "h", 3600 * SLUICE_NS_PER_SEC },
		{ "d", 86400 * SLUICE_NS_PER_SEC },
	};
	const char *p = s, *frac = NULL, *unit;
	unsigned __int128 total, scale = 1;
	size_t i, nfrac = 0;
	__u64 v;
	int ret;

	if (!s || !*s)
		return sluice_err(err, errlen, -EINVAL, "missing value for %s", what);
	if (*p == '-')
		return sluice_err(err, errlen, -EINVAL, "%s '%s' is negative", what, s);
	ret = parse_digits(&p, &v);
	/* -ERANGE: a caller that knows a narrower range names it instead */
	if (ret == -ERANGE)
		return sluice_err(err, errlen, -ERANGE, "%s '%s' is too long: at most %llus", what,
				  s, (unsigned long long)(~0ULL / SLUICE_NS_PER_SEC));
	if (ret)
		return sluice_err(err, errlen, -EINVAL,
				  "%s '%s' is not a duration: write 100ms, 1.5s, 1m or 1h", what,
				  s);
	if (*p == '.') {
		frac = ++p;
		while (isdigit((unsigned char)*p))
			p++;
		nfrac = (size_t)(p - frac);
		if (!nfrac)
			return sluice_err(err, errlen, -EINVAL,
					  "%s '%s' has no digit after the point: write 1.5s "
					  "or 1s",
					  what, s);
	} else if (*p == ',') {
		return sluice_err(err, errlen, -EINVAL,
				  "%s '%s' has a comma: a fraction takes a point (1.5s)", what, s);
	}
	unit = p;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(unit, units[i].name))
			break;
	if (i == sizeof(units) / sizeof(units[0])) {
		size_t k;

		for (k = 0; k < sizeof(units) / sizeof(units[0]); k++)
			if (*unit && !strcasecmp(unit, units[k].name))
				return sluice_err(err, errlen, -EINVAL,
						  "%s '%s': units are lower case, write "
						  "'%.*s%s'",
						  what, s, (int)(unit - s), s, units[k].name);
		return sluice_err(err, errlen, -EINVAL,
				  "%s '%s' has an unknown unit: write 100ms, 1.5s, 1m, 1h "
				  "or 1d (or us, ns)",
				  what, s);
	}
	/* whole units, then the fraction F of n digits: F x unit / 10^n ns,
	 * which must be whole (trailing zeros do not count) */
	total = (unsigned __int128)v * units[i].ns;
	while (nfrac && frac[nfrac - 1] == '0')
		nfrac--;
	if (nfrac) {
		unsigned __int128 f = 0;
		size_t k;

		for (k = 0; k < nfrac && k < 19; k++) {
			f = f * 10 + (unsigned)(frac[k] - '0');
			scale *= 10;
		}
		if (nfrac > 18 || (f * units[i].ns) % scale)
			return sluice_err(err, errlen, -EINVAL,
					  "%s '%s' is finer than a nanosecond: give a "
					  "whole number of ns (1.5s, 1.000000001s, 2500us)",
					  what, s);
		total += f * units[i].ns / scale;
	}
	if (total == 0)
		return sluice_err(err, errlen, -EINVAL, "%s '%s' is 0: it must be longer", what, s);
	if (total > ~0ULL)
		return sluice_err(err, errlen, -ERANGE, "%s '%s' is too long: at most %llus", what,
				  s, (unsigned long long)(~0ULL / SLUICE_NS_PER_SEC));
	*ns = (__u64)total;
	return 0;
}

int sluice_parse_algo(const char *s, char *err, size_t errlen)
{
	const char *algo_names[SLUICE_ALGO_MAX], *lower;
	int i;

	for (i = 0; i < SLUICE_ALGO_MAX; i++)
		algo_names[i] = sluice_algo_name(i);
	lower = sluice_case_hint(s, algo_names, SLUICE_ALGO_MAX);
	for (i = 0; i < SLUICE_ALGO_MAX; i++)
		if (s && !strcmp(s, algo_names[i]))
			return i;
	if (lower)
		return sluice_err(err, errlen, -EINVAL,
				  "unknown algorithm '%s': names are lower case, write "
				  "'%s'",
				  s, lower);
	return sluice_err(err, errlen, -EINVAL,
			  "unknown algorithm '%s': use token-bucket, leaky-bucket, sliding-window, "
			  "fixed-window or sliding-log",
			  s ? s : "");
}

int sluice_parse_onoff(const char *what, const char *s, bool *out, char *err, size_t errlen)
{
	if (s && !strcmp(s, "on")) {
		*out = true;
		return 0;
	}
	if (s && !strcmp(s, "off")) {
		*out = false;
		return 0;
	}
	static const char *const words[] = { "on", "off" };
	const char *lower = sluice_case_hint(s, words, 2);

	if (lower)
		return sluice_err(err, errlen, -EINVAL,
				  "%s takes 'on' or 'off' (lower case), not '%s': write "
				  "'%s'",
				  what, s, lower);
	return sluice_err(err, errlen, -EINVAL, "%s takes 'on' or 'off', not '%s'", what,
			  s ? s : "");
}

void sluice_mask(__u8 *addr, unsigned int prefixlen)
{
	unsigned int i;

	for (i = 0; i < 16; i++) {
		unsigned int bit = i * 8;

		if (prefixlen <= bit)
			addr[i] = 0;
		else if (prefixlen < bit + 8)
			addr[i] &= (__u8)(0xff << (bit + 8 - prefixlen));
	}
}

static int parse_ip(const char *s, struct sluice_cidr *c)
{
	memset(c->addr, 0, sizeof(c->addr));
	if (inet_pton(AF_INET, s, c->addr) == 1) {
		c->family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, c->addr) == 1) {
		c->family = 6;
		return 0;
	}
	return -EINVAL;
}

int sluice_parse_addr(const char *s, struct sluice_cidr *c, char *err, size_t errlen)
{
	if (!s || parse_ip(s, c))
		return sluice_err(err, errlen, -EINVAL, "'%s' is not an IPv4 or IPv6 address",
				  s ? s : "");
	c->prefixlen = c->family == 4 ? 32 : 128;
	return 0;
}

int sluice_parse_cidr(const char *s, struct sluice_cidr *c, char *err, size_t errlen)
{
	char buf[INET6_ADDRSTRLEN + 8];
	__u8 masked[16];
	char *slash;
	__u64 len;
	unsigned int max;

	if (!s || strlen(s) >= sizeof(buf))
		return sluice_err(err, errlen, -EINVAL, "'%s' is not an address or CIDR",
				  s ? s : "");
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (parse_ip(buf, c))
		return sluice_err(err, errlen, -EINVAL,
				  "'%s' is not an IPv4 or IPv6 address or CIDR", s);
	max = c->family == 4 ? 32 : 128;
	if (!slash) {
		c->prefixlen = max;
		return 0;
	}
	{
		const char *p = slash + 1;

		if (parse_digits(&p, &len) || *p || len > max)
			return sluice_err(err, errlen, -EINVAL,
					  "prefix length in '%s' must be 0 to %u", s, max);
	}
	c->prefixlen = len;
	memcpy(masked, c->addr, 16);
	sluice_mask(masked, c->prefixlen);
	if (memcmp(masked, c->addr, 16)) {
		char net[INET6_ADDRSTRLEN];

		inet_ntop(c->family == 4 ? AF_INET : AF_INET6, masked, net, sizeof(net));
		return sluice_err(err, errlen, -EINVAL,
				  "'%s' has host bits set: did you mean %s/%u?", s, net,
				  c->prefixlen);
	}
	return 0;
}
