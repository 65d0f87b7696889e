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
 * and one per byte of the source address, from the rules' CIDRs. ANDed,
 * they leave the rules whose match holds (sluice_match_l4()'s verdict on
 * each, include/sluice/l4.h) and whose CIDR holds the source
 * (sluice_l4rule_holds()): the lowest bit is the rule that applies, found
 * in as many steps whatever the number of rules. The tables of a
 * generation are one array of u64 words (struct sluice_l4tables), indexed
 * by SLUICE_L4BM_KEY(gen, table, value) in the mapped map: two
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
_Static_assert(sizeof(struct sluice_l4rule) == 56, "sluice_l4rule layout");

/* The tables of one generation, each at its offset in the words array. */
enum sluice_l4bm_table {
	SLUICE_L4BM_PROTO = 0, /* 256 */
	SLUICE_L4BM_SPORT = 256, /* 65536 */
	SLUICE_L4BM_DPORT = 256 + 65536, /* 65536 */
	SLUICE_L4BM_TCPF = 256 + 2 * 65536, /* 256 */
	SLUICE_L4BM_ICMPT = 2 * 256 + 2 * 65536, /* 256 */
	SLUICE_L4BM_ICMPC = 3 * 256 + 2 * 65536, /* 256 */
	/* The source address, a table per byte: [k * 256 + byte k] holds the
	 * rules whose CIDR accepts that value of byte k (a prefix is a value,
	 * or an aligned range, of each byte it covers; every value of the
	 * others). IPv4: 4 bytes, IPv6: 16. */
	SLUICE_L4BM_SRC4 = 4 * 256 + 2 * 65536, /* 4 x 256 */
	SLUICE_L4BM_SRC6 = 8 * 256 + 2 * 65536, /* 16 x 256 */
	/* The destination address, the same way, from the rules' --dst (a
	 * rule without one accepts every value of every byte). */
	SLUICE_L4BM_DST4 = 24 * 256 + 2 * 65536, /* 4 x 256 */
	SLUICE_L4BM_DST6 = 28 * 256 + 2 * 65536, /* 16 x 256 */
	SLUICE_L4BM_NOPORTS = 44 * 256 + 2 * 65536, /* 1 each: */
	SLUICE_L4BM_NOTCPF,
	SLUICE_L4BM_NOICMP,
	SLUICE_L4BM_FAM4, /* the IPv4 rules */
	SLUICE_L4BM_FAM6, /* the IPv6 rules */
	/* how many leading bytes of a source the rules of each family
	 * constrain (IPv4's in bits 0-7, IPv6's in 8-15), and of a
	 * destination (bits 16-23, 24-31): the bytes past them accept every
	 * value, and are not looked at */
	SLUICE_L4BM_DEPTH,
	SLUICE_L4BM_ALL, /* every rule of the generation: the bits in use */
	SLUICE_L4BM_WORDS /* words per generation */
};
#define SLUICE_L4BM_KEY(gen, table, value) \
	((__u32)((gen)&1) * SLUICE_L4BM_WORDS + (table) + (value))

/* One generation's tables: one value of the map sluice_l4bm, so that the
 * datapath reads every word of it after one lookup. */
struct sluice_l4tables {
	__u64 w[SLUICE_L4BM_WORDS];
};

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

/* Does the rule's source CIDR hold addr (16 bytes, 8-aligned, family's)? */
static __always_inline int sluice_l4rule_holds(const struct sluice_l4rule *r, __u8 family,
					       const __u8 *addr)
{
	return sluice_cidr_holds(r->family, r->addr, r->prefixlen, family, addr);
}

#endif /* SLUICE_L4RULES_H */
