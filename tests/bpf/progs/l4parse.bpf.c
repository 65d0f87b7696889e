// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The transport parser of include/sluice/l4.h on the BPF side, for
 * tests/bpf/l4parse.c: a frame's IP header found as the datapath finds it
 * (bpf/lib/parse.h), its struct sluice_l4 and the verdict of one match (set
 * by the test in `match`) left in `out`, for the test to compare with the
 * same code compiled for the host.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "lib/parse.h"
#include <sluice/l4.h>
#include "l4parse.h"

struct sluice_match match;
struct l4parse_out out;

SEC("xdp")
int l4parse(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 addr[16] = {}, family = 0;
	void *l3 = 0;

	__builtin_memset(&out, 0, sizeof(out));
	out.parse = parse_ip(data, data_end, &family, addr, 0, &l3);
	out.family = family;
	if (out.parse != PARSE_OK || !l3)
		return XDP_PASS;
	sluice_l4_parse(l3, data_end, family, &out.l4);
	out.matched = sluice_match_l4(&match, &out.l4);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
