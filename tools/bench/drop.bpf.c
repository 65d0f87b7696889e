// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The bench's floor: an XDP program that drops every frame and does nothing
 * else. Every sluice cost is shown next to this one, measured in the same run,
 * so the numbers are ratios to the kernel's own per-packet overhead rather
 * than absolute times that depend on the machine.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int bench_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
