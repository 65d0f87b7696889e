// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-gen: a traffic generator for sluice's tests, demo and bench.
 *
 * It builds one valid UDP frame, or a TCP SYN (-p tcp: frames.c), and hands
 * it to a tiny XDP program with BPF_PROG_TEST_RUN and
 * BPF_F_TEST_XDP_LIVE_FRAMES; the program sends every
 * copy out of DEV (XDP_TX, or a redirect), so the frames arrive at DEV's peer
 * as a NIC would deliver them: through the peer's XDP hook first. With a
 * source prefix the program gives each frame a random source inside it.
 *
 * It refuses any address outside the benchmarking ranges 198.18.0.0/15 and
 * 2001:2::/48, and it must run in the sender's network namespace.
 *
 * A test run returns success for frames the veth then refuses (veth.c): out
 * of a veth, sluice-gen reports what the veth took, and fails when it took
 * (nearly) nothing, naming the cause.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "gen.h"
#include "gen_shared.h"
#include "gen.skel.h"

#define DEFAULT_SECONDS 10

struct worker {
	pthread_t tid;
	int cpu; /* pinned to this CPU, or -1 */
	__u64 quota; /* packets to send; 0: until the deadline */
	double rate; /* packets per second; 0: as fast as it goes */
	__u64 sent; /* written by the worker, read by main while it runs: atomics */
	__u64 start_ns, end_ns;
	__u64 max_lag_ns; /* paced: the furthest a batch went out behind schedule */
	__u64 first_call_ns; /* when its first call began */
	int err;
};

struct run {
	int prog_fd;
	int ifindex;
	__u8 frame[SLUICE_FRAME_MAX];
	unsigned int len;
	__u64 deadline_ns; /* 0: none */
	bool slow_calls; /* every test run pays a dispatcher update: batch more */
	int running; /* workers not yet done (atomic) */
	struct gen_knobs knobs; /* each frame's source: the program's and the socket's */
	bool socket; /* the kernel refuses live frames: a packet socket sends (sock.c) */
};

static struct run run;
static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void sleep_until(__u64 ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000ULL, .tv_nsec = ns % 1000000000ULL };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stopping)
		;
}

/* Send n copies of the frame; they are all sent when this returns 0. */
static int send_frames(__u32 n)
{
	struct xdp_md ctx = {
		.data = 0,
		.data_end = run.len,
		.ingress_ifindex = run.ifindex,
	};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = run.frame, .data_size_in = run.len,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = n,
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES);

	return bpf_prog_test_run_opts(run.prog_fd, &opts) ? -errno : 0;
}

/*
 * Does this kernel take live frames? A probe too short to be a frame is
 * refused with EINVAL by one that does, before anything is sent; a kernel
 * (or a sandbox's) that refuses live frames says so first (EPERM).
 */
static int probe_live(void)
{
	struct xdp_md ctx = { .data_end = 10, .ingress_ifindex = run.ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = run.frame, .data_size_in = 10,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1,
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES);

	return bpf_prog_test_run_opts(run.prog_fd, &opts) ? -errno : 0;
}

static __u64 clamp64(__u64 v, __u64 lo, __u64 hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void worker_loop(struct worker *w)
{
	/* Time one call should take: long enough that its fixed cost is
	 * noise, short enough to stop on time and to pace smoothly. */
	__u64 call_ns = run.slow_calls ? 250000000ULL : 10000000ULL;
	__u64 chunk = 1024, n, t0, t1, dt, sched;
	struct gen_sock sock = { .fd = -1 };
	sigset_t set;

	/* Signals go to the main thread only: a test run interrupted midway
	 * would leave the count of frames sent unknown. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (w->cpu >= 0) {
		cpu_set_t cpus;

		CPU_ZERO(&cpus);
		CPU_SET(w->cpu, &cpus);
		w->err = -pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
		if (w->err)
			return;
	}
	if (run.socket) {
		w->err = gen_sock_open(&sock, run.ifindex, run.frame, run.len);
		if (w->err)
			return;
	}
	if (w->rate > 0) {
		/* Paced: batches of 1/5 of a call's time worth of traffic, each
		 * sent when the schedule says it is due. */
		chunk = clamp64((__u64)(w->rate * call_ns / 5e9), 1, 1U << 20);
	}
	sched = sluice_now_ns();
	while (!stopping && (!w->quota || w->sent < w->quota)) {
		t0 = sluice_now_ns();
		if (run.deadline_ns && t0 >= run.deadline_ns)
			break;
		if (w->rate > 0) {
			__u64 due = sched + (__u64)(w->sent * 1e9 / w->rate);

			if (due > t0) {
				if (run.deadline_ns && due >= run.deadline_ns)
					break;
				sleep_until(due);
				if (stopping)
					break;
			}
		}
		n = chunk;
		if (w->quota && n > w->quota - w->sent)
			n = w->quota - w->sent;
		t0 = sluice_now_ns();
		if (w->rate > 0) {
			__u64 due = sched + (__u64)(w->sent * 1e9 / w->rate);

			if (t0 > due && t0 - due > w->max_lag_ns)
				w->max_lag_ns = t0 - due;
		}
		if (!w->sent)
			w->first_call_ns = t0;
		w->err = run.socket ? gen_sock_send(&sock, &run.knobs, n) : send_frames(n);
		if (w->err)
			break;
		t1 = sluice_now_ns();
		/* A call can wait inside the kernel before its first frame goes
		 * out (e.g. for the XDP dispatcher's mutex), so the frames of a
		 * call are known to be out only when it returns: the time sent
		 * runs from the first return to the last. */
		if (!w->sent)
			w->start_ns = t1;
		__atomic_store_n(&w->sent, w->sent + n, __ATOMIC_RELAXED);
		w->end_ns = t1;
		if (w->rate > 0)
			continue;
		/* As fast as it goes: size the next call from this one's speed,
		 * and no further than the deadline at that speed. */
		dt = t1 - t0 ?: 1;
		chunk = clamp64(n * call_ns / dt, 64, 1U << 24);
		if (run.deadline_ns && run.deadline_ns > t1)
			chunk = clamp64(n * (run.deadline_ns - t1) / dt + 1, 1, chunk);
	}
	if (run.socket)
		gen_sock_close(&sock);
}

static void *worker_main(void *arg)
{
	worker_loop(arg);
	__atomic_sub_fetch(&run.running, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * While sending, out of a veth: the frames of a test run that returned are
 * in the veth's counters already (the run flushes its redirects before it
 * returns). When none of the first frames out was taken, none of the rest
 * will be (the peer runs no NAPI): stop sending, and say so. True if it
 * stopped the run.
 */
static bool watch_delivery(struct worker *w, int n, const char *dev,
			   const struct gen_veth_counters *before)
{
	struct timespec tick = { .tv_nsec = 10000000 };
	struct gen_veth_counters now;
	__u64 sent;
	int i;

	while (!stopping && __atomic_load_n(&run.running, __ATOMIC_ACQUIRE) > 0) {
		nanosleep(&tick, NULL);
		for (sent = 0, i = 0; i < n; i++)
			sent += __atomic_load_n(&w[i].sent, __ATOMIC_RELAXED);
		if (!sent)
			continue;
		if (gen_veth_read(dev, &now))
			return false;
		if (now.xmit != before->xmit || now.xmit_err != before->xmit_err)
			return false;
		stopping = 1;
		return true;
	}
	return false;
}

/* Paced: the span from the first frame out to the last, as the program saw
 * it; [first, last] is left alone when the stamps cannot be read. */
static void stamped_span(struct gen_bpf *skel, __u64 *first, __u64 *last)
{
	struct gen_stamp *st;
	int ncpus = libbpf_num_possible_cpus(), i;
	__u64 lo = ~0ULL, hi = 0;
	__u32 key = 0;

	if (ncpus <= 0)
		return;
	st = calloc(ncpus, sizeof(*st));
	if (!st)
		return;
	if (!bpf_map__lookup_elem(skel->maps.gen_stamps, &key, sizeof(key), st, ncpus * sizeof(*st),
				  0)) {
		for (i = 0; i < ncpus; i++) {
			if (!st[i].first_ns)
				continue;
			if (st[i].first_ns < lo)
				lo = st[i].first_ns;
			if (st[i].last_ns > hi)
				hi = st[i].last_ns;
		}
		if (hi) {
			*first = lo;
			*last = hi;
		}
	}
	free(st);
}

/* "0", "0,1", "0-3,6": CPUs this process may run on. */
static int parse_cpus(const char *s, int *cpus, int max, int *n, char *err, size_t errlen)
{
	cpu_set_t allowed;
	const char *p = s;
	char *end;
	long a, b, c;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		CPU_ZERO(&allowed);
	*n = 0;
	while (*p) {
		a = strtol(p, &end, 10);
		if (end == p || a < 0)
			goto bad;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1 || b < a)
				goto bad;
			p = end;
		}
		for (c = a; c <= b; c++) {
			if (c >= CPU_SETSIZE || !CPU_ISSET(c, &allowed)) {
				snprintf(err, errlen,
					 "CPU %ld in -c %s is not one this process may run on: "
					 "see 'nproc' and 'taskset -p $$'",
					 c, s);
				return -EINVAL;
			}
			if (*n == max) {
				snprintf(err, errlen, "-c %s names more than %d CPUs", s, max);
				return -EINVAL;
			}
			cpus[(*n)++] = c;
		}
		if (*p == ',')
			p++;
		else if (*p)
			goto bad;
	}
	if (*n)
		return 0;
bad:
	snprintf(err, errlen, "-c '%s' is not a CPU list: write it like 0 or 0,1 or 0-3", s);
	return -EINVAL;
}

/*
 * A test run with repeat > 1 adds the program to the kernel's XDP dispatcher
 * and removes it again when it returns, each time waiting for an RCU grace
 * period (~25 ms a call here). Attached somewhere for as long as we run, the
 * program stays in the dispatcher and a call costs microseconds. Loopback in
 * generic mode is the one device every namespace has and nothing of ours
 * uses; the program passes every real packet (its ingress_ifindex is not
 * DEV's), and the bpf_link goes away with the process, however it ends.
 */
static int attach_keeper(int prog_fd, bool verbose)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = XDP_FLAGS_SKB_MODE);
	int lo = if_nametoindex("lo"), fd;

	fd = lo ? bpf_link_create(prog_fd, lo, BPF_XDP, &opts) : -ENODEV;
	if (fd < 0 && verbose)
		fprintf(stderr,
			"sluice-gen: Couldn't keep the program in the XDP dispatcher "
			"(loopback: %s): every batch will cost ~25 ms more\n",
			strerror(-fd));
	return fd;
}

/* the help text at column 0, as wide as it prints */
/* clang-format off */
static void usage(FILE *f)
{
	fprintf(f,
"Usage: sluice-gen -i DEV -s SRC[/LEN] -d DST [options]\n"
"Send UDP frames, or TCP SYNs, out of DEV with BPF_PROG_TEST_RUN live frames, so\n"
"that they arrive at DEV's peer (e.g. the other end of a veth pair) through its\n"
"XDP hook; with a source prefix, each from a random source in it.\n"
"Addresses must lie in 198.18.0.0/15 or 2001:2::/48. Needs root; run it in the\n"
"sender's network namespace (ip netns exec NS sluice-gen ...).\n"
"\n"
"  -i, --dev DEV         send out of DEV\n"
"  -s, --src SRC[/LEN]   source address; with /LEN a random source inside the prefix per frame\n"
"  -d, --dst DST         destination address\n"
"  -p, --proto udp|tcp   udp (default), or tcp: a SYN flood's SYNs (no ACK, no options,\n"
"                        no data; a longer -l is Ethernet padding)\n"
"      --dst-mac MAC     destination MAC (default: the veth peer's address)\n"
"      --src-mac MAC     source MAC (default: DEV's address)\n"
"  -l, --len BYTES       Ethernet frame length without FCS (default 60, or the headers' size)\n"
"  -t, --time DUR        send for this long (default %d s unless -n is given): 2.5, 500ms, 1m\n"
"  -n, --count PACKETS   send this many in total, then stop\n"
"  -c, --cpus CPUS       one sending thread pinned on each CPU listed: 0 | 0,1 | 0-3\n"
"  -r, --rate PPS        pace the total to about PPS packets per second\n"
"      --keys N          with /LEN: draw the source from N distinct addresses only\n"
"      --vlan ID         add an 802.1Q tag\n"
"      --sport PORT, --dport PORT   UDP or TCP ports (default 4242 and 9)\n"
"      --redirect        XDP_REDIRECT to DEV instead of XDP_TX (same path, other action)\n"
"      --expect-drops    the veth refusing (nearly) every frame is expected: exit 0 anyway\n"
"      --check N         send nothing: give N copies of the frame their source through\n"
"                        the XDP program (test runs without live frames) and through the\n"
"                        packet socket's sender, and check every copy's checksums and\n"
"                        source; exit 1 at the first fault\n"
"  -j, --json            print {\"packets\":N,\"via\":V,\"seconds\":S,\"pps\":P}; with -r also\n"
"                        \"max_lag_ms\": how far the sender fell behind its schedule;\n"
"                        out of a veth also \"delivered\", \"delivered_pps\", \"queue_full\"\n"
"                        and \"not_taken\" (see below)\n"
"  -v, --verbose         say what is sent, and show libbpf's messages\n"
"  -h, --help            this text\n"
"\n"
"With -r, seconds is the span from the first frame out to the last, as the\n"
"program stamped them: rate x seconds is what a limiter should have earned them.\n"
"\n"
"Out of a veth, sluice-gen also reports what the veth delivered to its peer's\n"
"XDP hook (DEV's ethtool counters tx_queue_N_xdp_xmit): \"queue_full\" frames it\n"
"refused because the peer's queue was full (the receiver is not keeping up), and\n"
"\"not_taken\" frames it never took: a veth delivers XDP frames only to a peer that\n"
"runs an XDP program in native mode, or has GRO or threaded NAPI on. When (nearly)\n"
"nothing was taken, sluice-gen stops, says why and how to fix it, and exits 1\n"
"unless --expect-drops is given. The counters are DEV's: another sender on DEV\n"
"at the same time adds to them.\n"
"\n"
"Where the kernel refuses live frames (a sandbox's may answer EPERM to every\n"
"one), sluice-gen sends the same frames through a packet socket instead:\n"
"slower, through DEV's transmit path, and a veth then takes every frame (into\n"
"its peer's XDP hook where the peer runs XDP in native mode, else into its\n"
"stack); \"via\" says which way was used (\"live-frames\" or \"socket\").\n",
		DEFAULT_SECONDS);
}
/* clang-format on */

static int usage_error(const char *msg)
{
	fprintf(stderr, "sluice-gen: %s\n", msg);
	fprintf(stderr, "Try 'sluice-gen --help'.\n");
	return SLUICE_EXIT_USAGE;
}

/* Split the source prefix into the knobs k (of the program, and of the
 * packet socket's sender). */
static int set_source_knobs(struct gen_knobs *k, const struct sluice_cidr *src, __u64 keys,
			    char *err, size_t errlen)
{
	unsigned int host = (src->family == 4 ? 32 : 128) - src->prefixlen;
	__u64 hi = 0, lo = 0;
	int i;

	if (keys && host < 64 && keys > (1ULL << host)) {
		snprintf(err, errlen,
			 "--keys %llu is more than the %llu addresses in the source "
			 "prefix: use a shorter prefix or fewer keys",
			 (unsigned long long)keys, 1ULL << host);
		return -EINVAL;
	}
	if (keys > 0xffffffffULL) {
		snprintf(err, errlen, "--keys %llu is too large: at most %u",
			 (unsigned long long)keys, 0xffffffffU);
		return -EINVAL;
	}
	if (!host)
		return 0;
	k->family = src->family;
	k->nkeys = keys;
	if (src->family == 4) {
		for (i = 0; i < 4; i++)
			lo = lo << 8 | src->addr[i];
		k->base_lo = lo;
		k->mask_lo = (1ULL << host) - 1;
		return 0;
	}
	for (i = 0; i < 8; i++) {
		hi = hi << 8 | src->addr[i];
		lo = lo << 8 | src->addr[8 + i];
	}
	k->base_hi = hi;
	k->base_lo = lo;
	if (src->prefixlen < 64) {
		/* Host numbers fill the /64 network half first: distinct keys. */
		k->hi_bits = 64 - src->prefixlen;
		k->mask_hi = (1ULL << (64 - src->prefixlen)) - 1;
		k->mask_lo = ~0ULL;
	} else {
		k->mask_lo = host == 64 ? ~0ULL : (1ULL << host) - 1;
	}
	return 0;
}

enum {
	OPT_DST_MAC = 256,
	OPT_SRC_MAC,
	OPT_KEYS,
	OPT_VLAN,
	OPT_SPORT,
	OPT_DPORT,
	OPT_REDIRECT,
	OPT_EXPECT_DROPS,
	OPT_CHECK,
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'i' },
		{ "src", required_argument, NULL, 's' },
		{ "proto", required_argument, NULL, 'p' },
		{ "dst", required_argument, NULL, 'd' },
		{ "dst-mac", required_argument, NULL, OPT_DST_MAC },
		{ "src-mac", required_argument, NULL, OPT_SRC_MAC },
		{ "len", required_argument, NULL, 'l' },
		{ "time", required_argument, NULL, 't' },
		{ "count", required_argument, NULL, 'n' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "rate", required_argument, NULL, 'r' },
		{ "keys", required_argument, NULL, OPT_KEYS },
		{ "vlan", required_argument, NULL, OPT_VLAN },
		{ "sport", required_argument, NULL, OPT_SPORT },
		{ "dport", required_argument, NULL, OPT_DPORT },
		{ "redirect", no_argument, NULL, OPT_REDIRECT },
		{ "expect-drops", no_argument, NULL, OPT_EXPECT_DROPS },
		{ "check", required_argument, NULL, OPT_CHECK },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *dev = NULL, *src_s = NULL, *dst_s = NULL, *dst_mac_s = NULL;
	const char *src_mac_s = NULL;
	struct sluice_frame spec = { .sport = 4242, .dport = 9 };
	__u64 v, count = 0, rate = 0, keys = 0, len = 0, time_ns = 0, check = 0;
	int cpus[CPU_SETSIZE], ncpus = 0, nworkers, i, opt, ret;
	bool json = false, redirect = false, verbose = false, expect_drops = false;
	bool tcp = false; /* -p tcp: TCP SYNs, not UDP */
	struct gen_veth_counters before, after;
	struct gen_delivery dl = { 0 };
	bool counted = false, cut_short = false;
	struct worker *workers = NULL;
	struct gen_bpf *skel = NULL;
	int keeper_fd = -1;
	__u64 sent = 0, out_frames, first = ~0ULL, last = 0, lag = 0;
	__u64 drops_before = 0, drops_after = 0;
	char err[SLUICE_ERR_LEN];
	struct gen_link link;
	unsigned int min_len;
	struct sigaction sa;
	double secs;

	while ((opt = getopt_long(argc, argv, "i:s:d:p:l:t:n:c:r:jvh", opts, NULL)) != -1) {
		ret = 0;
		switch (opt) {
		case 'i':
			dev = optarg;
			break;
		case 's':
			src_s = optarg;
			break;
		case 'd':
			dst_s = optarg;
			break;
		case 'p':
			if (!strcmp(optarg, "udp")) {
				tcp = false;
			} else if (!strcmp(optarg, "tcp")) {
				tcp = true;
			} else {
				snprintf(err, sizeof(err),
					 "-p %s is not a protocol sluice-gen sends: udp or tcp",
					 optarg);
				ret = -EINVAL;
			}
			break;
		case OPT_DST_MAC:
			dst_mac_s = optarg;
			break;
		case OPT_SRC_MAC:
			src_mac_s = optarg;
			break;
		case 'l':
			ret = sluice_parse_uint("frame length (-l)", optarg, SLUICE_FRAME_MAX, &len,
						err, sizeof(err));
			break;
		case 't':
			ret = sluice_parse_duration("time (-t)", optarg, &time_ns, err,
						    sizeof(err));
			break;
		case 'n':
			ret = sluice_parse_uint("packet count (-n)", optarg, ~0ULL, &count, err,
						sizeof(err));
			break;
		case 'c':
			ret = parse_cpus(optarg, cpus, CPU_SETSIZE, &ncpus, err, sizeof(err));
			break;
		case 'r':
			ret = sluice_parse_uint("rate (-r, packets per second)", optarg,
						1000000000ULL, &rate, err, sizeof(err));
			break;
		case OPT_KEYS:
			ret = sluice_parse_uint("--keys", optarg, ~0ULL, &keys, err, sizeof(err));
			break;
		case OPT_VLAN:
			ret = sluice_parse_uint("--vlan", optarg, 4094, &v, err, sizeof(err));
			spec.nr_vlans = 1;
			spec.vlan[0] = v;
			break;
		case OPT_SPORT:
			ret = sluice_parse_uint("--sport", optarg, 65535, &v, err, sizeof(err));
			spec.sport = v;
			break;
		case OPT_DPORT:
			ret = sluice_parse_uint("--dport", optarg, 65535, &v, err, sizeof(err));
			spec.dport = v;
			break;
		case OPT_REDIRECT:
			redirect = true;
			break;
		case OPT_EXPECT_DROPS:
			expect_drops = true;
			break;
		case OPT_CHECK:
			ret = sluice_parse_uint("--check", optarg, 10000000, &check, err,
						sizeof(err));
			if (!ret && !check) {
				snprintf(err, sizeof(err),
					 "--check needs a count of frames: 1 or more");
				ret = -EINVAL;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return SLUICE_EXIT_OK;
		default:
			fprintf(stderr, "Try 'sluice-gen --help'.\n");
			return SLUICE_EXIT_USAGE;
		}
		if (ret)
			return usage_error(err);
	}
	if (optind < argc) {
		snprintf(err, sizeof(err), "unexpected argument '%s'", argv[optind]);
		return usage_error(err);
	}
	if (!dev || !src_s || !dst_s)
		return usage_error("-i DEV, -s SRC and -d DST are required");

	/* The safety property first: nothing leaves for an address outside the
	 * benchmarking ranges, whatever else is wrong with the command. */
	if (sluice_parse_cidr(src_s, &spec.src, err, sizeof(err)) ||
	    sluice_frame_check_range("source", &spec.src, err, sizeof(err)))
		return usage_error(err);
	if (sluice_parse_addr(dst_s, &spec.dst, err, sizeof(err)) ||
	    sluice_frame_check_range("destination", &spec.dst, err, sizeof(err)))
		return usage_error(err);
	if (spec.src.family != spec.dst.family)
		return usage_error("the source and the destination must both be IPv4 or both IPv6");
	if (keys && spec.src.prefixlen == (spec.src.family == 4 ? 32 : 128))
		return usage_error("--keys needs a source prefix to draw from: -s ADDR/LEN");
	if (dst_mac_s && gen_parse_mac(dst_mac_s, spec.dst_mac, err, sizeof(err)))
		return usage_error(err);
	if (src_mac_s && gen_parse_mac(src_mac_s, spec.src_mac, err, sizeof(err)))
		return usage_error(err);
	min_len = tcp ? gen_syn_min_len(&spec) : sluice_frame_min_len(&spec);
	spec.len = len ? len : min_len > 60 ? min_len : 60;
	if (spec.len < min_len) {
		snprintf(err, sizeof(err), "frame length %u is too short: these headers need %u",
			 spec.len, min_len);
		return usage_error(err);
	}

	run.ifindex = if_nametoindex(dev);
	if (!run.ifindex) {
		snprintf(err, sizeof(err),
			 "there is no interface %s in this network namespace: "
			 "run sluice-gen in the sender's (ip netns exec NS sluice-gen ...)",
			 dev);
		return usage_error(err);
	}
	if (gen_read_link(run.ifindex, &link, err, sizeof(err))) {
		fprintf(stderr, "sluice-gen: %s\n", err);
		return SLUICE_EXIT_RUNTIME;
	}
	if (!src_mac_s)
		memcpy(spec.src_mac, link.mac, 6);
	if (!dst_mac_s) {
		if (!link.has_peer) {
			snprintf(err, sizeof(err),
				 "%s is not a veth whose peer can be read: give "
				 "the receiver's MAC with --dst-mac",
				 dev);
			return usage_error(err);
		}
		memcpy(spec.dst_mac, link.peer_mac, 6);
	}
	if (link.mtu && spec.len > link.mtu + sluice_frame_l3_off(&spec)) {
		snprintf(err, sizeof(err), "frame length %u does not fit %s's MTU %u: at most %u",
			 spec.len, dev, link.mtu, link.mtu + sluice_frame_l3_off(&spec));
		return usage_error(err);
	}
	if ((tcp ? gen_build_syn : sluice_frame_build)(&spec, run.frame, err, sizeof(err)))
		return usage_error(err);
	run.len = spec.len;

	sluice_quiet_libs();
	if (verbose)
		sluice_set_log_level(SLUICE_LOG_DEBUG);
	skel = gen_bpf__open();
	if (!skel) {
		ret = -errno;
		fprintf(stderr, "sluice-gen: Couldn't open the generator's BPF object: %s\n",
			strerror(-ret));
		return SLUICE_EXIT_RUNTIME;
	}
	run.knobs.l3_off = sluice_frame_l3_off(&spec);
	run.knobs.proto = tcp ? IPPROTO_TCP : IPPROTO_UDP;
	skel->rodata->tx_ifindex = run.ifindex;
	skel->rodata->stamp = rate > 0;
	skel->rodata->redirect_ifindex = redirect ? run.ifindex : 0;
	if (set_source_knobs(&run.knobs, &spec.src, keys, err, sizeof(err))) {
		gen_bpf__destroy(skel);
		return usage_error(err);
	}
	skel->rodata->knobs = run.knobs;
	ret = gen_bpf__load(skel);
	if (ret) {
		fprintf(stderr, "sluice-gen: Couldn't load the generator's XDP program: %s%s\n",
			strerror(-ret), ret == -EPERM ? ": run it as root" : "");
		ret = SLUICE_EXIT_RUNTIME;
		goto out;
	}
	run.prog_fd = bpf_program__fd(skel->progs.gen_xdp);
	if (check) {
		ret = SLUICE_EXIT_OK;
		if (gen_check(run.prog_fd, run.ifindex, run.frame, run.len, &run.knobs, check, err,
			      sizeof(err))) {
			fprintf(stderr, "sluice-gen: --check: %s\n", err);
			ret = SLUICE_EXIT_RUNTIME;
		} else {
			printf("checked %llu %s frames out of the XDP program and %llu out of the "
			       "packet socket's sender: all valid\n",
			       (unsigned long long)check, tcp ? "TCP SYN" : "UDP",
			       (unsigned long long)check);
		}
		goto out;
	}
	ret = probe_live();
	run.socket = gen_live_refused(ret);
	if (run.socket && verbose)
		fprintf(stderr,
			"sluice-gen: this kernel refuses live frames (%s): sending through a "
			"packet socket instead, slower; the frames are the same\n",
			strerror(-ret));
	if (!run.socket) {
		keeper_fd = attach_keeper(run.prog_fd, verbose);
		run.slow_calls = keeper_fd < 0;
	}

	if (run.socket) {
		/* out of a socket, a veth takes every frame: no peer to advise */
	} else if (verbose && link.veth && link.has_peer && gen_peer_runs_napi(&link)) {
		fprintf(stderr,
			"sluice-gen: %s's peer %s runs an XDP program in native mode: the "
			"veth delivers frames to it\n",
			dev, link.peer_name);
	} else if (verbose && link.veth) {
		char why[1024];

		gen_peer_advice(&link, why, sizeof(why));
		fprintf(stderr, "sluice-gen: %s%s\n", why,
			!link.has_peer || !link.peer_up ?
				"" :
				"; unless GRO or threaded NAPI is on there (which cannot be seen from "
				"here), the veth will drop every frame");
	}
	if (verbose) {
		char s[INET6_ADDRSTRLEN + 8], d[INET6_ADDRSTRLEN], m[24];

		sluice_format_cidr(&spec.src, true, s, sizeof(s));
		sluice_format_cidr(&spec.dst, false, d, sizeof(d));
		gen_format_mac(spec.dst_mac, m, sizeof(m));
		fprintf(stderr, "sluice-gen: %u-byte %s frames from %s to %s (MAC %s) out of %s\n",
			spec.len, tcp ? "TCP SYN" : "UDP", s, d, m, dev);
	}

	nworkers = ncpus ? ncpus : 1;
	workers = calloc(nworkers, sizeof(*workers));
	if (!workers) {
		fprintf(stderr, "sluice-gen: Couldn't allocate %d threads: %s\n", nworkers,
			strerror(ENOMEM));
		ret = SLUICE_EXIT_RUNTIME;
		goto out;
	}
	for (i = 0; i < nworkers; i++) {
		workers[i].cpu = ncpus ? cpus[i] : -1;
		/* Shares of the total; the first threads take the remainders. */
		if (count)
			workers[i].quota = count / nworkers + ((__u64)i < count % nworkers);
		if (rate)
			workers[i].rate = (double)rate / nworkers;
	}
	if (count && count < (__u64)nworkers)
		nworkers = count; /* a thread with a quota of 0 would never stop */

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!count && !time_ns)
		time_ns = DEFAULT_SECONDS * 1000000000ULL;
	if (run.socket)
		counted = link.veth && !gen_link_tx_dropped(dev, &drops_before);
	else
		counted = link.veth && !gen_veth_read(dev, &before);
	if (time_ns)
		run.deadline_ns = sluice_now_ns() + time_ns;

	ret = SLUICE_EXIT_OK;
	run.running = nworkers;
	for (i = 0; i < nworkers; i++) {
		int e = pthread_create(&workers[i].tid, NULL, worker_main, &workers[i]);

		if (e) {
			fprintf(stderr, "sluice-gen: Couldn't start a sending thread: %s\n",
				strerror(e));
			stopping = 1;
			__atomic_sub_fetch(&run.running, nworkers - i, __ATOMIC_RELEASE);
			nworkers = i;
			ret = SLUICE_EXIT_RUNTIME;
			break;
		}
	}
	if (counted && !expect_drops && !run.socket)
		cut_short = watch_delivery(workers, nworkers, dev, &before);
	for (i = 0; i < nworkers; i++) {
		struct worker *w = &workers[i];

		pthread_join(w->tid, NULL);
		if (w->err) {
			if (w->cpu >= 0 && !w->sent && w->err == -EINVAL)
				fprintf(stderr, "sluice-gen: Couldn't pin a thread on CPU %d: %s\n",
					w->cpu, strerror(-w->err));
			else
				fprintf(stderr, "sluice-gen: Couldn't send frames out of %s: %s\n",
					dev, strerror(-w->err));
			ret = SLUICE_EXIT_RUNTIME;
		}
		sent += w->sent;
		/* Out of a socket a call's frames leave while it runs, from its
		 * start: the span covers them all. */
		if (run.socket && w->first_call_ns && w->first_call_ns < first)
			first = w->first_call_ns;
		else if (!run.socket && w->start_ns && w->start_ns < first)
			first = w->start_ns;
		if (w->end_ns > last)
			last = w->end_ns;
		if (w->max_lag_ns > lag)
			lag = w->max_lag_ns;
	}
	if (rate && !run.socket)
		stamped_span(skel, &first, &last);
	secs = last > first ? (last - first) / 1e9 : 0;
	if (skel->bss->bad_frames)
		fprintf(stderr,
			"sluice-gen: %llu frames were not sent: their headers were not "
			"where the program expected them\n",
			(unsigned long long)skel->bss->bad_frames);
	out_frames = sent - (skel->bss->bad_frames < sent ? skel->bss->bad_frames : sent);
	if (counted && run.socket && !gen_link_tx_dropped(dev, &drops_after)) {
		/* The veth takes every frame into its peer's queue or stack but
		 * those it drops (the queue full); 32-bit counters. */
		dl.queue_full = (__u32)(drops_after - drops_before);
		if (dl.queue_full > out_frames)
			dl.queue_full = out_frames;
		dl.delivered = out_frames - dl.queue_full;
	} else if (counted && !run.socket && !gen_veth_read(dev, &after)) {
		gen_veth_delivery(&before, &after, out_frames, &dl);
	} else {
		counted = false;
	}
	if (json) {
		struct sluice_json j;

		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_u64(&j, "packets", sent);
		json_str(&j, "via", run.socket ? "socket" : "live-frames");
		json_f64(&j, "seconds", secs);
		json_f64(&j, "pps", secs > 0 ? sent / secs : 0);
		if (rate)
			json_f64(&j, "max_lag_ms", lag / 1e6);
		if (counted) {
			json_u64(&j, "delivered", dl.delivered);
			json_f64(&j, "delivered_pps", secs > 0 ? dl.delivered / secs : 0);
			json_u64(&j, "queue_full", dl.queue_full);
			json_u64(&j, "not_taken", dl.not_taken);
		}
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("sent %llu packets in %.3f s: %.3f Mpps", (unsigned long long)sent, secs,
		       secs > 0 ? sent / secs / 1e6 : 0);
		if (rate)
			printf(" (paced; at most %.1f ms behind schedule)", lag / 1e6);
		if (run.socket)
			printf(" (through a packet socket: this kernel refuses live frames)");
		printf("\n");
		if (counted)
			printf("delivered %llu to %s: %.3f Mpps; dropped by the veth: %llu with the "
			       "queue full, %llu not taken\n",
			       (unsigned long long)dl.delivered,
			       link.has_peer ? link.peer_name : "the peer",
			       secs > 0 ? dl.delivered / secs / 1e6 : 0,
			       (unsigned long long)dl.queue_full, (unsigned long long)dl.not_taken);
	}
	if (counted && gen_delivery_failed(&dl, out_frames)) {
		char why[1024];

		gen_peer_advice(&link, why, sizeof(why));
		fprintf(stderr,
			"sluice-gen: %s: the veth took %llu of the %s%llu frames sent out "
			"of %s%s: %s%s\n",
			expect_drops ? "note" : "warning", (unsigned long long)dl.delivered,
			cut_short ? "first " : "", (unsigned long long)out_frames, dev,
			cut_short ? ", so sending stopped" : "", why,
			expect_drops ? "" : " (--expect-drops if that is expected)");
		if (!expect_drops && ret == SLUICE_EXIT_OK)
			ret = SLUICE_EXIT_RUNTIME;
	}
out:
	if (keeper_fd >= 0)
		close(keeper_fd);
	free(workers);
	gen_bpf__destroy(skel);
	return ret;
}
