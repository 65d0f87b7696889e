// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The bit-vector classification of bpf/lib/l4rules.h, for
 * tests/bpf/l4rules.c: the packet's facts are given in `in` (its source and
 * its struct sluice_l4), the rule that holds it (its bit, or -1) is left in
 * `out`. The test writes the tables and the rules into the maps.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "lib/l4rules.h"
#include "l4rules.h"

struct l4rules_in in;
__s32 out;

SEC("xdp")
int l4rules(struct xdp_md *ctx)
{
	__u8 addr[16] __attribute__((aligned(8)));

	__builtin_memcpy(addr, in.addr, 16);
	out = l4rules_classify(in.gen, in.family, addr, &in.l4);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
