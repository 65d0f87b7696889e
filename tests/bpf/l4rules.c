// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Rules that match on the transport header, classified by bit vectors
 * (include/sluice/l4rules.h, bpf/lib/l4rules.h, user/lib/l4rules.c):
 * - the precedence: more fields named first, then narrower ports, then the
 *   family, then the longer source prefix, ties in the order written;
 * - an edge operator's rule set (SYNs per source, DNS, a host's TCP, UDP
 *   reflection), its verdicts packet by packet, a non-first fragment
 *   meeting only the rule that names no port;
 * - two generations side by side, each classifying by its own rules;
 * - the differential: random rule sets of 1 to 64 rules and packets made
 *   to meet them (or nearly), the BPF side's rule (the lowest bit of the
 *   ANDed tables whose CIDR holds the source) against a scan of the rules
 *   in order with sluice_match_l4(): equal on every packet.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "libsluice.h"
#include "progs/l4rules.h"
#include "l4rules.skel.h"
#include "../lib/l4frame.h"
#include "../lib/tap.h"

static struct l4rules_bpf *skel;
static __u64 *words; /* sluice_l4bm, mapped */
static struct sluice_l4rule *maprules; /* sluice_l4rules, mapped */

static int map_open(void)
{
	size_t wsz = 2 * SLUICE_L4BM_WORDS * sizeof(__u64);
	size_t rsz = 2 * SLUICE_L4_RULES_MAX * sizeof(struct sluice_l4rule);

	words = mmap(NULL, wsz, PROT_READ | PROT_WRITE, MAP_SHARED,
		     bpf_map__fd(skel->maps.sluice_l4bm), 0);
	maprules = mmap(NULL, rsz, PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(skel->maps.sluice_l4rules), 0);
	return words != MAP_FAILED && maprules != MAP_FAILED ? 0 : -errno;
}

/* Generation gen classifies by rules[0..n), in that order. */
static int install(__u8 gen, const struct sluice_l4rule *rules, size_t n)
{
	memset(maprules + gen * SLUICE_L4_RULES_MAX, 0,
	       SLUICE_L4_RULES_MAX * sizeof(struct sluice_l4rule));
	memcpy(maprules + gen * SLUICE_L4_RULES_MAX, rules, n * sizeof(*rules));
	return sluice_l4bm_build(rules, n, words + (size_t)gen * SLUICE_L4BM_WORDS);
}

static int classify(__u8 gen, __u8 family, const __u8 *addr, const struct sluice_l4 *l4)
{
	static __u8 frame[64];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = 1);

	skel->bss->in.gen = gen;
	skel->bss->in.family = family;
	memcpy(skel->bss->in.addr, addr, 16);
	skel->bss->in.l4 = *l4;
	skel->bss->out = -2;
	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.l4rules), &o))
		return -3;
	return skel->bss->out;
}

static struct sluice_l4 pkt(__u8 proto, __u8 flags, __u16 sport, __u16 dport, __u8 tcpf)
{
	struct sluice_l4 l = { .sport = sport, .dport = dport, .proto = proto, .flags = flags };

	l.tcp_flags = tcpf;
	return l;
}

static void addr_of(const char *s, __u8 *family, __u8 *addr)
{
	struct sluice_cidr c;
	char err[128];

	sluice_parse_addr(s, &c, err, sizeof(err));
	*family = c.family;
	memcpy(addr, c.addr, 16);
}

static void test_precedence(void)
{
	struct sluice_l4rule r[6] = {
		l4f_rule("0.0.0.0/0", "--proto tcp"),
		l4f_rule("198.18.0.0/15", "--proto tcp --dport 1-1000"),
		l4f_rule("198.18.0.7/32", "--proto tcp"),
		l4f_rule("2001:2::/48", "--proto tcp --dport 443"),
		l4f_rule("198.18.0.0/24", "--proto tcp --dport 443"),
		l4f_rule("198.18.0.0/16", "--proto tcp --dport 443"),
	};
	size_t order[6];
	/* 2 fields with 1 port (v4 /24, v4 /16, v6 /48), 2 fields with 1000
	 * ports, then 1 field (the /32 before the /0). */
	static const size_t want[6] = { 4, 5, 3, 1, 2, 0 };
	int ok = sluice_l4rules_sort(r, 6, order) == 0;

	for (int i = 0; i < 6; i++)
		ok = ok && order[i] == want[i];
	if (!tap_ok(ok, "precedence: more fields, narrower ports, IPv4 before IPv6, longer "
			"prefix"))
		for (int i = 0; i < 6; i++)
			tap_diag("  %d: rule %zu (want %zu)", i, order[i], want[i]);

	struct sluice_l4rule t[3] = {
		l4f_rule("198.18.0.0/16", "--proto udp --dport 53"),
		l4f_rule("198.18.0.0/16", "--proto udp --dport 54"),
		l4f_rule("198.18.0.0/16", "--proto udp --dport 55"),
	};
	ok = sluice_l4rules_sort(t, 3, order) == 0 && order[0] == 0 && order[1] == 1 &&
	     order[2] == 2;
	tap_ok(ok, "precedence: rules it cannot tell apart keep the order they were written in");
}

static void test_edge(void)
{
	struct sluice_l4rule r[5] = {
		l4f_rule("198.18.0.0/15", "--proto tcp --tcp-flags syn"),
		l4f_rule("0.0.0.0/0", "--proto udp --dport 53"),
		l4f_rule("198.18.0.7/32", "--proto tcp"),
		l4f_rule("0.0.0.0/0", "--proto udp --sport 53-123"),
		l4f_rule("0.0.0.0/0", "--proto udp"),
	};
	char text[5][128];
	struct sluice_l4 frag = pkt(17, SLUICE_L4_FRAG, 0, 0, 0);
	const struct {
		const char *what, *src;
		struct sluice_l4 l4;
		int want; /* index in r[] as written, -1: none */
	} rows[] = {
		{ "a SYN from 198.18.0.7", "198.18.0.7",
		  pkt(6, SLUICE_L4_PORTS | SLUICE_L4_TCPF, 40000, 443, SLUICE_TCP_SYN), 0 },
		{ "an ACK from 198.18.0.7", "198.18.0.7",
		  pkt(6, SLUICE_L4_PORTS | SLUICE_L4_TCPF, 40000, 443, SLUICE_TCP_ACK), 2 },
		{ "a SYN+ACK from 198.18.0.7", "198.18.0.7",
		  pkt(6, SLUICE_L4_PORTS | SLUICE_L4_TCPF, 443, 40000,
		      SLUICE_TCP_SYN | SLUICE_TCP_ACK),
		  2 },
		{ "an ACK from 198.18.0.8", "198.18.0.8",
		  pkt(6, SLUICE_L4_PORTS | SLUICE_L4_TCPF, 40000, 443, SLUICE_TCP_ACK), -1 },
		{ "a SYN from 203.0.113.1 (outside the /15)", "203.0.113.1",
		  pkt(6, SLUICE_L4_PORTS | SLUICE_L4_TCPF, 40000, 443, SLUICE_TCP_SYN), -1 },
		{ "a DNS query", "198.18.5.5", pkt(17, SLUICE_L4_PORTS, 5353, 53, 0), 1 },
		{ "a reply from port 123 (reflection)", "198.18.5.5",
		  pkt(17, SLUICE_L4_PORTS, 123, 40000, 0), 3 },
		{ "a DNS query from port 53", "198.18.5.5", pkt(17, SLUICE_L4_PORTS, 53, 53, 0),
		  1 },
		{ "other UDP", "198.18.5.5", pkt(17, SLUICE_L4_PORTS, 5000, 6000, 0), 4 },
		{ "a non-first UDP fragment", "198.18.5.5", frag, 4 },
		{ "a short UDP header", "198.18.5.5", pkt(17, SLUICE_L4_SHORT, 0, 0, 0), 4 },
		{ "ICMP", "198.18.5.5", pkt(1, SLUICE_L4_ICMPF, 0, 0, 0), -1 },
		{ "a SYN over IPv6", "2001:2::7",
		  pkt(6, SLUICE_L4_PORTS | SLUICE_L4_TCPF, 40000, 443, SLUICE_TCP_SYN), -1 },
	};
	size_t order[5];
	int at[5];

	for (int i = 0; i < 5; i++)
		sluice_match_text(&r[i].m, text[i], sizeof(text[i]));
	sluice_l4rules_sort(r, 5, order);
	for (int i = 0; i < 5; i++)
		at[order[i]] = i;
	if (!TAP_EQ(install(0, r, 5), 0, "an edge rule set: installed"))
		return;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		__u8 family, addr[16] __attribute__((aligned(8)));
		int want = rows[i].want < 0 ? -1 : at[rows[i].want];
		int got;

		addr_of(rows[i].src, &family, addr);
		got = classify(0, family, addr, &rows[i].l4);
		if (!tap_ok(got == want &&
				    sluice_l4rules_scan(r, 5, family, addr, &rows[i].l4) == want,
			    "an edge rule set: %s meets %s", rows[i].what,
			    rows[i].want < 0 ? "no rule" : text[rows[i].want]))
			tap_diag("  BPF gave %d, the scan %d, want %d", got,
				 sluice_l4rules_scan(r, 5, family, addr, &rows[i].l4), want);
	}
}

static void test_generations(void)
{
	struct sluice_l4rule a[1] = { l4f_rule("198.18.0.0/15", "--proto udp --dport 53") };
	struct sluice_l4rule b[2] = { l4f_rule("198.18.0.0/15", "--proto tcp"),
				      l4f_rule("198.18.0.0/15", "--proto udp") };
	struct sluice_l4 dns = pkt(17, SLUICE_L4_PORTS, 5000, 53, 0);
	struct sluice_l4 web = pkt(6, SLUICE_L4_PORTS | SLUICE_L4_TCPF, 5000, 80, SLUICE_TCP_ACK);
	__u8 family, addr[16] __attribute__((aligned(8)));

	addr_of("198.18.1.1", &family, addr);
	install(0, a, 1);
	install(1, b, 2);
	tap_ok(classify(0, family, addr, &dns) == 0 && classify(0, family, addr, &web) == -1 &&
		       classify(1, family, addr, &dns) == 1 && classify(1, family, addr, &web) == 0,
	       "two generations: each classifies by its own rules");
}

/* ---- the differential ---- */

static __u32 rnd_state = 20261203;
static __u32 rnd(__u32 n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 8) % n;
}

static const __u8 protos[] = { 6, 17, 1, 58, 132, 47 };
static const __u16 ports[] = { 0, 22, 53, 80, 123, 443, 1000, 1900, 11211, 65535 };

static struct sluice_l4rule rnd_rule(void)
{
	struct sluice_l4rule r;
	struct sluice_match *m = &r.m;

	memset(&r, 0, sizeof(r));
	r.family = rnd(4) ? 4 : 6;
	r.prefixlen = (__u8)rnd(r.family == 4 ? 33 : 129);
	if (r.family == 4) {
		r.addr[0] = 198, r.addr[1] = 18 + (__u8)rnd(2), r.addr[2] = (__u8)rnd(4);
		r.addr[3] = (__u8)rnd(8);
	} else {
		r.addr[0] = 0x20, r.addr[1] = 0x01, r.addr[3] = 0x02, r.addr[15] = (__u8)rnd(8);
	}
	sluice_mask(r.addr, r.prefixlen);
	if (rnd(5)) {
		m->has |= SLUICE_MATCH_PROTO;
		m->proto = protos[rnd(sizeof(protos))];
	}
	if (m->proto == 6 || m->proto == 17 || m->proto == 132) {
		for (int k = 0; k < 2; k++) {
			__u16 lo = ports[rnd(sizeof(ports) / sizeof(ports[0]))], hi = lo;

			if (rnd(2))
				continue;
			if (rnd(3) == 0)
				hi = lo + (__u16)rnd(65536 - lo);
			if (k == 0)
				m->has |= SLUICE_MATCH_SPORT, m->sport_lo = lo, m->sport_hi = hi;
			else
				m->has |= SLUICE_MATCH_DPORT, m->dport_lo = lo, m->dport_hi = hi;
		}
	}
	if (m->proto == 6 && rnd(2)) {
		m->has |= SLUICE_MATCH_TCPF;
		m->tcp_mask = (__u8)(rnd(255) + 1);
		m->tcp_value = (__u8)rnd(256) & m->tcp_mask;
	}
	if ((m->proto == 1 || m->proto == 58) && rnd(2)) {
		m->has |= SLUICE_MATCH_ICMP_TYPE;
		m->icmp_type = (__u8)rnd(4) * 4;
		if (rnd(2)) {
			m->has |= SLUICE_MATCH_ICMP_CODE;
			m->icmp_code = (__u8)rnd(3);
		}
	}
	if (rnd(4) == 0) { /* a destination, of the rule's family */
		m->has |= SLUICE_MATCH_DST;
		m->dst_family = r.family;
		m->dst_prefixlen = (__u8)rnd(r.family == 4 ? 33 : 129);
		if (r.family == 4) {
			m->dst[0] = 198, m->dst[1] = 18, m->dst[3] = (__u8)rnd(16);
		} else {
			m->dst[0] = 0x20, m->dst[1] = 0x01, m->dst[3] = 0x02;
			m->dst[15] = (__u8)rnd(16);
		}
		sluice_mask(m->dst, m->dst_prefixlen);
	}
	return r;
}

/* A packet that meets rule r, then perhaps changed in one field. */
static void rnd_packet(const struct sluice_l4rule *r, __u8 *family, __u8 *addr, struct sluice_l4 *l)
{
	const struct sluice_match *m = &r->m;

	memset(l, 0, sizeof(*l));
	*family = r->family;
	memcpy(addr, r->addr, 16);
	if (r->family == 4)
		addr[3] |= (__u8)rnd(8);
	else
		addr[15] |= (__u8)rnd(8);
	l->proto = m->has & SLUICE_MATCH_PROTO ? m->proto : protos[rnd(sizeof(protos))];
	if (l->proto == 6 || l->proto == 17 || l->proto == 132) {
		l->flags |= SLUICE_L4_PORTS;
		l->sport = m->has & SLUICE_MATCH_SPORT ?
				   m->sport_lo + (__u16)rnd(m->sport_hi - m->sport_lo + 1) :
				   (__u16)rnd(65536);
		l->dport = m->has & SLUICE_MATCH_DPORT ?
				   m->dport_lo + (__u16)rnd(m->dport_hi - m->dport_lo + 1) :
				   ports[rnd(sizeof(ports) / sizeof(ports[0]))];
	}
	if (l->proto == 6) {
		l->flags |= SLUICE_L4_TCPF;
		l->tcp_flags = m->has & SLUICE_MATCH_TCPF ?
				       (__u8)((rnd(256) & ~m->tcp_mask) | m->tcp_value) :
				       (__u8)rnd(256);
	}
	if (l->proto == 1 || l->proto == 58) {
		l->flags |= SLUICE_L4_ICMPF;
		l->icmp_type = m->has & SLUICE_MATCH_ICMP_TYPE ? m->icmp_type : (__u8)rnd(4) * 4;
		l->icmp_code = m->has & SLUICE_MATCH_ICMP_CODE ? m->icmp_code : (__u8)rnd(3);
	}
	switch (rnd(8)) { /* then perhaps one change */
	case 0:
		l->flags = (l->flags & ~(SLUICE_L4_PORTS | SLUICE_L4_TCPF)) | SLUICE_L4_FRAG;
		l->sport = l->dport = 0, l->tcp_flags = 0;
		break;
	case 1:
		l->dport ^= (__u16)(1u << rnd(16));
		break;
	case 2:
		l->tcp_flags ^= (__u8)(1u << rnd(8));
		break;
	case 3:
		addr[rnd(16)] ^= (__u8)(1u << rnd(8));
		break;
	case 4:
		l->proto = protos[rnd(sizeof(protos))];
		break;
	}
	/* The destination: in the rule's --dst, else near it; perhaps a bit off. */
	l->family = r->family;
	if (m->has & SLUICE_MATCH_DST) {
		memcpy(l->dst, m->dst, 16);
	} else if (r->family == 4) {
		l->dst[0] = 198, l->dst[1] = 18;
	} else {
		l->dst[0] = 0x20, l->dst[1] = 0x01, l->dst[3] = 0x02;
	}
	l->dst[r->family == 4 ? 3 : 15] |= (__u8)rnd(16);
	if (rnd(8) == 0)
		l->dst[rnd(r->family == 4 ? 4 : 16)] ^= (__u8)(1u << rnd(8));
}

static void test_differential(void)
{
	static struct sluice_l4rule r[2][SLUICE_L4_RULES_MAX];
	size_t n[2];
	long packets = 0, wrong = 0, matched = 0;
	bool seen[SLUICE_L4_RULES_MAX] = { false };
	int distinct = 0;

	for (int set = 0; set < 40; set++) {
		const __u8 gen = (__u8)(set & 1);

		n[gen] = set < 2 ? SLUICE_L4_RULES_MAX : 1 + rnd(SLUICE_L4_RULES_MAX);
		for (size_t i = 0; i < n[gen]; i++)
			r[gen][i] = rnd_rule();
		sluice_l4rules_sort(r[gen], n[gen], NULL);
		if (install(gen, r[gen], n[gen]))
			wrong++;
		for (int p = 0; p < 1000; p++) {
			__u8 g = set && rnd(4) == 0 ? (__u8)!gen :
						      gen; /* the other one now and then */
			__u8 family, addr[16] __attribute__((aligned(8)));
			struct sluice_l4 l4;
			int want, got;

			rnd_packet(&r[g][rnd(n[g])], &family, addr, &l4);
			want = sluice_l4rules_scan(r[g], n[g], family, addr, &l4);
			got = classify(g, family, addr, &l4);
			packets++;
			if (got != want) {
				if (wrong++ < 5)
					tap_diag("  set %d gen %u: BPF %d, the scan %d", set, g,
						 got, want);
			} else if (want >= 0) {
				matched++;
				if (!seen[want])
					seen[want] = true, distinct++;
			}
		}
	}
	tap_ok(wrong == 0,
	       "random rule sets: the tables give the scan's rule on all %ld packets "
	       "(%ld wrong)",
	       packets, wrong);
	/* Not a test that cannot fail: the packets meet rules, and not always. */
	tap_ok(matched > packets / 5 && packets - matched >= packets / 50 && distinct >= 48,
	       "random rule sets: %ld of %ld packets met a rule, %d distinct positions of 64",
	       matched, packets, distinct);
}

int main(void)
{
	test_precedence();
	skel = l4rules_bpf__open_and_load();
	if (!tap_ok(skel != NULL, "the L4 rules' test program loads (%s)", strerror(errno)))
		return tap_done();
	if (!TAP_EQ(map_open(), 0, "its tables are mapped"))
		return tap_done();
	test_edge();
	test_generations();
	test_differential();
	l4rules_bpf__destroy(skel);
	return tap_done();
}
