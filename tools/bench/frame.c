// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The frames the in-kernel benchmarks run: Ethernet + IP + UDP, checksums valid. */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "bench.h"

/* Bytes of UDP payload: a 60-byte minimum Ethernet frame for IPv4. */
#define PAYLOAD 18

static __u32 csum_add(__u32 sum, const void *p, size_t len)
{
	const __u8 *b = p;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)b[i] << 8 | b[i + 1];
	if (len & 1)
		sum += (__u32)b[len - 1] << 8;
	return sum;
}

static __u16 csum_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((__u16)~sum);
}

/* Only the benchmarking ranges, 198.18.0.0/15 and 2001:2::/48, ever appear. */
static bool in_bench_range(int family, const void *addr)
{
	const __u8 *a = addr;

	if (family == AF_INET)
		return a[0] == 198 && (a[1] & 0xfe) == 18;
	return a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x00 && a[3] == 0x02 && a[4] == 0 &&
	       a[5] == 0;
}

int bench_frame_build(struct bench_frame *f, const char *src, const char *dst)
{
	static const __u8 dmac[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x02 };
	static const __u8 smac[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x01 };
	struct ethhdr *eth = (struct ethhdr *)f->data;
	struct in6_addr s6, d6;
	struct udphdr *udp;
	__u8 *payload;
	__u32 sum;

	memset(f, 0, sizeof(*f));
	memcpy(eth->h_dest, dmac, ETH_ALEN);
	memcpy(eth->h_source, smac, ETH_ALEN);

	if (inet_pton(AF_INET, src, &s6) == 1) {
		struct iphdr *ip = (struct iphdr *)(eth + 1);

		if (inet_pton(AF_INET, dst, &d6) != 1 || !in_bench_range(AF_INET, &s6) ||
		    !in_bench_range(AF_INET, &d6))
			return -EINVAL;
		eth->h_proto = htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->protocol = IPPROTO_UDP;
		ip->tot_len = htons(sizeof(*ip) + sizeof(*udp) + PAYLOAD);
		memcpy(&ip->saddr, &s6, 4);
		memcpy(&ip->daddr, &d6, 4);
		ip->check = csum_fold(csum_add(0, ip, sizeof(*ip)));
		udp = (struct udphdr *)(ip + 1);
		/* pseudo header: addresses, protocol, UDP length */
		sum = csum_add(0, &ip->saddr, 8) + IPPROTO_UDP + sizeof(*udp) + PAYLOAD;
	} else if (inet_pton(AF_INET6, src, &s6) == 1) {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)(eth + 1);

		if (inet_pton(AF_INET6, dst, &d6) != 1 || !in_bench_range(AF_INET6, &s6) ||
		    !in_bench_range(AF_INET6, &d6))
			return -EINVAL;
		eth->h_proto = htons(ETH_P_IPV6);
		ip6->version = 6;
		ip6->hop_limit = 64;
		ip6->nexthdr = IPPROTO_UDP;
		ip6->payload_len = htons(sizeof(*udp) + PAYLOAD);
		ip6->saddr = s6;
		ip6->daddr = d6;
		udp = (struct udphdr *)(ip6 + 1);
		sum = csum_add(0, &ip6->saddr, 32) + IPPROTO_UDP + sizeof(*udp) + PAYLOAD;
	} else {
		return -EINVAL;
	}
	udp->source = htons(40000);
	udp->dest = htons(9); /* discard */
	udp->len = htons(sizeof(*udp) + PAYLOAD);
	payload = (__u8 *)(udp + 1);
	memcpy(payload, "sluice-bench-frame", PAYLOAD);
	udp->check = csum_fold(csum_add(sum, udp, sizeof(*udp) + PAYLOAD));
	if (!udp->check)
		udp->check = 0xffff;
	f->len = (__u32)(payload + PAYLOAD - f->data);
	return 0;
}
