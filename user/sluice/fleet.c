// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fleet agent of `sluice run IFACE --redis ADDR --fleet NAME`: a thread
 * that, once per sync interval,
 *
 *   1. runs the collect program (bpf/fleet.bpf.c): every key of a fleet
 *      policy with usage not pushed yet, into the io array;
 *   2. pushes the busiest --sync-keys of them, as durations (the ticks of
 *      cost the box admitted), to Redis in one pipelined round trip
 *      (user/lib/redis.c), which advances each key's fleet-wide GCRA state
 *      and answers each key's debt (how far the fleet's TAT is ahead of
 *      Redis's now) and N, the live boxes;
 *   3. runs the apply program: takes the pushed usage off, and raises each
 *      key's local bucket to now + debt, so the box refuses as soon as the
 *      fleet has spent the allowance;
 *   4. renews sluice_fleet.ok_until (two intervals and the sync's own
 *      duration ahead, never past the horizon this sync gave the fleet):
 *      while it holds, fleet policies admit the whole rate; past it,
 *      rate/N. N is the fleet's members Redis counts, and after an outage
 *      at least the N of before it, for a member TTL (a restarted Redis
 *      knows only the boxes that have synced since).
 *
 * A box whose agent is gone (killed, stopped, stuck) still admits on its
 * own: rate/N and burst/N of the N it last held, for as long as its
 * datapath runs. So each sync tells the fleet that share and a horizon, the
 * latest time its ok_until may reach, and Redis keeps the box a member past
 * it: silent, its share held in reserve (the live boxes share the rest of
 * each limit, user/lib/redis.c), until it syncs again or leaves. It leaves
 * when its datapath goes: when this run detaches the limiter it attached,
 * or finds it detached.
 *
 * The debt a sync answers is the fleet bucket's, whose tolerance is the
 * whole burst; a box's bucket holds burst/N of it. So while the fleet is
 * within its burst a box takes its share of the room the fleet has left
 * (the debt / N), and beyond it the whole debt past the burst: together the
 * boxes get one burst, and never more (user/lib/fleetfold.c).
 *
 * A failed sync (Redis unreachable, slow past --redis-timeout, an error
 * reply, a refused password) ends ok_until at once, so every box falls back
 * to rate/N within the interval it failed in, and says so once; the usage
 * of that sync is dropped (it was admitted under the outage share, which is
 * safe on its own: charging it later would block the fleet). The next
 * successful sync restores the whole rate. On exit the agent leaves the
 * state "stopped": rate/N until an agent runs again. What the box admits on
 * its own is never recorded (bpf/sluice.bpf.c), and what an agent finds
 * recorded when it starts on a state that is not synced is dropped: usage
 * admitted without an agent is never charged. Only durations cross between
 * the box and Redis, never a clock reading.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "agent.h"
#include "redis.h"
#include "fleetbound.h"
#include "fleetname.h"
#include "fleetpush.h"
#include "fleetalone.h"
#include "fleet.skel.h"

/* Redis keys name a key by its rule's match (a rule on L4) and its masked
 * address, one per limit (lane); a second key's (--also-rate) by its prefix
 * and its rule: user/lib/fleetname.c. */
#define KEY_TEXT SLUICE_FLEET_KEY_NAME
#define TICKS_PER_US (1000ULL << SLUICE_TICK_SHIFT)

struct fleet_agent {
	struct fleet_opts o;
	char ifname[IF_NAMESIZE];
	char member[128];
	struct sluice_handle h;
	struct fleet_bpf *skel;
	struct sluice_fleet_rec *io; /* mmapped, io_max records */
	__u32 io_max;
	struct sluice_redis *redis;
	/* one sync's lanes: [i] is record rec_of[i], limit lane_of[i] */
	char (*names)[KEY_TEXT];
	const char **keys;
	double *used_us;
	__s64 *debt_us;
	__u32 *rec_of;
	__u8 *lane_of;
	pthread_t thread;
	bool started;
	volatile int stop;
	bool outage_said;
	/* the fleet recorded a smaller share than the box holds now (its N
	 * grew): sync again at once, so that it records the new one */
	bool resync;
	/* After an outage, Redis (restarted) may know fewer boxes than there
	 * are until each has synced once: N stays at least the last one seen
	 * until a member TTL has passed (monotonic ns). */
	__u64 keep_n_until;
	__u32 last_n;
	/* Redis's answers bounded (bound_reply()): what each fleet policy
	 * lets a box admit, the most boxes Redis has counted. */
	struct sluice_fleet_bound *bound;
	__u32 n_seen;
	__u64 clamps; /* debts folded as their bound since the last line said so */
	__u64 clamp_said_ns; /* monotonic; 0: never */
	__u32 silent_said; /* the silent members the log last named */
	__u64 last_dur_ns; /* the last successful sync's duration */
	struct sluice_fleet_tols tols; /* the fold's (user/lib/fleetfold.c) */
	struct sluice_fleet_names rule_names; /* the keys' (user/lib/fleetname.c) */
	/* which keys a sync pushes (user/lib/fleetpush.c): NULL with
	 * --sync-threshold 0, every key with usage at every sync */
	struct sluice_fleet_push *push;
	__u32 held; /* keys held back in the last sync */
	/* Redis Cluster: the keys of a shard down, each held to rate/N on
	 * its own (user/lib/fleetalone.c); NULL without a cluster */
	struct sluice_fleet_alone *alone;
	__u32 down_said; /* the shards down the log last named */
};

static void now_text(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

/* A line of the agent's own, between run's reports. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char when[16], line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	now_text(when, sizeof(when));
	printf("%s fleet: %s\n", when, line);
}

static int run_prog(struct bpf_program *p)
{
	/* The programs read no packet: any frame long enough for XDP. */
	__u8 frame[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = frame, .data_size_in = sizeof(frame),
		    .repeat = 1);
	int ret = bpf_prog_test_run_opts(bpf_program__fd(p), &t);

	if (ret)
		return -errno;
	return t.retval == XDP_PASS ? 0 : -EPROTO;
}

/*
 * Take off every usage recorded, pushing none: what a state that is not
 * synced holds was admitted before its agent went (unrenewed since) or by
 * an older datapath on its own, and is never charged (see the top).
 */
static int drop_usage(struct fleet_agent *a)
{
	struct sluice_fleet *f = a->h.fleet;
	__u32 i, n;
	int ret;

	ret = run_prog(a->skel->progs.sluice_fleet_collect);
	if (ret)
		return ret;
	n = f->io_n < a->io_max ? f->io_n : a->io_max;
	for (i = 0; i < n; i++)
		a->io[i].debt[0] = a->io[i].debt[1] = 0;
	f->io_n = n;
	return run_prog(a->skel->progs.sluice_fleet_apply);
}

/* Load the two programs on the limiter's pinned maps. */
static int load_progs(struct fleet_agent *a, char *err, size_t errlen)
{
	struct fleet_bpf *s = fleet_bpf__open();
	size_t bytes, page = (size_t)sysconf(_SC_PAGESIZE);
	int ret;

	if (!s)
		return sluice_err(err, errlen, -errno, "Couldn't open the fleet programs: %s",
				  strerror(errno));
	a->io_max = sluice_map_max_entries(a->h.fleet_use_fd);
	/* The key table the state was attached with: apply finds a key's
	 * bucket in it (sluice_sets4/6 are absent from a state pinned before
	 * them, an LRU table's: the object's own one-set maps then). */
	if (a->h.cfg->kind & SLUICE_KIND_SETS) {
		s->rodata->table_sets = 1;
		s->rodata->set_seed = a->h.cfg->set_seed;
		s->rodata->sets_n[0] = a->h.keys.nsets[0];
		s->rodata->sets_n[1] = a->h.keys.nsets[1];
	}
	ret = bpf_map__reuse_fd(s->maps.sluice_buckets, a->h.buckets_fd);
	if (!ret && a->h.sets4_fd >= 0)
		ret = bpf_map__reuse_fd(s->maps.sluice_sets4, a->h.sets4_fd);
	if (!ret && a->h.sets6_fd >= 0)
		ret = bpf_map__reuse_fd(s->maps.sluice_sets6, a->h.sets6_fd);
	if (!ret)
		ret = bpf_map__reuse_fd(s->maps.sluice_fleet, a->h.fleet_fd);
	if (!ret)
		ret = bpf_map__reuse_fd(s->maps.sluice_fleet_use, a->h.fleet_use_fd);
	if (!ret)
		ret = bpf_map__set_max_entries(s->maps.sluice_fleet_io, a->io_max);
	if (!ret)
		ret = fleet_bpf__load(s);
	if (ret) {
		fleet_bpf__destroy(s);
		return sluice_err(err, errlen, ret < 0 ? ret : -EINVAL,
				  "Couldn't load the fleet programs on the maps of %s: %s (run "
				  "with -v to see libbpf's reason)",
				  a->ifname, strerror(-ret));
	}
	a->skel = s;
	bytes = ((size_t)a->io_max * sizeof(struct sluice_fleet_rec) + page - 1) / page * page;
	a->io = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		     bpf_map__fd(s->maps.sluice_fleet_io), 0);
	if (a->io == MAP_FAILED) {
		a->io = NULL;
		return sluice_err(err, errlen, -errno, "Couldn't map the fleet records: %s",
				  strerror(errno));
	}
	a->names = calloc((size_t)a->io_max * 2, sizeof(*a->names));
	a->keys = calloc((size_t)a->io_max * 2, sizeof(*a->keys));
	a->used_us = calloc((size_t)a->io_max * 2, sizeof(*a->used_us));
	a->debt_us = calloc((size_t)a->io_max * 2, sizeof(*a->debt_us));
	a->rec_of = calloc((size_t)a->io_max * 2, sizeof(*a->rec_of));
	a->lane_of = calloc((size_t)a->io_max * 2, sizeof(*a->lane_of));
	if (!a->names || !a->keys || !a->used_us || !a->debt_us || !a->rec_of || !a->lane_of)
		return sluice_err(err, errlen, -ENOMEM,
				  "Couldn't allocate the fleet agent's "
				  "tables for %u keys",
				  a->io_max);
	return 0;
}

static int cmp_busiest(const void *x, const void *y)
{
	const struct sluice_fleet_rec *a = x, *b = y;
	__u64 ua = a->used[0] + a->used[1], ub = b->used[0] + b->used[1];

	return ua < ub ? 1 : ua > ub ? -1 : 0;
}

static void set_state(struct fleet_agent *a, __u32 state)
{
	__atomic_store_n(&a->h.fleet->state, state, __ATOMIC_RELEASE);
}

static void failed(struct fleet_agent *a, const char *why)
{
	struct sluice_fleet *f = a->h.fleet;
	__u32 n = f->live > 1 ? f->live : 1;

	/* rate/N from now on, not from when the old ok_until runs out. */
	__atomic_store_n(&f->ok_until, 0, __ATOMIC_RELEASE);
	f->sync_errors++;
	snprintf(f->last_error, sizeof(f->last_error), "%s", why);
	if (f->state != SLUICE_FLEET_OUTAGE) {
		f->outages++;
		set_state(a, SLUICE_FLEET_OUTAGE);
	}
	if (!a->outage_said && n > 1)
		say("sync with Redis at %s failed: %s; fleet policies of %s admit rate/%u and "
		    "burst/%u until it answers",
		    sluice_redis_addr(a->redis), why, a->ifname, n, n);
	else if (!a->outage_said)
		say("sync with Redis at %s failed: %s; the size of fleet %s is not known yet, "
		    "so fleet policies of %s admit the whole limit until Redis answers (give "
		    "--fleet-size N for a safe share)",
		    sluice_redis_addr(a->redis), why, a->o.fleet, a->ifname);
	a->outage_said = true;
}

/*
 * Redis's answer within what the fleet can be (docs/fleet.md, "Fleet-wide
 * limits"): a count of boxes above --fleet-max fails the sync, as an
 * outage (the N of before stays); a debt above what the fleet could have
 * spent (fleetbound.h: n x (w + S + 2 T), n the most boxes counted) is
 * folded as that bound, and said, so that a bad answer holds a source no
 * longer than the fleet itself could.
 */
static int bound_reply(struct fleet_agent *a, __u32 lanes, __u32 live, char *err, size_t len)
{
	__u32 i, n, clamped = 0, first = 0;
	__s64 got = 0;
	__u64 max = 0;

	if (live > a->o.fleet_max)
		return sluice_err(err, len, -ERANGE,
				  "Redis at %s counted %u boxes in fleet %s, more than "
				  "--fleet-max %u: give --fleet-max %u if the fleet is that large "
				  "(at most %u); else another program or fleet uses the name %s",
				  a->o.redis, live, a->o.fleet, a->o.fleet_max, live,
				  SLUICE_FLEET_MAX_BOXES, a->o.fleet);
	n = live > a->o.fleet_size ? live : a->o.fleet_size;
	if (a->n_seen > n)
		n = a->n_seen;
	a->n_seen = n;
	sluice_fleet_bound_refresh(a->bound, &a->h);
	for (i = 0; i < lanes; i++) {
		__u64 b = sluice_fleet_debt_bound_us(
			sluice_fleet_bound_w(a->bound, &a->io[a->rec_of[i]].key, a->lane_of[i]), n,
			a->o.sync_ns, a->o.timeout_ns);

		if (a->debt_us[i] <= (__s64)b)
			continue;
		if (!clamped++) {
			first = i;
			got = a->debt_us[i];
			max = b;
		}
		a->debt_us[i] = (__s64)b;
	}
	a->clamps += clamped;
	/* Said at once, then at most once a minute while it goes on: a held
	 * key pushes nothing, so the bad answers come and go. */
	if (clamped &&
	    (!a->clamp_said_ns || sluice_now_ns() - a->clamp_said_ns >= 60 * SLUICE_NS_PER_SEC)) {
		char d1[32], d2[32], more[64] = "";

		sluice_format_duration((__u64)got > ~0ULL / 1000 ? ~0ULL : (__u64)got * 1000, d1,
				       sizeof(d1));
		sluice_format_duration(max * 1000, d2, sizeof(d2));
		if (a->clamps > 1)
			snprintf(more, sizeof(more),
				 " (%llu debts so folded since the last "
				 "line)",
				 (unsigned long long)a->clamps);
		say("Redis at %s answered a debt of %s for %s, more than the %s fleet %s could "
		    "have spent (%u box%s x (a box's burst + interval + 2 x timeout)): folded as "
		    "%s, until Redis answers less%s; is Redis's clock stepped back, or another "
		    "program writing sluice:{%s}:*?",
		    a->o.redis, d1, a->keys[first], d2, a->o.fleet, n, n == 1 ? "" : "es", d2, more,
		    a->o.fleet);
		a->clamps = 0;
		a->clamp_said_ns = sluice_now_ns();
	}
	return 0;
}

/*
 * How long after a sync's call began its ok_until may last (ns): three
 * intervals and twice the last sync's duration (the deadline before the
 * first). ok_until, two intervals and the sync's duration after it ended,
 * falls short of that unless a sync takes much longer than the one before;
 * the fleet counts the box silent once it has passed without a sync.
 */
static __u64 horizon_ns(const struct fleet_agent *a)
{
	return 3 * a->o.sync_ns + 2 * (a->last_dur_ns ? a->last_dur_ns : a->o.timeout_ns);
}

/* Say when the fleet's silent members change: their shares are held back. */
static void say_silent(struct fleet_agent *a, __u32 n, __u32 silent, __u32 reserve_ppm)
{
	if (silent > n)
		silent = n;
	__atomic_store_n(&a->h.fleet->silent, silent, __ATOMIC_RELEASE);
	if (silent == a->silent_said)
		return;
	if (silent)
		say("%u of the %u boxes of fleet %s %s: %s on %s own, so the fleet holds %s in "
		    "reserve and the live boxes share %.0f%% of each limit",
		    silent, n, a->o.fleet,
		    silent == 1 ? "has not synced within its horizon" :
				  "have not synced within their horizons",
		    silent == 1 ? "its datapath admits its share" :
				  "their datapaths admit their shares",
		    silent == 1 ? "its" : "their", silent == 1 ? "that share" : "those shares",
		    reserve_ppm < 1000000 ? 100.0 - (double)reserve_ppm / 1e4 : 0.0);
	else
		say("no box of fleet %s is silent any more: the live boxes share the whole limit",
		    a->o.fleet);
	a->silent_said = silent;
}

/*
 * Which of the n records collected this sync pushes (user/lib/fleetpush.c):
 * those moved to the front of the io array, their count returned. The
 * others' usage stays in sluice_fleet_use (apply takes off only what the
 * first records pushed). A key's threshold is --sync-threshold of the
 * box's share of its burst, burst/N, N the most boxes this agent knows
 * (the smaller share: the fleet's N x theta stays what docs/fleet.md says).
 */
static __u32 choose(struct fleet_agent *a, __u32 n, __u32 n_now)
{
	__u32 i, m = 0, nn = n_now > a->n_seen ? n_now : a->n_seen;
	int j;

	if (!a->push)
		return n;
	sluice_fleet_tols_refresh(&a->tols, &a->h);
	sluice_fleet_push_begin(a->push, sluice_now_ns());
	for (i = 0; i < n; i++) {
		struct sluice_fleet_rec *r = &a->io[i];
		__u64 theta[2];

		for (j = 0; j < 2; j++)
			theta[j] = (__u64)((double)sluice_fleet_share_tol(&a->tols, &r->key, j,
									  nn ? nn : 1) *
					   a->o.threshold);
		/* A key of no fleet policy known (changed since): theta 0, no
		 * threshold, pushed. */
		if (!sluice_fleet_push_want(a->push, &r->key, r->used, theta, a->o.max_age_ns))
			continue;
		if (i != m) {
			struct sluice_fleet_rec t = a->io[m];

			a->io[m] = *r;
			*r = t;
		}
		m++;
	}
	return m;
}

/* The Redis the state names (status, metrics): under Sentinel, the primary
 * last named. */
static void show_addr(struct fleet_agent *a)
{
	const char *now = sluice_redis_addr(a->redis);

	if (strncmp(a->h.fleet->redis, now, sizeof(a->h.fleet->redis) - 1))
		snprintf(a->h.fleet->redis, sizeof(a->h.fleet->redis), "%s", now);
}

/*
 * Redis Cluster: the shards down this sync, in the state, and said when
 * that changes (once, not at every sync).
 */
static void shards(struct fleet_agent *a, const struct sluice_redis_sync_stats *st, __u32 n)
{
	struct sluice_fleet *f = a->h.fleet;
	const char *why = sluice_redis_fault(a->redis);

	f->shards = st->shards;
	f->moved += st->moved;
	f->asked += st->asked;
	snprintf(f->last_error, sizeof(f->last_error), "%s", st->shards_down ? why : "");
	__atomic_store_n(&f->shards_down, st->shards_down, __ATOMIC_RELEASE);
	if (st->shards_down == a->down_said)
		return;
	if (st->shards_down && !a->down_said)
		f->shard_faults++;
	if (st->shards_down)
		say("%u of the %u shards of %s did not answer (%s): their keys of %s admit "
		    "rate/%u and burst/%u until they do; the others are synced",
		    st->shards_down, st->shards, sluice_redis_addr(a->redis), why, a->ifname, n, n);
	else
		say("every shard of %s answers again: fleet policies of %s admit the whole "
		    "limit",
		    sluice_redis_addr(a->redis), a->ifname);
	a->down_said = st->shards_down;
}

/* One sync; 0 or -errno (the state says why). */
static int sync_once(struct fleet_agent *a)
{
	struct sluice_fleet *f = a->h.fleet;
	struct sluice_redis_sync_stats st = { 0 };
	char err[SLUICE_ERR_LEN];
	__u32 n, want, push, i, lanes = 0, live = 0, n_old = f->live > 1 ? f->live : 1, n_fold;
	__u64 t0, hz, end;
	int ret, j;

	ret = run_prog(a->skel->progs.sluice_fleet_collect);
	if (ret) {
		failed(a, "the collect program failed");
		return ret;
	}
	n = f->io_n < a->io_max ? f->io_n : a->io_max;
	want = choose(a, n, n_old);
	push = want < a->o.max_keys ? want : (__u32)a->o.max_keys;
	if (push < want)
		qsort(a->io, want, sizeof(a->io[0]), cmp_busiest);
	sluice_fleet_names_refresh(&a->rule_names, &a->h);
	for (i = 0; i < push; i++) {
		for (j = 0; j < 2; j++) {
			a->io[i].debt[j] = 0;
			if (!a->io[i].used[j])
				continue;
			sluice_fleet_key_name(&a->rule_names, &a->io[i].key, j, a->names[lanes],
					      KEY_TEXT);
			a->keys[lanes] = a->names[lanes];
			a->used_us[lanes] = (double)a->io[i].used[j] / (double)TICKS_PER_US;
			a->rec_of[lanes] = i;
			a->lane_of[lanes] = (__u8)j;
			lanes++;
		}
	}
	/* The share this box's datapath admits on its own, now (and after:
	 * it never holds a smaller one than the fleet records, see the top). */
	hz = horizon_ns(a);
	sluice_redis_set_member(a->redis, (hz + 999999) / 1000000, n_old);
	t0 = sluice_now_ns();
	ret = sluice_redis_sync(a->redis, a->o.fleet, a->member, a->o.member_ttl_ms, lanes, a->keys,
				a->used_us, a->o.batch, a->debt_us, &live, &st, err, sizeof(err));
	if (!ret)
		ret = bound_reply(a, lanes, live, err, sizeof(err));
	if (ret) {
		/* Drop what this sync could not push (see the top). */
		f->io_n = push;
		run_prog(a->skel->progs.sluice_fleet_apply);
		if (a->push)
			sluice_fleet_push_end(a->push);
		show_addr(a);
		failed(a, err);
		return ret;
	}
	if (a->o.fleet_size > live)
		live = a->o.fleet_size;
	if (f->state != SLUICE_FLEET_SYNCED)
		a->keep_n_until = sluice_now_ns() + a->o.member_ttl_ms * 1000000ULL;
	if (sluice_now_ns() < a->keep_n_until && a->last_n > live)
		live = a->last_n;
	/* The fold is the share's of the N the datapath holds while it
	 * applies and after: the smaller one takes more. */
	n_fold = live <= 1 ? 1 : live < n_old ? live : n_old;
	sluice_fleet_tols_refresh(&a->tols, &a->h);
	for (i = 0; i < lanes; i++) {
		struct sluice_fleet_rec *r = &a->io[a->rec_of[i]];
		__s64 d = a->debt_us[i];

		if (d < 0 && a->alone) {
			/* Its shard is down: rate/N of the larger N, on its own */
			__u64 own = sluice_fleet_alone_charge(a->alone, &r->key, a->lane_of[i],
							      a->used_us[i],
							      live > n_old ? live : n_old,
							      sluice_now_ns() / 1000);

			r->debt[a->lane_of[i]] = own * TICKS_PER_US;
			if (a->push && own)
				sluice_fleet_push_debt(a->push, &r->key, own * 1000);
			continue;
		}

		r->debt[a->lane_of[i]] = sluice_fleet_fold(&a->tols, &r->key, a->lane_of[i], n_fold,
							   d > 0 ? (__u64)d * TICKS_PER_US : 0);
		/* In debt in the fleet: pushed at every sync until it runs out. */
		if (a->push && d > 0)
			sluice_fleet_push_debt(a->push, &r->key, (__u64)d * 1000);
	}
	if (a->push)
		__atomic_store_n(&a->held, (__u32)sluice_fleet_push_end(a->push), __ATOMIC_RELAXED);
	show_addr(a);
	f->io_n = push;
	ret = run_prog(a->skel->progs.sluice_fleet_apply);
	if (ret) {
		failed(a, "the apply program failed");
		return ret;
	}
	a->last_n = live;
	__atomic_store_n(&f->live, live ? live : 1, __ATOMIC_RELEASE);
	a->resync = n_old < live;
	/* The whole rate until the next sync should have ended: one interval,
	 * plus as long as this one took, plus one interval of grace; never
	 * past the horizon the fleet was given. */
	end = sluice_now_ns() + 2 * a->o.sync_ns + st.duration_ns;
	if (end > t0 + hz)
		end = t0 + hz;
	__atomic_store_n(&f->ok_until, end << SLUICE_TICK_SHIFT, __ATOMIC_RELEASE);
	a->last_dur_ns = st.duration_ns;
	say_silent(a, live, st.silent, st.reserve_ppm);
	f->last_ok_ns = sluice_realtime_ns();
	f->syncs++;
	f->keys_pushed += push;
	f->keys_skipped += want - push;
	f->last_rtt_ns = st.duration_ns;
	shards(a, &st, live > n_old ? live : n_old);
	if (f->state != SLUICE_FLEET_SYNCED) {
		set_state(a, SLUICE_FLEET_SYNCED);
		if (a->outage_said)
			say("synced with Redis at %s again (%u box%s): fleet policies of %s admit "
			    "the whole limit",
			    sluice_redis_addr(a->redis), live, live == 1 ? "" : "es", a->ifname);
	}
	a->outage_said = false;
	return 0;
}

static void *agent_main(void *arg)
{
	struct fleet_agent *a = arg;
	__u64 next = sluice_now_ns();

	while (!a->stop) {
		__u64 now;

		sync_once(a);
		next += a->o.sync_ns;
		now = sluice_now_ns();
		/* A sync longer than the interval, or a share for the fleet to
		 * record (a box that died now would be held to the one it
		 * recorded, the larger): the next at once. */
		if (next < now || a->resync)
			next = now;
		a->resync = false;
		while (!a->stop && (now = sluice_now_ns()) < next) {
			__u64 left = next - now;
			struct timespec ts = {
				.tv_sec = 0, .tv_nsec = (long)(left < 50000000 ? left : 50000000)
			};

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int fleet_start(const struct fleet_opts *o, const char *ifname, struct fleet_agent **out, char *err,
		size_t errlen)
{
	struct sluice_redis_opts ro = { .addr = o->redis,
					.password_file = o->password_file,
					.timeout_ns = o->timeout_ns,
					.sentinels = o->sentinels,
					.master = o->master,
					.cluster = o->cluster };
	struct fleet_agent *a = calloc(1, sizeof(*a));
	struct sluice_fleet *f;
	char host[64] = "box";
	int ret;

	*out = NULL;
	if (!a)
		return sluice_err(err, errlen, -ENOMEM, "Couldn't start the fleet agent");
	a->o = *o;
	snprintf(a->ifname, sizeof(a->ifname), "%s", ifname);
	if (o->member) {
		snprintf(a->member, sizeof(a->member), "%s", o->member);
	} else {
		gethostname(host, sizeof(host) - 1);
		snprintf(a->member, sizeof(a->member), "%s/%s", host, ifname);
	}
	ret = sluice_open(ifname, &a->h, err, errlen);
	if (ret)
		goto fail;
	if (!a->h.fleet || a->h.fleet_use_fd < 0) {
		ret = sluice_err(
			err, errlen, -EPROTO,
			"the state of %s was pinned by a sluice without fleet-wide limits: "
			"'sluice attach %s' adds them in place",
			ifname, ifname);
		goto fail;
	}
	ret = sluice_redis_open(&ro, &a->redis, err, errlen);
	if (ret)
		goto fail;
	ret = sluice_fleet_bound_new(&a->bound);
	if (ret) {
		sluice_err(err, errlen, ret, "Couldn't allocate the fleet agent's bounds");
		goto fail;
	}
	ret = load_progs(a, err, errlen);
	if (ret)
		goto fail;
	if (o->cluster && sluice_fleet_alone_new((size_t)a->io_max * 2, &a->alone)) {
		ret = sluice_err(err, errlen, -ENOMEM,
				 "Couldn't allocate the fleet agent's table of keys on their own");
		goto fail;
	}
	if (o->threshold > 0 && sluice_fleet_push_new(a->io_max, &a->push)) {
		ret = sluice_err(err, errlen, -ENOMEM,
				 "Couldn't allocate the fleet agent's table of %u keys held back",
				 a->io_max);
		goto fail;
	}
	/* A refused password is a mistake to fix now; an unreachable Redis
	 * is an outage the agent rides out. */
	ret = sluice_redis_connect(a->redis, err, errlen);
	if (ret == -EACCES)
		goto fail;
	f = a->h.fleet;
	snprintf(f->fleet, sizeof(f->fleet), "%s", o->fleet);
	snprintf(f->redis, sizeof(f->redis), "%s", sluice_redis_addr(a->redis));
	f->agent_pid = (__u32)getpid();
	f->interval_ns = o->sync_ns;
	/* An agent started again (an upgrade, a crash) keeps the N its state
	 * last had until the boxes have had a member TTL to say they live. */
	/* An N above --fleet-max (left by an agent that trusted Redis's
	 * count) is taken as --fleet-max. */
	if (f->live > o->fleet_max)
		__atomic_store_n(&f->live, o->fleet_max, __ATOMIC_RELEASE);
	a->last_n = f->live;
	if (sluice_now_ticks() >= __atomic_load_n(&f->ok_until, __ATOMIC_ACQUIRE) &&
	    drop_usage(a)) {
		ret = sluice_err(err, errlen, -EPROTO,
				 "Couldn't drop the usage %s admitted "
				 "without an agent: the fleet programs failed",
				 ifname);
		goto fail;
	}
	if (o->fleet_size > f->live)
		__atomic_store_n(&f->live, o->fleet_size, __ATOMIC_RELEASE);
	if (ret)
		failed(a, err);
	if (!sluice_has_fleet_policy(&a->h))
		say("no policy of %s is fleet-wide yet ('sluicectl -i %s set --fleet on', 'rule "
		    "add ... --fleet'): the agent only keeps this box a member of fleet %s",
		    ifname, ifname, o->fleet);
	if (pthread_create(&a->thread, NULL, agent_main, a)) {
		ret = sluice_err(err, errlen, -EAGAIN, "Couldn't start the fleet agent's thread");
		goto fail;
	}
	a->started = true;
	*out = a;
	return 0;
fail:
	fleet_stop(a);
	return ret;
}

void fleet_report(const struct fleet_agent *a, char *buf, size_t len)
{
	struct sluice_fleet_view v;

	if (!a || sluice_fleet_view(&a->h, &v)) {
		buf[0] = '\0';
		return;
	}
	if (!v.shared && v.state_code == SLUICE_FLEET_SYNCED)
		snprintf(buf, len, "; fleet %s synced, %u box%s, rtt %.1f ms, %u keys held",
			 v.f.fleet, v.n, v.n == 1 ? "" : "es", (double)v.f.last_rtt_ns / 1e6,
			 __atomic_load_n(&a->held, __ATOMIC_RELAXED));
	else
		snprintf(buf, len, "; fleet %s %s: rate/%u", v.f.fleet, v.state, v.n);
}

/*
 * Leave the fleet when the datapath goes with this run: the run detaches
 * what it attached (run_pid), or the limiter is detached already. Else the
 * datapath goes on admitting rate/N on its own, and the fleet must go on
 * holding its share: the box stays a member, silent.
 */
static void leave_fleet(struct fleet_agent *a)
{
	char err[SLUICE_ERR_LEN];

	if (__atomic_load_n(&a->h.cfg->run_pid, __ATOMIC_ACQUIRE) != (__u32)getpid() &&
	    !sluice_still_pinned(&a->h))
		return;
	if (sluice_redis_leave(a->redis, a->o.fleet, a->member, err, sizeof(err)))
		say("Couldn't leave fleet %s: %s; until %s syncs again, or leaves, the fleet holds "
		    "its share in reserve",
		    a->o.fleet, err, a->member);
	else
		say("%s left fleet %s", a->member, a->o.fleet);
}

void fleet_stop(struct fleet_agent *a)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!a)
		return;
	if (a->started) {
		a->stop = 1;
		pthread_join(a->thread, NULL);
		/* rate/N until an agent runs again: never the whole rate unshared. */
		__atomic_store_n(&a->h.fleet->ok_until, 0, __ATOMIC_RELEASE);
		set_state(a, SLUICE_FLEET_STOPPED);
		a->h.fleet->agent_pid = 0;
		leave_fleet(a);
	}
	if (a->io)
		munmap(a->io, ((size_t)a->io_max * sizeof(struct sluice_fleet_rec) + page - 1) /
				      page * page);
	fleet_bpf__destroy(a->skel);
	sluice_redis_close(a->redis);
	sluice_fleet_bound_free(a->bound);
	sluice_close(&a->h);
	free(a->names);
	free(a->keys);
	free(a->used_us);
	free(a->debt_us);
	free(a->rec_of);
	free(a->lane_of);
	sluice_fleet_tols_free(&a->tols);
	sluice_fleet_names_free(&a->rule_names);
	sluice_fleet_push_free(a->push);
	sluice_fleet_alone_free(a->alone);
	free(a);
}
