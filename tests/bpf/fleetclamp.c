// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Whatever sluice_fleet and the agent's records hold, the datapath and the
 * apply program keep to a bounded share (issue 20, B5): the datapath reads
 * sluice_fleet.live as at most SLUICE_FLEET_MAX_BOXES, and its share's
 * arithmetic saturates (N = 2305843010 wrapped a 0.5 s packet to almost
 * nothing: a --rate 2/s --burst 4 policy passed 14 of 80 in 4 s); apply
 * folds a debt of at most SLUICE_MAX_TOLERANCE (one near 2^64 wrapped to a
 * TAT in the past, which folded nothing). The test clock drives both
 * programs; one CPU. tests/unit/fleetshare.c has the share's math.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "sluice.skel.h"
#include "fleet.skel.h"
#include "../lib/bpfrun.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)
#define TAG SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 1)
#define SRC "198.18.0.1"

static struct bpfrun r;
static struct fleet_bpf *fl;

/* The fleet's programs on the datapath's maps, as the agent loads them. */
static int fleet_open(void)
{
	struct sluice_bpf *dp = r.skel;
	int err;

	fl = fleet_bpf__open();
	if (!fl)
		return -errno;
	fl->rodata->test_clock = 1;
	if (r.table_sets) {
		fl->rodata->table_sets = 1;
		fl->rodata->set_seed = r.seed;
		fl->rodata->sets_n[0] = bpf_map__max_entries(dp->maps.sluice_sets4);
		fl->rodata->sets_n[1] = bpf_map__max_entries(dp->maps.sluice_sets6);
	}
	err = bpf_map__reuse_fd(fl->maps.sluice_buckets, bpf_map__fd(dp->maps.sluice_buckets));
	err = err ?: bpf_map__reuse_fd(fl->maps.sluice_sets4, r.sets_fd[0]);
	err = err ?: bpf_map__reuse_fd(fl->maps.sluice_sets6, r.sets_fd[1]);
	err = err ?: bpf_map__reuse_fd(fl->maps.sluice_fleet, bpf_map__fd(dp->maps.sluice_fleet));
	if (!err)
		err = bpf_map__reuse_fd(fl->maps.sluice_fleet_use,
					bpf_map__fd(dp->maps.sluice_fleet_use));
	err = err ?: bpf_map__set_max_entries(fl->maps.sluice_fleet_io, 16);
	err = err ?: fleet_bpf__load(fl);
	if (err) {
		fleet_bpf__destroy(fl);
		fl = NULL;
	}
	return err;
}

static void clock_at(__u64 ns)
{
	bpfrun_clock(&r, ns);
	if (fl)
		fl->bss->test_now_ns = ns;
}

static bool set_fleet(__u32 live, __u64 ok_until, __u32 io_n)
{
	int fd = bpf_map__fd(r.skel->maps.sluice_fleet);
	struct sluice_fleet v;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &v))
		return false;
	v.live = live;
	v.ok_until = ok_until;
	v.io_n = io_n;
	return !bpf_map_update_elem(fd, &zero, &v, BPF_ANY);
}

/* A fresh state whose default policy is a fleet token bucket of `rate`
 * per second, burst `burst`; N = live, ok_until as given; the clock at t0. */
static bool setup(__u64 rate, __u64 burst, __u32 live, __u64 ok_until)
{
	struct sluice_settings set;
	struct sluice_policy *p = &set.def;

	if (!bpfrun_setup(&r, &set, 1))
		return false;
	memset(p, 0, sizeof(*p));
	p->tag = TAG;
	p->algo = SLUICE_ALGO_TOKEN_BUCKET;
	p->action = SLUICE_ACT_LIMIT;
	p->flags = SLUICE_POLICY_FLEET;
	p->prefix4 = 32;
	p->prefix6 = 64;
	if (sluice_limit_set(&p->pkt, rate, SLUICE_NS_PER_SEC, burst, NULL, 0))
		return false;
	clock_at(SCN_T0);
	return set_fleet(live, ok_until, 0) && !bpfrun_configure(&r, &set);
}

/* n packets evenly over secs seconds from t0: how many passed. */
static unsigned int offer(unsigned int n, __u64 secs)
{
	unsigned int i, passed = 0;

	for (i = 0; i < n; i++) {
		clock_at(SCN_T0 + SCN_S(secs) * i / n);
		passed += bpfrun_send(&r, SRC, 60) == XDP_PASS;
	}
	return passed;
}

static void test_live(void)
{
	static const struct {
		__u32 live;
		const char *how;
	} cases[] = {
		{ 2305843010U, "2305843010 (it wrapped a packet's cost)" },
		{ 4294967295U, "4294967295 (a count of -1)" },
		{ 1U << 17, "2^17" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned int got;

		if (!tap_ok(setup(2, 4, cases[i].live, 0), "live %s: setup", cases[i].how))
			continue;
		got = offer(80, 4);
		if (!tap_ok(got == 1,
			    "live %s, outage, rate 2/s burst 4: 1 of 80 in 4 s pass, "
			    "as at N = 2^16",
			    cases[i].how))
			tap_diag("  %u passed", got);
	}

	/* N is read as 2^16, no more: rate 1000/s is 1 ms a packet, rate/2^16
	 * is 65.536 s a packet. Read as 2^20 it would be 1048.6 s. */
	if (!tap_ok(setup(1000, 1, 1U << 20, 0), "live 2^20: setup"))
		return;
	clock_at(SCN_T0);
	TAP_EQ(bpfrun_send(&r, SRC, 60), XDP_PASS, "live 2^20, outage: the first packet passes");
	clock_at(SCN_T0 + 65536 * SCN_MS(1) - 1);
	TAP_EQ(bpfrun_send(&r, SRC, 60), XDP_DROP,
	       "live 2^20, outage: the next is dropped 1 ns before 65.536 s");
	clock_at(SCN_T0 + 65536 * SCN_MS(1));
	TAP_EQ(bpfrun_send(&r, SRC, 60), XDP_PASS,
	       "live 2^20, outage: and passes at 65.536 s (rate/2^16: live read as 2^16)");
}

/* apply folds at most SLUICE_MAX_TOLERANCE of debt, never a wrapped one. */
static void test_apply_debt(void)
{
	static const __u64 debts[] = { ~0ULL, ~0ULL - TICKS(SCN_T0) + 1, 1ULL << 63 };
	int io_fd, apply_fd;
	size_t i;

	if (!fl) {
		tap_skip("the fleet programs did not load", "apply bounds a debt");
		return;
	}
	io_fd = bpf_map__fd(fl->maps.sluice_fleet_io);
	apply_fd = bpf_program__fd(fl->progs.sluice_fleet_apply);
	for (i = 0; i < sizeof(debts) / sizeof(debts[0]); i++) {
		struct sluice_fleet_rec rec = { .debt = { debts[i], 0 } };
		struct sluice_cidr c;
		struct sluice_bucket b;
		__u8 frame[64] = { 0 };
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = sizeof(frame));
		__u32 zero = 0;

		if (!tap_ok(setup(100, 10, 1, ~0ULL), "apply, debt %#llx: setup",
			    (unsigned long long)debts[i]))
			continue;
		sluice_parse_addr(SRC, &c, NULL, 0);
		rec.key.tag = TAG;
		rec.key.family = c.family;
		rec.key.prefixlen = 32;
		memcpy(rec.key.addr, c.addr, 16);
		if (!tap_ok(!bpf_map_update_elem(io_fd, &zero, &rec, BPF_ANY) &&
				    set_fleet(1, ~0ULL, 1) &&
				    !bpf_prog_test_run_opts(apply_fd, &o) && o.retval == XDP_PASS,
			    "apply, debt %#llx: runs", (unsigned long long)debts[i]))
			continue;
		if (!tap_ok(!bpfrun_lookup(&r, false, TAG, SRC, 32, &b) &&
				    b.s[0] == TICKS(SCN_T0) + SLUICE_MAX_TOLERANCE,
			    "apply, debt %#llx: the bucket is held SLUICE_MAX_TOLERANCE ahead, "
			    "not wrapped into the past",
			    (unsigned long long)debts[i]))
			tap_diag("  TAT %llu, now %llu", (unsigned long long)b.s[0],
				 (unsigned long long)TICKS(SCN_T0));
		TAP_EQ(bpfrun_send(&r, SRC, 60), XDP_DROP, "apply, debt %#llx: the source is held",
		       (unsigned long long)debts[i]);
	}
}

int main(void)
{
	bpfrun_one_cpu();
	if (!bpfrun_load(&r, NULL))
		return tap_done();
	if (!tap_ok(!fleet_open(), "load the fleet programs on the datapath's maps"))
		tap_diag("  (the apply checks are skipped)");
	test_live();
	test_apply_debt();
	fleet_bpf__destroy(fl);
	bpfrun_close(&r);
	return tap_done();
}
