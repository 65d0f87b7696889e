/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The rules that match on the transport header, on the BPF side: their
 * maps and their classification by bit vectors (include/sluice/l4rules.h
 * says how the tables are laid out; user/lib/l4rules.c writes them).
 */
#ifndef SLUICE_BPF_L4RULES_H
#define SLUICE_BPF_L4RULES_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <sluice/l4rules.h>
#include <sluice/sluice.h>
#include <sluice/algo.h> /* SLUICE_OPAQUE */
#include "xstats.h"

/* The tables of both generations, one value each. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_l4tables);
} sluice_l4bm SEC(".maps");

/* The rules of both generations (gen * SLUICE_L4_RULES_MAX + bit), as
 * userspace lists them: the datapath reads its tables only. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * SLUICE_L4_RULES_MAX);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_l4rule);
} sluice_l4rules SEC(".maps");

/* The policy of each rule, at the same index (the rule's stats slot is in
 * its tag, as a CIDR rule's is). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * SLUICE_L4_RULES_MAX);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_policy);
} sluice_l4pol SEC(".maps");

/*
 * The word of byte k's table at base for the byte's value v. Bounded for
 * the verifier by a test it sees: clang writes base + k * 256 + v as an OR
 * (the low bits are v's alone), and 6.1's verifier knows no bounds of an
 * OR of two bounded values.
 */
static __always_inline __u32 l4rules_index(__u32 base, __u32 k, __u32 v)
{
	__u32 i = base + k * 256 + v;

	SLUICE_OPAQUE(i);
	return i < SLUICE_L4BM_WORDS ? i : SLUICE_L4BM_WORDS - 1;
}

/*
 * The first rule (by precedence) of generation gen that holds the packet:
 * its source (family, addr: 16 bytes) and its header (l4). Its bit, or -1.
 * The words of each field the header gave, ANDed; for a field it did not
 * give, the rules that name none of it; then the source's bytes and the
 * destination's, as far as the family's rules constrain them.
 */
static __always_inline int l4rules_classify(__u8 gen, __u8 family, const __u8 *addr,
					    const struct sluice_l4 *l4)
{
	__u32 g = gen & 1, depth, base, k;
	struct sluice_l4tables *t = bpf_map_lookup_elem(&sluice_l4bm, &g);
	__u64 m;

	if (!t)
		return -1;
	m = t->w[SLUICE_L4BM_PROTO + l4->proto];
	if (l4->flags & SLUICE_L4_PORTS)
		m &= t->w[SLUICE_L4BM_SPORT + l4->sport] & t->w[SLUICE_L4BM_DPORT + l4->dport];
	else
		m &= t->w[SLUICE_L4BM_NOPORTS];
	if (l4->flags & SLUICE_L4_TCPF)
		m &= t->w[SLUICE_L4BM_TCPF + l4->tcp_flags];
	else
		m &= t->w[SLUICE_L4BM_NOTCPF];
	if (l4->flags & SLUICE_L4_ICMPF)
		m &= t->w[SLUICE_L4BM_ICMPT + l4->icmp_type] &
		     t->w[SLUICE_L4BM_ICMPC + l4->icmp_code];
	else
		m &= t->w[SLUICE_L4BM_NOICMP];
	if (family == 4) {
		m &= t->w[SLUICE_L4BM_FAM4];
		depth = t->w[SLUICE_L4BM_DEPTH] & 0xff;
		base = SLUICE_L4BM_SRC4;
	} else {
		m &= t->w[SLUICE_L4BM_FAM6];
		depth = (t->w[SLUICE_L4BM_DEPTH] >> 8) & 0xff;
		base = SLUICE_L4BM_SRC6;
	}
	for (k = 0; k < 16 && k < depth && m; k++)
		m &= t->w[l4rules_index(base, k, addr[k])];
	/* The destination's bytes: 0 of them while no rule has a --dst. */
	depth = (t->w[SLUICE_L4BM_DEPTH] >> (family == 4 ? 16 : 24)) & 0xff;
	base = family == 4 ? SLUICE_L4BM_DST4 : SLUICE_L4BM_DST6;
	for (k = 0; k < 16 && k < depth && m; k++)
		m &= t->w[l4rules_index(base, k, l4->dst[k])];
	return m ? sluice_lowest_bit(m) & (SLUICE_L4_RULES_MAX - 1) : -1;
}

/*
 * The rule of generation gen that holds a packet: its index in sluice_l4rules
 * and sluice_l4pol (gen * SLUICE_L4_RULES_MAX + bit), or -1. The IP header
 * is at l3off bytes into [data, end), its family and source (or a shaper's
 * destination: what the CIDR rules match) in key. The header's bounds are
 * checked again: the offset is all that is passed.
 */
static __always_inline int l4rules_at(void *data, void *end, __u32 l3off,
				      const struct sluice_key *key, __u8 gen)
{
	struct sluice_l4 l4;
	__u64 off = l3off;
	__u8 *ip;
	int bit;

	/* The check and the sum on one register: 6.1's verifier knows no bound
	 * of a copy made before the test (clang shares l3off with wide_key()). */
	SLUICE_OPAQUE(off);
	if (off > 64) /* Ethernet and VLAN tags: 22 bytes at most */
		return -1;
	ip = data + off;
	if (key->family == 4) {
		if ((void *)(ip + 20) > end || (ip[0] & 0x0f) < 5 ||
		    (void *)(ip + (ip[0] & 0x0f) * 4) > end)
			return -1;
	} else if ((void *)(ip + 40) > end) {
		return -1;
	}
	sluice_l4_parse(ip, end, key->family, &l4);
	/* What the header did not give: counted (the rules that name no
	 * port, flag or ICMP field are the ones such a packet can meet). */
	if (l4.flags & (SLUICE_L4_FRAG | SLUICE_L4_SHORT | SLUICE_L4_OPAQUE)) {
		struct sluice_xstats *xs = xstats();

		if (xs) {
			if (l4.flags & SLUICE_L4_FRAG)
				xs->fragments++;
			else if (l4.flags & SLUICE_L4_SHORT)
				xs->l4_short++;
			else
				xs->l4_opaque++;
		}
	}
	bit = l4rules_classify(gen, key->family, key->addr, &l4);
	return bit < 0 ? -1 : (int)((gen & 1) * SLUICE_L4_RULES_MAX) + bit;
}

#endif /* SLUICE_BPF_L4RULES_H */
