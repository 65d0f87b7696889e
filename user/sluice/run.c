// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice run IFACE: attach, report once per interval, detach on SIGINT or
 * SIGTERM. Each report is one line: the packet rates of the interval and
 * the sources that lost the most packets in it, from the sampled drop
 * events of the sluice_events ring buffer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "loader.h"

#define TOP_SLOTS 4096 /* distinct sources counted per interval */
#define TOP_SHOWN 5

void run_usage(FILE *f)
{
	fprintf(f,
		"  sluice run IFACE [attach options] [--interval SECS] [--metrics ADDR:PORT]\n"
		"                [--keep-state]\n"
		"      attach, print one report line per interval, detach on Ctrl-C\n");
}

static void run_help(void)
{
	printf("Usage:\n");
	run_usage(stdout);
	printf("\n"
	       "Takes every option of 'sluice attach' (see 'sluice attach help'), and:\n"
	       "  --interval SECS     time between reports: 1 (default), 500ms, 1m, ...\n"
	       "  --metrics ADDR:PORT serve the counters for Prometheus at\n"
	       "                      http://ADDR:PORT/metrics (e.g. 127.0.0.1:9100)\n"
	       "  --keep-state        on exit, keep the pinned state (as detach --keep-state)\n"
	       "\n"
	       "Each line: rx, passed and dropped packets per second in the interval, and\n"
	       "the sources with the most drops (estimated from sampled drop events).\n");
}

struct top_entry {
	__u8 family; /* 0: free */
	__u8 addr[16];
	__u64 drops;
};

struct run_state {
	struct top_entry top[TOP_SLOTS];
	__u64 events; /* drops the events of this interval stand for */
	__u64 untracked; /* of which from sources past TOP_SLOTS */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static __u32 hash_addr(const __u8 *addr, __u8 family)
{
	__u32 h = 2166136261U ^ family;
	int i;

	for (i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 16777619U;
	return h;
}

static int on_event(void *ctx, void *data, size_t size)
{
	const struct sluice_event *ev = data;
	struct run_state *rs = ctx;
	__u32 i, h;

	if (size < sizeof(*ev))
		return 0;
	rs->events += ev->sample;
	h = hash_addr(ev->addr, ev->family);
	for (i = 0; i < TOP_SLOTS; i++) {
		struct top_entry *e = &rs->top[(h + i) % TOP_SLOTS];

		if (!e->family) {
			e->family = ev->family;
			memcpy(e->addr, ev->addr, 16);
		}
		if (e->family == ev->family && !memcmp(e->addr, ev->addr, 16)) {
			e->drops += ev->sample;
			return 0;
		}
	}
	rs->untracked += ev->sample;
	return 0;
}

static int cmp_drops(const void *a, const void *b)
{
	const struct top_entry *x = a, *y = b;

	return x->drops < y->drops ? 1 : x->drops > y->drops ? -1 : 0;
}

static double now_sec(void)
{
	return (double)sluice_now_ns() / 1e9;
}

static __u64 delta(__u64 now, __u64 before)
{
	/* A counter that went back was reset (a fresh attach): count from 0. */
	return now >= before ? now - before : now;
}

static void report(struct run_state *rs, const struct sluice_stats *cur,
		   const struct sluice_stats *prev, double secs)
{
	char when[16], addr[INET6_ADDRSTRLEN];
	time_t t = time(NULL);
	struct tm tm;
	int i, n = 0;

	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	printf("%s rx %.0f pps, passed %.0f pps, dropped %.0f pps; top drops:", when,
	       (double)delta(cur->rx, prev->rx) / secs,
	       (double)delta(cur->passed, prev->passed) / secs,
	       (double)delta(cur->dropped, prev->dropped) / secs);
	/* Sorting the whole table moves the used entries to the front. */
	qsort(rs->top, TOP_SLOTS, sizeof(rs->top[0]), cmp_drops);
	for (i = 0; i < TOP_SLOTS && i < TOP_SHOWN && rs->top[i].drops; i++, n++) {
		inet_ntop(rs->top[i].family == 4 ? AF_INET : AF_INET6, rs->top[i].addr, addr,
			  sizeof(addr));
		printf("%s %s ~%llu", n ? "," : "", addr, (unsigned long long)rs->top[i].drops);
	}
	if (!n)
		printf(" none");
	if (rs->untracked)
		printf(", others ~%llu", (unsigned long long)rs->untracked);
	printf("\n");
	memset(rs->top, 0, sizeof(rs->top));
	rs->events = rs->untracked = 0;
}

static int run_loop(struct attach_opts *o, int metrics_fd)
{
	static struct run_state rs;
	struct sluice_stats prev, cur;
	struct ring_buffer *rb = NULL;
	char err[SLUICE_ERR_LEN];
	struct sluice_handle h;
	double interval = (double)o->interval_ns / 1e9, last, next;
	int ret;

	ret = sluice_open(o->ifname, &h, err, sizeof(err));
	if (ret) {
		p_err("%s", err);
		return SLUICE_EXIT_RUNTIME;
	}
	rb = ring_buffer__new(h.events_fd, on_event, &rs, NULL);
	if (!rb) {
		p_err("Couldn't open the drop events of %s: %s", o->ifname, strerror(errno));
		sluice_close(&h);
		return SLUICE_EXIT_RUNTIME;
	}
	if (sluice_read_stats(&h, &prev))
		memset(&prev, 0, sizeof(prev));
	last = now_sec();
	next = last + interval;
	while (!stop_signal) {
		struct pollfd pfd[2] = {
			{ .fd = ring_buffer__epoll_fd(rb), .events = POLLIN },
			{ .fd = metrics_fd, .events = POLLIN },
		};
		double now = now_sec();
		int timeout = now >= next ? 0 : (int)((next - now) * 1000) + 1;

		ret = poll(pfd, metrics_fd >= 0 ? 2 : 1, timeout);
		if (ret < 0 && errno != EINTR) {
			p_err("Couldn't wait for events: %s", strerror(errno));
			break;
		}
		if (ret > 0 && (pfd[0].revents & POLLIN))
			ring_buffer__consume(rb);
		if (ret > 0 && metrics_fd >= 0 && (pfd[1].revents & POLLIN))
			metrics_serve(metrics_fd, &h);
		now = now_sec();
		if (now < next)
			continue;
		ring_buffer__consume(rb);
		if (sluice_read_stats(&h, &cur)) {
			p_err("Couldn't read the counters of %s", o->ifname);
			break;
		}
		report(&rs, &cur, &prev, now - last);
		prev = cur;
		last = now;
		next += interval;
		if (next < now) /* fell behind (suspend, slow scrape): skip ahead */
			next = now + interval;
	}
	ring_buffer__free(rb);
	sluice_close(&h);
	return SLUICE_EXIT_OK;
}

int do_run(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct attach_opts o;
	char err[SLUICE_ERR_LEN];
	int metrics_fd = -1, ret, status;

	ret = parse_attach_opts("run", argc, argv, &o);
	if (ret < 0) {
		run_help();
		return SLUICE_EXIT_OK;
	}
	if (ret)
		return ret;
	/* Listen first: a busy port must not leave an attached sluice behind. */
	if (o.metrics) {
		ret = metrics_open(o.metrics, &metrics_fd, err, sizeof(err));
		if (ret) {
			p_err("%s", err);
			return ret == -EINVAL ? SLUICE_EXIT_USAGE : SLUICE_EXIT_RUNTIME;
		}
	}
	/* Before attaching: a Ctrl-C during the attach then detaches after it,
	 * instead of killing the process half way. No SA_RESTART, so that
	 * poll() returns at once. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	status = sluice_attach(&o);
	if (status == SLUICE_EXIT_OK) {
		if (o.metrics)
			printf("serving the counters at http://%s/metrics\n", o.metrics);
		status = run_loop(&o, metrics_fd);
		ret = sluice_detach(o.ifname, o.keep_state, false);
		if (status == SLUICE_EXIT_OK)
			status = ret;
	}
	if (metrics_fd >= 0)
		close(metrics_fd);
	return status;
}
