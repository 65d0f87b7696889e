// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The transport parser and the L4 match (include/sluice/l4.h), compiled
 * twice: each crafted frame runs through the BPF side (tests/bpf/progs/
 * l4parse.bpf.c, BPF_PROG_TEST_RUN) and through the host's copy, and both
 * must give the row's expected struct sluice_l4, field for field. Rows:
 * TCP, UDP, UDP-Lite, SCTP, ICMP and ICMPv6 headers, IPv4 options, VLAN tags,
 * IPv4 fragments (first and not), IPv6 extension headers (hop-by-hop,
 * destination options, routing, AH, fragment, ESP, more than
 * SLUICE_L4_EXT_MAX), and every header cut short by a byte: a short header
 * is flagged and nothing in it is read.
 * Then the matches, on every row: a protocol, port ranges at their ends,
 * TCP flags (syn: SYN without ACK), ICMP type and code; the BPF side's
 * verdict must equal the host's, and the listed ones their expected value.
 */
#include <errno.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include <sluice/l4.h>
#include "progs/l4parse.h"
#include "l4parse.skel.h"
#include "../lib/l4frame.h"
#include "../lib/tap.h"

struct row {
	const char *name;
	struct l4frame f;
	struct sluice_l4 want;
};

#define ROWS 64
static struct row rows[ROWS];
static int nrows;

static struct row *row(const char *name)
{
	struct row *r = &rows[nrows++];

	memset(r, 0, sizeof(*r));
	r->name = name;
	return r;
}

static struct sluice_l4 want(__u8 proto, __u8 flags, __u16 sport, __u16 dport, __u8 tcpf, __u8 type,
			     __u8 code)
{
	struct sluice_l4 l = { .sport = sport,
			       .dport = dport,
			       .proto = proto,
			       .flags = flags,
			       .tcp_flags = tcpf,
			       .icmp_type = type,
			       .icmp_code = code };
	return l;
}

#define PT (SLUICE_L4_PORTS | SLUICE_L4_TCPF)

static void build_rows(void)
{
	struct row *r;
	__u32 cut;

	r = row("IPv4 TCP SYN 40000 -> 443");
	l4f_ip4(&r->f, 0, 5, 6, 0), l4f_tcp(&r->f, 40000, 443, SLUICE_TCP_SYN), l4f_pad(&r->f);
	r->want = want(6, PT, 40000, 443, SLUICE_TCP_SYN, 0, 0);

	r = row("IPv4 TCP SYN+ACK, 2 VLAN tags");
	l4f_ip4(&r->f, 2, 5, 6, 0), l4f_tcp(&r->f, 443, 40000, SLUICE_TCP_SYN | SLUICE_TCP_ACK);
	r->want = want(6, PT, 443, 40000, SLUICE_TCP_SYN | SLUICE_TCP_ACK, 0, 0);

	r = row("IPv4 TCP, header of exactly 20 bytes, frame ends there");
	l4f_ip4(&r->f, 0, 5, 6, 0), l4f_tcp(&r->f, 1, 65535, 0xff);
	r->want = want(6, PT, 1, 65535, 0xff, 0, 0);

	r = row("IPv4 TCP cut to 19 bytes");
	l4f_ip4(&r->f, 0, 5, 6, 0), l4f_tcp(&r->f, 1, 2, 0x02), r->f.len -= 1;
	r->want = want(6, SLUICE_L4_SHORT, 0, 0, 0, 0, 0);

	r = row("IPv4 with options (IHL 7), UDP 53 -> 5353");
	l4f_ip4(&r->f, 0, 7, 17, 0), l4f_udp(&r->f, 53, 5353), l4f_pad(&r->f);
	r->want = want(17, SLUICE_L4_PORTS, 53, 5353, 0, 0, 0);

	r = row("IPv4 UDP cut to 7 bytes");
	l4f_ip4(&r->f, 0, 5, 17, 0), l4f_udp(&r->f, 53, 53), r->f.len -= 1;
	r->want = want(17, SLUICE_L4_SHORT, 0, 0, 0, 0, 0);

	r = row("IPv4 UDP-Lite 1000 -> 2000");
	l4f_ip4(&r->f, 0, 5, 136, 0), l4f_udp(&r->f, 1000, 2000), l4f_pad(&r->f);
	r->want = want(136, SLUICE_L4_PORTS, 1000, 2000, 0, 0, 0);

	r = row("IPv4 SCTP 3868 -> 3868");
	l4f_ip4(&r->f, 0, 5, 132, 0), l4f_sctp(&r->f, 3868, 3868), l4f_pad(&r->f);
	r->want = want(132, SLUICE_L4_PORTS, 3868, 3868, 0, 0, 0);

	r = row("IPv4 SCTP cut to 11 bytes");
	l4f_ip4(&r->f, 0, 5, 132, 0), l4f_sctp(&r->f, 1, 1), r->f.len -= 1;
	r->want = want(132, SLUICE_L4_SHORT, 0, 0, 0, 0, 0);

	r = row("IPv4 ICMP echo request (8/0)");
	l4f_ip4(&r->f, 0, 5, 1, 0), l4f_icmp(&r->f, 8, 0), l4f_pad(&r->f);
	r->want = want(1, SLUICE_L4_ICMPF, 0, 0, 0, 8, 0);

	r = row("IPv4 ICMP port unreachable (3/3)");
	l4f_ip4(&r->f, 0, 5, 1, 0), l4f_icmp(&r->f, 3, 3), l4f_pad(&r->f);
	r->want = want(1, SLUICE_L4_ICMPF, 0, 0, 0, 3, 3);

	r = row("IPv4 ICMP cut to 3 bytes");
	l4f_ip4(&r->f, 0, 5, 1, 0), l4f_icmp(&r->f, 8, 0), r->f.len -= 5;
	r->want = want(1, SLUICE_L4_SHORT, 0, 0, 0, 0, 0);

	r = row("IPv4 first fragment (MF, offset 0): UDP read");
	l4f_ip4(&r->f, 0, 5, 17, 0x2000), l4f_udp(&r->f, 123, 123), l4f_pad(&r->f);
	r->want = want(17, SLUICE_L4_PORTS, 123, 123, 0, 0, 0);

	r = row("IPv4 non-first fragment (offset 185 x 8): no ports");
	l4f_ip4(&r->f, 0, 5, 17, 185), l4f_udp(&r->f, 123, 123), l4f_pad(&r->f);
	r->want = want(17, SLUICE_L4_FRAG, 0, 0, 0, 0, 0);

	r = row("IPv4 last fragment (offset 1, no MF) of TCP: no flags");
	l4f_ip4(&r->f, 0, 5, 6, 1), l4f_tcp(&r->f, 1, 2, 0x02);
	r->want = want(6, SLUICE_L4_FRAG, 0, 0, 0, 0, 0);

	r = row("IPv4 GRE (47): protocol only");
	l4f_ip4(&r->f, 0, 5, 47, 0), l4f_pad(&r->f);
	r->want = want(47, 0, 0, 0, 0, 0, 0);

	r = row("IPv4 ICMPv6's number (58): not read as ICMP");
	l4f_ip4(&r->f, 0, 5, 58, 0), l4f_icmp(&r->f, 128, 0), l4f_pad(&r->f);
	r->want = want(58, 0, 0, 0, 0, 0, 0);

	r = row("IPv6 UDP 5000 -> 53");
	l4f_ip6(&r->f, 17), l4f_udp(&r->f, 5000, 53);
	r->want = want(17, SLUICE_L4_PORTS, 5000, 53, 0, 0, 0);

	r = row("IPv6 TCP SYN 33000 -> 80");
	l4f_ip6(&r->f, 6), l4f_tcp(&r->f, 33000, 80, SLUICE_TCP_SYN);
	r->want = want(6, PT, 33000, 80, SLUICE_TCP_SYN, 0, 0);

	r = row("IPv6 TCP cut to 19 bytes");
	l4f_ip6(&r->f, 6), l4f_tcp(&r->f, 1, 2, 2), r->f.len -= 1;
	r->want = want(6, SLUICE_L4_SHORT, 0, 0, 0, 0, 0);

	r = row("IPv6 ICMPv6 echo request (128/0)");
	l4f_ip6(&r->f, 58), l4f_icmp(&r->f, 128, 0);
	r->want = want(58, SLUICE_L4_ICMPF, 0, 0, 0, 128, 0);

	r = row("IPv6 ICMPv6 cut to 3 bytes");
	l4f_ip6(&r->f, 58), l4f_icmp(&r->f, 128, 0), r->f.len -= 5;
	r->want = want(58, SLUICE_L4_SHORT, 0, 0, 0, 0, 0);

	r = row("IPv6 carrying ICMP's number (1): not read as ICMP");
	l4f_ip6(&r->f, 1), l4f_icmp(&r->f, 8, 0);
	r->want = want(1, 0, 0, 0, 0, 0, 0);

	r = row("IPv6 hop-by-hop (8) + destination options (16) + TCP");
	l4f_ip6(&r->f, 0), l4f_ext6(&r->f, 0, 60, 8), l4f_ext6(&r->f, 60, 6, 16);
	l4f_tcp(&r->f, 2000, 22, SLUICE_TCP_ACK);
	r->want = want(6, PT, 2000, 22, SLUICE_TCP_ACK, 0, 0);

	r = row("IPv6 routing (24) + AH (24) + UDP");
	l4f_ip6(&r->f, 43), l4f_ext6(&r->f, 43, 51, 24), l4f_ext6(&r->f, 51, 17, 24),
		l4f_udp(&r->f, 500, 4500);
	r->want = want(17, SLUICE_L4_PORTS, 500, 4500, 0, 0, 0);

	r = row("IPv6 fragment header, offset 0 (MF) + UDP: read");
	l4f_ip6(&r->f, 44), l4f_frag6(&r->f, 17, 0, 1), l4f_udp(&r->f, 53, 40000);
	r->want = want(17, SLUICE_L4_PORTS, 53, 40000, 0, 0, 0);

	r = row("IPv6 fragment header, offset 100: no ports");
	l4f_ip6(&r->f, 44), l4f_frag6(&r->f, 17, 100, 0), l4f_udp(&r->f, 53, 40000);
	r->want = want(17, SLUICE_L4_FRAG, 0, 0, 0, 0, 0);

	r = row("IPv6 hop-by-hop + fragment at offset 1: no ports");
	l4f_ip6(&r->f, 0), l4f_ext6(&r->f, 0, 44, 8), l4f_frag6(&r->f, 6, 1, 1),
		l4f_tcp(&r->f, 1, 2, 2);
	r->want = want(6, SLUICE_L4_FRAG, 0, 0, 0, 0, 0);

	r = row("IPv6 ESP: opaque");
	l4f_ip6(&r->f, 50), l4f_udp(&r->f, 1, 2);
	r->want = want(50, SLUICE_L4_OPAQUE, 0, 0, 0, 0, 0);

	r = row("IPv6 six hop-by-hop headers then UDP: walked");
	l4f_ip6(&r->f, 0);
	for (int i = 0; i < SLUICE_L4_EXT_MAX; i++)
		l4f_ext6(&r->f, 0, i < SLUICE_L4_EXT_MAX - 1 ? 0 : 17, 8);
	l4f_udp(&r->f, 7, 9);
	r->want = want(17, SLUICE_L4_PORTS, 7, 9, 0, 0, 0);

	r = row("IPv6 seven extension headers: opaque past the sixth");
	l4f_ip6(&r->f, 60);
	for (int i = 0; i <= SLUICE_L4_EXT_MAX; i++)
		l4f_ext6(&r->f, 60, i < SLUICE_L4_EXT_MAX ? 60 : 17, 8);
	l4f_udp(&r->f, 7, 9);
	r->want = want(60, SLUICE_L4_OPAQUE, 0, 0, 0, 0, 0);

	r = row("IPv6 destination options cut inside: short");
	l4f_ip6(&r->f, 60), l4f_ext6(&r->f, 60, 17, 16), r->f.len -= 12;
	r->want = want(60, SLUICE_L4_SHORT, 0, 0, 0, 0, 0);

	r = row("IPv6 destination options whose length runs past the frame");
	l4f_ip6(&r->f, 60), l4f_ext6(&r->f, 60, 17, 8), r->f.b[r->f.len - 7] = 200;
	l4f_udp(&r->f, 1, 2);
	r->want = want(17, SLUICE_L4_SHORT, 0, 0, 0, 0, 0);

	r = row("IPv6 no next header (59)");
	l4f_ip6(&r->f, 59);
	r->want = want(59, 0, 0, 0, 0, 0, 0);

	/* Every cut of one TCP and one IPv6-extension frame, byte by byte:
	 * flagged short or read whole, never read from past the end. */
	for (cut = 1; cut < 20; cut += 6) {
		r = row("IPv4 TCP cut inside its header");
		l4f_ip4(&r->f, 0, 5, 6, 0), l4f_tcp(&r->f, 9, 9, 2), r->f.len -= cut;
		r->want = want(6, SLUICE_L4_SHORT, 0, 0, 0, 0, 0);
	}
}

static int l4_eq(const struct sluice_l4 *a, const struct sluice_l4 *b)
{
	return a->sport == b->sport && a->dport == b->dport && a->proto == b->proto &&
	       a->flags == b->flags && a->tcp_flags == b->tcp_flags &&
	       a->icmp_type == b->icmp_type && a->icmp_code == b->icmp_code;
}

static void show(const char *who, const struct sluice_l4 *l)
{
	tap_diag("  %s: proto %u flags 0x%02x ports %u -> %u tcp 0x%02x icmp %u/%u", who, l->proto,
		 l->flags, l->sport, l->dport, l->tcp_flags, l->icmp_type, l->icmp_code);
}

static int run(struct l4parse_bpf *s, const struct l4frame *f, struct l4parse_out *o)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = f->b, .data_size_in = f->len, .repeat = 1);
	int err = bpf_prog_test_run_opts(bpf_program__fd(s->progs.l4parse), &opts);

	*o = s->bss->out;
	return err;
}

static void test_parse(struct l4parse_bpf *s)
{
	for (int i = 0; i < nrows; i++) {
		struct row *r = &rows[i];
		struct sluice_l4 host;
		struct l4parse_out o;
		int err = run(s, &r->f, &o);

		sluice_l4_parse(r->f.b + r->f.l3, r->f.b + r->f.len, r->f.family, &host);
		if (err || o.parse != 0) {
			tap_ok(0, "%s (%u bytes): BPF parsed the IP header (err %d, parse %d)",
			       r->name, r->f.len, err, o.parse);
			continue;
		}
		if (!tap_ok(l4_eq(&host, &r->want), "%s (%u bytes): host as expected", r->name,
			    r->f.len)) {
			show("host", &host);
			show("want", &r->want);
		}
		if (!tap_ok(l4_eq(&o.l4, &host) && o.family == r->f.family &&
				    o.l4.family == host.family && host.family == r->f.family &&
				    !memcmp(o.l4.dst, host.dst, 16) &&
				    !memcmp(host.dst,
					    r->f.b + r->f.l3 + (r->f.family == 4 ? 16 : 24),
					    r->f.family == 4 ? 4 : 16),
			    "%s (%u bytes): BPF as the host", r->name, r->f.len)) {
			show("bpf", &o.l4);
			show("host", &host);
		}
	}
}

static struct sluice_match m_proto(__u8 p)
{
	struct sluice_match m = { .has = SLUICE_MATCH_PROTO, .proto = p };
	return m;
}

static void test_match(struct l4parse_bpf *s)
{
	struct sluice_match syn = { .has = SLUICE_MATCH_PROTO | SLUICE_MATCH_TCPF,
				    .proto = 6,
				    .tcp_mask = SLUICE_TCP_SYN | SLUICE_TCP_ACK,
				    .tcp_value = SLUICE_TCP_SYN };
	struct sluice_match dns = { .has = SLUICE_MATCH_PROTO | SLUICE_MATCH_DPORT,
				    .proto = 17,
				    .dport_lo = 53,
				    .dport_hi = 53 };
	struct sluice_match refl = { .has = SLUICE_MATCH_PROTO | SLUICE_MATCH_SPORT,
				     .proto = 17,
				     .sport_lo = 53,
				     .sport_hi = 123 };
	struct sluice_match hi = { .has = SLUICE_MATCH_DPORT,
				   .dport_lo = 40000,
				   .dport_hi = 65535 };
	struct sluice_match echo = { .has = SLUICE_MATCH_PROTO | SLUICE_MATCH_ICMP_TYPE |
					    SLUICE_MATCH_ICMP_CODE,
				     .proto = 1,
				     .icmp_type = 8,
				     .icmp_code = 0 };
	struct sluice_match echo6 = { .has = SLUICE_MATCH_ICMP_TYPE, .icmp_type = 128 };
	struct sluice_match any = { 0 };
	/* Every row goes to 198.18.0.2 or 2001:2::2. */
	struct sluice_match dst4 = { .has = SLUICE_MATCH_DST,
				     .dst_family = 4,
				     .dst_prefixlen = 30,
				     .dst = { 198, 18, 0, 0 } };
	struct sluice_match dst4x = { .has = SLUICE_MATCH_DST | SLUICE_MATCH_PROTO,
				      .proto = 6,
				      .dst_family = 4,
				      .dst_prefixlen = 32,
				      .dst = { 198, 18, 0, 3 } };
	struct sluice_match dst6 = { .has = SLUICE_MATCH_DST | SLUICE_MATCH_PROTO,
				     .proto = 17,
				     .dst_family = 6,
				     .dst_prefixlen = 127,
				     .dst = { 0x20, 0x01, 0, 0x02, [15] = 2 } };
	/* Each match and the rows it must match, by name ("*": all). */
	const struct {
		const char *name;
		struct sluice_match m;
		const char *yes[4];
	} ms[] = {
		{ "--proto tcp --tcp-flags syn",
		  syn,
		  { "IPv4 TCP SYN 40000 -> 443", "IPv6 TCP SYN 33000 -> 80" } },
		{ "--proto udp --dport 53", dns, { "IPv6 UDP 5000 -> 53" } },
		{ "--proto udp --sport 53-123",
		  refl,
		  { "IPv4 with options (IHL 7), UDP 53 -> 5353",
		    "IPv4 first fragment (MF, offset 0): UDP read",
		    "IPv6 fragment header, offset 0 (MF) + UDP: read" } },
		{ "--dport 40000-65535",
		  hi,
		  { "IPv4 TCP SYN+ACK, 2 VLAN tags",
		    "IPv4 TCP, header of exactly 20 bytes, frame ends there",
		    "IPv6 fragment header, offset 0 (MF) + UDP: read" } },
		{ "--proto icmp --icmp-type 8/0", echo, { "IPv4 ICMP echo request (8/0)" } },
		{ "--icmp-type 128", echo6, { "IPv6 ICMPv6 echo request (128/0)" } },
		{ "--proto 47", m_proto(47), { "IPv4 GRE (47): protocol only" } },
		{ "no match fields", any, { "*" } },
		{ "--dst 198.18.0.0/30", dst4, { "*4" } },
		{ "--proto tcp --dst 198.18.0.3", dst4x, { NULL } },
		{ "--proto udp --dst 2001:2::2/127 (a fragment's too: the IP header says it)",
		  dst6,
		  { "*6udp" } },
	};

	for (unsigned j = 0; j < sizeof(ms) / sizeof(ms[0]); j++) {
		int agree = 1, right = 1;

		s->bss->match = ms[j].m;
		for (int i = 0; i < nrows; i++) {
			struct sluice_l4 host;
			struct l4parse_out o;
			int h, want = 0, k;

			sluice_l4_parse(rows[i].f.b + rows[i].f.l3, rows[i].f.b + rows[i].f.len,
					rows[i].f.family, &host);
			h = sluice_match_l4(&ms[j].m, &host);
			if (run(s, &rows[i].f, &o) || o.matched != h) {
				agree = 0;
				tap_diag("  %s on %s: bpf %u, host %d", ms[j].name, rows[i].name,
					 o.matched, h);
			}
			for (k = 0; k < 4 && ms[j].yes[k]; k++)
				want |= !strcmp(ms[j].yes[k], rows[i].name) ||
					!strcmp(ms[j].yes[k], "*") ||
					(!strcmp(ms[j].yes[k], "*4") && rows[i].f.family == 4) ||
					(!strcmp(ms[j].yes[k], "*6udp") && rows[i].f.family == 6 &&
					 host.proto == 17);
			if (h != want) {
				right = 0;
				tap_diag("  %s on %s: %d, want %d", ms[j].name, rows[i].name, h,
					 want);
			}
		}
		tap_ok(right, "match %s: exactly the rows it names, on the host", ms[j].name);
		tap_ok(agree, "match %s: BPF as the host on all %d rows", ms[j].name, nrows);
	}
}

int main(void)
{
	struct l4parse_bpf *s;

	build_rows();
	s = l4parse_bpf__open_and_load();
	if (!tap_ok(s != NULL, "the L4 parser's test program loads (%s)", strerror(errno)))
		return tap_done();
	test_parse(s);
	test_match(s);
	l4parse_bpf__destroy(s);
	return tap_done();
}
