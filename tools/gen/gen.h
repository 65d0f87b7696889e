/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* sluice-gen: what its files share. */
#ifndef SLUICE_GEN_H
#define SLUICE_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "libsluice.h"
#include "frame.h" /* the frame itself: struct sluice_frame, in libsluice */

/* link.c */

/* "aa:bb:cc:dd:ee:ff" */
int gen_parse_mac(const char *str, __u8 mac[6], char *err, size_t errlen);
void gen_format_mac(const __u8 mac[6], char *buf, size_t len);

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
