/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Frames with transport headers of every kind, built byte by byte for the
 * tests of the L4 parser and of the rules that match on it (tests/bpf/
 * l4parse.c, l4verdicts.c): Ethernet with VLAN tags, IPv4 with options and
 * fragments, IPv6 with extension headers, then TCP, UDP, SCTP or ICMP. No
 * checksums: the datapath reads none. From 198.18.0.1 (2001:2::1) to
 * 198.18.0.2 (2001:2::2) unless l4f_src() says otherwise.
 */
#ifndef SLUICE_TEST_L4FRAME_H
#define SLUICE_TEST_L4FRAME_H

#include <linux/types.h>
#include <sluice/l4rules.h>

#define L4FRAME_MAX 256

struct l4frame {
	__u8 b[L4FRAME_MAX];
	__u32 len;
	__u32 l3; /* offset of the IP header */
	__u8 family;
};

/* Ethernet (and vlans 802.1Q tags) of EtherType type: a frame begins. */
void l4f_eth(struct l4frame *f, int vlans, __u16 type);
/* Ethernet, then an IPv4 header of ihl words, protocol proto, fragment
 * field frag (flags and offset). */
void l4f_ip4(struct l4frame *f, int vlans, int ihl, __u8 proto, __u16 frag);
/* Ethernet, then the fixed IPv6 header, next header `next`. */
void l4f_ip6(struct l4frame *f, __u8 next);
/* An IPv6 extension header: next, and its length in bytes (a multiple of
 * 8; AH: of 4), written in its own unit. */
void l4f_ext6(struct l4frame *f, __u8 type, __u8 next, __u32 bytes);
/* An IPv6 fragment header: offset in 8-byte units, more fragments or not. */
void l4f_frag6(struct l4frame *f, __u8 next, __u16 offset8, int more);
void l4f_tcp(struct l4frame *f, __u16 sport, __u16 dport, __u8 flags);
void l4f_udp(struct l4frame *f, __u16 sport, __u16 dport);
void l4f_sctp(struct l4frame *f, __u16 sport, __u16 dport);
void l4f_icmp(struct l4frame *f, __u8 type, __u8 code);
/* Pad to the 60 bytes of a minimal Ethernet frame, as a NIC would. */
void l4f_pad(struct l4frame *f);
/* The source address of the frame's IP header (after l4f_ip4/l4f_ip6):
 * addr in the family's text form; 0, or -1 when it is not one. */
int l4f_src(struct l4frame *f, const char *addr);
/* ... and its destination's. */
int l4f_dst(struct l4frame *f, const char *addr);

/* A rule from a CIDR and match options ("--proto tcp --tcp-flags syn"), as
 * sluicectl reads them; a bad one is a TAP note. */
struct sluice_l4rule l4f_rule(const char *cidr, const char *opts);

#endif /* SLUICE_TEST_L4FRAME_H */
