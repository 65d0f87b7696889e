// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test frames: Ethernet, VLAN tags, IPv4 or IPv6, UDP, valid checksums (frame.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "frame.h"

#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88A8
#endif

int sluice_frame_check_range(const char *what, const struct sluice_cidr *c, char *err,
			     size_t errlen)
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
	return sluice_err(err, errlen, -EINVAL,
			  "%s %s is outside the benchmarking ranges 198.18.0.0/15 and 2001:2::/48: "
			  "frames are sent only from and to addresses inside them",
			  what, buf);
}

unsigned int sluice_frame_l3_off(const struct sluice_frame *f)
{
	return ETH_HLEN + 4 * (unsigned int)f->nr_vlans;
}

/* The IP header's length; an IPv4 IHL below 5 (malformed on purpose) still
 * leaves room for the fixed header. */
static unsigned int ip_hlen(const struct sluice_frame *f)
{
	if (f->src.family == 6)
		return sizeof(struct ipv6hdr);
	return 4 * (unsigned int)(f->ihl > 5 ? f->ihl : 5);
}

unsigned int sluice_frame_min_len(const struct sluice_frame *f)
{
	return sluice_frame_l3_off(f) + ip_hlen(f) + sizeof(struct udphdr) +
	       (unsigned int)f->payload_len;
}

/* One's complement sum of big-endian 16-bit words, not yet folded. */
static __u32 csum_add(__u32 sum, const void *data, size_t len)
{
	const __u8 *p = data;
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
	return (__u16)~sum;
}

static void put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

int sluice_frame_build(const struct sluice_frame *f, __u8 *buf, char *err, size_t errlen)
{
	unsigned int l2 = sluice_frame_l3_off(f), l3 = ip_hlen(f), alen, l4len, n;
	bool v6 = f->src.family == 6;
	__u8 *ip = buf + l2, *udp;
	size_t i;
	__u32 sum;

	if (f->src.family != f->dst.family || (f->src.family != 4 && !v6))
		return sluice_err(err, errlen, -EINVAL,
				  "the source and the destination must both be IPv4 or IPv6");
	if (f->nr_vlans < 0 || f->nr_vlans > SLUICE_FRAME_MAX_VLANS)
		return sluice_err(err, errlen, -EINVAL, "%d VLAN tags: at most %d", f->nr_vlans,
				  SLUICE_FRAME_MAX_VLANS);
	n = l2 + (v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr));
	if (f->len < n || f->len > SLUICE_FRAME_MAX)
		return sluice_err(err, errlen, -EINVAL,
				  "frame length %u must be %u to %u for these headers", f->len, n,
				  SLUICE_FRAME_MAX);
	alen = v6 ? 16 : 4;
	memset(buf, 0, f->len);
	memcpy(buf, f->dst_mac, 6);
	memcpy(buf + 6, f->src_mac, 6);
	for (i = 0; i < (size_t)f->nr_vlans; i++) {
		put16(buf + 12 + 4 * i, i == 0 && f->nr_vlans > 1 ? ETH_P_8021AD : ETH_P_8021Q);
		put16(buf + 14 + 4 * i, f->vlan[i] & 0x0fff); /* TCI: priority 0, the id */
	}
	put16(buf + l2 - 2, v6 ? ETH_P_IPV6 : ETH_P_IP);

	if (v6) {
		ip[0] = 0x60;
		put16(ip + 4, (__u16)(f->len - l2 - l3));
		ip[6] = IPPROTO_UDP;
		ip[7] = 64; /* hop limit */
		memcpy(ip + 8, f->src.addr, 16);
		memcpy(ip + 24, f->dst.addr, 16);
	} else {
		ip[0] = 0x40 | (f->ihl ? f->ihl & 0x0f : 5);
		put16(ip + 2, (__u16)(f->len - l2));
		put16(ip + 6, 0x4000); /* DF */
		ip[8] = 64; /* TTL */
		ip[9] = IPPROTO_UDP;
		memcpy(ip + 12, f->src.addr, 4);
		memcpy(ip + 16, f->dst.addr, 4);
		/* A header longer than the frame (a malformed test) has no checksum
		 * worth computing: the parser must refuse it before any of it. */
		if (f->len >= l2 + l3)
			put16(ip + 10, csum_fold(csum_add(0, ip, l3)));
	}
	if (f->len < l2 + l3 + sizeof(struct udphdr))
		return 0;
	l4len = f->len - l2 - l3; /* at most SLUICE_FRAME_MAX: fits the 16-bit fields */
	udp = ip + l3;
	put16(udp, f->sport);
	put16(udp + 2, f->dport);
	put16(udp + 4, (__u16)l4len);
	n = l4len - sizeof(struct udphdr);
	if (f->payload_len)
		memcpy(udp + sizeof(struct udphdr), f->payload,
		       f->payload_len < n ? f->payload_len : n);
	/* The pseudo-header (addresses, protocol, UDP length), then the datagram. */
	sum = csum_add(0, f->src.addr, alen);
	sum = csum_add(sum, f->dst.addr, alen);
	sum += IPPROTO_UDP + l4len;
	sum = csum_fold(csum_add(sum, udp, l4len));
	/* 0 means "no checksum" in UDP: a sum of 0 is sent as its other form. */
	put16(udp + 6, sum ? (__u16)sum : 0xffff);
	return 0;
}
