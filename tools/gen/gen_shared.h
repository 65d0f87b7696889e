/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* What sluice-gen's program and its userspace share. */
#ifndef SLUICE_GEN_SHARED_H
#define SLUICE_GEN_SHARED_H

#include <linux/types.h>

/* Value of gen_stamps (per CPU): when the first and the last frame went out,
 * in CLOCK_MONOTONIC ns. */
struct gen_stamp {
	__u64 first_ns;
	__u64 last_ns;
};
_Static_assert(sizeof(struct gen_stamp) == 16, "gen_stamp layout");

/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), over n 16-bit words: a frame's
 * checksum patched for its new source, by the XDP program (gen.bpf.c) and
 * by the packet socket's sender (sock.c) alike. */
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

#endif /* SLUICE_GEN_SHARED_H */
