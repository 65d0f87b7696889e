// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What surrounds the algorithm in the datapath: dry-run (global and per
 * policy), byte limits that hand back the packet charge, the new-key
 * admission limit and its aggregate buckets, a key table that refuses a key
 * (fail-open by default, fail-closed on request), and drop-event sampling.
 * Each checks the verdicts and every counter of sluice_stats. A refused key
 * is the LRU table's (--table lru: a plain hash or an LRU of 1-2 entries in
 * place of sluice_buckets, pinned to it); the set table never refuses one,
 * checked on it pinned.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>

#include "libsluice.h"
#include "../lib/bpfrun.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define I_HOUR (BPFRUN_HOUR << SLUICE_TICK_SHIFT) /* 1/h in ticks */
/* The tag sluice_settings_init() gives the default policy. */
#define TAG_DEFAULT SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 1)

static void pin_self(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

static bool expect(struct bpfrun *r, const char *src, __u32 len, const char *want, const char *what)
{
	return bpfrun_expect(r, src, len, want, "%s: %s sends %s", what, src, want);
}

/* A source that the deny rule of setup_deny() drops. */
#define DENIED "198.18.0.66"

/* bpfrun_setup(), then a deny rule for DENIED in rule slot `slot`. */
static bool setup_deny(struct bpfrun *r, struct sluice_settings *set, __u64 burst, __u32 slot)
{
	struct sluice_policy deny;

	bpfrun_policy(&deny, SLUICE_ACT_DENY, 0);
	if (!bpfrun_setup(r, set, burst) || bpfrun_rule(r, 0, DENIED "/32", &deny, slot))
		return false;
	set->nr_rules = 1;
	return !bpfrun_configure(r, set);
}

/* A program on the LRU table (--table lru) whose sluice_buckets is a plain
 * hash of max_keys entries in place of the LRU, so that it refuses the next
 * key (E2BIG) deterministically; set up with burst 200. On failure one
 * failing TAP line and false. */
static bool open_hash(struct bpfrun *r, __u32 max_keys, struct sluice_settings *set, const char *t)
{
	struct bpfrun_opts o = { .buckets_type = BPF_MAP_TYPE_HASH,
				 .max_keys = max_keys,
				 .table = BPFRUN_LRU };

	if (bpfrun_open(r, &o)) {
		tap_ok(false, "%s: load", t);
		return false;
	}
	if (!bpfrun_setup(r, set, 200)) {
		tap_ok(false, "%s: setup", t);
		bpfrun_close(r);
		return false;
	}
	return true;
}

static void expect_stats(struct bpfrun *r, const struct sluice_stats *want, const char *what)
{
	struct sluice_stats got;

	if (bpfrun_stats(r, &got)) {
		tap_ok(false, "%s: read stats", what);
		return;
	}
	bpfrun_stats_eq(&got, want, "%s: every counter", what);
}

static void test_dry_run(struct bpfrun *r, bool per_policy)
{
	const char *t = per_policy ? "dry-run (policy flag)" : "dry-run (settings flag)";
	struct sluice_settings set;
	struct sluice_stats want;
	struct sluice_bucket b;
	size_t i, other;

	if (!bpfrun_setup(r, &set, 2)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	if (per_policy)
		set.def.flags |= SLUICE_POLICY_DRY_RUN;
	else
		set.flags |= SLUICE_DRY_RUN;
	bpfrun_configure(r, &set);
	expect(r, "198.18.0.1", 60, "PPPPP", t);
	memset(&want, 0, sizeof(want));
	want.rx = 5;
	want.rx_bytes = 300;
	want.passed = 5;
	want.would_drop = 3;
	want.new_keys = 1;
	expect_stats(r, &want, t);
	/* The key counts its would-drops (for top and show, which say so
	 * by the policy's mode); events are would-drops only (dryrun.c). */
	TAP_TRUE(!bpfrun_lookup(r, false, TAG_DEFAULT, "198.18.0.1", 32, &b) && b.dropped == 3,
		 "%s: the bucket counts its 3 would-drops", t);
	bpfrun_events(r);
	for (i = 0, other = 0; i < r->nr_events; i++)
		other += r->events[i].reason != SLUICE_REASON_WOULD_DROP;
	TAP_TRUE(r->nr_events >= 1 && !other, "%s: no drop event, only would-drop ones", t);

	/* Off again: the would-drops were not charged, the bucket is still
	 * at 2 of 2, so the next one drops. */
	set.flags &= ~SLUICE_DRY_RUN;
	set.def.flags &= ~SLUICE_POLICY_DRY_RUN;
	bpfrun_configure(r, &set);
	expect(r, "198.18.0.1", 60, "D", per_policy ? "policy dry-run off" : "dry-run off");
	want.rx = 6;
	want.rx_bytes = 360;
	want.dropped = 1;
	want.dropped_bytes = 60;
	want.limited = 1;
	expect_stats(r, &want, per_policy ? "policy dry-run off" : "dry-run off");
}

/* Under the global dry-run even a deny rule only counts. */
static void test_dry_run_deny(struct bpfrun *r)
{
	const char *t = "dry-run with a deny rule";
	struct sluice_settings set;
	struct sluice_stats want;
	struct sluice_rstats rs;

	if (!setup_deny(r, &set, 2, 1)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	set.flags |= SLUICE_DRY_RUN;
	bpfrun_configure(r, &set);
	expect(r, DENIED, 100, "PP", t);
	memset(&want, 0, sizeof(want));
	want.rx = 2;
	want.rx_bytes = 200;
	want.passed = 2;
	want.would_drop = 2;
	expect_stats(r, &want, t);
	TAP_TRUE(!bpfrun_rstats(r, 1, &rs) && rs.passed == 2 && rs.dropped == 0,
		 "%s: the rule's slot counts 2 passed", t);
}

/*
 * Packets 1/h burst 3, bytes 8000bit (1000 B/s) burst 1000: the frame the
 * byte limit refuses leaves both TATs as they were.
 */
static void test_bytes(struct bpfrun *r)
{
	const char *t = "bytes";
	struct scn sc = { .name = t,
			  .algo = SLUICE_ALGO_TOKEN_BUCKET,
			  .rate = "1/h",
			  .burst = 3,
			  .byte_rate = "8000bit",
			  .byte_burst = 1000 };
	struct sluice_bucket before, after;
	struct sluice_settings set;
	struct sluice_stats want;
	__u64 t0 = SCN_T0 << SLUICE_TICK_SHIFT;
	bool ok;

	if (!bpfrun_setup(r, &set, 1) || scn_policy(&sc, &set.def, NULL, 0) ||
	    bpfrun_configure(r, &set)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	expect(r, "198.18.0.1", 600, "P", t);
	ok = !bpfrun_lookup(r, false, TAG_DEFAULT, "198.18.0.1", 32, &before);
	TAP_TRUE(ok && before.s[0] == t0 + I_HOUR && before.s[1] == t0 + 600 * 16000000ULL,
		 "%s: 600 B charged 1 packet (1 h) and 600 B (600 ms)", t);
	expect(r, "198.18.0.1", 600, "D", t);
	ok = !bpfrun_lookup(r, false, TAG_DEFAULT, "198.18.0.1", 32, &after);
	TAP_TRUE(ok && !memcmp(after.s, before.s, sizeof(before.s)),
		 "%s: the byte limit refused 600 B, and the packet charge was handed back", t);
	expect(r, "198.18.0.1", 300, "P", t);
	expect(r, "198.18.0.1", 100, "P", t);
	expect(r, "198.18.0.1", 60, "D", t);
	memset(&want, 0, sizeof(want));
	want.rx = 5;
	want.rx_bytes = 600 + 600 + 300 + 100 + 60;
	want.passed = 3;
	want.dropped = 2;
	want.dropped_bytes = 660;
	want.limited = 2;
	want.new_keys = 1;
	expect_stats(r, &want, t);
}

/*
 * New keys 1/h burst 2; the default policy 1/h burst 1. Past the second
 * new source, new sources are charged to the bucket of their /24 (IPv4) or
 * /48 (IPv6), created on first use.
 */
static void test_new_keys(struct bpfrun *r)
{
	const char *t = "new-key limit";
	struct sluice_settings set;
	struct sluice_stats want;
	struct sluice_bucket b;

	if (!bpfrun_setup(r, &set, 1) ||
	    sluice_limit_set(&set.new_keys, 1, BPFRUN_HOUR, 2, NULL, 0) ||
	    bpfrun_configure(r, &set)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	expect(r, "198.18.0.1", 60, "P", t); /* own bucket */
	expect(r, "198.18.0.2", 60, "P", t); /* own bucket: the 2 new keys are spent */
	expect(r, "198.18.0.3", 60, "P", t); /* 198.18.0.0/24's bucket, new */
	expect(r, "198.18.0.4", 60, "D", t); /* the same /24 bucket, now empty */
	expect(r, "198.18.0.1", 60, "D", t); /* its own bucket, empty */
	expect(r, "198.18.1.5", 60, "P", t); /* 198.18.1.0/24's bucket, new */
	expect(r, "2001:2:0:1::1", 60, "P", t); /* 2001:2::/48's bucket, new */
	expect(r, "2001:2:0:2::1", 60, "D", t); /* the same /48 */
	memset(&want, 0, sizeof(want));
	want.rx = 8;
	want.rx_bytes = 480;
	want.passed = 5;
	want.dropped = 3;
	want.dropped_bytes = 180;
	want.limited = 3;
	want.new_keys = 5;
	want.aggregated = 5;
	expect_stats(r, &want, t);
	TAP_TRUE(!bpfrun_lookup(r, false, TAG_DEFAULT | SLUICE_TAG_AGGREGATE, "198.18.0.0", 24,
				&b) &&
			 b.dropped == 1,
		 "%s: the aggregate 198.18.0.0/24 bucket exists and counts its drop", t);
	TAP_TRUE(!bpfrun_lookup(r, false, TAG_DEFAULT | SLUICE_TAG_AGGREGATE, "2001:2::", 48, &b),
		 "%s: the aggregate 2001:2::/48 bucket exists", t);
	TAP_EQ(bpfrun_count_keys(r, false), 5, "%s: 5 buckets in the table", t);

	/* An hour on, one new key is admitted again, the next aggregated. */
	bpfrun_clock(r, SCN_T0 + BPFRUN_HOUR);
	expect(r, "198.18.0.9", 60, "P", "new-key limit an hour later");
	expect(r, "198.18.0.10", 60, "P", "new-key limit an hour later");
	want.rx += 2;
	want.rx_bytes += 120;
	want.passed += 2;
	want.new_keys += 1;
	want.aggregated += 1;
	expect_stats(r, &want, "new-key limit an hour later");
	TAP_TRUE(!bpfrun_lookup(r, false, TAG_DEFAULT, "198.18.0.9", 32, &b) &&
			 bpfrun_lookup(r, false, TAG_DEFAULT, "198.18.0.10", 32, &b) == -ENOENT,
		 "new-key limit an hour later: 198.18.0.9 has its own bucket, 198.18.0.10 not");
}

/*
 * A plain hash of 2 entries in place of the LRU: it refuses the third key
 * (E2BIG), deterministically. The datapath must pass (fail-open), or drop
 * when told to (SLUICE_FAIL_CLOSED), and count it either way.
 */
static void test_fail_hash(void)
{
	const char *t = "--table lru: full key table (hash of 2)";
	struct sluice_settings set;
	struct sluice_stats want;
	struct bpfrun r;

	if (!open_hash(&r, 2, &set, t))
		return;
	expect(&r, "198.18.0.1", 60, "P", t);
	expect(&r, "198.18.0.2", 60, "P", t);
	expect(&r, "198.18.0.3", 60, "P", "--table lru: fail-open");
	set.flags |= SLUICE_FAIL_CLOSED;
	bpfrun_configure(&r, &set);
	expect(&r, "198.18.0.4", 60, "D", "--table lru: fail-closed");
	expect(&r, "198.18.0.1", 60, "P", "--table lru: fail-closed, a known key");
	memset(&want, 0, sizeof(want));
	want.rx = 5;
	want.rx_bytes = 300;
	want.passed = 4;
	want.dropped = 1;
	want.dropped_bytes = 60;
	want.new_keys = 2;
	want.update_failed = 2;
	expect_stats(&r, &want, t);
	bpfrun_events(&r);
	TAP_TRUE(r.nr_events == 1 && r.events[0].reason == SLUICE_REASON_FAIL_CLOSED &&
			 r.events[0].addr[3] == 4,
		 "%s: one drop event, reason fail-closed, from 198.18.0.4", t);
	bpfrun_close(&r);
}

/* Dry-run promises that nothing is dropped: a refused key under fail-closed
 * is a would-drop then, like any other. */
static void test_fail_closed_dry_run(void)
{
	const char *t = "--table lru: full key table, fail-closed under dry-run";
	struct sluice_settings set;
	struct sluice_stats st;
	struct bpfrun r;
	char got[4];

	if (!open_hash(&r, 1, &set, t))
		return;
	set.flags |= SLUICE_FAIL_CLOSED | SLUICE_DRY_RUN;
	bpfrun_configure(&r, &set);
	bpfrun_sendn(&r, "198.18.0.1", 60, 1, got);
	bpfrun_sendn(&r, "198.18.0.2", 60, 1, got + 1);
	if (bpfrun_stats(&r, &st)) {
		tap_ok(false, "%s: read stats", t);
		goto out;
	}
	if (!tap_ok(!strcmp(got, "PP") && st.update_failed == 1 && st.dropped == 0 &&
			    st.would_drop == 1,
		    "%s: the refused key passes, counted in update_failed and would_drop", t))
		tap_diag("  verdicts %s, update_failed %llu dropped %llu would_drop %llu", got,
			 (unsigned long long)st.update_failed, (unsigned long long)st.dropped,
			 (unsigned long long)st.would_drop);
out:
	bpfrun_close(&r);
}

struct flood_arg {
	struct bpfrun *r;
	const __u8 *frame;
	int cpu;
	int err;
};

static void *flood_thread(void *p)
{
	struct flood_arg *a = p;
	cpu_set_t one;
	__u32 action;

	CPU_ZERO(&one);
	CPU_SET(a->cpu, &one);
	a->err = pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	if (!a->err)
		a->err = bpfrun_run_repeat(a->r, a->frame, 60, 200000, &action);
	return NULL;
}

/*
 * The real LRU refusing: a 1-entry LRU, three sources (bench_vary_keys) and
 * two CPUs. A CPU's fresh key is evicted by the other's before it can be
 * used, or no free node can be had: state_get() comes back empty, which is
 * what update_failed counts. Nondeterministic: from a few to a thousand
 * times in 400000 packets here, so the flood repeats until it was seen.
 */
static void test_fail_lru(bool closed)
{
	const char *t = closed ? "--table lru: LRU of 1 on 2 CPUs, fail-closed" :
				 "--table lru: LRU of 1 on 2 CPUs, fail-open";
	struct bpfrun_opts o = {
		.real_clock = true, .max_keys = 1, .vary_keys = 3, .table = BPFRUN_LRU
	};
	struct flood_arg a[2];
	struct sluice_settings set;
	struct sluice_stats st;
	pthread_t th[2];
	__u8 frame[FRAME_MAX];
	int i, round, rounds;
	struct bpfrun r;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		tap_skip("one CPU: two must race for the table", "%s", t);
		return;
	}
	if (bpfrun_open(&r, &o)) {
		tap_ok(false, "%s: load", t);
		return;
	}
	sluice_settings_init(&set);
	if (closed)
		set.flags |= SLUICE_FAIL_CLOSED;
	bpfrun_configure(&r, &set);
	frame_ip(frame, "198.18.0.1", 60, NULL);
	/* Rounds of 2 x 200000 until the race has been seen, at most 8. */
	for (round = 0; round < 8; round++) {
		for (i = 0; i < 2; i++) {
			a[i] = (struct flood_arg){ .r = &r, .frame = frame, .cpu = i };
			pthread_create(&th[i], NULL, flood_thread, &a[i]);
		}
		for (i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		if (a[0].err || a[1].err || bpfrun_stats(&r, &st)) {
			tap_ok(false, "%s: run", t);
			goto out;
		}
		if (st.update_failed)
			break;
	}
	rounds = round < 8 ? round + 1 : 8;
	tap_diag("%s: rx %llu passed %llu dropped %llu limited %llu contended %llu "
		 "new_keys %llu update_failed %llu",
		 t, (unsigned long long)st.rx, (unsigned long long)st.passed,
		 (unsigned long long)st.dropped, (unsigned long long)st.limited,
		 (unsigned long long)st.contended, (unsigned long long)st.new_keys,
		 (unsigned long long)st.update_failed);
	TAP_TRUE(st.update_failed > 0, "%s: the table refused keys (update_failed > 0)", t);
	TAP_TRUE(st.rx == rounds * 400000ULL && st.passed + st.dropped == st.rx,
		 "%s: every packet passed or dropped, once", t);
	if (closed)
		TAP_EQ(st.dropped, st.limited + st.contended + st.update_failed,
		       "%s: every refused key was dropped", t);
	else
		TAP_EQ(st.dropped, st.limited + st.contended, "%s: no refused key was dropped", t);
out:
	bpfrun_close(&r);
}

/*
 * The set table never refuses a key: a full set gives a new key the way free
 * soonest. One set (--max-keys 4), fail-closed, eight sources of burst 200:
 * every packet passes, nothing is counted in update_failed, and an evicted
 * source comes back (with a full bucket: its next packet passes too). The
 * same under dry-run: no would-drop.
 */
static void test_fail_sets(bool dry)
{
	const char *t = dry ? "--table sets: a full set, fail-closed under dry-run" :
			      "--table sets: a full set, fail-closed";
	struct bpfrun_opts o = { .max_keys = 4, .sets_n = { 1, 1 }, .table = BPFRUN_SETS };
	struct sluice_settings set;
	struct sluice_stats want;
	char src[32], got[32] = "";
	struct bpfrun r;
	int i;

	if (bpfrun_open(&r, &o)) {
		tap_ok(false, "%s: load", t);
		return;
	}
	if (!bpfrun_setup(&r, &set, 200)) {
		tap_ok(false, "%s: setup", t);
		goto out;
	}
	set.flags |= SLUICE_FAIL_CLOSED | (dry ? SLUICE_DRY_RUN : 0);
	bpfrun_configure(&r, &set);
	for (i = 0; i < 8; i++) {
		snprintf(src, sizeof(src), "198.18.0.%d", i + 1);
		bpfrun_sendn(&r, src, 60, 1, got + i);
	}
	/* 198.18.0.1 was evicted by the fifth to ninth: it comes back. */
	bpfrun_sendn(&r, "198.18.0.1", 60, 1, got + 8);
	if (!tap_ok(!strcmp(got, "PPPPPPPPP"),
		    "%s: 8 sources in a table of 4 pass, and the first again", t))
		tap_diag("  got %s", got);
	memset(&want, 0, sizeof(want));
	want.rx = 9;
	want.rx_bytes = 540;
	want.passed = 9;
	want.new_keys = 9;
	expect_stats(&r, &want, t);
	TAP_EQ(bpfrun_count_keys(&r, false), 4, "%s: the set holds 4 keys", t);
out:
	bpfrun_close(&r);
}

/*
 * Drop events: one per 64 drops per CPU by default (event_mask 63), each
 * standing for 64; with every drop sampled the ring fills and the rest are
 * counted as lost, never silently.
 */
static void test_events(struct bpfrun *r)
{
	struct sluice_settings set;
	struct sluice_stats st;
	__u8 frame[FRAME_MAX];
	__u32 action;
	size_t i, bad = 0;

	if (!setup_deny(r, &set, 1, 7)) {
		tap_ok(false, "events: setup");
		return;
	}
	frame_ip(frame, DENIED, 60, NULL);
	if (bpfrun_run_repeat(r, frame, 60, 640, &action) || bpfrun_events(r) < 0) {
		tap_ok(false, "events: run");
		return;
	}
	for (i = 0; i < r->nr_events; i++)
		bad += r->events[i].sample != 64 || r->events[i].slot != 7 ||
		       r->events[i].reason != SLUICE_REASON_DENIED;
	TAP_TRUE(action == XDP_DROP && r->nr_events == 10 && !bad,
		 "events: 640 drops on one CPU make 10 events, each for 64, rule slot 7 "
		 "(got %zu)",
		 r->nr_events);

	if (!setup_deny(r, &set, 1, 7)) {
		tap_ok(false, "events: setup");
		return;
	}
	set.event_mask = 0;
	bpfrun_configure(r, &set);
	if (bpfrun_run_repeat(r, frame, 60, 8000, &action) || bpfrun_events(r) < 0 ||
	    bpfrun_stats(r, &st)) {
		tap_ok(false, "events: run");
		return;
	}
	tap_diag("events: 8000 drops, every one sampled: %zu events, %llu lost", r->nr_events,
		 (unsigned long long)st.events_lost);
	TAP_TRUE(st.events_lost > 0 && r->nr_events + st.events_lost == 8000,
		 "events: a full ring counts the rest in events_lost");
}

int main(void)
{
	struct bpfrun r;

	/* One CPU: sampled events depend on the per-CPU drop count. */
	pin_self(0);
	if (!bpfrun_load(&r, NULL))
		return tap_done();
	test_dry_run(&r, false);
	test_dry_run(&r, true);
	test_dry_run_deny(&r);
	test_bytes(&r);
	test_new_keys(&r);
	test_events(&r);
	bpfrun_close(&r);
	test_fail_hash();
	test_fail_closed_dry_run();
	test_fail_sets(false);
	test_fail_sets(true);
	/* The threads pin themselves; this thread may go anywhere. */
	pin_self(0);
	test_fail_lru(false);
	test_fail_lru(true);
	return tap_done();
}
