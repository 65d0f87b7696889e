// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-gen's frame pump. Run by BPF_PROG_TEST_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES: every run of the program sends the frame it is
 * given out of the device named by the run's ingress_ifindex (XDP_TX) or out
 * of redirect_ifindex, so it reaches the veth peer as a NIC would deliver it.
 *
 * Live-frame pages are recycled without being copied again, so a frame keeps
 * what the previous run wrote into it: the source rewrite (gen_shared.h,
 * shared with the packet socket's sender) patches the checksums
 * incrementally from the frame's current content, and the frame stays valid
 * whatever was in it before. The frame is UDP or a TCP SYN (knobs.proto).
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>

#include "gen_shared.h"

/* ---- Load-time knobs, set by sluice-gen through skel->rodata ---- */

const volatile __u32 tx_ifindex = 0; /* the device the test runs name */
const volatile __u32 redirect_ifindex = 0; /* 0: XDP_TX */
/* Each frame's source, and the checksum that follows it (gen_shared.h). */
const volatile struct gen_knobs knobs = { .l3_off = ETH_HLEN };

const volatile __u8 stamp = 0; /* record when the first and last frame went out */

/* Frames whose headers were not where the knobs say (never, for frames
 * built by sluice-gen): counted rather than sent wrong. */
__u64 bad_frames = 0;

/*
 * When frames really left, per CPU. A test run can wait in the kernel before
 * its first frame and after its last (the XDP dispatcher's mutex), so the
 * times around the syscall can be off by tens of ms; a paced sender needs
 * the true span to compare a receiver's count with rate x time. Per CPU, so
 * that the threads never share a cache line; only stamped when paced, where
 * the cost of a clock read per frame does not matter.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_stamp);
} gen_stamps SEC(".maps");

static __always_inline __u64 draw_host(void)
{
	__u64 r;

	if (knobs.nkeys)
		return bpf_get_prandom_u32() % knobs.nkeys;
	r = bpf_get_prandom_u32();
	return r << 32 | bpf_get_prandom_u32();
}

SEC("xdp")
int gen_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	/*
	 * sluice-gen also attaches this program to its namespace's loopback
	 * (generic XDP, a bpf_link that dies with the process): that keeps the
	 * program registered in the kernel's XDP dispatcher, which every test
	 * run with repeat > 1 would otherwise add it to and remove it from,
	 * at ~25 ms a call. A real packet there is never ours: pass it.
	 */
	if (ctx->ingress_ifindex != tx_ifindex)
		return XDP_PASS;
	if (knobs.family && gen_set_source(&knobs, data, data_end, draw_host())) {
		__sync_fetch_and_add(&bad_frames, 1);
		return XDP_DROP;
	}
	if (stamp) {
		__u32 key = 0;
		struct gen_stamp *st = bpf_map_lookup_elem(&gen_stamps, &key);

		if (st) {
			__u64 now = bpf_ktime_get_ns();

			if (!st->first_ns)
				st->first_ns = now;
			st->last_ns = now;
		}
	}
	if (redirect_ifindex)
		return bpf_redirect(redirect_ifindex, 0);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
