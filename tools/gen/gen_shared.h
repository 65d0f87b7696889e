/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What sluice-gen's program and its userspace share: the knobs that give
 * each frame its source, and the code that does it, run by the XDP program
 * (gen.bpf.c) on live frames and by the packet socket's sender (sock.c) on
 * its copies alike. Plain C that both compilers take: no helper calls, no
 * libc.
 */
#ifndef SLUICE_GEN_SHARED_H
#define SLUICE_GEN_SHARED_H

#include <linux/types.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>

/* Value of gen_stamps (per CPU): when the first and the last frame went out,
 * in CLOCK_MONOTONIC ns. */
struct gen_stamp {
	__u64 first_ns;
	__u64 last_ns;
};
_Static_assert(sizeof(struct gen_stamp) == 16, "gen_stamp layout");

/*
 * How each frame gets its source: the program's `knobs` (read-only data, set
 * through skel->rodata before load), and the socket's sender's copy.
 * The source is base | host, host drawn per frame. IPv4: host is masked by
 * mask_lo into the low bits of base_lo. IPv6: the host number's low hi_bits
 * go into the /64 network half first, so that distinct numbers are distinct
 * /64s (sluice keys IPv6 by /64), and the rest into the interface half.
 */
struct gen_knobs {
	__u8 family; /* 0: send as built; 4 or 6: a new source per frame */
	__u8 proto; /* IPPROTO_UDP or IPPROTO_TCP: whose checksum follows the source */
	__u8 pad[2];
	__u32 l3_off; /* ETH_HLEN, + 4 a VLAN tag */
	__u32 nkeys; /* 0: any source in the prefix; N: one of N */
	__u32 hi_bits;
	__u64 base_hi, base_lo, mask_hi, mask_lo;
};
_Static_assert(sizeof(struct gen_knobs) == 48, "gen_knobs layout");

#define GEN_TCP_HLEN 20 /* a SYN without options */
#define GEN_UDP_HLEN 8

/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), over n 16-bit words: a frame's
 * checksum patched for its new source. */
static inline __attribute__((always_inline)) __u16 gen_csum_replace(__u16 check, const __u16 *old,
								    const __u16 *new, int n)
{
	__u32 sum = (__u16)~check;
	int i;

	for (i = 0; i < n; i++) {
		sum += (__u16)~old[i];
		sum += new[i];
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define gen_be32(v) __builtin_bswap32(v)
#define gen_be64(v) __builtin_bswap64(v)
#else
#define gen_be32(v) (v)
#define gen_be64(v) (v)
#endif

/*
 * Give the frame [f, end) the source of host number `host`, and patch its
 * checksums for it (IPv4's header, and the transport's: its pseudo-header
 * holds the source). The checksums are patched from what the frame holds
 * now, not from the template: a live-frames page comes back with the last
 * run's rewrite in it. -1 when the headers are not where k says (never, for
 * a frame sluice-gen built; the bounds are checked for the verifier).
 */
static inline __attribute__((always_inline)) int
gen_set_source(const volatile struct gen_knobs *k, __u8 *f, const __u8 *end, __u64 host)
{
	__u8 *l3 = f + k->l3_off, *l4;
	__u32 check_off = k->proto == IPPROTO_TCP ? 16 : 6;
	__u32 l4_hlen = k->proto == IPPROTO_TCP ? GEN_TCP_HLEN : GEN_UDP_HLEN;
	__u16 old[8], new[8], *check;
	__u8 *saddr;
	int n;

	if (k->family == 4) {
		struct iphdr *ip = (struct iphdr *)l3;
		__u32 addr = gen_be32((__u32)(k->base_lo | (host & k->mask_lo)));

		l4 = l3 + sizeof(*ip);
		if (l4 + l4_hlen > end || ip->ihl != 5)
			return -1;
		n = 2;
		saddr = (__u8 *)&ip->saddr;
		__builtin_memcpy(old, saddr, 4);
		__builtin_memcpy(new, &addr, 4);
		ip->check = gen_csum_replace(ip->check, old, new, 2);
	} else if (k->family == 6) {
		__u64 hi = gen_be64(k->base_hi | (host & k->mask_hi));
		__u64 lo = gen_be64(k->base_lo | ((host >> k->hi_bits) & k->mask_lo));

		l4 = l3 + sizeof(struct ipv6hdr);
		if (l4 + l4_hlen > end)
			return -1;
		n = 8;
		saddr = (__u8 *)&((struct ipv6hdr *)l3)->saddr;
		__builtin_memcpy(old, saddr, 16);
		__builtin_memcpy(&new[0], &hi, 8);
		__builtin_memcpy(&new[4], &lo, 8);
	} else {
		return 0;
	}
	check = (__u16 *)(l4 + check_off);
	*check = gen_csum_replace(*check, old, new, n);
	/* A UDP checksum that comes out 0 is sent as 0xffff: 0 means none. */
	if (k->proto != IPPROTO_TCP && !*check)
		*check = 0xffff;
	if (n == 2)
		__builtin_memcpy(saddr, new, 4);
	else
		__builtin_memcpy(saddr, new, 16);
	return 0;
}

#endif /* SLUICE_GEN_SHARED_H */
