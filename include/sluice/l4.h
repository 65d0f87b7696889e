/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sluice: what a packet's transport header says (protocol, ports, TCP flags,
 * ICMP type and code), and whether an L4 match (issue 22) holds on it.
 * Written once and compiled twice, as algo.h is: into the BPF programs and
 * into the host tests, which run the same frames through both
 * (tests/bpf/l4parse.c).
 *
 * sluice_l4_parse() starts at an IP header that parse_addr() (bpf/lib/
 * parse.h) has already checked: IPv4 with all of its IHL inside the frame,
 * or the 40 bytes of IPv6. It takes the destination address from it, and
 * reads nothing past the frame's end:
 *   - IPv4: a fragment whose offset is not 0 carries no transport header
 *     (SLUICE_L4_FRAG: the protocol is known, the ports are not);
 *   - IPv6: hop-by-hop, routing, destination options, fragment and AH
 *     headers are walked, up to SLUICE_L4_EXT_MAX of them; a non-first
 *     fragment stops the walk (SLUICE_L4_FRAG); more headers than that, or
 *     ESP, leave the protocol as the last next-header seen, marked
 *     SLUICE_L4_OPAQUE (nothing past it can be read);
 *   - a header that runs past the frame (an extension header, or a TCP
 *     header under 20 bytes, UDP under 8, SCTP under 12, ICMP under 4) is
 *     SLUICE_L4_SHORT: its fields are left at 0, never read from beyond.
 * Ports and ICMP fields are in host byte order.
 */
#ifndef SLUICE_L4_H
#define SLUICE_L4_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define SLUICE_IPPROTO_HOPOPTS 0
#define SLUICE_IPPROTO_ICMP 1
#define SLUICE_IPPROTO_TCP 6
#define SLUICE_IPPROTO_UDP 17
#define SLUICE_IPPROTO_ROUTING 43
#define SLUICE_IPPROTO_FRAGMENT 44
#define SLUICE_IPPROTO_ESP 50
#define SLUICE_IPPROTO_AH 51
#define SLUICE_IPPROTO_ICMPV6 58
#define SLUICE_IPPROTO_DSTOPTS 60
#define SLUICE_IPPROTO_SCTP 132
#define SLUICE_IPPROTO_UDPLITE 136

/* IPv6 extension headers walked before the transport header. */
#define SLUICE_L4_EXT_MAX 6

enum sluice_l4_flags {
	SLUICE_L4_PORTS = 1 << 0, /* sport and dport were read (TCP, UDP, UDP-Lite, SCTP) */
	SLUICE_L4_TCPF = 1 << 1, /* tcp_flags was read */
	SLUICE_L4_ICMPF = 1 << 2, /* icmp_type and icmp_code were read (ICMP on v4, ICMPv6 on v6) */
	SLUICE_L4_FRAG = 1 << 3, /* a non-first fragment: no transport header in it */
	SLUICE_L4_SHORT = 1 << 4, /* a header ran past the frame: not read */
	SLUICE_L4_OPAQUE = 1 << 5, /* IPv6: ESP, or more extension headers than walked */
};

/* TCP flags, as in byte 13 of the header. */
#define SLUICE_TCP_FIN 0x01
#define SLUICE_TCP_SYN 0x02
#define SLUICE_TCP_RST 0x04
#define SLUICE_TCP_PSH 0x08
#define SLUICE_TCP_ACK 0x10
#define SLUICE_TCP_URG 0x20
#define SLUICE_TCP_ECE 0x40
#define SLUICE_TCP_CWR 0x80

struct sluice_l4 {
	__u16 sport, dport; /* host byte order; 0 unless SLUICE_L4_PORTS */
	__u8 proto; /* the transport protocol (IPPROTO_*), or as SLUICE_L4_OPAQUE says */
	__u8 flags; /* enum sluice_l4_flags */
	__u8 tcp_flags;
	__u8 icmp_type;
	__u8 icmp_code;
	__u8 family; /* 4 or 6: of the IP header */
	__u8 pad[6];
	__u8 dst[16] __attribute__((aligned(8))); /* the destination; IPv4 in the first 4 bytes */
};
_Static_assert(sizeof(struct sluice_l4) == 32, "sluice_l4 layout");

static __always_inline __u16 sluice_l4_be16(const __u8 *p)
{
	return (__u16)((__u16)p[0] << 8 | p[1]);
}

/* Whether the `need` bytes of a header at t are in the frame; if not, the
 * packet is marked short. Each caller passes a constant: the verifier then
 * knows the range of every read that follows. */
static __always_inline int sluice_l4_have(const __u8 *t, const void *end, int need,
					  struct sluice_l4 *l4)
{
	if ((const void *)(t + need) > end) {
		l4->flags |= SLUICE_L4_SHORT;
		return 0;
	}
	return 1;
}

static __always_inline void sluice_l4_ports(const __u8 *t, struct sluice_l4 *l4)
{
	l4->sport = sluice_l4_be16(t);
	l4->dport = sluice_l4_be16(t + 2);
	l4->flags |= SLUICE_L4_PORTS;
}

/* The transport header at t (protocol l4->proto), in [t, end): its fields. */
static __always_inline void sluice_l4_transport(const __u8 *t, const void *end, __u8 family,
						struct sluice_l4 *l4)
{
	const __u8 proto = l4->proto;

	if (proto == SLUICE_IPPROTO_TCP) {
		if (!sluice_l4_have(t, end, 20, l4))
			return;
		sluice_l4_ports(t, l4);
		l4->tcp_flags = t[13];
		l4->flags |= SLUICE_L4_TCPF;
	} else if (proto == SLUICE_IPPROTO_UDP || proto == SLUICE_IPPROTO_UDPLITE) {
		if (sluice_l4_have(t, end, 8, l4))
			sluice_l4_ports(t, l4);
	} else if (proto == SLUICE_IPPROTO_SCTP) {
		if (sluice_l4_have(t, end, 12, l4))
			sluice_l4_ports(t, l4);
	} else if ((family == 4 && proto == SLUICE_IPPROTO_ICMP) ||
		   (family == 6 && proto == SLUICE_IPPROTO_ICMPV6)) {
		if (!sluice_l4_have(t, end, 4, l4))
			return;
		l4->icmp_type = t[0];
		l4->icmp_code = t[1];
		l4->flags |= SLUICE_L4_ICMPF;
	}
	/* Any other protocol: no header a match reads. */
}

static __always_inline int sluice_l4_is_ext6(__u8 next)
{
	return next == SLUICE_IPPROTO_HOPOPTS || next == SLUICE_IPPROTO_ROUTING ||
	       next == SLUICE_IPPROTO_DSTOPTS || next == SLUICE_IPPROTO_FRAGMENT ||
	       next == SLUICE_IPPROTO_AH;
}

/* IPv6: walk the extension headers from the fixed header at ip6; the
 * transport header, or NULL (fragment, short, opaque: l4->flags says). */
static __always_inline const __u8 *sluice_l4_ext6(const __u8 *ip6, const void *end,
						  struct sluice_l4 *l4)
{
	const __u8 *cur = ip6 + 40;
	__u8 next = ip6[6];
	int i;

	for (i = 0; i < SLUICE_L4_EXT_MAX && sluice_l4_is_ext6(next); i++) {
		__u32 len;

		if ((const void *)(cur + 8) > end) {
			l4->proto = next;
			l4->flags |= SLUICE_L4_SHORT;
			return 0;
		}
		if (next == SLUICE_IPPROTO_FRAGMENT) {
			len = 8;
			if (sluice_l4_be16(cur + 2) & 0xfff8) {
				l4->proto = cur[0];
				l4->flags |= SLUICE_L4_FRAG;
				return 0;
			}
		} else if (next == SLUICE_IPPROTO_AH) {
			len = ((__u32)cur[1] + 2) * 4;
		} else {
			len = ((__u32)cur[1] + 1) * 8;
		}
		next = cur[0];
		cur += len;
	}
	l4->proto = next;
	if (next == SLUICE_IPPROTO_ESP || sluice_l4_is_ext6(next)) {
		l4->flags |= SLUICE_L4_OPAQUE;
		return 0;
	}
	return cur;
}

/* The transport facts of the packet whose checked IP header is at l3. */
static __always_inline void sluice_l4_parse(const void *l3, const void *end, __u8 family,
					    struct sluice_l4 *l4)
{
	const __u8 *ip = l3, *t;

	__builtin_memset(l4, 0, sizeof(*l4));
	l4->family = family;
	if (family == 4) {
		__builtin_memcpy(l4->dst, ip + 16, 4);
		l4->proto = ip[9];
		/* The fragment offset: the low 13 bits of bytes 6-7. */
		if (sluice_l4_be16(ip + 6) & 0x1fff) {
			l4->flags |= SLUICE_L4_FRAG;
			return;
		}
		t = ip + (ip[0] & 0x0f) * 4;
	} else {
		__builtin_memcpy(l4->dst, ip + 24, 16);
		t = sluice_l4_ext6(ip, end, l4);
		if (!t)
			return;
	}
	sluice_l4_transport(t, end, family, l4);
}

/*
 * An L4 match: any combination of a protocol, port ranges, TCP flags under a
 * mask, an ICMP type (and code) and a destination CIDR (what a packet's
 * IP header says, present in every packet: a fragment's too). A field the match does not name matches
 * anything; one it names matches only a packet whose header gave it, so a
 * non-first fragment (no ports, no flags) or a short header matches only a
 * match that names at most the protocol.
 */
enum sluice_match_has {
	SLUICE_MATCH_PROTO = 1 << 0,
	SLUICE_MATCH_SPORT = 1 << 1,
	SLUICE_MATCH_DPORT = 1 << 2,
	SLUICE_MATCH_TCPF = 1 << 3,
	SLUICE_MATCH_ICMP_TYPE = 1 << 4,
	SLUICE_MATCH_ICMP_CODE = 1 << 5,
	SLUICE_MATCH_DST = 1 << 6, /* a destination CIDR (of the rule's family) */
};

struct sluice_match {
	__u16 sport_lo, sport_hi; /* host byte order, inclusive */
	__u16 dport_lo, dport_hi;
	__u8 has; /* enum sluice_match_has */
	__u8 proto;
	__u8 tcp_mask, tcp_value; /* (flags & mask) == value; syn: SYN|ACK, SYN */
	__u8 icmp_type, icmp_code;
	__u8 dst_prefixlen; /* with SLUICE_MATCH_DST: address bits */
	__u8 dst_family; /* ... and its family, 4 or 6 */
	__u8 dst[16] __attribute__((aligned(8))); /* masked; IPv4 in the first 4 bytes */
};
_Static_assert(sizeof(struct sluice_match) == 32, "sluice_match layout");

/* Does the CIDR (family, addr: masked, prefixlen) hold a (16 bytes, 8-aligned,
 * of family `fam`)? */
static __always_inline int sluice_cidr_holds(__u8 family, const __u8 *addr, __u32 len, __u8 fam,
					     const __u8 *a)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)addr;
	__u64 m0, m1;

	if (family != fam)
		return 0;
	m0 = len >= 64 ? ~0ULL : len ? ~0ULL << (64 - len) : 0;
	m1 = len >= 128 ? ~0ULL : len > 64 ? ~0ULL << (128 - len) : 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	m0 = __builtin_bswap64(m0);
	m1 = __builtin_bswap64(m1);
#endif
	return (x[0] & m0) == y[0] && (x[1] & m1) == y[1];
}

static __always_inline int sluice_match_l4(const struct sluice_match *m, const struct sluice_l4 *l4)
{
	const __u8 has = m->has;

	if ((has & SLUICE_MATCH_PROTO) && l4->proto != m->proto)
		return 0;
	if (has & (SLUICE_MATCH_SPORT | SLUICE_MATCH_DPORT)) {
		if (!(l4->flags & SLUICE_L4_PORTS))
			return 0;
		if ((has & SLUICE_MATCH_SPORT) &&
		    (l4->sport < m->sport_lo || l4->sport > m->sport_hi))
			return 0;
		if ((has & SLUICE_MATCH_DPORT) &&
		    (l4->dport < m->dport_lo || l4->dport > m->dport_hi))
			return 0;
	}
	if ((has & SLUICE_MATCH_TCPF) &&
	    (!(l4->flags & SLUICE_L4_TCPF) || (l4->tcp_flags & m->tcp_mask) != m->tcp_value))
		return 0;
	if (has & (SLUICE_MATCH_ICMP_TYPE | SLUICE_MATCH_ICMP_CODE)) {
		if (!(l4->flags & SLUICE_L4_ICMPF))
			return 0;
		if ((has & SLUICE_MATCH_ICMP_TYPE) && l4->icmp_type != m->icmp_type)
			return 0;
		if ((has & SLUICE_MATCH_ICMP_CODE) && l4->icmp_code != m->icmp_code)
			return 0;
	}
	if ((has & SLUICE_MATCH_DST) &&
	    !sluice_cidr_holds(m->dst_family, m->dst, m->dst_prefixlen, l4->family, l4->dst))
		return 0;
	return 1;
}

#endif /* SLUICE_L4_H */
