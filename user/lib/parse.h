/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Reading command-line values (parse.c): rates, sizes, durations, algorithms,
 * addresses; every refusal says what was wrong. fmt.h writes them back.
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_PARSE_H
#define SLUICE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

/* A rate: `count` packets (or bytes, when is_bytes) per `period_ns`. */
struct sluice_rate {
	__u64 count;
	__u64 period_ns;
	bool is_bytes;
};

/* Packets: 100/s 6000/m 1/h 100pps. Bytes: 10mbit 1gbit 500kbps 2mbps 1000bps
 * (bit units are converted to bytes exactly, or refused if not a whole number
 * of bytes per second). */
int sluice_parse_rate(const char *s, struct sluice_rate *rate, char *err, size_t errlen);
/* A positive integer no larger than max, for --burst, -n, --max-keys. */
int sluice_parse_uint(const char *what, const char *s, __u64 max, __u64 *out, char *err,
		      size_t errlen);
/* A count, or a byte size as tc writes one: 1514, 64k, 2m, 1g (k, m, g: 1024,
 * 1024^2, 1024^3 bytes; kb, mb, gb the same). 0 is taken (the caller
 * refuses it where it means nothing); *sized says a unit was given, which
 * only a byte limit's --burst and --delay take. */
int sluice_parse_size(const char *what, const char *s, __u64 max, __u64 *out, bool *sized,
		      char *err, size_t errlen);
/* A duration: 100ms 1s 1m 1h (bare numbers are seconds); -ERANGE for one
 * too long to read. */
int sluice_parse_duration(const char *what, const char *s, __u64 *ns, char *err, size_t errlen);
/* token-bucket | leaky-bucket | sliding-window | fixed-window | sliding-log */
int sluice_parse_algo(const char *s, char *err, size_t errlen); /* enum or -EINVAL */
/* Every word and unit is lower case ("on", "lru", "token-bucket", "100/s",
 * "10mbit", "1.5s"): of names[], the one word is in another case of (for a
 * message that says what to write), or NULL. */
const char *sluice_case_hint(const char *word, const char *const *names, size_t n);
/* on|off */
int sluice_parse_onoff(const char *what, const char *s, bool *out, char *err, size_t errlen);

struct sluice_cidr {
	__u8 family; /* 4 or 6 */
	__u8 prefixlen; /* address bits */
	__u8 addr[16] __attribute__((aligned(8))); /* IPv4 in the first 4 bytes, masked */
};
/* An address (a host prefix) or CIDR; bits past the prefix must be zero. */
int sluice_parse_cidr(const char *s, struct sluice_cidr *c, char *err, size_t errlen);
int sluice_parse_addr(const char *s, struct sluice_cidr *c, char *err, size_t errlen);
void sluice_mask(__u8 *addr, unsigned int prefixlen);

#endif /* SLUICE_PARSE_H */
