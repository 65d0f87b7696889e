// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A stand-in for the shaper's datapath, for the loader's tests only
 * (tests/shape/standin.inc builds it when this build's object has no
 * sluice_tc yet): the whole XDP object, plus the shaper's counters map and a
 * tc program of the shaper's name that counts every packet as shaped and
 * sends it at once. `sluice shape` loads it through SLUICE_TEST_BPF_OBJECT.
 * It shapes nothing: the loader's tests check what the loader installs,
 * records and reports, not the delays.
 */
#include "sluice.bpf.c"

#include <linux/pkt_cls.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_shape_stats);
} sluice_shape_stats SEC(".maps");

SEC("tc")
int sluice_tc(struct __sk_buff *skb)
{
	struct sluice_shape_stats *st;
	struct sluice_config *cfg;
	__u32 zero = 0;

	cfg = bpf_map_lookup_elem(&sluice_config, &zero);
	st = bpf_map_lookup_elem(&sluice_shape_stats, &zero);
	if (cfg && st && (cfg->kind & SLUICE_KIND_SHAPE))
		st->shaped++;
	return TC_ACT_OK;
}
