// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The shaper's floor and a test aid, both tc programs:
 * - tc_bare passes every packet and does nothing else: sluice_tc's cost per
 *   packet is shown next to it, measured the same way.
 * - tc_stamp gives the packet a monotonic delivery time (stamp_ns, unless 0)
 *   and tail-calls tc_next[0] (sluice_tc): BPF_PROG_TEST_RUN can set a
 *   tstamp but not its type, so this is how tests/bpf/shape.c hands
 *   sluice_tc a packet that TCP's pacing already stamped.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tc_next SEC(".maps");

volatile __u64 stamp_ns = 0;

SEC("tc")
int tc_bare(struct __sk_buff *skb)
{
	return 0; /* TC_ACT_OK */
}

SEC("tc")
int tc_stamp(struct __sk_buff *skb)
{
	if (stamp_ns)
		bpf_skb_set_tstamp(skb, stamp_ns, BPF_SKB_TSTAMP_DELIVERY_MONO);
	bpf_tail_call(skb, &tc_next, 0);
	return 99; /* no program in tc_next: the test sees it */
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
