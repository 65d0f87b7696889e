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

/* The tables of both generations, one word each. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * SLUICE_L4BM_WORDS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} sluice_l4bm SEC(".maps");

/* The rules of both generations: gen * SLUICE_L4_RULES_MAX + bit. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * SLUICE_L4_RULES_MAX);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_l4rule);
} sluice_l4rules SEC(".maps");

/* One word of a table; 0 (no rule) should it be missing. */
static __always_inline __u64 l4bm(__u8 gen, __u32 table, __u32 value)
{
	__u32 k = SLUICE_L4BM_KEY(gen, table, value);
	__u64 *w = bpf_map_lookup_elem(&sluice_l4bm, &k);

	return w ? *w : 0;
}

/*
 * The rules of generation gen whose match holds on l4: the words of each
 * field the header gave, ANDed; for a field it did not give, the rules that
 * name none of it.
 */
static __always_inline __u64 l4rules_candidates(__u8 gen, const struct sluice_l4 *l4)
{
	__u64 m = l4bm(gen, SLUICE_L4BM_PROTO, l4->proto);

	if (l4->flags & SLUICE_L4_PORTS)
		m &= l4bm(gen, SLUICE_L4BM_SPORT, l4->sport) &
		     l4bm(gen, SLUICE_L4BM_DPORT, l4->dport);
	else
		m &= l4bm(gen, SLUICE_L4BM_NOPORTS, 0);
	if (!m)
		return 0;
	if (l4->flags & SLUICE_L4_TCPF)
		m &= l4bm(gen, SLUICE_L4BM_TCPF, l4->tcp_flags);
	else
		m &= l4bm(gen, SLUICE_L4BM_NOTCPF, 0);
	if (l4->flags & SLUICE_L4_ICMPF)
		m &= l4bm(gen, SLUICE_L4BM_ICMPT, l4->icmp_type) &
		     l4bm(gen, SLUICE_L4BM_ICMPC, l4->icmp_code);
	else
		m &= l4bm(gen, SLUICE_L4BM_NOICMP, 0);
	return m;
}

/* The first rule (by precedence) of generation gen that holds the packet
 * (its source: family, addr, 16 bytes 8-aligned; its header: l4), or -1. */
static __always_inline int l4rules_classify(__u8 gen, __u8 family, const __u8 *addr,
					    const struct sluice_l4 *l4)
{
	__u64 m = l4rules_candidates(gen, l4);
	int i;

	for (i = 0; i < SLUICE_L4_RULES_MAX && m; i++) {
		__u32 bit = (__u32)sluice_lowest_bit(m) & (SLUICE_L4_RULES_MAX - 1);
		__u32 k = (gen & 1) * SLUICE_L4_RULES_MAX + bit;
		struct sluice_l4rule *r = bpf_map_lookup_elem(&sluice_l4rules, &k);

		if (r && sluice_l4rule_holds(r, family, addr))
			return (int)bit;
		m &= m - 1;
	}
	return -1;
}

#endif /* SLUICE_BPF_L4RULES_H */
