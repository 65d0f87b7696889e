/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The shaper's own part of the datapath (sluice_tc in sluice.bpf.c): its
 * per-CPU delay counters and their histogram.
 */
#ifndef SLUICE_BPF_SHAPE_H
#define SLUICE_BPF_SHAPE_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <sluice/sluice.h>

/* Per-CPU delay counters (SLUICE_MAP_SHAPE_STATS), an optional map: the
 * loader creates it in a state pinned without it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_shape_stats);
} sluice_shape_stats SEC(".maps");

/* Ethernet, two VLAN tags, an IPv4 header with options and a TCP header
 * with options (IPv6: 40 bytes and its extension headers in their place):
 * what parse_addr() and sluice_l4_parse() read, pulled into the linear
 * area when it is not there. A header past it is read as short. */
#define SHAPE_PULL_LEN (14 + 8 + 60 + 60)

/* The histogram bucket of a delay: 0 under 1 us, i under 2^i us, the last
 * one for the rest. */
static __always_inline __u32 delay_bucket(__u64 ns)
{
	__u64 us = ns / 1000;
	__u32 i = 1;
	int b;

	if (!us)
		return 0;
#pragma unroll
	/* floor(log2(us)) + 1 */
	for (b = 32; b; b >>= 1) {
		if (us >> b) {
			us >>= b;
			i += b;
		}
	}
	return i < SLUICE_DELAY_BUCKETS ? i : SLUICE_DELAY_BUCKETS - 1;
}

/* A delayed packet's share of this CPU's counters. */
static __always_inline void count_delay(struct sluice_shape_stats *ss, __u64 delay_ns)
{
	__u32 i = delay_bucket(delay_ns);

	ss->delayed++;
	ss->delay_ns += delay_ns;
	if (delay_ns > ss->max_delay_ns)
		ss->max_delay_ns = delay_ns;
	if (i < SLUICE_DELAY_BUCKETS) /* for the verifier */
		ss->hist[i]++;
}

#endif /* SLUICE_BPF_SHAPE_H */
