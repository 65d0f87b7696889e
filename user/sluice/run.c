// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice run IFACE: report once per interval on the limiter of IFACE, and
 * leave the interface as it was found. If sluice was not attached, run
 * attaches it and detaches it on SIGINT or SIGTERM; if it was attached, run
 * only reports, and leaves it attached with its configuration. One run per
 * interface (owner.c's run_claim(), a lock only root can take). Each report
 * is one line: the packet rates of the interval and the keys that lost the
 * most packets in it, from the sampled drop events of the sluice_events ring
 * buffer, named as `top` names them (the masked key); under dry-run, or
 * while a dry-run rule would drop, the would-drop rate and the keys that
 * would have lost the most, from the would-drop events. When the interface
 * or the program goes away, run says so and exits 1; a renamed interface is
 * followed. SIGHUP reloads --config (sluice reload).
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "agent.h"
#include "metrics.h"
#include "opts.h"
#include "owner.h"
#include "target.h"
#include "xdp.h"

#define TOP_SLOTS 4096 /* distinct sources counted per interval */
#define TOP_SHOWN 5

void run_usage(FILE *f)
{
	fprintf(f,
		"  sluice run IFACE [attach options] [--interval DUR] [--metrics ADDR:PORT]\n"
		"                [--keep-state] [--redis ADDR --fleet NAME [fleet options]]\n"
		"                [--metrics unix:PATH [--metrics-group G]] [--metrics-allow CIDR,...]\n"
		"      report on IFACE once per interval; attach first if sluice is not\n"
		"      attached, and then detach on Ctrl-C\n");
}

static void run_help(void)
{
	printf("Usage:\n");
	run_usage(stdout);
	printf("\n"
	       "Takes every option of 'sluice attach' (see 'sluice attach help'), and:\n"
	       "  --interval DUR      time between reports, 100ms to 1h: 1 (default), 500ms,\n"
	       "                      1.5s, 1m\n"
	       "  --metrics ADDR:PORT serve the counters for Prometheus at\n"
	       "                      http://ADDR:PORT/metrics (e.g. 127.0.0.1:9100 or\n"
	       "                      [::1]:9100; port 0: any free one); prints the URL.\n"
	       "                      They name every rule's CIDR: anyone who can connect\n"
	       "                      reads the policy (on 127.0.0.1, every local user)\n"
	       "  --metrics unix:PATH on a unix socket instead, mode 0600 (root only)\n"
	       "  --metrics-group G   the unix socket 0660, group G's members let in too\n"
	       "  --metrics-allow CIDR[,CIDR...]  only these sources may connect over TCP\n"
	       "  --keep-state        on exit, keep the pinned state (as detach --keep-state)\n"
	       "\n"
	       "When sluice is already attached to IFACE, run only reports on it and leaves\n"
	       "it attached as it is (attach options are then refused: change a running\n"
	       "limiter with sluicectl or 'sluice reload'). One run per interface.\n"
	       "Each line: rx, passed and dropped packets per second in the interval, and\n"
	       "the keys with the most drops (estimated from sampled drop events); under\n"
	       "dry-run, or while a dry-run rule would drop, also the would-drop rate and\n"
	       "the keys that would have lost the most ('top would drop (dry-run): ...').\n"
	       "SIGHUP re-reads --config ('sluice reload'). A run killed with SIGKILL leaves\n"
	       "the limiter attached; the next run or attach says that it adopts it.\n\n%s",
	       fleet_opt_help);
}

struct top_entry {
	__u8 family; /* 0: free */
	__u8 prefixlen;
	__u8 addr[16];
	__u64 drops;
};

/* The keys of one kind of event (drops, or would-drops) in an interval. */
struct top_table {
	struct top_entry top[TOP_SLOTS];
	__u64 events; /* drops the events of this interval stand for */
	__u64 untracked; /* of which from keys past TOP_SLOTS */
};

struct run_state {
	struct top_table drops; /* every reason but SLUICE_REASON_WOULD_DROP */
	struct top_table would; /* SLUICE_REASON_WOULD_DROP: passed under dry-run */
	bool discard; /* draining what came before the first interval */
};

static volatile sig_atomic_t stop_signal, reload_signal;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_signal = 1;
	else
		stop_signal = sig;
}

static __u32 hash_key(const __u8 *addr, __u8 family, __u8 prefixlen)
{
	__u32 h = 2166136261U ^ family ^ ((__u32)prefixlen << 8);
	int i;

	for (i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 16777619U;
	return h;
}

static int on_event(void *ctx, void *data, size_t size)
{
	const struct sluice_event *ev = data;
	struct run_state *run = ctx;
	struct top_table *rs;
	__u8 addr[16];
	__u32 i, h;

	if (size < sizeof(*ev) || run->discard)
		return 0;
	rs = ev->reason == SLUICE_REASON_WOULD_DROP ? &run->would : &run->drops;
	/* The key the drop was charged to, as top names it. */
	memcpy(addr, ev->addr, 16);
	sluice_mask(addr, ev->key_prefixlen);
	rs->events += ev->sample;
	h = hash_key(addr, ev->family, ev->key_prefixlen);
	for (i = 0; i < TOP_SLOTS; i++) {
		struct top_entry *e = &rs->top[(h + i) % TOP_SLOTS];

		if (!e->family) {
			e->family = ev->family;
			e->prefixlen = ev->key_prefixlen;
			memcpy(e->addr, addr, 16);
		}
		if (e->family == ev->family && e->prefixlen == ev->key_prefixlen &&
		    !memcmp(e->addr, addr, 16)) {
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

/* " KEY ~N, KEY ~N, others ~N" or " none"; empties the table. */
static void report_top(struct top_table *rs)
{
	char key[INET6_ADDRSTRLEN + 8];
	int i, n = 0;

	/* Sorting the whole table moves the used entries to the front. */
	qsort(rs->top, TOP_SLOTS, sizeof(rs->top[0]), cmp_drops);
	for (i = 0; i < TOP_SLOTS && i < TOP_SHOWN && rs->top[i].drops; i++, n++) {
		struct sluice_cidr c = { .family = rs->top[i].family,
					 .prefixlen = rs->top[i].prefixlen };

		memcpy(c.addr, rs->top[i].addr, 16);
		sluice_format_cidr(&c, true, key, sizeof(key));
		printf("%s %s ~%llu", n ? "," : "", key, (unsigned long long)rs->top[i].drops);
	}
	if (!n)
		printf(" none");
	if (rs->untracked)
		printf(", others ~%llu", (unsigned long long)rs->untracked);
	memset(rs->top, 0, sizeof(rs->top));
	rs->events = rs->untracked = 0;
}

/* One line; the would-drop parts whenever there were would-drops or dry-run
 * is on (dry). */
static void report(struct run_state *rs, const struct sluice_stats *cur,
		   const struct sluice_stats *prev, double secs, bool dry, const char *fleet)
{
	__u64 would = delta(cur->would_drop, prev->would_drop);
	time_t t = time(NULL);
	char when[16];
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	printf("%s rx %.0f pps, passed %.0f pps, dropped %.0f pps", when,
	       (double)delta(cur->rx, prev->rx) / secs,
	       (double)delta(cur->passed, prev->passed) / secs,
	       (double)delta(cur->dropped, prev->dropped) / secs);
	if (would || dry)
		printf(", would drop %.0f pps", (double)would / secs);
	printf("; top drops:");
	report_top(&rs->drops);
	if (would || dry) {
		printf("; top would drop%s:", dry ? " (dry-run)" : "");
		report_top(&rs->would);
	} else {
		/* Events of before dry-run went off: not this line's. */
		memset(&rs->would, 0, sizeof(rs->would));
	}
	printf("%s\n", fleet);
}

/*
 * The interface was renamed (its ifindex has another name now): the limiter
 * is the ifindex's, and so is this run's claim. Follow it: its state moves
 * to the new name's directory (rename.c), and the reports, a SIGHUP's
 * reload, the metrics' labels and the detach on exit use the new name.
 */
static void follow_rename(struct attach_opts *o, struct sluice_handle *h, const char *now,
			  struct metrics_server *metrics)
{
	static bool said; /* a failed move is said once, not every report */
	char other[SLUICE_STATE_NAME_MAX], err[SLUICE_ERR_LEN], was[IF_NAMESIZE];
	struct sluice_handle moved = *h;
	int ret;

	ret = sluice_follow_rename(now, other, sizeof(other), err, sizeof(err));
	snprintf(moved.ifname, sizeof(moved.ifname), "%s", now);
	snprintf(moved.name, sizeof(moved.name), "%s", now);
	if (ret < 0 || sluice_pin_dir(now, moved.dir, sizeof(moved.dir), NULL, 0) ||
	    sluice_still_pinned(&moved)) {
		if (!said)
			sluice_cli_err(0,
				       "%s was renamed to %s (ifindex %u), but its state could "
				       "not move with it%s%s: reporting on it as %s",
				       o->ifname, now, o->ifindex, ret < 0 ? ": " : "",
				       ret < 0 ? err : "", o->ifname);
		said = true;
		return;
	}
	snprintf(was, sizeof(was), "%s", o->ifname);
	snprintf(o->ifname, sizeof(o->ifname), "%s", now);
	snprintf(o->name, sizeof(o->name), "%s", now);
	memcpy(h->ifname, moved.ifname, sizeof(h->ifname));
	memcpy(h->name, moved.name, sizeof(h->name));
	memcpy(h->dir, moved.dir, sizeof(h->dir));
	metrics_rename(metrics, now);
	printf("sluice run: %s was renamed to %s (ifindex %u): reporting on %s, its state in %s\n",
	       was, now, o->ifindex, now, h->dir);
}

/* Is the limiter still there? 0, or -ENODEV / -ENOENT with a sentence.
 * a is what was found attached (kept up to date): asked on every report,
 * so nothing here opens an fd that outlives the call. */
static int still_there(struct attach_opts *o, struct sluice_handle *h, struct attachment *a,
		       struct metrics_server *metrics, char *err, size_t errlen)
{
	const char *ifname = o->ifname, *dir = h->dir;
	unsigned int ifindex = o->ifindex;
	char path[512], now[IF_NAMESIZE];
	struct stat st;

	if (if_nametoindex(ifname) != ifindex) {
		if (!if_indextoname(ifindex, now))
			return sluice_err(err, errlen, -ENODEV,
					  "%s is gone (ifindex %u): stopping "
					  "the report",
					  ifname, ifindex);
		follow_rename(o, h, now, metrics);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_MAP_CONFIG);
	if (stat(path, &st))
		return sluice_err(err, errlen, -ENOENT,
				  "the pinned state of %s was removed (by "
				  "'sluice detach'?): stopping the report",
				  ifname);
	if (attachment_check(ifindex, a) == 0)
		return sluice_err(
			err, errlen, -ENOENT,
			"sluice's program is no longer attached "
			"to %s (detached by 'sluice detach' or another tool): stopping the "
			"report",
			ifname);
	return 0;
}

static int run_loop(struct run_opts *r, const struct fleet_agent *agent,
		    struct metrics_server *metrics)
{
	struct attach_opts *o = &r->attach;
	char fleet[256];
	static struct run_state rs;
	struct sluice_stats prev, cur;
	struct sluice_settings set;
	struct ring_buffer *rb = NULL;
	char err[SLUICE_ERR_LEN];
	struct sluice_handle h;
	struct attachment att;
	double interval = (double)r->interval_ns / 1e9, last, next;
	int ret, status = SLUICE_EXIT_OK;

	ret = sluice_open(o->ifname, &h, err, sizeof(err));
	if (ret) {
		sluice_cli_err(0, "%s", err);
		return SLUICE_EXIT_RUNTIME;
	}
	/* Found once, then checked cheaply on every report. */
	ret = find_attachment(o->ifindex, &att);
	if (ret) {
		sluice_cli_err(0, "Couldn't query the XDP programs of %s: %s", o->ifname,
			       strerror(-ret));
		sluice_close(&h);
		return SLUICE_EXIT_RUNTIME;
	}
	rb = ring_buffer__new(h.events_fd, on_event, &rs, NULL);
	if (!rb) {
		sluice_cli_err(0, "Couldn't open the drop events of %s: %s", o->ifname,
			       strerror(errno));
		sluice_close(&h);
		return SLUICE_EXIT_RUNTIME;
	}
	/* The first report covers its own interval only: events and counters
	 * from before it are not this run's to report. */
	rs.discard = true;
	ring_buffer__consume(rb);
	rs.discard = false;
	if (sluice_read_stats(&h, &prev))
		memset(&prev, 0, sizeof(prev));
	last = now_sec();
	next = last + interval;
	while (!stop_signal) {
		struct pollfd pfd[1] = {
			{ .fd = ring_buffer__epoll_fd(rb), .events = POLLIN },
		};
		double now = now_sec();
		int timeout = now >= next ? 0 : (int)((next - now) * 1000) + 1;

		ret = poll(pfd, 1, timeout);
		if (ret < 0 && errno != EINTR) {
			sluice_cli_err(0, "Couldn't wait for events: %s", strerror(errno));
			status = SLUICE_EXIT_RUNTIME;
			break;
		}
		if (ret > 0 && (pfd[0].revents & POLLIN))
			ring_buffer__consume(rb);
		if (reload_signal) {
			reload_signal = 0;
			if (o->config)
				sluice_reload(o->ifname, o->config);
			else
				sluice_cli_err(0, "SIGHUP: nothing to reload (sluice run was "
						  "started without --config)");
		}
		now = now_sec();
		if (now < next)
			continue;
		ret = still_there(o, &h, &att, metrics, err, sizeof(err));
		if (ret) {
			sluice_cli_err(0, "%s", err);
			status = SLUICE_EXIT_RUNTIME;
			break;
		}
		ring_buffer__consume(rb);
		if (sluice_read_stats(&h, &cur)) {
			sluice_cli_err(0, "Couldn't read the counters of %s", o->ifname);
			status = SLUICE_EXIT_RUNTIME;
			break;
		}
		sluice_read_settings(&h, &set, NULL);
		fleet_report(agent, fleet, sizeof(fleet));
		report(&rs, &cur, &prev, now - last, set.flags & SLUICE_DRY_RUN, fleet);
		prev = cur;
		last = now;
		next += interval;
		if (next < now) /* fell behind (suspend): skip ahead */
			next = now + interval;
	}
	ring_buffer__free(rb);
	sluice_close(&h);
	return status;
}

static bool has_attach_options(const struct run_opts *r)
{
	const struct attach_opts *o = &r->attach;

	return o->set_argc > 1 || o->config || o->xdp.mode_given || o->max_keys || o->table ||
	       o->max_log_keys || o->max_rules || o->max_flows || o->fleet_keys || o->resume ||
	       o->fresh || r->keep_state;
}

/*
 * Who attached what run finds: nothing (run attaches, and owns it); a
 * `sluice attach` (run only reports); or a run that was killed (its
 * attachment is adopted: this run detaches it on exit).
 */
static int find_existing(struct run_opts *r, bool *attached, bool *owned)
{
	struct attach_opts *o = &r->attach;
	char err[SLUICE_ERR_LEN];
	struct attachment a;
	struct sluice_handle h;
	__u32 pid;

	*attached = *owned = false;
	if (find_attachment(o->ifindex, &a) || !a.prog_id)
		return 0;
	if (sluice_open(o->ifname, &h, err, sizeof(err)))
		return 0; /* attach says what is wrong */
	if (h.standing != SLUICE_STANDING_OWNED) {
		sluice_close(&h);
		return 0;
	}
	*attached = true;
	pid = h.cfg->run_pid;
	if (pid) {
		/* We hold the run claim, so that run is gone. */
		printf("sluice run: adopted the limiter of %s that sluice run (pid %u) attached "
		       "and left behind when it was killed; this run detaches it on exit\n",
		       o->ifname, pid);
		__atomic_store_n(&h.cfg->run_pid, (__u32)getpid(), __ATOMIC_RELEASE);
		*owned = true;
	}
	sluice_close(&h);
	if (!*owned && has_attach_options(r)) {
		sluice_cli_usage("run",
				 "sluice is already attached to %s: 'sluice run %s' reports "
				 "on it as it is and leaves it attached; change it with sluicectl "
				 "or 'sluice reload %s', or detach it first",
				 o->ifname, o->ifname, o->ifname);
		return -EINVAL;
	}
	if (!*owned)
		printf("sluice run: %s was attached before this run: reporting on it, and "
		       "leaving it attached on exit\n",
		       o->ifname);
	return 0;
}

/* On exit: detach only what this run owns (still: `sluice attach` may have
 * taken it over since, see hand_over_run()). */
static int leave(struct run_opts *r, bool owned)
{
	struct attach_opts *o = &r->attach;
	char err[SLUICE_ERR_LEN];
	struct sluice_handle h;
	bool still_owned = false;
	struct stat st;
	char path[512];

	if (!owned)
		return SLUICE_EXIT_OK;
	if (sluice_open(o->ifname, &h, err, sizeof(err)) == 0) {
		still_owned = h.cfg->run_pid == (__u32)getpid();
		if (!still_owned && h.cfg->owner.life == SLUICE_LIFE_KEPT) {
			printf("sluice run: leaving the state of %s as 'sluice detach "
			       "--keep-state' kept it\n",
			       o->ifname);
			sluice_close(&h);
			return SLUICE_EXIT_OK;
		}
		sluice_close(&h);
	} else if (sluice_pin_dir(o->ifname, path, sizeof(path), err, sizeof(err)) == 0 &&
		   stat(path, &st)) {
		return SLUICE_EXIT_OK; /* detached by someone else already */
	} else {
		still_owned = true; /* the interface vanished: remove our state */
	}
	if (!still_owned) {
		printf("sluice run: leaving %s attached: 'sluice attach' took it over\n",
		       o->ifname);
		return SLUICE_EXIT_OK;
	}
	/* Found kept by detach --keep-state: leave it kept. */
	return sluice_detach(o->ifname, r->keep_state || o->resumed_kept, false);
}

/* Test hook: SLUICE_TEST_INTERVAL=2ms reports that often, under the 100 ms
 * that --interval takes at least, so that a test makes thousands of
 * reports in seconds (tests/net/runleak.sh). Unset in production. */
static void test_interval(struct run_opts *r)
{
	const char *v = getenv("SLUICE_TEST_INTERVAL");
	char err[SLUICE_ERR_LEN];
	__u64 ns;

	if (v && *v && !sluice_parse_duration("SLUICE_TEST_INTERVAL", v, &ns, err, sizeof(err)) &&
	    ns)
		r->interval_ns = ns;
}

int do_run(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct run_opts r;
	struct attach_opts *o = &r.attach;
	char err[SLUICE_ERR_LEN];
	bool attached, owned;
	struct metrics_server *metrics = NULL;
	struct fleet_agent *agent = NULL;
	int claim_fd, ret, status;

	ret = parse_attach_opts(OPTS_RUN, argc, argv, o, &r);
	if (ret < 0) {
		run_help();
		return SLUICE_EXIT_OK;
	}
	if (ret)
		return ret;
	/* The fleet agent's password file, before the interface is touched. */
	if (fleet_check_files(&r.fleet, err, sizeof(err))) {
		sluice_cli_err(0, "%s", err);
		return SLUICE_EXIT_RUNTIME;
	}
	o->ifindex = if_nametoindex(o->ifname);
	if (!o->ifindex) /* attach says it well, naming another namespace's */
		return sluice_attach(&xdp_target, o);
	test_interval(&r);
	/* A bpffs of this mount namespace only ('ip netns exec') is refused
	 * before anything, in its own words. */
	if (sluice_ensure_bpffs(err, sizeof(err))) {
		sluice_cli_err(0, "%s", err);
		return SLUICE_EXIT_RUNTIME;
	}
	claim_fd = run_claim(o->ifindex, err, sizeof(err));
	if (claim_fd < 0) {
		int pid = run_holder(o->ifindex);

		if (claim_fd != -EWOULDBLOCK) {
			sluice_cli_err(0, "Couldn't claim %s for this run: %s", o->ifname, err);
			return SLUICE_EXIT_RUNTIME;
		}
		if (pid > 0)
			sluice_cli_err(0,
				       "sluice run is already reporting on %s (pid %d): one run "
				       "per interface",
				       o->ifname, pid);
		else
			sluice_cli_err(0,
				       "sluice run is already reporting on %s: one run per "
				       "interface",
				       o->ifname);
		return SLUICE_EXIT_RUNTIME;
	}
	/* Listen first: a busy port must not leave an attached sluice behind. */
	if (r.metrics) {
		ret = metrics_open(r.metrics, r.metrics_allow, r.metrics_group, &metrics, err,
				   sizeof(err));
		if (ret) {
			if (ret == SLUICE_EXIT_USAGE)
				sluice_cli_usage("run", "%s", err);
			else
				sluice_cli_err(0, "%s", err);
			run_release(o->ifindex, claim_fd);
			return ret;
		}
	}
	/* Before attaching: a Ctrl-C during the attach then detaches after it,
	 * instead of killing the process half way. No SA_RESTART, so that
	 * poll() returns at once. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	status = find_existing(&r, &attached, &owned) ? SLUICE_EXIT_USAGE : SLUICE_EXIT_OK;
	if (status == SLUICE_EXIT_OK && !attached) {
		o->run_owned = true;
		status = sluice_attach(&xdp_target, o);
		owned = status == SLUICE_EXIT_OK;
	}
	if (status == SLUICE_EXIT_OK && metrics) {
		if (metrics_start(metrics, o->ifname, err, sizeof(err))) {
			sluice_cli_err(0, "%s", err);
			status = SLUICE_EXIT_RUNTIME;
		} else {
			printf("serving the counters at %s\n", metrics_url(metrics));
		}
	}
	if (status == SLUICE_EXIT_OK && r.fleet.redis) {
		if (fleet_start(&r.fleet, o->ifname, &agent, err, sizeof(err))) {
			sluice_cli_err(0, "%s", err);
			status = SLUICE_EXIT_RUNTIME;
		} else {
			printf("sharing the fleet policies of %s as fleet %s through Redis at %s, "
			       "every %.0f ms\n",
			       o->ifname, r.fleet.fleet, r.fleet.redis,
			       (double)r.fleet.sync_ns / 1e6);
		}
	}
	if (status == SLUICE_EXIT_OK)
		status = run_loop(&r, agent, metrics);
	fleet_stop(agent);
	/* Not one scrape more of a limiter on its way out. */
	metrics_close(metrics);
	if (owned) {
		ret = leave(&r, owned);
		if (status == SLUICE_EXIT_OK)
			status = ret;
	}
	run_release(o->ifindex, claim_fd);
	return status;
}
