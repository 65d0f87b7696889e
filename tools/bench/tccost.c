// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-bench tccost: the shaper's cost per packet (`make bench` part
 * shape), through BPF_PROG_TEST_RUN on this host's kernel (no fq needed: the
 * program only sets skb->tstamp). One IPv4 UDP frame from one source, every
 * case in the same process, runs interleaved (case 1..N, then again):
 *
 *   tc-bare      tools/bench/tcbare.bpf.c's tc_bare: returns TC_ACT_OK
 *   tc-nodelay   sluice_tc, a shaper's policy of 10M/s, --burst 10M, --nodelay:
 *                every packet accepted and sent at once (no tstamp)
 *   tc-delay     sluice_tc, 100k/s (10 us apart), --burst 2M, no --delay: every
 *                packet but the first (or two) of a run gets a departure time (up to
 *                10 s ahead: the horizon is set to 30 s)
 *   tc-drop      sluice_tc, 3/m --burst 1 (a queue of 20 s, within the horizon):
 *                beyond the queue, TC_ACT_SHOT
 *   xdp-pass     sluice_xdp, a limiter of 10M/s, --burst 10M: XDP_PASS
 *   xdp-drop     sluice_xdp, a limiter of 3/m --burst 1: XDP_DROP (the drop
 *                cases leak a packet every 20 s: the bench takes about 5)
 *
 * The key's bucket is deleted before every run of the nodelay, delay and
 * xdp-pass cases (a run starts from an idle key), kept for the drop cases (a
 * warm-up run fills it). Every run is checked against the counters: the
 * verdict, shaped/delayed (sluice_shape_stats), limited (sluice_stats); a
 * case whose counters disagree is INVALID in the table.
 *
 * Time per packet, as sluice-bench cost takes it: the wall clock of the call /
 * repeat where it agrees with the kernel's own average (whole ns, which stops
 * while the thread is scheduled out), else that average + 0.5 (a fallback).
 *
 * It writes the measurements as JSON (every run's time, exact in fs, the
 * kernel's, the counters, the verdict); tools/bench/render.py tccost makes
 * the table and the JSON with the medians from them.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"
#include "sluice.skel.h"
#include "tcbare.skel.h"

#define TC_MAX_RUNS 21

enum tc_expect { EX_BARE, EX_AT_ONCE, EX_DELAY, EX_DROP, EX_XDP_PASS, EX_XDP_DROP };

struct tc_case {
	const char *name, *what;
	enum tc_expect expect;
	struct bpfrun *obj; /* NULL: tc_bare */
	int prog_fd;
	bool reset; /* delete the key's bucket before each run */
	__u32 tag; /* its policy's */
	double ns[TC_MAX_RUNS];
	__u32 kns[TC_MAX_RUNS];
	int nruns, fallbacks;
	bool valid;
	char why[160];
	__u64 pkts, shaped, delayed, limited; /* over the timed runs */
};

/* Delete the keys of policy tag `tag` from the bucket table (one, here). */
static int reset_keys(const struct bpfrun *o, __u32 tag)
{
	struct sluice_key k, next;
	bool have = false;

	while (!bpf_map_get_next_key(o->buckets_fd, have ? &k : NULL, &next)) {
		if ((next.tag & ~SLUICE_TAG_AGGREGATE) == tag) {
			if (bpf_map_delete_elem(o->buckets_fd, &next))
				return -errno;
			have = false; /* start over: the order may change */
			continue;
		}
		k = next;
		have = true;
	}
	return 0;
}

static int set_policy(struct bpfrun *o, __u64 count, __u64 period, __u64 burst, __u32 delay,
		      __u32 gen, __u32 *tag, char *err, size_t errlen)
{
	struct sluice_settings set;
	int ret;

	sluice_settings_init(&set);
	ret = bench_policy(&set.def, SLUICE_ALGO_TOKEN_BUCKET, count, period, burst, 0, err,
			   errlen);
	if (ret)
		return ret;
	set.def.tag = SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, gen);
	*tag = set.def.tag;
	set.def.pkt_delay = delay;
	return bpfrun_configure(o, &set);
}

static void invalid(struct tc_case *k, const char *fmt, unsigned long long a, unsigned long long b)
{
	if (!k->valid)
		return;
	k->valid = false;
	snprintf(k->why, sizeof(k->why), fmt, a, b);
}

static int run_case(struct tc_case *k, const struct bench_frame *f, __u32 repeat, bool timed)
{
	struct sluice_shape_stats sb = { 0 }, sa = { 0 };
	struct sluice_stats b = { 0 }, a = { 0 };
	__u32 retval = 0, kns = 0, want;
	double ns = 0;
	int ret;

	if (k->obj) {
		if (k->reset && (ret = reset_keys(k->obj, k->tag)))
			return ret;
		if (bpfrun_stats(k->obj, &b) || bpfrun_shape_stats(k->obj, &sb))
			return -errno;
	}
	ret = bench_test_run(k->prog_fd, f, repeat, &ns, &kns, &retval);
	if (ret)
		return ret;
	if (k->obj && (bpfrun_stats(k->obj, &a) || bpfrun_shape_stats(k->obj, &sa)))
		return -errno;
	if (!timed)
		return 0;
	switch (k->expect) {
	case EX_DROP:
		want = TC_ACT_SHOT;
		break;
	case EX_XDP_PASS:
		want = XDP_PASS;
		break;
	case EX_XDP_DROP:
		want = XDP_DROP;
		break;
	default:
		want = TC_ACT_OK;
	}
	if (retval != want)
		invalid(k, "verdict %llu, want %llu", retval, want);
	switch (k->expect) {
	case EX_AT_ONCE:
		if (sa.shaped - sb.shaped != repeat || sa.delayed != sb.delayed)
			invalid(k,
				"shaped %llu, delayed %llu of a run: want all shaped, none delayed",
				sa.shaped - sb.shaped, sa.delayed - sb.delayed);
		break;
	case EX_DELAY:
		/* The first packet of an idle key goes at once; so does the
		 * second when it comes 10 us or more after the first (the
		 * key's creation, an interrupt). After it the queue is far
		 * ahead of the clock. */
		if (sa.shaped - sb.shaped != repeat || sa.delayed - sb.delayed < repeat - 2)
			invalid(k,
				"shaped %llu, delayed %llu of a run: want all shaped, all but one or two delayed",
				sa.shaped - sb.shaped, sa.delayed - sb.delayed);
		break;
	case EX_DROP:
	case EX_XDP_DROP:
		if (a.limited - b.limited != repeat)
			invalid(k, "limited %llu of %llu in a run", a.limited - b.limited, repeat);
		break;
	case EX_XDP_PASS:
		if (a.limited != b.limited)
			invalid(k, "limited %llu of %llu in a run", a.limited - b.limited, repeat);
		break;
	default:
		break;
	}
	k->pkts += repeat;
	k->shaped += sa.shaped - sb.shaped;
	k->delayed += sa.delayed - sb.delayed;
	k->limited += a.limited - b.limited;
	/* As sluice-bench cost: the wall clock where it agrees with the
	 * kernel's count (within [kernel, kernel + 1.25)), else the kernel's
	 * count + 0.5 (the thread was scheduled out: another guest, ...). */
	if (ns >= kns + 1.25) {
		ns = kns + 0.5;
		k->fallbacks++;
	}
	k->ns[k->nruns] = ns;
	k->kns[k->nruns] = kns;
	k->nruns++;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice-bench tccost -o JSON [-r REPEAT] [-n RUNS] [-H DEV]\n"
		"  the shaper's cost per packet (sluice_tc, tc_bare, sluice_xdp beside it),\n"
		"  BPF_PROG_TEST_RUN, REPEAT packets a run (default 1000000), RUNS runs a case\n"
		"  (default 5, at most %d), the median; -H a spare veth device that holds\n"
		"  sluice_xdp in the XDP dispatcher (see sluice-bench cost); the measurements\n"
		"  to JSON (tools/bench/render.py tccost makes the table)\n",
		TC_MAX_RUNS);
}

struct tc_opts {
	const char *json;
	unsigned long repeat, runs;
};

/* 0, -1 (-h), or an exit status. */
static int parse_opts(int argc, char **argv, struct tc_opts *o)
{
	int opt;

	o->json = NULL;
	o->repeat = 1000000;
	o->runs = 5;
	while ((opt = getopt(argc, argv, "o:r:n:H:h")) != -1) {
		switch (opt) {
		case 'o':
			o->json = optarg;
			break;
		case 'r':
			o->repeat = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			o->runs = strtoul(optarg, NULL, 10);
			break;
		case 'H':
			if (bench_hold_devices(optarg))
				return SLUICE_EXIT_USAGE;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			usage(stderr);
			return SLUICE_EXIT_USAGE;
		}
	}
	if (!o->json || optind != argc) {
		usage(stderr);
		return SLUICE_EXIT_USAGE;
	}
	if (o->repeat < 2 || o->repeat > 100000000) {
		fprintf(stderr,
			"sluice-bench tccost: -r %lu: want 2 .. 100000000 packets a run "
			"(e.g. -r 1000000)\n",
			o->repeat);
		return SLUICE_EXIT_USAGE;
	}
	if (o->runs < 1 || o->runs > TC_MAX_RUNS) {
		fprintf(stderr, "sluice-bench tccost: -n %lu: want 1 .. %d runs (e.g. -n 5)\n",
			o->runs, TC_MAX_RUNS);
		return SLUICE_EXIT_USAGE;
	}
	return 0;
}

/* The six cases over tc_bare, the shaper's object and the limiter's. */
static void fill_cases(struct tc_case *cases, struct tcbare_bpf *bare, struct bpfrun *shaper,
		       struct bpfrun *limiter)
{
	int i;

	memset(cases, 0, 6 * sizeof(*cases));
	cases[0] = (struct tc_case){ "tc-bare", "tc_bare (returns TC_ACT_OK)",        EX_BARE,
				     NULL,      bpf_program__fd(bare->progs.tc_bare), false };
	cases[1] = (struct tc_case){
		"tc-nodelay", "sluice_tc, at once (10M/s --burst 10M --nodelay)", EX_AT_ONCE,
		shaper,       bpf_program__fd(shaper->skel->progs.sluice_tc),     true
	};
	cases[2] = (struct tc_case){ "tc-delay",
				     "sluice_tc, delaying (100k/s --burst 2M: sets the tstamp)",
				     EX_DELAY,
				     shaper,
				     bpf_program__fd(shaper->skel->progs.sluice_tc),
				     true };
	cases[3] = (struct tc_case){ "tc-drop",
				     "sluice_tc, beyond the queue (3/m --burst 1: TC_ACT_SHOT)",
				     EX_DROP,
				     shaper,
				     bpf_program__fd(shaper->skel->progs.sluice_tc),
				     false };
	cases[4] = (struct tc_case){
		"xdp-pass",       "sluice_xdp, a limiter passing (10M/s --burst 10M)",
		EX_XDP_PASS,      limiter,
		limiter->prog_fd, true
	};
	cases[5] = (struct tc_case){
		"xdp-drop",       "sluice_xdp, a limiter dropping (3/m --burst 1)",
		EX_XDP_DROP,      limiter,
		limiter->prog_fd, false
	};
	for (i = 0; i < 6; i++)
		cases[i].valid = true;
}

/* Give case k its policy (the shaper's three share one object). */
static int case_policy(struct tc_case *k, __u32 gen, char *err, size_t errlen)
{
	__u64 count = 0, burst = 0, period = SLUICE_NS_PER_SEC;
	__u32 delay = 0;

	switch (k->expect) {
	case EX_AT_ONCE:
		count = 10000000, burst = 10000000, delay = SLUICE_NODELAY;
		break;
	case EX_DELAY:
		count = 100000, burst = 2000000;
		break;
	case EX_XDP_PASS:
		count = 10000000, burst = 10000000;
		break;
	case EX_DROP:
	case EX_XDP_DROP:
		count = 3, burst = 1, period = 60 * SLUICE_NS_PER_SEC;
		break;
	default:
		break;
	}
	if (!k->obj)
		return 0;
	return set_policy(k->obj, count, period, burst, delay, gen, &k->tag, err, errlen);
}

/* Runs interleaved: run r of every case, then run r + 1. Each case first
 * gets its policy, and a warm-up run the first time. 0 or an exit status. */
static int run_rounds(struct tc_case *cases, int ncases, const struct bench_frame *f,
		      const struct tc_opts *o)
{
	char err[SLUICE_ERR_LEN];
	int i, r, ret;

	for (r = -1; r < (int)o->runs; r++) {
		for (i = 0; i < ncases; i++) {
			struct tc_case *k = &cases[i];

			if (case_policy(k, (__u32)i + 1, err, sizeof(err))) {
				fprintf(stderr, "sluice-bench tccost: %s: %s\n", k->name, err);
				return SLUICE_EXIT_RUNTIME;
			}
			ret = run_case(k, f, (__u32)o->repeat, r >= 0);
			if (ret) {
				fprintf(stderr, "sluice-bench tccost: %s: BPF_PROG_TEST_RUN: %s\n",
					k->name, strerror(-ret));
				return SLUICE_EXIT_RUNTIME;
			}
		}
	}
	return 0;
}

/* The measurements: every case's runs (fs per packet, the kernel's whole
 * ns), fallbacks, counters and validity. 0 or an exit status. */
static int write_json(const struct tc_opts *o, const struct tc_case *cases, int ncases)
{
	struct sluice_json j;
	FILE *js = fopen(o->json, "w");
	int i, r;

	if (!js) {
		fprintf(stderr, "sluice-bench tccost: cannot write %s: %s\n", o->json,
			strerror(errno));
		return SLUICE_EXIT_RUNTIME;
	}
	json_init(&j, js);
	json_obj_begin(&j, NULL);
	json_u64(&j, "repeat", o->repeat);
	json_u64(&j, "runs", o->runs);
	json_arr_begin(&j, "cases");
	for (i = 0; i < ncases; i++) {
		const struct tc_case *k = &cases[i];

		json_obj_begin(&j, NULL);
		json_str(&j, "case", k->name);
		json_str(&j, "what", k->what);
		json_arr_begin(&j, "fs_runs");
		for (r = 0; r < k->nruns; r++)
			json_u64(&j, NULL, (__u64)llround(k->ns[r] * 1e6));
		json_arr_end(&j);
		json_arr_begin(&j, "kernel_ns_runs");
		for (r = 0; r < k->nruns; r++)
			json_u64(&j, NULL, k->kns[r]);
		json_arr_end(&j);
		json_u64(&j, "fallbacks", (__u64)k->fallbacks);
		json_u64(&j, "packets", k->pkts);
		json_u64(&j, "shaped", k->shaped);
		json_u64(&j, "delayed", k->delayed);
		json_u64(&j, "limited", k->limited);
		json_bool(&j, "valid", k->valid);
		json_str(&j, "why", k->why);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_end(&j);
	if (fclose(js)) {
		fprintf(stderr, "sluice-bench tccost: cannot write %s: %s\n", o->json,
			strerror(errno));
		return SLUICE_EXIT_RUNTIME;
	}
	return 0;
}

int cmd_tccost(int argc, char **argv)
{
	struct bpfrun shaper, limiter;
	struct tcbare_bpf *bare = NULL;
	struct bench_frame f;
	struct tc_case cases[6];
	struct tc_opts o;
	int ncases = 6, ret, i;
	bool held = false;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret < 0 ? SLUICE_EXIT_OK : ret;
	if (bench_frame_build(&f, "198.18.0.1", "198.18.0.2")) {
		fprintf(stderr, "sluice-bench tccost: cannot build the frame\n");
		return SLUICE_EXIT_RUNTIME;
	}
	bare = tcbare_bpf__open_and_load();
	if (!bare) {
		fprintf(stderr, "sluice-bench tccost: cannot load tc_bare: %s\n", strerror(errno));
		return SLUICE_EXIT_RUNTIME;
	}
	memset(&shaper, 0, sizeof(shaper));
	memset(&limiter, 0, sizeof(limiter));
	if ((ret = bench_open(&shaper, &(struct bpfrun_opts){ .max_keys = 1024 })) ||
	    (ret = bench_open(&limiter, &(struct bpfrun_opts){ .max_keys = 1024 }))) {
		fprintf(stderr, "sluice-bench tccost: cannot load the sluice object: %s\n",
			strerror(-ret));
		ret = SLUICE_EXIT_RUNTIME;
		goto out;
	}
	/* A shaper as `sluice shape attach` makes it: its kind, and a horizon
	 * beyond the longest queue here (10 s: a run of 1M packets 10 us
	 * apart; a longer -r finds it, and the case is INVALID). */
	shaper.kind = SLUICE_KIND_SHAPE;
	shaper.horizon_us = 30000000;
	fill_cases(cases, bare, &shaper, &limiter);
	if (bench_held()) {
		ret = bench_hold(limiter.prog_fd);
		if (ret) {
			fprintf(stderr,
				"sluice-bench tccost: cannot hold sluice_xdp on a spare device: %s\n",
				strerror(-ret));
			ret = SLUICE_EXIT_RUNTIME;
			goto out;
		}
		held = true;
	}
	ret = run_rounds(cases, ncases, &f, &o);
	if (!ret)
		ret = write_json(&o, cases, ncases);
	for (i = 0; !ret && i < ncases; i++)
		if (!cases[i].valid)
			ret = SLUICE_EXIT_RUNTIME;
out:
	if (held)
		bench_hold_release();
	if (shaper.skel)
		bpfrun_close(&shaper);
	if (limiter.skel)
		bpfrun_close(&limiter);
	tcbare_bpf__destroy(bare);
	return ret;
}
