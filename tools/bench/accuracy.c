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
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
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
	double window_s;
	__u32 slot;
	__u32 per_call; /* packets per BPF_PROG_TEST_RUN */
	struct bench_frame frame;
	double slack_s; /* the longest pause in the flood that loses nothing */
	/* results, per mode (1 or 2 CPUs) */
	struct {
		bool done, saturated, steady;
		__u64 admitted, offered, counted;
		double t_s, naive, model, max_gap_s;
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
			int ret = bench_test_run(g->obj->prog_fd, &k->frame, k->per_call,
						 NULL, NULL, NULL);

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
		k->window_s = 0;
		/* a flooded bucket holds (burst - 1) x interval of slack */
		k->slack_s = (double)(burst - 1) / (double)rate;
	} else {
		k->burst = k->pol.window_limit;
		k->window_s = (double)(k->pol.window >> SLUICE_TICK_SHIFT) / 1e9;
		/* a pause delays a window's admissions, or a log slot's reuse */
		k->slack_s = k->window_s / 4;
	}
	/* 10 ms of the rate per call: each case is offered several times its rate
	 * while the whole cycle of cases stays short. */
	k->per_call = rate / 100 > 16 ? (__u32)(rate / 100) : 16;
	return 0;
}

/* What the algorithm may admit between first and last (ns, CLOCK_MONOTONIC,
 * the clock bpf_ktime_get_ns() reads). */
static double model(const struct acc_case *k, __u64 first, __u64 last)
{
	double t = (double)(last - first) / 1e9;
	__u64 w = k->pol.window >> SLUICE_TICK_SHIFT;

	switch (k->algo) {
	case SLUICE_ALGO_FIXED_WINDOW:
		return (double)k->burst * (double)(last / w - first / w + 1);
	case SLUICE_ALGO_SLIDING_WINDOW: {
		__u64 boundary = (first / w + 1) * w;

		return (double)k->burst + (double)k->rate * (double)(last - boundary) / 1e9;
	}
	case SLUICE_ALGO_SLIDING_LOG:
		return (double)k->burst * (floor(t / k->window_s) + 1);
	}
	return (double)k->rate * t + (double)k->burst;
}

static int run_group(struct acc_case **cases, int n, int mode, int ncpus, double secs)
{
	struct acc_thread th[2] = {};
	struct acc_group g = { .cases = cases, .n = n };
	struct bpfrun_opts oo = { .max_keys = 1024, .max_log_keys = 1024 };
	struct bpfrun obj;
	struct sluice_settings set;
	__u64 first = ~0ULL, last = 0;
	int i, ret;

	if (n > 64)
		return -E2BIG;
	/* A fresh object per group: every bucket starts full, every count at 0. */
	ret = bench_open(&obj, &oo);
	if (ret)
		return ret;
	g.obj = &obj;
	if (bench_held()) {
		ret = bench_hold(obj.prog_fd);
		if (ret)
			goto out;
	}
	sluice_settings_init(&set);
	for (i = 0; i < n; i++) {
		char cidr[48], src[32];

		cases[i]->slot = (__u32)i + 1;
		cases[i]->pol.tag = SLUICE_TAG(cases[i]->slot, cases[i]->algo, 1);
		snprintf(src, sizeof(src), "198.18.%d.%d", 20 + cases[i]->algo, 1 + i);
		snprintf(cidr, sizeof(cidr), "%s/32", src);
		ret = bpfrun_rule(&obj, 0, cidr, &cases[i]->pol, cases[i]->slot);
		if (!ret)
			ret = bench_frame_build(&cases[i]->frame, src, "198.18.0.2");
		if (ret)
			goto out;
	}
	set.nr_rules = (__u32)n;
	set.rules_gen = 0;
	ret = bpfrun_configure(&obj, &set);
	if (ret)
		goto out;

	pthread_barrier_init(&g.barrier, NULL, (unsigned)mode + 1);
	/* Start 10 ms past a whole second, the boundary of every window here:
	 * the first window then has time to reach its limit, and with secs
	 * ending in .5 so has the last. */
	{
		__u64 now = bench_now_ns(), start = (now / NS + 1) * NS + NS / 100;
		struct timespec ts = { .tv_sec = (time_t)((start - now) / NS),
				       .tv_nsec = (long)((start - now) % NS) };

		nanosleep(&ts, NULL);
		g.deadline = start + (__u64)(secs * 1e9);
	}
	for (i = 0; i < mode; i++) {
		th[i].g = &g;
		th[i].cpu = i % ncpus;
		if (pthread_create(&th[i].tid, NULL, flood, &th[i])) {
			g.err = -EAGAIN;
			mode = i;
			break;
		}
	}
	pthread_barrier_wait(&g.barrier);
	for (i = 0; i < mode; i++) {
		pthread_join(th[i].tid, NULL);
		first = th[i].first < first ? th[i].first : first;
		last = th[i].last > last ? th[i].last : last;
	}
	pthread_barrier_destroy(&g.barrier);
	ret = g.err;
	if (ret)
		goto out;
	for (i = 0; i < n; i++) {
		struct acc_case *k = cases[i];
		struct sluice_rstats rs;
		int m = mode - 1, t;

		ret = bpfrun_rstats(&obj, k->slot, &rs);
		if (ret)
			goto out;
		k->r[m].done = true;
		k->r[m].admitted = rs.passed;
		k->r[m].counted = rs.passed + rs.dropped;
		for (t = 0; t < mode; t++)
			k->r[m].offered += th[t].offered[i];
		k->r[m].t_s = (double)(last - first) / 1e9;
		k->r[m].naive = (double)k->rate * k->r[m].t_s + (double)k->burst;
		k->r[m].model = model(k, first, last);
		/* Offered at least 1.5 times what may pass, and every packet
		 * counted by the rule: the flood really was a flood of this rule. */
		k->r[m].saturated = (double)k->r[m].offered >= 1.5 * k->r[m].naive &&
				    k->r[m].counted == k->r[m].offered;
		k->r[m].max_gap_s = (double)g.max_gap[i] / 1e9;
		k->r[m].steady = k->r[m].max_gap_s < k->slack_s;
	}
out:
	bench_hold_release();
	bpfrun_close(&obj);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: sluice-bench accuracy -o JSON -m MARKDOWN [-a SECS] [-b SECS] "
		   "[-H DEV]\n"
		   "  -a  seconds of the rates up to 100k/s (default 20.5: half a window past a\n"
		   "      whole number, so the last window has time to fill)\n"
		   "  -b  seconds of the 1M/s rate (default 5.5)\n"
		   "  -H  a spare veth device to hold the program in the XDP dispatcher: without "
		   "it every\n      BPF_PROG_TEST_RUN call waits two RCU grace periods and the "
		   "flood has gaps\n");
}

int cmd_accuracy(int argc, char **argv)
{
	const char *json_path = NULL, *md_path = NULL;
	struct acc_case cases[SLUICE_ALGO_MAX * NR_RATES];
	struct acc_case *slow[64], *fast[64];
	double secs_a = 20.5, secs_b = 5.5, worst = 0;
	int nslow = 0, nfast = 0, ncpus, mode, opt, ret = 0, nc = 0, i;
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_json j;
	FILE *js = NULL, *md = NULL;
	bool goal = true;
	unsigned int a, r;

	while ((opt = getopt(argc, argv, "o:m:a:b:H:h")) != -1) {
		switch (opt) {
		case 'H':
			if (bench_hold_devices(optarg))
				return SLUICE_EXIT_USAGE;
			break;
		case 'o':
			json_path = optarg;
			break;
		case 'm':
			md_path = optarg;
			break;
		case 'a':
			secs_a = atof(optarg);
			break;
		case 'b':
			secs_b = atof(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return SLUICE_EXIT_USAGE;
		}
	}
	if (!json_path || !md_path || secs_a <= 0 || secs_b <= 0) {
		usage(stderr);
		return SLUICE_EXIT_USAGE;
	}
	ncpus = bench_ncpus_online();

	for (a = 0; a < SLUICE_ALGO_MAX; a++) {
		for (r = 0; r < NR_RATES; r++) {
			struct acc_case *k = &cases[nc++];

			if (setup_case(k, (int)a, rates[r], err, sizeof(err))) {
				fprintf(stderr, "sluice-bench: Couldn't set up %s at %llu/s: %s\n",
					sluice_algo_name(a), (unsigned long long)rates[r], err);
				return SLUICE_EXIT_RUNTIME;
			}
			if (k->na)
				continue;
			if (rates[r] >= 1000000)
				fast[nfast++] = k;
			else
				slow[nslow++] = k;
		}
	}
	for (mode = 1; mode <= 2; mode++) {
		if (mode > ncpus) {
			fprintf(stderr, "sluice-bench accuracy: one CPU online: no 2-CPU runs\n");
			break;
		}
		fprintf(stderr, "sluice-bench accuracy: %d CPU(s), rates to 100k/s, %.1f s\n", mode,
			secs_a);
		ret = run_group(slow, nslow, mode, ncpus, secs_a);
		if (!ret) {
			fprintf(stderr, "sluice-bench accuracy: %d CPU(s), 1M/s, %.0f s\n", mode,
				secs_b);
			ret = run_group(fast, nfast, mode, ncpus, secs_b);
		}
		if (ret) {
			fprintf(stderr, "sluice-bench: Couldn't run the accuracy flood: %s\n",
				strerror(-ret));
			return SLUICE_EXIT_RUNTIME;
		}
	}

	js = fopen(json_path, "w");
	md = fopen(md_path, "w");
	if (!js || !md) {
		fprintf(stderr, "sluice-bench: Couldn't write the results: %s\n", strerror(errno));
		ret = -errno;
		goto out;
	}
	json_init(&j, js);
	json_obj_begin(&j, NULL);
	json_arr_begin(&j, "cases");
	fprintf(md, "### Accuracy: admitted from a flood of one key (real clock)\n\n");
	fprintf(md, "Ratios: admitted / (rate x t + burst), and admitted / the algorithm's own "
		    "bound (model; equal for the buckets). Window algorithms: burst = the "
		    "window's limit.\n\n");
	fprintf(md, "| algo | rate/s | burst or limit | 1 CPU t (s) | 1 CPU admitted | "
		    "1 CPU /(rate*t+burst) | 1 CPU /model | 2 CPU admitted | 2 CPU /(rate*t+burst) "
		    "| 2 CPU /model |\n|---|---|---|---|---|---|---|---|---|---|\n");
	for (i = 0; i < nc; i++) {
		struct acc_case *k = &cases[i];
		int m;

		fprintf(md, "| %s | %llu |", sluice_algo_name((unsigned)k->algo),
			(unsigned long long)k->rate);
		json_obj_begin(&j, NULL);
		json_str(&j, "algo", sluice_algo_name((unsigned)k->algo));
		json_u64(&j, "rate", k->rate);
		if (k->na) {
			fprintf(md, " %s | | | | | | | |\n", k->why);
			json_str(&j, "note", k->why);
			json_obj_end(&j);
			continue;
		}
		json_u64(&j, "burst_or_limit", k->burst);
		if (k->window_s > 0)
			json_f64(&j, "window_s", k->window_s);
		fprintf(md, " %llu%s |", (unsigned long long)k->burst,
			k->window_s > 0 ? (k->window_s < 1 ? " per 0.5 s" : " per 1 s") : "");
		json_arr_begin(&j, "cpus");
		for (m = 0; m < 2; m++) {
			double naive, mod;
			bool valid;

			if (!k->r[m].done) {
				fprintf(md, m ? " - | - | - |" : " - | - | - | - |");
				continue;
			}
			naive = (double)k->r[m].admitted / k->r[m].naive;
			mod = (double)k->r[m].admitted / k->r[m].model;
			valid = k->r[m].saturated && k->r[m].steady;
			if (valid && fabs(mod - 1) > worst)
				worst = fabs(mod - 1);
			if (!valid)
				goal = false;
			if (!m)
				fprintf(md, " %.2f |", k->r[m].t_s);
			fprintf(md, " %llu | %.4f | %.4f", (unsigned long long)k->r[m].admitted,
				naive, mod);
			if (!k->r[m].saturated)
				fprintf(md, " (offered %llu: not a flood, INVALID)",
					(unsigned long long)k->r[m].offered);
			else if (!k->r[m].steady)
				fprintf(md, " (the flood paused %.0f ms > %.0f ms of slack: "
					    "INVALID)",
					1e3 * k->r[m].max_gap_s, 1e3 * k->slack_s);
			fprintf(md, " |");
			json_obj_begin(&j, NULL);
			json_u64(&j, "cpus", (__u64)m + 1);
			json_f64(&j, "seconds", k->r[m].t_s);
			json_u64(&j, "admitted", k->r[m].admitted);
			json_u64(&j, "offered", k->r[m].offered);
			json_u64(&j, "rate_t_plus_burst", (__u64)llround(k->r[m].naive));
			json_u64(&j, "model", (__u64)llround(k->r[m].model));
			json_f64(&j, "ratio", naive);
			json_f64(&j, "ratio_model", mod);
			json_f64(&j, "max_pause_ms", 1e3 * k->r[m].max_gap_s);
			json_bool(&j, "valid", valid);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_obj_end(&j);
		fprintf(md, "\n");
	}
	json_arr_end(&j);
	goal = goal && worst <= 0.01;
	json_f64(&j, "worst_model_error", worst);
	json_bool(&j, "within_1_percent", goal);
	json_obj_end(&j);
	json_end(&j);
	fprintf(md, "\nGoal accuracy within 1%% at every rate (against each algorithm's bound): "
		    "%s (worst %.3f%%).\n\n", goal ? "met" : "MISSED", 100 * worst);
	ret = 0;
out:
	if (js)
		fclose(js);
	if (md)
		fclose(md);
	return ret ? SLUICE_EXIT_RUNTIME : SLUICE_EXIT_OK;
}
