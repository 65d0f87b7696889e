// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A rule's L4 match as its options read and write it (user/lib/match.c):
 * - each accepted combination gives the struct sluice_match expected, its
 *   text is the canonical options, and that text read back gives the same
 *   match (what a config file's diff at reload compares);
 * - each refusal says why, naming the value: a port of 65536, a range
 *   backwards, an unknown flag or protocol, a value outside its mask, a
 *   port or flag without the protocol that has them, an ICMP name of the
 *   other protocol, an option given twice;
 * - the record (JSON) names only the fields the match has.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libsluice.h"
#include "../lib/tap.h"

/* Read "OPT VAL OPT VAL ..." (words split on spaces) into *m. */
static int read_words(const char *words, struct sluice_match *m, char *err, size_t errlen)
{
	struct sluice_match_in in;
	char buf[256], *save = NULL, *opt, *val;
	int ret = 0;

	sluice_match_in_init(&in);
	snprintf(buf, sizeof(buf), "%s", words);
	for (opt = strtok_r(buf, " ", &save); opt && !ret; opt = strtok_r(NULL, " ", &save)) {
		if (!sluice_match_is_opt(opt))
			return sluice_err(err, errlen, -EINVAL, "test: %s is not a match option",
					  opt);
		val = strtok_r(NULL, " ", &save);
		if (!val)
			return sluice_err(err, errlen, -EINVAL, "test: %s has no value", opt);
		ret = sluice_match_opt(&in, opt, val, err, errlen);
	}
	if (!ret)
		ret = sluice_match_finish(&in, err, errlen);
	*m = in.m;
	return ret;
}

static int same(const struct sluice_match *a, const struct sluice_match *b)
{
	return a->has == b->has && a->proto == b->proto && a->sport_lo == b->sport_lo &&
	       a->sport_hi == b->sport_hi && a->dport_lo == b->dport_lo &&
	       a->dport_hi == b->dport_hi && a->tcp_mask == b->tcp_mask &&
	       a->tcp_value == b->tcp_value && a->icmp_type == b->icmp_type &&
	       a->icmp_code == b->icmp_code && a->dst_family == b->dst_family &&
	       a->dst_prefixlen == b->dst_prefixlen && !memcmp(a->dst, b->dst, 16);
}

#define P SLUICE_MATCH_PROTO
#define SP SLUICE_MATCH_SPORT
#define DP SLUICE_MATCH_DPORT
#define TF SLUICE_MATCH_TCPF
#define IT SLUICE_MATCH_ICMP_TYPE
#define IC SLUICE_MATCH_ICMP_CODE
#define DS SLUICE_MATCH_DST

static void test_accepted(void)
{
	static const struct {
		const char *in, *text;
		struct sluice_match want;
	} rows[] = {
		{ "--proto tcp --tcp-flags syn",
		  "--proto tcp --tcp-flags syn",
		  { .has = P | TF, .proto = 6, .tcp_mask = 0x12, .tcp_value = 0x02 } },
		{ "--tcp-flags syn,ack/syn --proto tcp",
		  "--proto tcp --tcp-flags syn",
		  { .has = P | TF, .proto = 6, .tcp_mask = 0x12, .tcp_value = 0x02 } },
		{ "--proto tcp --tcp-flags fin,syn,rst,psh,ack,urg/none",
		  "--proto tcp --tcp-flags fin,syn,rst,psh,ack,urg/none",
		  { .has = P | TF, .proto = 6, .tcp_mask = 0x3f, .tcp_value = 0 } },
		{ "--proto tcp --tcp-flags rst/rst",
		  "--proto tcp --tcp-flags rst/rst",
		  { .has = P | TF, .proto = 6, .tcp_mask = 0x04, .tcp_value = 0x04 } },
		{ "--proto tcp --tcp-flags ece,cwr/cwr",
		  "--proto tcp --tcp-flags ece,cwr/cwr",
		  { .has = P | TF, .proto = 6, .tcp_mask = 0xc0, .tcp_value = 0x80 } },
		{ "--dport 53 --proto udp",
		  "--proto udp --dport 53",
		  { .has = P | DP, .proto = 17, .dport_lo = 53, .dport_hi = 53 } },
		{ "--proto udp --sport 0-1023",
		  "--proto udp --sport 0-1023",
		  { .has = P | SP, .proto = 17, .sport_lo = 0, .sport_hi = 1023 } },
		{ "--proto tcp --sport 1024-65535 --dport 443",
		  "--proto tcp --sport 1024-65535 --dport 443",
		  { .has = P | SP | DP,
		    .proto = 6,
		    .sport_lo = 1024,
		    .sport_hi = 65535,
		    .dport_lo = 443,
		    .dport_hi = 443 } },
		{ "--proto sctp --dport 3868",
		  "--proto sctp --dport 3868",
		  { .has = P | DP, .proto = 132, .dport_lo = 3868, .dport_hi = 3868 } },
		{ "--proto udplite --dport 5000-5000",
		  "--proto udplite --dport 5000",
		  { .has = P | DP, .proto = 136, .dport_lo = 5000, .dport_hi = 5000 } },
		{ "--proto icmp --icmp-type echo-request",
		  "--proto icmp --icmp-type echo-request",
		  { .has = P | IT, .proto = 1, .icmp_type = 8 } },
		{ "--icmp-type 8/0 --proto icmp",
		  "--proto icmp --icmp-type echo-request/0",
		  { .has = P | IT | IC, .proto = 1, .icmp_type = 8, .icmp_code = 0 } },
		{ "--proto icmpv6 --icmp-type echo-request",
		  "--proto icmpv6 --icmp-type echo-request",
		  { .has = P | IT, .proto = 58, .icmp_type = 128 } },
		{ "--proto icmp --icmp-type 3/4",
		  "--proto icmp --icmp-type destination-unreachable/4",
		  { .has = P | IT | IC, .proto = 1, .icmp_type = 3, .icmp_code = 4 } },
		{ "--proto icmpv6 --icmp-type 200",
		  "--proto icmpv6 --icmp-type 200",
		  { .has = P | IT, .proto = 58, .icmp_type = 200 } },
		{ "--proto 47", "--proto 47", { .has = P, .proto = 47 } },
		{ "--proto 6", "--proto tcp", { .has = P, .proto = 6 } },
		{ "--proto 0", "--proto 0", { .has = P, .proto = 0 } },
		{ "--dst 198.18.0.2 --proto udp --dport 53",
		  "--proto udp --dport 53 --dst 198.18.0.2",
		  { .has = P | DP | DS,
		    .proto = 17,
		    .dport_lo = 53,
		    .dport_hi = 53,
		    .dst_family = 4,
		    .dst_prefixlen = 32,
		    .dst = { 198, 18, 0, 2 } } },
		{ "--dst 2001:2::/64",
		  "--dst 2001:2::/64",
		  { .has = DS,
		    .dst_family = 6,
		    .dst_prefixlen = 64,
		    .dst = { 0x20, 0x01, 0, 0x02 } } },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sluice_match m, back;
		char err[256] = "", text[256];
		int ret = read_words(rows[i].in, &m, err, sizeof(err));

		if (!tap_ok(ret == 0, "match '%s': accepted", rows[i].in)) {
			tap_diag("  %s", err);
			continue;
		}
		TAP_TRUE(same(&m, &rows[i].want), "match '%s': the fields expected", rows[i].in);
		sluice_match_text(&m, text, sizeof(text));
		if (!tap_ok(!strcmp(text, rows[i].text), "match '%s': written as '%s'", rows[i].in,
			    rows[i].text))
			tap_diag("  written: '%s'", text);
		ret = read_words(text, &back, err, sizeof(err));
		TAP_TRUE(ret == 0 && same(&back, &m), "match '%s': its text reads back as it",
			 rows[i].in);
	}
}

static void test_refused(void)
{
	static const struct {
		const char *in, *says;
	} rows[] = {
		{ "--proto tcp --dport 65536", "--dport 65536: a port is 0 to 65535" },
		{ "--proto tcp --sport 70000-80000", "a port is 0 to 65535" },
		{ "--proto udp --dport 2000-1000", "the range's first port is above its last" },
		{ "--proto udp --dport 53-", "not a port or a range P-Q" },
		{ "--proto udp --dport -53", "not a port or a range P-Q" },
		{ "--proto udp --dport dns", "not a port or a range P-Q" },
		{ "--proto udp --dport 99999999999999999999", "not a port or a range P-Q" },
		{ "--dport 53", "--dport needs --proto tcp, udp, udplite or sctp" },
		{ "--proto icmp --dport 53", "--dport needs --proto tcp, udp, udplite or sctp" },
		{ "--proto udp --sport 53 --tcp-flags syn", "--tcp-flags needs --proto tcp" },
		{ "--tcp-flags syn", "--tcp-flags needs --proto tcp" },
		{ "--proto tcp --tcp-flags syn,foo/syn", "unknown flag 'foo'" },
		{ "--proto tcp --tcp-flags SYN", "flags are lower case: syn" },
		{ "--proto tcp --tcp-flags SYN,ACK/SYN", "flags are lower case: syn" },
		{ "--proto tcp --tcp-flags ack", "syn, or MASK/VALUE" },
		{ "--proto tcp --tcp-flags syn/syn,ack",
		  "the value names a flag the mask does not" },
		{ "--proto tcp --tcp-flags none/none", "a mask of none matches every packet" },
		{ "--proto tcp --tcp-flags /syn", "a list of flags" },
		{ "--proto TCP", "protocols are lower case: tcp" },
		{ "--proto gre", "not a protocol" },
		{ "--proto 256", "not a protocol" },
		{ "--proto tcp --proto udp", "--proto given twice" },
		{ "--proto tcp --dport 1 --dport 2", "--dport given twice" },
		{ "--icmp-type echo-request", "--icmp-type needs --proto icmp or icmpv6" },
		{ "--proto udp --icmp-type 8", "--icmp-type needs --proto icmp or icmpv6" },
		{ "--proto icmp --icmp-type packet-too-big", "not a type of icmp" },
		{ "--proto icmpv6 --icmp-type timestamp-request", "not a type of icmpv6" },
		{ "--proto icmp --icmp-type 8/256", "a code is a number 0-255" },
		{ "--proto icmp --icmp-type 300", "not a type of icmp" },
		{ "--proto icmp --icmp-type 8 --icmp-type 0", "--icmp-type given twice" },
		{ "--dst 198.18.0.1/24", "--dst: " },
		{ "--dst 198.18.0.300", "--dst: " },
		{ "--dst 198.18.0.2 --dst 198.18.0.3", "--dst given twice" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sluice_match m;
		char err[256] = "";
		int ret = read_words(rows[i].in, &m, err, sizeof(err));

		if (!tap_ok(ret == -EINVAL && strstr(err, rows[i].says), "match '%s': refused (%s)",
			    rows[i].in, rows[i].says))
			tap_diag("  returned %d: '%s'", ret, err);
	}
}

static void test_rec(void)
{
	struct sluice_match m;
	struct sluice_json j;
	struct sluice_rec r;
	char err[256], *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!tap_ok(f && read_words("--proto tcp --sport 1024-65535 --dport 443 --tcp-flags syn",
				    &m, err, sizeof(err)) == 0,
		    "a match for the record"))
		return;
	json_init(&j, f);
	json_obj_begin(&j, NULL);
	sluice_rec_init(&r, &j, NULL, 0);
	sluice_match_rec(&r, &m);
	json_obj_end(&j);
	json_end(&j);
	fclose(f);
	if (!tap_ok(out && !strcmp(out,
				   "{\"proto\":\"tcp\",\"sport\":{\"from\":1024,\"to\":65535},"
				   "\"dport\":{\"from\":443,\"to\":443},\"tcp_flags\":\"syn\"}\n"),
		    "the record as JSON: proto, sport and dport {from, to}, tcp_flags; no icmp"))
		tap_diag("  %s", out);
	free(out);
}

int main(void)
{
	test_accepted();
	test_refused();
	test_rec();
	return tap_done();
}
