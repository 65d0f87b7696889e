/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Test frames: Ethernet, VLAN tags, IPv4 or IPv6, UDP, with valid lengths
 * and checksums, for the traffic generator, the bench and the tests (part of
 * libsluice). Sent frames must come from and go to the benchmarking ranges
 * only: a tool that puts a frame on a wire checks its addresses with
 * sluice_frame_check_range() first. The builder itself does not, so that the
 * tests can run frames from any source through BPF_PROG_TEST_RUN.
 */
#ifndef SLUICE_FRAME_H
#define SLUICE_FRAME_H

#include <stddef.h>
#include <linux/types.h>

#include "libsluice.h"

#define SLUICE_FRAME_MAX 9018 /* a jumbo frame with a VLAN tag */
#define SLUICE_FRAME_MAX_VLANS 3

struct sluice_frame {
	__u8 dst_mac[6];
	__u8 src_mac[6];
	/* VLAN tags, outer first: 802.1Q, or 802.1ad outside when two or more */
	int nr_vlans;
	__u16 vlan[SLUICE_FRAME_MAX_VLANS]; /* their VLAN ids */
	struct sluice_cidr src, dst; /* the addresses; prefix lengths are ignored */
	__u16 sport, dport;
	__u8 ihl; /* IPv4 header length in 32-bit words, 0 for 5; options are zero */
	const void *payload; /* copied to the start of the UDP payload, the rest is zero */
	size_t payload_len;
	unsigned int len; /* Ethernet frame length, without FCS */
};

/* Refuse an address or prefix outside 198.18.0.0/15 and 2001:2::/48, with a
 * message that names it as `what` ("source"). 0 or -EINVAL. */
int sluice_frame_check_range(const char *what, const struct sluice_cidr *c, char *err,
			     size_t errlen);
/* Where the IP header starts: the Ethernet header and the VLAN tags. */
unsigned int sluice_frame_l3_off(const struct sluice_frame *f);
/* The smallest whole frame: every header and the payload. */
unsigned int sluice_frame_min_len(const struct sluice_frame *f);
/*
 * Write the frame into buf (f->len bytes, at most SLUICE_FRAME_MAX); the
 * space after the payload is zero. A frame shorter than
 * sluice_frame_min_len(), for tests of malformed frames, ends where its
 * length says: without UDP when the UDP header does not fit, and without an
 * IPv4 checksum when the options do not fit. Returns 0, or -EINVAL (err
 * says why) when the addresses are of two families or the frame cannot hold
 * the Ethernet, VLAN and fixed IP headers.
 */
int sluice_frame_build(const struct sluice_frame *f, __u8 *buf, char *err, size_t errlen);

#endif /* SLUICE_FRAME_H */
