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

/* The policy of each rule, at the same index (the rule's stats slot is in
 * its tag, as a CIDR rule's is). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * SLUICE_L4_RULES_MAX);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_policy);
} sluice_l4pol SEC(".maps");

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

/*
 * The rule of generation gen that holds a packet: its index in sluice_l4rules
 * and sluice_l4pol (gen * SLUICE_L4_RULES_MAX + bit), or -1. The IP header
 * is at l3off bytes into [data, end), its family and source (or a shaper's
 * destination: what the CIDR rules match) in key. The header is checked
 * again here: this runs in a function the verifier sees apart from its
 * caller, which knows nothing of what the caller checked.
 */
static __always_inline int l4rules_at(void *data, void *end, __u32 l3off,
				      const struct sluice_key *key, __u8 gen)
{
	struct sluice_l4 l4;
	__u8 *ip;
	int bit;

	if (!key || l3off > 64)
		return -1;
	ip = data + l3off;
	if (key->family == 4) {
		if ((void *)(ip + 20) > end || (ip[0] & 0x0f) < 5 ||
		    (void *)(ip + (ip[0] & 0x0f) * 4) > end)
			return -1;
	} else if ((void *)(ip + 40) > end) {
		return -1;
	}
	sluice_l4_parse(ip, end, key->family, &l4);
	bit = l4rules_classify(gen, key->family, key->addr, &l4);
	return bit < 0 ? -1 : (int)((gen & 1) * SLUICE_L4_RULES_MAX) + bit;
}

#endif /* SLUICE_BPF_L4RULES_H */
