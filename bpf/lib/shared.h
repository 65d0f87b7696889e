/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the datapath (bpf/sluice.bpf.c) and the fleet agent's programs
 * (bpf/fleet.bpf.c) share: the maps both use, defined once (the loader pins
 * the datapath's, the agent reuses the pins: their sizes are set at attach),
 * and the clock, which tests drive through test_now_ns.
 */
#ifndef SLUICE_BPF_SHARED_H
#define SLUICE_BPF_SHARED_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <sluice/sluice.h>
#include <sluice/sets.h>

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_DEFAULT_MAX_KEYS); /* --max-keys at attach */
	__type(key, struct sluice_key);
	__type(value, struct sluice_bucket);
} sluice_buckets SEC(".maps");

/* Fleet-wide limits (SLUICE_POLICY_FLEET), optional maps: the agent's state,
 * and each key's usage it has not pushed yet. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_fleet);
} sluice_fleet SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_DEFAULT_FLEET_KEYS); /* --fleet-keys at attach */
	__type(key, struct sluice_key);
	__type(value, struct sluice_fleet_use);
} sluice_fleet_use SEC(".maps");

/*
 * The set-associative key table (--table sets, include/sluice/sets.h): sets
 * of IPv4 keys and of IPv6 keys, sized at attach (one set each in a state of
 * the LRU table). table_sets and sets_n are load-time knobs: the loader sets
 * them from the state (config.kind, the maps' sizes).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_set4);
} sluice_sets4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_set6);
} sluice_sets6 SEC(".maps");

/* The wide keys' sets (--key src,dport|flow), both families: one set in a
 * state of the LRU table, whose wide keys are in sluice_flows. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_setf);
} sluice_setsf SEC(".maps");

const volatile __u8 table_sets = 0;
/* sets in sluice_sets4, sluice_sets6, sluice_setsf */
const volatile __u32 sets_n[3] = { 1, 1, 1 };

/* Tests drive the clock through test_now_ns instead of bpf_ktime_get_ns()
 * (a load-time knob in rodata: the verifier prunes the branch). */
const volatile __u8 test_clock = 0;
volatile __u64 test_now_ns = 0;

static __always_inline __u64 now_ticks(void)
{
	__u64 ns = test_clock ? test_now_ns : bpf_ktime_get_ns();

	return ns << SLUICE_TICK_SHIFT;
}

#endif /* SLUICE_BPF_SHARED_H */
