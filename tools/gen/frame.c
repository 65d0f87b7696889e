// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Frames for sluice-gen: Ethernet, optional 802.1Q, IPv4 or IPv6, UDP, valid checksums. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "gen.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int gen_check_range(const char *what, const struct sluice_cidr *c, char *err, size_t errlen)
{
	/* The benchmarking ranges (RFC 2544, RFC 5180): nothing real lives there. */
	static const struct sluice_cidr ranges[] = {
		{ .family = 4, .prefixlen = 15, .addr = { 198, 18 } },
		{ .family = 6, .prefixlen = 48, .addr = { 0x20, 0x01, 0x00, 0x02 } },
	};
	char buf[INET6_ADDRSTRLEN + 8];
	size_t i;

	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		__u8 masked[16];

		if (c->family != ranges[i].family || c->prefixlen < ranges[i].prefixlen)
			continue;
		memcpy(masked, c->addr, 16);
		sluice_mask(masked, ranges[i].prefixlen);
		if (!memcmp(masked, ranges[i].addr, 16))
			return 0;
	}
	sluice_format_cidr(c, c->prefixlen != (c->family == 4 ? 32 : 128), buf, sizeof(buf));
	return fail(err, errlen,
		    "%s %s is outside the benchmarking ranges 198.18.0.0/15 and 2001:2::/48: "
		    "sluice-gen sends only from and to addresses inside them",
		    what, buf);
}

static unsigned int l3_off(const struct gen_frame_spec *s)
{
	return ETH_HLEN + (s->vlan >= 0 ? 4 : 0);
}

unsigned int gen_min_len(const struct gen_frame_spec *s)
{
	return l3_off(s) + (s->src.family == 4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr)) +
	       sizeof(struct udphdr);
}

/* One's complement sum of big-endian 16-bit words, not yet folded. */
static __u32 csum_add(__u32 sum, const __u8 *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (__u32)p[len - 1] << 8;
	return sum;
}

static __u16 csum_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((__u16)~sum);
}

int gen_build_frame(const struct gen_frame_spec *s, __u8 *buf, char *err, size_t errlen)
{
	unsigned int off = l3_off(s), l4len;
	struct ethhdr *eth = (void *)buf;
	struct udphdr *udp;
	__u8 pseudo[40];
	__u32 sum;

	if (s->src.family != s->dst.family)
		return fail(err, errlen,
			    "the source and the destination must both be IPv4 or IPv6");
	if (s->len < gen_min_len(s) || s->len > GEN_MAX_FRAME)
		return fail(err, errlen, "frame length %u must be %u to %u for these headers",
			    s->len, gen_min_len(s), GEN_MAX_FRAME);
	memset(buf, 0, s->len);
	memcpy(eth->h_dest, s->dst_mac, 6);
	memcpy(eth->h_source, s->src_mac, 6);
	if (s->vlan >= 0) {
		__be16 tci = htons((__u16)s->vlan);

		eth->h_proto = htons(ETH_P_8021Q);
		memcpy(buf + ETH_HLEN, &tci, 2);
		/* The inner ethertype sits where the untagged one would be + 4. */
		eth = (void *)(buf + 4);
	}
	eth->h_proto = htons(s->src.family == 4 ? ETH_P_IP : ETH_P_IPV6);

	if (s->src.family == 4) {
		struct iphdr *ip = (void *)(buf + off);

		l4len = s->len - off - sizeof(*ip);
		ip->version = 4;
		ip->ihl = 5;
		ip->tot_len = htons(s->len - off);
		ip->frag_off = htons(0x4000); /* DF */
		ip->ttl = 64;
		ip->protocol = IPPROTO_UDP;
		memcpy(&ip->saddr, s->src.addr, 4);
		memcpy(&ip->daddr, s->dst.addr, 4);
		ip->check = csum_fold(csum_add(0, (__u8 *)ip, sizeof(*ip)));
		udp = (void *)(ip + 1);
		memcpy(pseudo, s->src.addr, 4);
		memcpy(pseudo + 4, s->dst.addr, 4);
		pseudo[8] = 0;
		pseudo[9] = IPPROTO_UDP;
		pseudo[10] = l4len >> 8;
		pseudo[11] = l4len & 0xff;
		sum = csum_add(0, pseudo, 12);
	} else {
		struct ipv6hdr *ip6 = (void *)(buf + off);

		l4len = s->len - off - sizeof(*ip6);
		ip6->version = 6;
		ip6->payload_len = htons(l4len);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = 64;
		memcpy(&ip6->saddr, s->src.addr, 16);
		memcpy(&ip6->daddr, s->dst.addr, 16);
		udp = (void *)(ip6 + 1);
		memcpy(pseudo, s->src.addr, 16);
		memcpy(pseudo + 16, s->dst.addr, 16);
		pseudo[32] = l4len >> 24;
		pseudo[33] = (l4len >> 16) & 0xff;
		pseudo[34] = (l4len >> 8) & 0xff;
		pseudo[35] = l4len & 0xff;
		pseudo[36] = pseudo[37] = pseudo[38] = 0;
		pseudo[39] = IPPROTO_UDP;
		sum = csum_add(0, pseudo, 40);
	}
	if (l4len > 0xffff)
		return fail(err, errlen, "frame length %u is too long for one UDP datagram",
			    s->len);
	udp->source = htons(s->sport);
	udp->dest = htons(s->dport);
	udp->len = htons(l4len);
	udp->check = csum_fold(csum_add(sum, (__u8 *)udp, l4len));
	/* 0 means "no checksum" in UDP; a sum of 0 is sent as its other form. */
	if (!udp->check)
		udp->check = 0xffff;
	return 0;
}

int gen_parse_mac(const char *str, __u8 mac[6], char *err, size_t errlen)
{
	unsigned int b[6];
	char tail;
	int i;

	if (sscanf(str, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6)
		return fail(err, errlen, "'%s' is not a MAC address: write it as aa:bb:cc:dd:ee:ff",
			    str);
	for (i = 0; i < 6; i++)
		mac[i] = b[i];
	return 0;
}

void gen_format_mac(const __u8 mac[6], char *buf, size_t len)
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
		 mac[5]);
}
