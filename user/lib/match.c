// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A rule's L4 match read from its options and written back (match.h): one
 * table of protocol names, of TCP flag names and of ICMP type names serves
 * both directions, so what is written reads back as the same match.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "libsluice.h"
#include "match.h"

static const struct {
	const char *name;
	__u8 proto;
} protos[] = {
	{ "tcp", SLUICE_IPPROTO_TCP },         { "udp", SLUICE_IPPROTO_UDP },
	{ "udplite", SLUICE_IPPROTO_UDPLITE }, { "sctp", SLUICE_IPPROTO_SCTP },
	{ "icmp", SLUICE_IPPROTO_ICMP },       { "icmpv6", SLUICE_IPPROTO_ICMPV6 },
};
#define NPROTOS (sizeof(protos) / sizeof(protos[0]))

/* In the order of their bits. */
static const char *const tcp_flag_names[8] = { "fin", "syn", "rst", "psh",
					       "ack", "urg", "ece", "cwr" };

/* ICMP type names, per protocol. */
static const struct {
	__u8 proto, type;
	const char *name;
} icmp_types[] = {
	{ SLUICE_IPPROTO_ICMP, 0, "echo-reply" },
	{ SLUICE_IPPROTO_ICMP, 3, "destination-unreachable" },
	{ SLUICE_IPPROTO_ICMP, 5, "redirect" },
	{ SLUICE_IPPROTO_ICMP, 8, "echo-request" },
	{ SLUICE_IPPROTO_ICMP, 11, "time-exceeded" },
	{ SLUICE_IPPROTO_ICMP, 12, "parameter-problem" },
	{ SLUICE_IPPROTO_ICMP, 13, "timestamp-request" },
	{ SLUICE_IPPROTO_ICMP, 14, "timestamp-reply" },
	{ SLUICE_IPPROTO_ICMPV6, 1, "destination-unreachable" },
	{ SLUICE_IPPROTO_ICMPV6, 2, "packet-too-big" },
	{ SLUICE_IPPROTO_ICMPV6, 3, "time-exceeded" },
	{ SLUICE_IPPROTO_ICMPV6, 4, "parameter-problem" },
	{ SLUICE_IPPROTO_ICMPV6, 128, "echo-request" },
	{ SLUICE_IPPROTO_ICMPV6, 129, "echo-reply" },
	{ SLUICE_IPPROTO_ICMPV6, 133, "router-solicitation" },
	{ SLUICE_IPPROTO_ICMPV6, 134, "router-advertisement" },
	{ SLUICE_IPPROTO_ICMPV6, 135, "neighbor-solicitation" },
	{ SLUICE_IPPROTO_ICMPV6, 136, "neighbor-advertisement" },
};
#define NICMP (sizeof(icmp_types) / sizeof(icmp_types[0]))

const char *sluice_proto_name(unsigned int proto)
{
	for (size_t i = 0; i < NPROTOS; i++)
		if (protos[i].proto == proto)
			return protos[i].name;
	return NULL;
}

static const char *icmp_type_name(__u8 proto, __u8 type)
{
	for (size_t i = 0; i < NICMP; i++)
		if (icmp_types[i].proto == proto && icmp_types[i].type == type)
			return icmp_types[i].name;
	return NULL;
}

void sluice_match_in_init(struct sluice_match_in *in)
{
	memset(in, 0, sizeof(*in));
}

bool sluice_match_is_opt(const char *opt)
{
	static const char *const opts[] = { "--proto",     "--sport",     "--dport",
					    "--tcp-flags", "--icmp-type", "--dst" };

	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (!strcmp(opt, opts[i]))
			return true;
	return false;
}

/* A decimal number of at most max, all of s. */
static bool read_num(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return !errno && !*end && *out <= max;
}

static int read_proto(struct sluice_match *m, const char *val, char *err, size_t errlen)
{
	const char *names[NPROTOS], *lower;
	unsigned long n;

	for (size_t i = 0; i < NPROTOS; i++) {
		names[i] = protos[i].name;
		if (!strcmp(val, protos[i].name)) {
			m->proto = protos[i].proto;
			return 0;
		}
	}
	if (read_num(val, 255, &n)) {
		m->proto = (__u8)n;
		return 0;
	}
	lower = sluice_case_hint(val, names, NPROTOS);
	if (lower)
		return sluice_err(err, errlen, -EINVAL, "--proto %s: protocols are lower case: %s",
				  val, lower);
	return sluice_err(err, errlen, -EINVAL,
			  "--proto %s: not a protocol (tcp, udp, udplite, sctp, icmp, icmpv6, "
			  "or a number 0-255)",
			  val);
}

static int read_ports(const char *opt, const char *val, __u16 *lo, __u16 *hi, char *err,
		      size_t errlen)
{
	char a[16], *dash;
	unsigned long from, to;

	if (strlen(val) >= sizeof(a))
		return sluice_err(err, errlen, -EINVAL, "%s %s: not a port or a range P-Q", opt,
				  val);
	strcpy(a, val);
	dash = strchr(a, '-');
	if (dash)
		*dash = '\0';
	if (!read_num(a, ~0UL, &from) || (dash && !read_num(dash + 1, ~0UL, &to)))
		return sluice_err(err, errlen, -EINVAL, "%s %s: not a port or a range P-Q", opt,
				  val);
	if (!dash)
		to = from;
	if (from > 65535 || to > 65535)
		return sluice_err(err, errlen, -EINVAL, "%s %s: a port is 0 to 65535", opt, val);
	if (from > to)
		return sluice_err(err, errlen, -EINVAL,
				  "%s %s: the range's first port is above its last", opt, val);
	*lo = (__u16)from;
	*hi = (__u16)to;
	return 0;
}

/* A list of flag names joined by ',', or "none". */
static int read_flags(const char *list, const char *val, __u8 *out, char *err, size_t errlen)
{
	char buf[64], *save = NULL, *w;
	__u8 bits = 0;

	if (!strcmp(list, "none")) {
		*out = 0;
		return 0;
	}
	if (strlen(list) >= sizeof(buf) || !*list)
		return sluice_err(err, errlen, -EINVAL,
				  "--tcp-flags %s: a list of flags, joined by ','", val);
	strcpy(buf, list);
	for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < 8 && strcmp(w, tcp_flag_names[i]); i++)
			;
		if (i == 8) {
			const char *lower = sluice_case_hint(w, tcp_flag_names, 8);

			if (lower)
				return sluice_err(err, errlen, -EINVAL,
						  "--tcp-flags %s: flags are lower case: %s", val,
						  lower);
			return sluice_err(err, errlen, -EINVAL,
					  "--tcp-flags %s: unknown flag '%s' (fin, syn, rst, psh, "
					  "ack, urg, ece, cwr, or none)",
					  val, w);
		}
		bits |= 1u << i;
	}
	*out = bits;
	return 0;
}

static int read_tcp_flags(struct sluice_match *m, const char *val, char *err, size_t errlen)
{
	char mask[64];
	const char *slash = strchr(val, '/');
	int ret;

	if (!strcmp(val, "syn")) {
		m->tcp_mask = SLUICE_TCP_SYN | SLUICE_TCP_ACK;
		m->tcp_value = SLUICE_TCP_SYN;
		return 0;
	}
	if (!strcasecmp(val, "syn"))
		return sluice_err(err, errlen, -EINVAL, "--tcp-flags %s: flags are lower case: syn",
				  val);
	if (!slash || (size_t)(slash - val) >= sizeof(mask))
		return sluice_err(err, errlen, -EINVAL,
				  "--tcp-flags %s: syn, or MASK/VALUE (e.g. syn,ack/syn: SYN set "
				  "and ACK not)",
				  val);
	memcpy(mask, val, (size_t)(slash - val));
	mask[slash - val] = '\0';
	ret = read_flags(mask, val, &m->tcp_mask, err, errlen);
	if (!ret)
		ret = read_flags(slash + 1, val, &m->tcp_value, err, errlen);
	if (ret)
		return ret;
	if (!m->tcp_mask)
		return sluice_err(err, errlen, -EINVAL,
				  "--tcp-flags %s: a mask of none matches every packet", val);
	if (m->tcp_value & ~m->tcp_mask)
		return sluice_err(err, errlen, -EINVAL,
				  "--tcp-flags %s: the value names a flag the mask does not", val);
	return 0;
}

/* --dst: an address or a CIDR, its bits past the prefix zero. */
static int read_dst(struct sluice_match *m, const char *val, char *err, size_t errlen)
{
	struct sluice_cidr c;
	char inner[SLUICE_ERR_LEN];

	if (sluice_parse_cidr(val, &c, inner, sizeof(inner)))
		return sluice_err(err, errlen, -EINVAL, "--dst: %s", inner);
	m->dst_family = c.family;
	m->dst_prefixlen = c.prefixlen;
	memcpy(m->dst, c.addr, 16);
	return 0;
}

int sluice_match_opt(struct sluice_match_in *in, const char *opt, const char *val, char *err,
		     size_t errlen)
{
	struct sluice_match *m = &in->m;
	__u8 bit;
	int ret;

	if (!strcmp(opt, "--proto"))
		bit = SLUICE_MATCH_PROTO;
	else if (!strcmp(opt, "--sport"))
		bit = SLUICE_MATCH_SPORT;
	else if (!strcmp(opt, "--dport"))
		bit = SLUICE_MATCH_DPORT;
	else if (!strcmp(opt, "--tcp-flags"))
		bit = SLUICE_MATCH_TCPF;
	else if (!strcmp(opt, "--icmp-type"))
		bit = SLUICE_MATCH_ICMP_TYPE;
	else if (!strcmp(opt, "--dst"))
		bit = SLUICE_MATCH_DST;
	else
		return sluice_err(err, errlen, -EINVAL, "%s: not an option of a match", opt);
	if ((m->has & bit) || (bit == SLUICE_MATCH_ICMP_TYPE && in->icmp[0]))
		return sluice_err(err, errlen, -EINVAL, "%s given twice", opt);
	if (bit == SLUICE_MATCH_PROTO)
		ret = read_proto(m, val, err, errlen);
	else if (bit == SLUICE_MATCH_SPORT)
		ret = read_ports(opt, val, &m->sport_lo, &m->sport_hi, err, errlen);
	else if (bit == SLUICE_MATCH_DPORT)
		ret = read_ports(opt, val, &m->dport_lo, &m->dport_hi, err, errlen);
	else if (bit == SLUICE_MATCH_TCPF)
		ret = read_tcp_flags(m, val, err, errlen);
	else if (bit == SLUICE_MATCH_DST)
		ret = read_dst(m, val, err, errlen);
	else {
		/* Its names depend on the protocol: read by sluice_match_finish(). */
		if (!*val || strlen(val) >= sizeof(in->icmp))
			return sluice_err(err, errlen, -EINVAL,
					  "--icmp-type '%s': a type (a number or a name) and "
					  "optionally /CODE",
					  val);
		strcpy(in->icmp, val);
		return 0;
	}
	if (!ret)
		m->has |= bit;
	return ret;
}

static int read_icmp(struct sluice_match_in *in, char *err, size_t errlen)
{
	struct sluice_match *m = &in->m;
	char type[32], *slash;
	unsigned long n;
	size_t i;

	strcpy(type, in->icmp);
	slash = strchr(type, '/');
	if (slash) {
		*slash = '\0';
		if (!read_num(slash + 1, 255, &n))
			return sluice_err(err, errlen, -EINVAL,
					  "--icmp-type %s: a code is a number 0-255", in->icmp);
		m->icmp_code = (__u8)n;
		m->has |= SLUICE_MATCH_ICMP_CODE;
	}
	if (read_num(type, 255, &n)) {
		m->icmp_type = (__u8)n;
	} else {
		for (i = 0; i < NICMP; i++)
			if (icmp_types[i].proto == m->proto && !strcmp(icmp_types[i].name, type))
				break;
		if (i == NICMP)
			return sluice_err(err, errlen, -EINVAL,
					  "--icmp-type %s: not a type of %s (a number 0-255, or "
					  "a name such as echo-request)",
					  in->icmp, sluice_proto_name(m->proto));
		m->icmp_type = icmp_types[i].type;
	}
	m->has |= SLUICE_MATCH_ICMP_TYPE;
	return 0;
}

int sluice_match_finish(struct sluice_match_in *in, char *err, size_t errlen)
{
	struct sluice_match *m = &in->m;
	const bool proto = m->has & SLUICE_MATCH_PROTO;
	const __u8 p = m->proto;

	if ((m->has & (SLUICE_MATCH_SPORT | SLUICE_MATCH_DPORT)) &&
	    !(proto && (p == SLUICE_IPPROTO_TCP || p == SLUICE_IPPROTO_UDP ||
			p == SLUICE_IPPROTO_UDPLITE || p == SLUICE_IPPROTO_SCTP)))
		return sluice_err(err, errlen, -EINVAL,
				  "%s needs --proto tcp, udp, udplite or sctp",
				  m->has & SLUICE_MATCH_SPORT ? "--sport" : "--dport");
	if ((m->has & SLUICE_MATCH_TCPF) && !(proto && p == SLUICE_IPPROTO_TCP))
		return sluice_err(err, errlen, -EINVAL, "--tcp-flags needs --proto tcp");
	if (in->icmp[0]) {
		if (!(proto && (p == SLUICE_IPPROTO_ICMP || p == SLUICE_IPPROTO_ICMPV6)))
			return sluice_err(err, errlen, -EINVAL,
					  "--icmp-type needs --proto icmp or icmpv6");
		return read_icmp(in, err, errlen);
	}
	return 0;
}

static void flags_text(__u8 bits, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	if (!bits) {
		snprintf(buf, len, "none");
		return;
	}
	for (int i = 0; i < 8; i++)
		if (bits & (1u << i))
			at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%s%s",
					       at ? "," : "", tcp_flag_names[i]);
}

/* --tcp-flags's value as it is written. */
static void tcp_flags_text(const struct sluice_match *m, char *buf, size_t len)
{
	char mask[32], value[32]; /* "fin,syn,rst,psh,ack,urg,ece,cwr": 31 */

	if (m->tcp_mask == (SLUICE_TCP_SYN | SLUICE_TCP_ACK) && m->tcp_value == SLUICE_TCP_SYN) {
		snprintf(buf, len, "syn");
		return;
	}
	flags_text(m->tcp_mask, mask, sizeof(mask));
	flags_text(m->tcp_value, value, sizeof(value));
	snprintf(buf, len, "%s/%s", mask, value);
}

static void proto_text(__u8 proto, char *buf, size_t len)
{
	const char *name = sluice_proto_name(proto);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%u", proto);
}

static void ports_text(__u16 lo, __u16 hi, char *buf, size_t len)
{
	if (lo == hi)
		snprintf(buf, len, "%u", lo);
	else
		snprintf(buf, len, "%u-%u", lo, hi);
}

static void icmp_text(const struct sluice_match *m, char *buf, size_t len)
{
	const char *name = icmp_type_name(m->proto, m->icmp_type);
	int n = name ? snprintf(buf, len, "%s", name) : snprintf(buf, len, "%u", m->icmp_type);

	if (m->has & SLUICE_MATCH_ICMP_CODE && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "/%u", m->icmp_code);
}

static void dst_text(const struct sluice_match *m, char *buf, size_t len)
{
	struct sluice_cidr c = { .family = m->dst_family, .prefixlen = m->dst_prefixlen };

	memcpy(c.addr, m->dst, 16);
	/* an address alone when it is one: --dst 198.18.0.2 */
	sluice_format_cidr(&c, c.prefixlen != (c.family == 4 ? 32 : 128), buf, len);
}

void sluice_match_text(const struct sluice_match *m, char *buf, size_t len)
{
	char v[64];
	size_t at = 0;

#define PIECE(opt) \
	at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%s%s %s", at ? " " : "", opt, v)
	buf[0] = '\0';
	if (m->has & SLUICE_MATCH_PROTO) {
		proto_text(m->proto, v, sizeof(v));
		PIECE("--proto");
	}
	if (m->has & SLUICE_MATCH_SPORT) {
		ports_text(m->sport_lo, m->sport_hi, v, sizeof(v));
		PIECE("--sport");
	}
	if (m->has & SLUICE_MATCH_DPORT) {
		ports_text(m->dport_lo, m->dport_hi, v, sizeof(v));
		PIECE("--dport");
	}
	if (m->has & SLUICE_MATCH_TCPF) {
		tcp_flags_text(m, v, sizeof(v));
		PIECE("--tcp-flags");
	}
	if (m->has & SLUICE_MATCH_ICMP_TYPE) {
		icmp_text(m, v, sizeof(v));
		PIECE("--icmp-type");
	}
	if (m->has & SLUICE_MATCH_DST) {
		dst_text(m, v, sizeof(v));
		PIECE("--dst");
	}
#undef PIECE
}

static void ports_rec(struct sluice_rec *r, const char *name, __u16 lo, __u16 hi)
{
	sluice_rec_begin(r, name);
	sluice_rec_u64(r, "from", lo);
	sluice_rec_u64(r, "to", hi);
	sluice_rec_end(r);
}

void sluice_match_rec(struct sluice_rec *r, const struct sluice_match *m)
{
	char v[64];

	if (m->has & SLUICE_MATCH_PROTO) {
		proto_text(m->proto, v, sizeof(v));
		sluice_rec_str(r, "proto", v);
	}
	if (m->has & SLUICE_MATCH_SPORT)
		ports_rec(r, "sport", m->sport_lo, m->sport_hi);
	if (m->has & SLUICE_MATCH_DPORT)
		ports_rec(r, "dport", m->dport_lo, m->dport_hi);
	if (m->has & SLUICE_MATCH_TCPF) {
		tcp_flags_text(m, v, sizeof(v));
		sluice_rec_str(r, "tcp_flags", v);
	}
	if (m->has & SLUICE_MATCH_ICMP_TYPE)
		sluice_rec_u64(r, "icmp_type", m->icmp_type);
	if (m->has & SLUICE_MATCH_ICMP_CODE)
		sluice_rec_u64(r, "icmp_code", m->icmp_code);
	if (m->has & SLUICE_MATCH_DST) {
		dst_text(m, v, sizeof(v));
		sluice_rec_str(r, "dst", v);
	}
}
