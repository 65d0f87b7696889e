/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Packet parsing for sluice: Ethernet, up to two VLAN tags, IPv4 or IPv6
 * (the transport header after it: include/sluice/l4.h). */
#ifndef SLUICE_BPF_PARSE_H
#define SLUICE_BPF_PARSE_H

#include <linux/types.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88A8
#endif

enum parse_result {
	PARSE_OK = 0,
	PARSE_NON_IP = 1, /* a frame we do not limit: ARP, LLDP, ... */
	PARSE_MALFORMED = 2, /* shorter than its headers say, or IHL < 5 */
};

struct vlan_tag {
	__be16 tci;
	__be16 proto;
};

/*
 * Set *family (4 or 6) and addr (16 bytes, zeroed by the caller; IPv4 in the
 * first 4) to the source of the frame in [data, data_end), or with `dst` to
 * its destination (a shaper keyed by destination; the XDP program passes a
 * constant 0 and its code is that of the source alone); with l3 (not a
 * constant NULL), *l3 to the IP header, checked whole (IPv4: all of its
 * IHL; IPv6: the fixed 40 bytes), where sluice_l4_parse() starts.
 * Every header is bounds-checked before it is read: the verifier demands it,
 * and a short frame must pass untouched (counted as malformed), never drop.
 */
static __always_inline int parse_ip(void *data, void *data_end, __u8 *family, __u8 *addr, int dst,
				    void **l3)
{
	struct ethhdr *eth = data;
	void *cur = eth + 1;
	__be16 proto;
	int i;

	if (cur > data_end)
		return PARSE_MALFORMED;
	proto = eth->h_proto;

#pragma unroll
	for (i = 0; i < 2; i++) {
		struct vlan_tag *vlan = cur;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(vlan + 1) > data_end)
			return PARSE_MALFORMED;
		proto = vlan->proto;
		cur = vlan + 1;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = cur;

		if ((void *)(ip + 1) > data_end)
			return PARSE_MALFORMED;
		if (ip->ihl < 5 || (void *)ip + ip->ihl * 4 > data_end)
			return PARSE_MALFORMED;
		*family = 4;
		if (l3)
			*l3 = ip;
		if (dst)
			__builtin_memcpy(addr, &ip->daddr, 4);
		else
			__builtin_memcpy(addr, &ip->saddr, 4);
		return PARSE_OK;
	}
	if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = cur;

		if ((void *)(ip6 + 1) > data_end)
			return PARSE_MALFORMED;
		*family = 6;
		if (l3)
			*l3 = ip6;
		if (dst)
			__builtin_memcpy(addr, &ip6->daddr, 16);
		else
			__builtin_memcpy(addr, &ip6->saddr, 16);
		return PARSE_OK;
	}
	/* A VLAN tag past the second is not followed: counted as non-IP. */
	return PARSE_NON_IP;
}

static __always_inline int parse_addr(void *data, void *data_end, __u8 *family, __u8 *addr, int dst)
{
	return parse_ip(data, data_end, family, addr, dst, 0);
}

static __always_inline int parse_source(void *data, void *data_end, __u8 *family, __u8 *addr)
{
	return parse_addr(data, data_end, family, addr, 0);
}

static __always_inline __u64 prefix_mask64(__u32 bits)
{
	if (bits >= 64)
		return ~0ULL;
	return bits ? ~0ULL << (64 - bits) : 0;
}

/* Zero every address bit past `prefixlen` (<= 128) of a 16-byte, 8-aligned
 * address, as two big-endian u64 words. */
static __always_inline void mask_addr(__u8 *addr, __u32 prefixlen)
{
	__u64 *w = (__u64 *)addr;

	w[0] &= bpf_cpu_to_be64(prefix_mask64(prefixlen));
	w[1] &= bpf_cpu_to_be64(prefix_mask64(prefixlen > 64 ? prefixlen - 64 : 0));
}

#endif /* SLUICE_BPF_PARSE_H */
