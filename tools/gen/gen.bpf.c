// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-gen's frame pump. Run by BPF_PROG_TEST_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES: every run of the program sends the frame it is
 * given out of the device named by the run's ingress_ifindex (XDP_TX) or out
 * of redirect_ifindex, so it reaches the veth peer as a NIC would deliver it.
 *
 * Live-frame pages are recycled without being copied again, so a frame keeps
 * what the previous run wrote into it: the source rewrite below patches the
 * checksums incrementally from the frame's current content, and the frame
 * stays valid whatever was in it before.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "gen_shared.h"

/* ---- Load-time knobs, set by sluice-gen through skel->rodata ---- */

const volatile __u32 tx_ifindex = 0; /* the device the test runs name */
const volatile __u32 redirect_ifindex = 0; /* 0: XDP_TX */
const volatile __u8 rewrite_family = 0; /* 0: send as built; 4 or 6: new source per frame */
const volatile __u32 l3_off = ETH_HLEN; /* ETH_HLEN, or + 4 with a VLAN tag */
const volatile __u32 nkeys = 0; /* 0: any source in the prefix; N: one of N */
/*
 * The source is base | host, host drawn per frame. IPv4: host is masked by
 * mask_lo into the low bits of base_lo. IPv6: the host number's low hi_bits
 * go into the /64 network half first, so that distinct numbers are distinct
 * /64s (sluice keys IPv6 by /64), and the rest into the interface half.
 */
const volatile __u64 base_hi = 0;
const volatile __u64 base_lo = 0;
const volatile __u64 mask_hi = 0;
const volatile __u64 mask_lo = 0;
const volatile __u32 hi_bits = 0;

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

	if (nkeys)
		return bpf_get_prandom_u32() % nkeys;
	r = bpf_get_prandom_u32();
	return r << 32 | bpf_get_prandom_u32();
}

static __always_inline int rewrite4(void *data, void *data_end)
{
	struct iphdr *ip = data + l3_off;
	struct udphdr *udp = (void *)(ip + 1);
	__u32 addr = bpf_htonl((__u32)(base_lo | (draw_host() & mask_lo)));
	__u16 old[2], new[2];

	if ((void *)(udp + 1) > data_end || ip->ihl != 5)
		return -1;
	__builtin_memcpy(old, &ip->saddr, 4);
	__builtin_memcpy(new, &addr, 4);
	ip->check = gen_csum_replace(ip->check, old, new, 2);
	/* A UDP checksum that comes out 0 is sent as 0xffff: 0 means none. */
	udp->check = gen_csum_replace(udp->check, old, new, 2) ?: 0xffff;
	ip->saddr = addr;
	return 0;
}

static __always_inline int rewrite6(void *data, void *data_end)
{
	struct ipv6hdr *ip6 = data + l3_off;
	struct udphdr *udp = (void *)(ip6 + 1);
	__u64 host = draw_host();
	__u64 hi = bpf_cpu_to_be64(base_hi | (host & mask_hi));
	__u64 lo = bpf_cpu_to_be64(base_lo | ((host >> hi_bits) & mask_lo));
	__u16 old[8], new[8];

	if ((void *)(udp + 1) > data_end)
		return -1;
	__builtin_memcpy(old, &ip6->saddr, 16);
	__builtin_memcpy(&new[0], &hi, 8);
	__builtin_memcpy(&new[4], &lo, 8);
	udp->check = gen_csum_replace(udp->check, old, new, 8) ?: 0xffff;
	__builtin_memcpy(&ip6->saddr, new, 16);
	return 0;
}

SEC("xdp")
int gen_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	int err = 0;

	/*
	 * sluice-gen also attaches this program to its namespace's loopback
	 * (generic XDP, a bpf_link that dies with the process): that keeps the
	 * program registered in the kernel's XDP dispatcher, which every test
	 * run with repeat > 1 would otherwise add it to and remove it from,
	 * at ~25 ms a call. A real packet there is never ours: pass it.
	 */
	if (ctx->ingress_ifindex != tx_ifindex)
		return XDP_PASS;
	if (rewrite_family == 4)
		err = rewrite4(data, data_end);
	else if (rewrite_family == 6)
		err = rewrite6(data, data_end);
	if (err) {
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
