/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sluice: rules that match on the transport header (issue 22), classified
 * by bit vectors (Lakshman and Stiliadis, SIGCOMM 1998) instead of a scan.
 *
 * A generation holds up to SLUICE_L4_RULES_MAX rules, in the order they are
 * evaluated (the precedence, user/lib/l4rules.c): rule i is bit i. For each
 * field a match may name there is a table from the field's value to the
 * rules that accept it (a rule that does not name the field accepts every
 * value):
 *   proto[256], sport[65536], dport[65536], tcp flags[256], ICMP type[256]
 *   and ICMP code[256],
 * and for a packet whose header did not give a field (a fragment, a short
 * header, another protocol) the rules that name none of it:
 *   SLUICE_L4BM_NOPORTS, SLUICE_L4BM_NOTCPF, SLUICE_L4BM_NOICMP.
 * ANDed, they leave the rules whose match holds (sluice_match_l4()'s verdict
 * on each, include/sluice/l4.h); the lowest bit whose rule's source CIDR
 * holds the packet's source is the rule that applies. Every table is one
 * array of u64 words, indexed by SLUICE_L4BM_KEY(gen, table, value): two
 * generations, so a new rule set is written beside the live one and flipped
 * to in one store, as the CIDR rules are.
 */
#ifndef SLUICE_L4RULES_H
#define SLUICE_L4RULES_H

#include <linux/types.h>
#include "l4.h"

#define SLUICE_L4_RULES_MAX 64

/* One rule as the datapath reads it: a source CIDR and an L4 match. The
 * policy it applies is kept beside it (its index), not here. */
struct sluice_l4rule {
	struct sluice_match m;
	__u8 addr[16] __attribute__((aligned(8))); /* masked; IPv4 in the first 4 bytes */
	__u8 family; /* 4 or 6 */
	__u8 prefixlen; /* address bits */
	__u8 pad[6];
};
_Static_assert(sizeof(struct sluice_l4rule) == 40, "sluice_l4rule layout");

/* The tables of one generation, each at its offset in the words array. */
enum sluice_l4bm_table {
	SLUICE_L4BM_PROTO = 0, /* 256 */
	SLUICE_L4BM_SPORT = 256, /* 65536 */
	SLUICE_L4BM_DPORT = 256 + 65536, /* 65536 */
	SLUICE_L4BM_TCPF = 256 + 2 * 65536, /* 256 */
	SLUICE_L4BM_ICMPT = 2 * 256 + 2 * 65536, /* 256 */
	SLUICE_L4BM_ICMPC = 3 * 256 + 2 * 65536, /* 256 */
	SLUICE_L4BM_NOPORTS = 4 * 256 + 2 * 65536, /* 1 each: */
	SLUICE_L4BM_NOTCPF,
	SLUICE_L4BM_NOICMP,
	SLUICE_L4BM_ALL, /* every rule of the generation: the bits in use */
	SLUICE_L4BM_WORDS /* words per generation */
};
#define SLUICE_L4BM_KEY(gen, table, value) \
	((__u32)((gen)&1) * SLUICE_L4BM_WORDS + (table) + (value))

/* The index of the lowest set bit of a word that is not 0 (a de Bruijn
 * multiply: the BPF target has no count-trailing-zeros instruction). */
static __always_inline int sluice_lowest_bit(__u64 w)
{
	static const __u8 idx[64] = { 0,  47, 1,  56, 48, 27, 2,  60, 57, 49, 41, 37, 28,
				      16, 3,  61, 54, 58, 35, 52, 50, 42, 21, 44, 38, 32,
				      29, 23, 17, 11, 4,  62, 46, 55, 26, 59, 40, 36, 15,
				      53, 34, 51, 20, 43, 31, 22, 10, 45, 25, 39, 14, 33,
				      19, 30, 9,  24, 13, 18, 8,  12, 7,  6,  5,  63 };

	return idx[((w ^ (w - 1)) * 0x03f79d71b4cb0a89ULL) >> 58];
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SLUICE_BE64(x) __builtin_bswap64(x)
#else
#define SLUICE_BE64(x) (x)
#endif

/* Does the rule's source CIDR hold addr (16 bytes, 8-aligned, family's)? */
static __always_inline int sluice_l4rule_holds(const struct sluice_l4rule *r, __u8 family,
					       const __u8 *addr)
{
	const __u64 *a = (const __u64 *)addr, *b = (const __u64 *)r->addr;
	__u32 len = r->prefixlen;
	__u64 m0, m1;

	if (r->family != family)
		return 0;
	m0 = len >= 64 ? ~0ULL : len ? ~0ULL << (64 - len) : 0;
	m1 = len >= 128 ? ~0ULL : len > 64 ? ~0ULL << (128 - len) : 0;
	return (a[0] & SLUICE_BE64(m0)) == b[0] && (a[1] & SLUICE_BE64(m1)) == b[1];
}

#endif /* SLUICE_L4RULES_H */
