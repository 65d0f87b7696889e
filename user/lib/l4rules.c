// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Rules that match on the transport header, on the host (l4rules.h): the
 * precedence they are evaluated in, and the tables of bit vectors that the
 * datapath ANDs to find them (include/sluice/l4rules.h, bpf/lib/l4rules.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libsluice.h"
#include "l4rules.h"

static int fields_named(const struct sluice_match *m)
{
	return __builtin_popcount(m->has);
}

static __u32 port_span(const struct sluice_match *m)
{
	__u32 s = 0;

	s += m->has & SLUICE_MATCH_SPORT ? (__u32)(m->sport_hi - m->sport_lo) + 1 : 65536;
	s += m->has & SLUICE_MATCH_DPORT ? (__u32)(m->dport_hi - m->dport_lo) + 1 : 65536;
	return s;
}

int sluice_l4rule_cmp(const struct sluice_l4rule *a, const struct sluice_l4rule *b)
{
	int fa = fields_named(&a->m), fb = fields_named(&b->m);
	__u32 sa = port_span(&a->m), sb = port_span(&b->m);

	if (fa != fb)
		return fb - fa;
	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (a->family != b->family)
		return a->family - b->family;
	return (int)b->prefixlen - (int)a->prefixlen;
}

struct indexed {
	struct sluice_l4rule r;
	size_t i;
};

static int cmp_indexed(const void *pa, const void *pb)
{
	const struct indexed *a = pa, *b = pb;
	int c = sluice_l4rule_cmp(&a->r, &b->r);

	if (c)
		return c;
	return a->i < b->i ? -1 : a->i > b->i;
}

int sluice_l4rules_sort(struct sluice_l4rule *rules, size_t n, size_t *order)
{
	struct indexed *v = calloc(n ? n : 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = (struct indexed){ rules[i], i };
	qsort(v, n, sizeof(*v), cmp_indexed);
	for (size_t i = 0; i < n; i++) {
		rules[i] = v[i].r;
		if (order)
			order[i] = v[i].i;
	}
	free(v);
	return 0;
}

/* Set bit in table[v] for every v in [lo, hi]. */
static void set_range(__u64 *table, __u32 lo, __u32 hi, __u64 bit)
{
	for (__u32 v = lo; v <= hi; v++)
		table[v] |= bit;
}

/*
 * The byte tables at base (the source's or the destination's) for a CIDR of
 * a rule (its bit): a byte the prefix covers whole takes its value, the
 * byte it ends in the aligned range of values that share its leading bits,
 * every later byte any value. *depth grows to the bytes the prefix reaches.
 */
static void cidr_bytes(__u8 family, const __u8 *addr, __u32 prefixlen, __u32 base, __u64 *words,
		       __u64 bit, __u32 *depth)
{
	__u32 nbytes = family == 4 ? 4 : 16;

	for (__u32 k = 0; k < nbytes; k++) {
		__u64 *t = words + base + k * 256;
		__u32 covered = prefixlen > k * 8 ? prefixlen - k * 8 : 0;

		if (covered >= 8) {
			t[addr[k]] |= bit;
		} else if (covered) {
			__u32 lo = addr[k] & (0xff00U >> covered & 0xff);

			set_range(t, lo, lo + (0xffU >> covered), bit);
		} else {
			set_range(t, 0, 255, bit);
		}
	}
	if ((prefixlen + 7) / 8 > *depth)
		*depth = (prefixlen + 7) / 8;
}

int sluice_l4bm_build(const struct sluice_l4rule *rules, size_t n, __u64 *words)
{
	__u32 depth[4] = { 0, 0, 0, 0 }; /* source v4, v6, destination v4, v6 */

	if (n > SLUICE_L4_RULES_MAX)
		return -E2BIG;
	memset(words, 0, SLUICE_L4BM_WORDS * sizeof(*words));
	for (size_t i = 0; i < n; i++) {
		const struct sluice_match *m = &rules[i].m;
		const __u64 bit = 1ULL << i;

		if (m->has & SLUICE_MATCH_PROTO)
			words[SLUICE_L4BM_PROTO + m->proto] |= bit;
		else
			set_range(words + SLUICE_L4BM_PROTO, 0, 255, bit);
		if (m->has & SLUICE_MATCH_SPORT)
			set_range(words + SLUICE_L4BM_SPORT, m->sport_lo, m->sport_hi, bit);
		else
			set_range(words + SLUICE_L4BM_SPORT, 0, 65535, bit);
		if (m->has & SLUICE_MATCH_DPORT)
			set_range(words + SLUICE_L4BM_DPORT, m->dport_lo, m->dport_hi, bit);
		else
			set_range(words + SLUICE_L4BM_DPORT, 0, 65535, bit);
		for (__u32 v = 0; v < 256; v++) {
			if (!(m->has & SLUICE_MATCH_TCPF) || (v & m->tcp_mask) == m->tcp_value)
				words[SLUICE_L4BM_TCPF + v] |= bit;
			if (!(m->has & SLUICE_MATCH_ICMP_TYPE) || v == m->icmp_type)
				words[SLUICE_L4BM_ICMPT + v] |= bit;
			if (!(m->has & SLUICE_MATCH_ICMP_CODE) || v == m->icmp_code)
				words[SLUICE_L4BM_ICMPC + v] |= bit;
		}
		if (!(m->has & (SLUICE_MATCH_SPORT | SLUICE_MATCH_DPORT)))
			words[SLUICE_L4BM_NOPORTS] |= bit;
		if (!(m->has & SLUICE_MATCH_TCPF))
			words[SLUICE_L4BM_NOTCPF] |= bit;
		if (!(m->has & (SLUICE_MATCH_ICMP_TYPE | SLUICE_MATCH_ICMP_CODE)))
			words[SLUICE_L4BM_NOICMP] |= bit;
		const __u8 v6 = rules[i].family == 6;

		cidr_bytes(rules[i].family, rules[i].addr, rules[i].prefixlen,
			   v6 ? SLUICE_L4BM_SRC6 : SLUICE_L4BM_SRC4, words, bit, &depth[v6]);
		/* no --dst: every destination (a /0 of the rule's family) */
		cidr_bytes(rules[i].family, m->dst,
			   m->has & SLUICE_MATCH_DST ? m->dst_prefixlen : 0,
			   v6 ? SLUICE_L4BM_DST6 : SLUICE_L4BM_DST4, words, bit, &depth[2 + v6]);
		words[rules[i].family == 4 ? SLUICE_L4BM_FAM4 : SLUICE_L4BM_FAM6] |= bit;
		words[SLUICE_L4BM_ALL] |= bit;
	}
	words[SLUICE_L4BM_DEPTH] = depth[0] | depth[1] << 8 | depth[2] << 16 |
				   (__u64)depth[3] << 24;
	return 0;
}

int sluice_l4rules_scan(const struct sluice_l4rule *rules, size_t n, __u8 family, const __u8 *addr,
			const struct sluice_l4 *l4)
{
	for (size_t i = 0; i < n; i++)
		if (sluice_match_l4(&rules[i].m, l4) &&
		    sluice_l4rule_holds(&rules[i], family, addr))
			return (int)i;
	return -1;
}
