/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* sluice-gen: what its files share. */
#ifndef SLUICE_GEN_H
#define SLUICE_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "libsluice.h"

#define GEN_MAX_FRAME 9018 /* a jumbo frame with a VLAN tag */

/* What one frame carries; sluice-gen builds it once, the program varies the source. */
struct gen_frame_spec {
	__u8 dst_mac[6];
	__u8 src_mac[6];
	int vlan; /* 802.1Q VLAN id, or -1 for none */
	struct sluice_cidr src; /* the address sent, or the prefix sources come from */
	struct sluice_cidr dst;
	__u16 sport, dport;
	unsigned int len; /* Ethernet frame length, without FCS */
};

/* frame.c */

/* Refuse any address or prefix outside the benchmarking ranges 198.18.0.0/15
 * and 2001:2::/48: sluice-gen sends nowhere else. */
int gen_check_range(const char *what, const struct sluice_cidr *c, char *err, size_t errlen);
/* The smallest frame that holds the spec's headers. */
unsigned int gen_min_len(const struct gen_frame_spec *s);
/* Write the frame into buf (at least s->len bytes), checksums valid. */
int gen_build_frame(const struct gen_frame_spec *s, __u8 *buf, char *err, size_t errlen);
/* "aa:bb:cc:dd:ee:ff" */
int gen_parse_mac(const char *str, __u8 mac[6], char *err, size_t errlen);
void gen_format_mac(const __u8 mac[6], char *buf, size_t len);

/* link.c */

struct gen_link {
	__u8 mac[6];
	unsigned int mtu;
	bool has_peer; /* a veth: peer_mac is its other end's address */
	__u8 peer_mac[6];
};
/* Read DEV's address and MTU and, for a veth, its peer's address, even when
 * the peer lives in another network namespace (rtnetlink, IFLA_TARGET_NETNSID). */
int gen_read_link(int ifindex, struct gen_link *l, char *err, size_t errlen);

#endif /* SLUICE_GEN_H */
