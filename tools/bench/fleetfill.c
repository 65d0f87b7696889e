// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-bench fleetfill: the measuring half of the bench's fleet part
 * (tools/bench/fleet.sh), run in the namespace of an interface whose fleet
 * agent (`sluice run IFACE --redis ...`) is running:
 *
 *   fleetfill -i IFACE -n N -p PID [-w WARM] [-s SYNCS] [-T SECS] [-k PKTS]
 *             [-o ONE]
 *
 * It keeps N keys active for the agent: no traffic could make a million
 * keys active every sync on the bench machine, so after each sync (the
 * agent's sluice_fleet.syncs moves) it writes, in one BPF_MAP_UPDATE_BATCH,
 * the cost of one packet of the default policy into used[0] of N keys of
 * sluice_fleet_use. The keys are what the datapath makes for IPv4 sources
 * under the default policy (its tag, family 4, /32): 198.18.0.0 + i for
 * i < N, so past 131,072 keys they leave 198.18.0.0/15; they are map keys
 * only, no packet carries them. A refill goes between the agent's apply
 * (which takes the pushed usage off) and its next collect, which must then
 * find all N keys and no other.
 *
 * After WARM syncs (default 2) it prints the line "start", after SYNCS more
 * (default 5) a line of results, "key=value ..." (fleet.sh reads Redis's
 * counters at both lines):
 *   syncs, keys (pushed), seconds (between the two syncs' ends, from the
 *   agent's last_ok_ns), rtt_ms and rtt_max_ms (the agent's last_rtt_ns of
 *   each sync of the span), agent_cpu (utime + stime of PID over the span,
 *   seconds), fill_cpu (this process's), fill_ms and fill_max_ms (one refill).
 * A sync of the span that pushes other than N keys spoils it: fewer, when a
 * sync ran past the interval and the agent began the next at once, before
 * the refill (a busy machine): the span starts again, "start" anew, up to
 * three times; more (keys skipped past --sync-keys N: traffic) fails the run.
 * No sync of the agent may fail in the span; -T (default 60 s) bounds the
 * wait for any one sync.
 *
 * -k PKTS: each refill writes PKTS packets into a key (default 1): heavy
 * keys, past the agent's --sync-threshold. -o ONE: a spoofed flood, the
 * last ONE of the N keys one packet each, written once, at the first fill
 * (a spoofed source sends its packet and is gone), and only the N - ONE
 * heavy ones refilled; a sync then pushes the heavy keys and whatever the
 * agent no longer holds of the others (past --sync-max-age); a collect
 * over all the held keys is long, and a sync may begin before the refill
 * after the one before: the span checks only that it pushed at least half
 * the heavy keys refilled.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <bpf/bpf.h>

#include "bench.h"

struct fill {
	int fd;
	struct sluice_key *keys;
	struct sluice_fleet_use *vals;
	__u32 n; /* keys refilled: the first n */
	__u32 one; /* -o: the flood's keys after them, filled once */
};

/* Write all N keys' usage: 0, or -errno said. *ms: how long it took. */
static int fill_once(const struct fill *f, const char *ifname, double *ms)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o, .elem_flags = BPF_ANY);
	__u64 t0 = bench_now_ns();
	__u32 count = f->n;
	int ret = bpf_map_update_batch(f->fd, f->keys, f->vals, &count, &o);

	*ms = (double)(bench_now_ns() - t0) / 1e6;
	if (ret)
		ret = -errno;
	else if (count != f->n)
		ret = -ENOSPC;
	if (ret)
		fprintf(stderr,
			"fleetfill: Couldn't write %u keys into sluice_fleet_use of %s "
			"(%u written): %s\n",
			f->n, ifname, count, strerror(-ret));
	return ret;
}

/* utime + stime of pid, seconds: fields 14 and 15 of /proc/PID/stat. */
static int proc_cpu(int pid, double *out)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	size_t len;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fp = fopen(path, "r");
	if (!fp)
		return -errno;
	len = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[len] = '\0';
	/* the name in parentheses may hold spaces: count from its end */
	p = strrchr(buf, ')');
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -EPROTO;
	*out = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

static double self_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void usage(FILE *fp)
{
	fprintf(fp, "usage: sluice-bench fleetfill -i IFACE -n KEYS -p AGENT_PID [-w WARM] "
		    "[-s SYNCS] [-T SECS] [-k PKTS] [-o ONE]\n"
		    "  keeps KEYS keys of IFACE's default policy active for its fleet agent,\n"
		    "  then measures SYNCS syncs after WARM (default 2 and 5; -T: the longest\n"
		    "  wait for one sync, default 60 s); PKTS packets a key a refill (1);\n"
		    "  ONE of the KEYS a spoofed flood: one packet each, written once\n");
}

/* What the agent's state says now. */
struct snap {
	__u64 syncs, errors, pushed, skipped, last_ok_ns, rtt_ns;
};

static void snap_read(const struct sluice_fleet *f, struct snap *s)
{
	s->syncs = __atomic_load_n(&f->syncs, __ATOMIC_ACQUIRE);
	s->errors = __atomic_load_n(&f->sync_errors, __ATOMIC_ACQUIRE);
	s->pushed = __atomic_load_n(&f->keys_pushed, __ATOMIC_ACQUIRE);
	s->skipped = __atomic_load_n(&f->keys_skipped, __ATOMIC_ACQUIRE);
	s->last_ok_ns = __atomic_load_n(&f->last_ok_ns, __ATOMIC_ACQUIRE);
	s->rtt_ns = __atomic_load_n(&f->last_rtt_ns, __ATOMIC_ACQUIRE);
}

/*
 * Wait for the agent's next sync to end: 0 with *s read after it. The agent
 * counts a sync (syncs) before it adds its keys (keys_pushed): the state is
 * read again 2 ms after syncs moved, long after those stores and long before
 * the next sync (10 ms at the least).
 */
static int wait_sync(const struct sluice_fleet *f, struct snap *s, double timeout_s,
		     const char *ifname)
{
	__u64 deadline = bench_now_ns() + (__u64)(timeout_s * 1e9);
	struct snap now;

	for (;;) {
		struct timespec ts = { .tv_nsec = 1000000 };

		snap_read(f, &now);
		if (now.errors != s->errors) {
			fprintf(stderr, "fleetfill: a sync of the fleet agent of %s failed: %.*s\n",
				ifname, (int)sizeof(f->last_error), f->last_error);
			return -EIO;
		}
		if (now.syncs != s->syncs)
			break;
		if (bench_now_ns() > deadline) {
			fprintf(stderr,
				"fleetfill: the fleet agent of %s did not sync within %.0f s "
				"(-T %.0f): is it running, with --redis-timeout long enough for "
				"the keys?\n",
				ifname, timeout_s, timeout_s);
			return -ETIMEDOUT;
		}
		nanosleep(&ts, NULL);
	}
	{
		struct timespec ts = { .tv_nsec = 2000000 };

		nanosleep(&ts, NULL);
	}
	snap_read(f, s);
	return 0;
}

/* Spans a run may start before it gives up: a sync that runs past the
 * interval (a busy machine) makes the next start at once, before a refill. */
#define SPANS 3

/*
 * One span of `syncs` syncs from the end of the sync in *s: "start", then a
 * refill before each sync, then the line of results. -EAGAIN when a sync of
 * the span did not push exactly the N keys (the caller starts again).
 */
static int measure(const struct fill *fl, const struct sluice_fleet *f, const char *ifname, int pid,
		   __u64 syncs, double timeout, struct snap *s)
{
	double fill_ms, fill_sum = 0, fill_max = 0, rtt_sum = 0, rtt_max = 0, rtt;
	double cpu0, cpu1, self0, self1;
	struct snap s0 = *s, prev;
	__u64 i;

	if (proc_cpu(pid, &cpu0)) {
		fprintf(stderr, "fleetfill: Couldn't read /proc/%d/stat: is the agent running?\n",
			pid);
		return -ESRCH;
	}
	self0 = self_cpu();
	printf("start\n");
	fflush(stdout);
	for (i = 0; i < syncs; i++) {
		if (fill_once(fl, ifname, &fill_ms))
			return -EIO;
		fill_sum += fill_ms;
		fill_max = fill_ms > fill_max ? fill_ms : fill_max;
		prev = *s;
		if (wait_sync(f, s, timeout, ifname))
			return -EIO;
		if (s->skipped != prev.skipped) {
			fprintf(stderr,
				"fleetfill: a sync of %s found %llu more active keys than "
				"the %u written: other keys are active (traffic on %s?)\n",
				ifname, (unsigned long long)(s->skipped - prev.skipped), fl->n,
				ifname);
			return -EPROTO;
		}
		/* The flood's syncs each collect over all its held keys,
		 * and one may begin before a refill: checked over the span. */
		if (!fl->one && (s->syncs - prev.syncs != 1 || s->pushed - prev.pushed != fl->n)) {
			fprintf(stderr,
				"fleetfill: %s pushed %llu keys in %llu sync(s) after a "
				"refill (%.1f ms), not %u in one: a sync ran past the interval "
				"(the last took %.1f ms), and the next began at once; again\n",
				ifname, (unsigned long long)(s->pushed - prev.pushed),
				(unsigned long long)(s->syncs - prev.syncs), fill_ms, fl->n,
				(double)s->rtt_ns / 1e6);
			return -EAGAIN;
		}
		rtt = (double)s->rtt_ns / 1e6;
		rtt_sum += rtt;
		rtt_max = rtt > rtt_max ? rtt : rtt_max;
	}
	if (proc_cpu(pid, &cpu1)) {
		fprintf(stderr, "fleetfill: Couldn't read /proc/%d/stat: the agent exited\n", pid);
		return -ESRCH;
	}
	if (fl->one && s->pushed - s0.pushed < (__u64)fl->n * syncs / 2) {
		fprintf(stderr,
			"fleetfill: %s pushed %llu keys in %llu syncs, not half the %u heavy "
			"keys refilled before each: the agent missed refills; again\n",
			ifname, (unsigned long long)(s->pushed - s0.pushed),
			(unsigned long long)(s->syncs - s0.syncs), fl->n);
		return -EAGAIN;
	}
	self1 = self_cpu();
	printf("syncs=%llu keys=%llu seconds=%.6f rtt_ms=%.3f rtt_max_ms=%.3f agent_cpu=%.2f "
	       "fill_cpu=%.3f fill_ms=%.3f fill_max_ms=%.3f\n",
	       (unsigned long long)(s->syncs - s0.syncs),
	       (unsigned long long)(s->pushed - s0.pushed),
	       (double)(s->last_ok_ns - s0.last_ok_ns) / 1e9, rtt_sum / (double)syncs, rtt_max,
	       cpu1 - cpu0, self1 - self0, fill_sum / (double)syncs, fill_max);
	fflush(stdout);
	return 0;
}

int cmd_fleetfill(int argc, char **argv)
{
	char err[SLUICE_ERR_LEN] = "", ifname[IF_NAMESIZE] = "";
	__u64 n = 0, warm = 2, syncs = 5, pid = 0, timeout = 60, pkts = 1, one = 0, v, i, cap;
	struct sluice_handle h;
	struct sluice_settings set;
	struct fill fl = { 0 };
	int opt, ret, attempt;
	double fill_ms;
	struct snap s;

	optind = 1;
	while ((opt = getopt(argc, argv, "i:n:p:w:s:T:k:o:h")) != -1) {
		const char *what = opt == 'n' ? "-n" :
				   opt == 'p' ? "-p" :
				   opt == 'w' ? "-w" :
				   opt == 's' ? "-s" :
				   opt == 'k' ? "-k" :
				   opt == 'o' ? "-o" :
						"-T";

		switch (opt) {
		case 'i':
			snprintf(ifname, sizeof(ifname), "%s", optarg);
			continue;
		case 'n':
		case 'p':
		case 'w':
		case 's':
		case 'T':
		case 'k':
		case 'o':
			if (sluice_parse_uint(what, optarg, 1U << 30, &v, err, sizeof(err))) {
				fprintf(stderr, "fleetfill: %s\n", err);
				return SLUICE_EXIT_USAGE;
			}
			if (opt == 'n')
				n = v;
			else if (opt == 'p')
				pid = v;
			else if (opt == 'w')
				warm = v;
			else if (opt == 's')
				syncs = v;
			else if (opt == 'k')
				pkts = v;
			else if (opt == 'o')
				one = v;
			else
				timeout = v;
			continue;
		case 'h':
			usage(stdout);
			return SLUICE_EXIT_OK;
		default:
			usage(stderr);
			return SLUICE_EXIT_USAGE;
		}
	}
	if (!ifname[0] || !n || !pid || !syncs || !timeout || !pkts || one >= n || optind != argc) {
		fprintf(stderr, "fleetfill: give -i IFACE, -n KEYS (at least 1), -p AGENT_PID, "
				"-s, -T, -k of at least 1, and -o below -n\n");
		usage(stderr);
		return SLUICE_EXIT_USAGE;
	}

	ret = sluice_open(ifname, &h, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "fleetfill: %s\n", err);
		return SLUICE_EXIT_RUNTIME;
	}
	ret = SLUICE_EXIT_RUNTIME;
	if (!h.fleet || h.fleet_use_fd < 0) {
		fprintf(stderr,
			"fleetfill: the state of %s has no fleet maps: attach it with "
			"this sluice\n",
			ifname);
		goto out;
	}
	sluice_read_settings(&h, &set, NULL);
	if (!(set.def.flags & SLUICE_POLICY_FLEET) || set.def.action != SLUICE_ACT_LIMIT ||
	    !set.def.pkt.interval) {
		fprintf(stderr,
			"fleetfill: the default policy of %s is not a fleet-wide packet "
			"limit: 'sluicectl -i %s set --rate 100/s --fleet on'\n",
			ifname, ifname);
		goto out;
	}
	cap = sluice_map_max_entries(h.fleet_use_fd);
	if (n > cap) {
		fprintf(stderr,
			"fleetfill: -n %llu is more keys than sluice_fleet_use of %s holds "
			"(%llu): attach with --fleet-keys %llu or more\n",
			(unsigned long long)n, ifname, (unsigned long long)cap,
			(unsigned long long)n);
		goto out;
	}

	fl.fd = h.fleet_use_fd;
	fl.n = (__u32)n;
	fl.one = (__u32)one;
	fl.keys = calloc(n, sizeof(*fl.keys));
	fl.vals = calloc(n, sizeof(*fl.vals));
	if (!fl.keys || !fl.vals) {
		fprintf(stderr, "fleetfill: Couldn't allocate %llu keys\n", (unsigned long long)n);
		goto out;
	}
	for (i = 0; i < n; i++) {
		__u32 a = 0xc6120000U + (__u32)i; /* 198.18.0.0 + i */

		fl.keys[i].tag = set.def.tag;
		fl.keys[i].family = 4;
		fl.keys[i].prefixlen = 32;
		fl.keys[i].addr[0] = a >> 24;
		fl.keys[i].addr[1] = a >> 16;
		fl.keys[i].addr[2] = a >> 8;
		fl.keys[i].addr[3] = a;
		/* one packet: sluice_limit_cost() of a packet limit; PKTS of
		 * them for a heavy key */
		fl.vals[i].used[0] = set.def.pkt.interval * (i < n - one ? pkts : 1);
	}

	/* Warm up: WARM syncs after the first fill (the first may have met
	 * half a fill, and creates every key in Redis). */
	snap_read(h.fleet, &s);
	/* The flood: every key once, then only the heavy ones. */
	if (one) {
		if (fill_once(&fl, ifname, &fill_ms))
			goto out;
		fl.n = (__u32)(n - one);
	}
	for (i = 0; i <= warm; i++) {
		if (i && wait_sync(h.fleet, &s, (double)timeout, ifname))
			goto out;
		if (fill_once(&fl, ifname, &fill_ms))
			goto out;
	}
	if (wait_sync(h.fleet, &s, (double)timeout, ifname))
		goto out;
	for (attempt = 1;; attempt++) {
		ret = measure(&fl, h.fleet, ifname, (int)pid, syncs, (double)timeout, &s);
		if (ret != -EAGAIN)
			break;
		if (attempt == SPANS) {
			fprintf(stderr,
				"fleetfill: in each of %d tries, a sync of %s ran past the "
				"interval (or met a refill): give a longer --sync-interval\n",
				SPANS, ifname);
			break;
		}
		/* a full sync again, then the span anew */
		if (fill_once(&fl, ifname, &fill_ms) ||
		    wait_sync(h.fleet, &s, (double)timeout, ifname)) {
			ret = -EIO;
			break;
		}
	}
	if (ret)
		goto out;
	ret = SLUICE_EXIT_OK;
out:
	if (ret < 0)
		ret = SLUICE_EXIT_RUNTIME;
	free(fl.keys);
	free(fl.vals);
	sluice_close(&h);
	return ret;
}
