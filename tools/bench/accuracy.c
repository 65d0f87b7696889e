// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-bench accuracy: how many packets each algorithm admits from a
 * flood, against what its rate allows, on one CPU and on two CPUs hammering
 * the same key. The datapath runs with the real clock (bpf_ktime_get_ns), fed
 * by BPF_PROG_TEST_RUN from one thread per CPU.
 *
 * Every (algorithm, rate) pair is one /32 rule with its own policy and its own
 * counter slot, so all of them run in the same rounds: each thread cycles
 * through every pair, offering each well over its rate (the offered count is
 * checked), and the rule's own counters say what was admitted.
 *
 * What a flood may be admitted, t being the time from the first packet to
 * the last (the "model"):
 *   token/leaky bucket  rate x t + burst (GCRA is exact)
 *   fixed window        limit x number of windows touched
 *   sliding window      limit + rate x (t_last - first window boundary after t_first)
 *   sliding log         limit x (floor(t / window) + 1)
 * and the brief's yardstick for all of them: rate x t + burst, where burst is
 * the window's limit for the window algorithms.
 *
 * It writes the measurements as JSON (every case's first and last packet's
 * time, admitted, offered, counted, longest pause, in whole ns and packets);
 * tools/bench/render.py computes the bounds, ratios and the goal from them and
 * writes the Markdown table and the JSON with them.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"

static const __u64 rates[] = { 10, 100, 1000, 10000, 100000, 1000000 };
#define NR_RATES (sizeof(rates) / sizeof(rates[0]))
#define NS 1000000000ULL

struct acc_case {
	int algo;
	__u64 rate; /* per second */
	bool na; /* the algorithm cannot express this rate */
	char why[128];
	struct sluice_policy pol;
	__u64 burst; /* bucket: burst; window: limit */
	__u32 slot;
	__u32 per_call; /* packets per BPF_PROG_TEST_RUN */
	struct bench_frame frame;
	__u64 window_ns; /* window algorithms: the window (render.py's model) */
	/* measurements, per mode (1 or 2 CPUs) */
	struct {
		bool done;
		__u64 first_ns, last_ns; /* the flood's first and last call */
		__u64 admitted, offered, counted;
		__u64 max_gap_ns;
	} r[2];
};

struct acc_group {
	struct bpfrun *obj;
	struct acc_case **cases;
	int n;
	__u64 deadline;
	pthread_barrier_t barrier;
	__u64 last_end[64]; /* when a call of case i last ended, on any CPU */
	__u64 max_gap[64]; /* the longest time case i saw no packet */
	int err;
};

struct acc_thread {
	struct acc_group *g;
	int cpu;
	__u64 first, last;
	__u64 offered[64];
	pthread_t tid;
};

static void *flood(void *arg)
{
	struct acc_thread *t = arg;
	struct acc_group *g = t->g;
	int i;

	if (bench_pin_cpu(t->cpu))
		g->err = -EINVAL;
	pthread_barrier_wait(&g->barrier);
	t->first = bench_now_ns();
	while (!g->err) {
		for (i = 0; i < g->n; i++) {
			struct acc_case *k = g->cases[i];
			__u64 start = bench_now_ns(), end, prev, gap;
			int ret = bench_test_run(g->obj->prog_fd, &k->frame, k->per_call, NULL,
						 NULL, NULL);

			if (ret) {
				g->err = ret;
				break;
			}
			end = bench_now_ns();
			t->offered[i] += k->per_call;
			/* A pause of the flood (both threads scheduled out, on
			 * a busy machine) may cost admissions: measure it. */
			prev = __atomic_exchange_n(&g->last_end[i], end, __ATOMIC_RELAXED);
			gap = prev && start > prev ? start - prev : 0;
			if (gap > __atomic_load_n(&g->max_gap[i], __ATOMIC_RELAXED))
				__atomic_store_n(&g->max_gap[i], gap, __ATOMIC_RELAXED);
		}
		t->last = bench_now_ns();
		if (t->last >= g->deadline)
			break;
	}
	return NULL;
}

static int setup_case(struct acc_case *k, int algo, __u64 rate, char *err, size_t errlen)
{
	__u64 window_ns = 0, burst = 0;

	memset(k, 0, sizeof(*k));
	k->algo = algo;
	k->rate = rate;
	if (algo == SLUICE_ALGO_SLIDING_LOG) {
		/* At most 64 timestamps per key, windows of at least 100 ms. */
		if (rate > 10 * SLUICE_LOG_MAX) {
			k->na = true;
			snprintf(k->why, sizeof(k->why),
				 "n/a: sliding-log holds <= %d per window of >= 100 ms",
				 SLUICE_LOG_MAX);
			return 0;
		}
		window_ns = rate <= SLUICE_LOG_MAX ? NS : NS / 2;
	}
	/* The loader's default burst: one second's worth. */
	if (algo == SLUICE_ALGO_TOKEN_BUCKET || algo == SLUICE_ALGO_LEAKY_BUCKET)
		burst = sluice_default_burst(rate, NS);
	if (bench_policy(&k->pol, (unsigned)algo, rate, NS, burst, window_ns, err, errlen))
		return -EINVAL;
	if (burst) {
		k->burst = burst;
	} else {
		k->burst = k->pol.window_limit;
		k->window_ns = k->pol.window >> SLUICE_TICK_SHIFT;
	}
	/* 10 ms of the rate per call: each case is offered several times its rate
	 * while the whole cycle of cases stays short. */
	k->per_call = rate / 100 > 16 ? (__u32)(rate / 100) : 16;
	return 0;
}

/* A fresh object's rules for a group (bench_open), every case of it a /32
 * rule with its own policy and counter slot: every bucket starts full, every
 * count at 0. */
static int load_group(struct bpfrun *obj, struct acc_case **cases, int n)
{
	struct sluice_settings set;
	int i, ret;

	if (bench_held()) {
		ret = bench_hold(obj->prog_fd);
		if (ret)
			return ret;
	}
	sluice_settings_init(&set);
	for (i = 0; i < n; i++) {
		char cidr[48], src[32];

		cases[i]->slot = (__u32)i + 1;
		cases[i]->pol.tag = SLUICE_TAG(cases[i]->slot, cases[i]->algo, 1);
		snprintf(src, sizeof(src), "198.18.%d.%d", 20 + cases[i]->algo, 1 + i);
		snprintf(cidr, sizeof(cidr), "%s/32", src);
		ret = bpfrun_rule(obj, 0, cidr, &cases[i]->pol, cases[i]->slot);
		if (!ret)
			ret = bench_frame_build(&cases[i]->frame, src, "198.18.0.2");
		if (ret)
			return ret;
	}
	set.nr_rules = (__u32)n;
	set.rules_gen = 0;
	return bpfrun_configure(obj, &set);
}

/* One thread per CPU floods every case for secs; *first and *last: the
 * earliest start and the latest end of the threads. */
static int flood_group(struct acc_group *g, struct acc_thread *th, int mode, int ncpus, double secs,
		       __u64 *first, __u64 *last)
{
	int i;

	pthread_barrier_init(&g->barrier, NULL, (unsigned)mode + 1);
	/* Start 10 ms past a whole second, the boundary of every window here:
	 * the first window then has time to reach its limit, and with secs
	 * ending in .5 so has the last. */
	{
		__u64 now = bench_now_ns(), start = (now / NS + 1) * NS + NS / 100;
		struct timespec ts = { .tv_sec = (time_t)((start - now) / NS),
				       .tv_nsec = (long)((start - now) % NS) };

		nanosleep(&ts, NULL);
		g->deadline = start + (__u64)(secs * 1e9);
	}
	for (i = 0; i < mode; i++) {
		th[i].g = g;
		th[i].cpu = i % ncpus;
		if (pthread_create(&th[i].tid, NULL, flood, &th[i])) {
			g->err = -EAGAIN;
			mode = i;
			break;
		}
	}
	pthread_barrier_wait(&g->barrier);
	*first = ~0ULL;
	*last = 0;
	for (i = 0; i < mode; i++) {
		pthread_join(th[i].tid, NULL);
		*first = th[i].first < *first ? th[i].first : *first;
		*last = th[i].last > *last ? th[i].last : *last;
	}
	pthread_barrier_destroy(&g->barrier);
	return g->err;
}

static int run_group(struct acc_case **cases, int n, int mode, int ncpus, double secs)
{
	struct acc_thread th[2] = {};
	struct acc_group g = { .cases = cases, .n = n };
	struct bpfrun_opts oo = { .max_keys = 1024, .max_log_keys = 1024 };
	struct bpfrun obj;
	__u64 first, last;
	int i, ret;

	if (n > 64)
		return -E2BIG;
	ret = bench_open(&obj, &oo);
	if (ret)
		return ret;
	g.obj = &obj;
	ret = load_group(&obj, cases, n);
	if (!ret)
		ret = flood_group(&g, th, mode, ncpus, secs, &first, &last);
	for (i = 0; !ret && i < n; i++) {
		struct acc_case *k = cases[i];
		struct sluice_rstats rs;
		int m = mode - 1, t;

		ret = bpfrun_rstats(&obj, k->slot, &rs);
		if (ret)
			break;
		k->r[m].done = true;
		k->r[m].admitted = rs.passed;
		k->r[m].counted = rs.passed + rs.dropped;
		for (t = 0; t < mode; t++)
			k->r[m].offered += th[t].offered[i];
		k->r[m].first_ns = first;
		k->r[m].last_ns = last;
		k->r[m].max_gap_ns = g.max_gap[i];
	}
	bench_hold_release();
	bpfrun_close(&obj);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: sluice-bench accuracy -o JSON [-a SECS] [-b SECS] [-H DEV] [-I RUN_ID]\n"
		   "  -o  the measurements (tools/bench/render.py accuracy makes the table)\n"
		   "  -I  the run's id (make bench's), written into the JSON\n"
		   "  -a  seconds of the rates up to 100k/s (default 20.5: half a window past a\n"
		   "      whole number, so the last window has time to fill)\n"
		   "  -b  seconds of the 1M/s rate (default 5.5)\n"
		   "  -H  a spare veth device to hold the program in the XDP dispatcher: without "
		   "it every\n      BPF_PROG_TEST_RUN call waits two RCU grace periods and the "
		   "flood has gaps\n");
}

struct acc_opts {
	const char *json_path;
	const char *run_id;
	double secs_a, secs_b;
};

/* 0, or an exit status. */
static int parse_opts(int argc, char **argv, struct acc_opts *o)
{
	int opt;

	o->json_path = NULL;
	o->run_id = NULL;
	o->secs_a = 20.5;
	o->secs_b = 5.5;
	while ((opt = getopt(argc, argv, "o:a:b:H:I:h")) != -1) {
		switch (opt) {
		case 'I':
			o->run_id = optarg;
			break;
		case 'H':
			if (bench_hold_devices(optarg))
				return SLUICE_EXIT_USAGE;
			break;
		case 'o':
			o->json_path = optarg;
			break;
		case 'a':
			o->secs_a = atof(optarg);
			break;
		case 'b':
			o->secs_b = atof(optarg);
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			usage(stderr);
			return SLUICE_EXIT_USAGE;
		}
	}
	if (!o->json_path || o->secs_a <= 0 || o->secs_b <= 0) {
		usage(stderr);
		return SLUICE_EXIT_USAGE;
	}
	return 0;
}

/* Every (algorithm, rate) case; those it can run go to slow (up to 100k/s)
 * or fast (1M/s). 0 or an exit status. */
static int setup_cases(struct acc_case *cases, int *nc, struct acc_case **slow, int *nslow,
		       struct acc_case **fast, int *nfast)
{
	char err[SLUICE_ERR_LEN] = "";
	unsigned int a, r;

	for (a = 0; a < SLUICE_ALGO_MAX; a++) {
		for (r = 0; r < NR_RATES; r++) {
			struct acc_case *k = &cases[(*nc)++];

			if (setup_case(k, (int)a, rates[r], err, sizeof(err))) {
				fprintf(stderr, "sluice-bench: Couldn't set up %s at %llu/s: %s\n",
					sluice_algo_name(a), (unsigned long long)rates[r], err);
				return SLUICE_EXIT_RUNTIME;
			}
			if (k->na)
				continue;
			if (rates[r] >= 1000000)
				fast[(*nfast)++] = k;
			else
				slow[(*nslow)++] = k;
		}
	}
	return 0;
}

/* The floods on 1 CPU, then on 2: 0 or an exit status. */
static int run_floods(const struct acc_opts *o, struct acc_case **slow, int nslow,
		      struct acc_case **fast, int nfast)
{
	int ncpus = bench_ncpus_online(), mode, ret = 0;

	for (mode = 1; mode <= 2; mode++) {
		if (mode > ncpus) {
			fprintf(stderr, "sluice-bench accuracy: one CPU online: no 2-CPU runs\n");
			break;
		}
		fprintf(stderr, "sluice-bench accuracy: %d CPU(s), rates to 100k/s, %.1f s\n", mode,
			o->secs_a);
		ret = run_group(slow, nslow, mode, ncpus, o->secs_a);
		if (!ret) {
			fprintf(stderr, "sluice-bench accuracy: %d CPU(s), 1M/s, %.0f s\n", mode,
				o->secs_b);
			ret = run_group(fast, nfast, mode, ncpus, o->secs_b);
		}
		if (ret) {
			fprintf(stderr, "sluice-bench: Couldn't run the accuracy flood: %s\n",
				strerror(-ret));
			return SLUICE_EXIT_RUNTIME;
		}
	}
	return 0;
}

/* The measurements: every case, what it is and per CPU count what its flood
 * saw (whole ns and packets: render.py derives the rest). */
static void write_cases(struct sluice_json *j, const char *run_id, const struct acc_case *cases,
			int nc)
{
	int i, m;

	json_obj_begin(j, NULL);
	if (run_id)
		json_str(j, "run_id", run_id);
	json_arr_begin(j, "cases");
	for (i = 0; i < nc; i++) {
		const struct acc_case *k = &cases[i];

		json_obj_begin(j, NULL);
		json_str(j, "algo", sluice_algo_name((unsigned)k->algo));
		json_u64(j, "rate", k->rate);
		if (k->na) {
			json_str(j, "note", k->why);
			json_obj_end(j);
			continue;
		}
		json_u64(j, "burst_or_limit", k->burst);
		if (k->window_ns)
			json_u64(j, "window_ns", k->window_ns);
		json_arr_begin(j, "cpus");
		for (m = 0; m < 2; m++) {
			if (!k->r[m].done)
				continue;
			json_obj_begin(j, NULL);
			json_u64(j, "cpus", (__u64)m + 1);
			json_u64(j, "first_ns", k->r[m].first_ns);
			json_u64(j, "last_ns", k->r[m].last_ns);
			json_u64(j, "admitted", k->r[m].admitted);
			json_u64(j, "offered", k->r[m].offered);
			json_u64(j, "counted", k->r[m].counted);
			json_u64(j, "max_pause_ns", k->r[m].max_gap_ns);
			json_obj_end(j);
		}
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
	json_end(j);
}

int cmd_accuracy(int argc, char **argv)
{
	struct acc_case cases[SLUICE_ALGO_MAX * NR_RATES];
	struct acc_case *slow[64], *fast[64];
	int nslow = 0, nfast = 0, nc = 0, ret;
	struct acc_opts o;
	struct sluice_json j;
	FILE *js;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret < 0 ? SLUICE_EXIT_OK : ret;
	ret = setup_cases(cases, &nc, slow, &nslow, fast, &nfast);
	if (!ret)
		ret = run_floods(&o, slow, nslow, fast, nfast);
	if (ret)
		return ret;
	js = fopen(o.json_path, "w");
	if (!js) {
		fprintf(stderr, "sluice-bench: Couldn't write the results: %s\n", strerror(errno));
		return SLUICE_EXIT_RUNTIME;
	}
	json_init(&j, js);
	write_cases(&j, o.run_id, cases, nc);
	if (fclose(js)) {
		fprintf(stderr, "sluice-bench: Couldn't write the results: %s\n", strerror(errno));
		return SLUICE_EXIT_RUNTIME;
	}
	return SLUICE_EXIT_OK;
}
