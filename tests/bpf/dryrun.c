// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Dry-run can be traced: a packet that a policy under dry-run would drop
 * passes, and is counted where a drop would be. Per policy in
 * sluice_rwould (its slot), per key in the key's dropped counter (as
 * `top` and `show` read it), and in a sampled event of reason
 * SLUICE_REASON_WOULD_DROP (as `sluice run` reads them). An enforcing
 * policy next to a dry-run one counts nothing there.
 *
 * Run on one CPU: events are sampled per CPU (the first of each 64
 * would-drops of a CPU emits one), so one CPU makes their number exact.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "libsluice.h"
#include "../lib/bpfrun.h"
#include "../lib/tap.h"

#define TAG_DEFAULT SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 1)
#define RULE_SLOT 3
#define DENY_SLOT 1

/* sluice_rwould of the loaded program, found by name among its maps. */
static int rwould_fd(struct bpfrun *r)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), ids[32], i;
	int fd = -1;

	info.nr_map_ids = 32;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(r->prog_fd, &info, &len))
		return -errno;
	for (i = 0; i < info.nr_map_ids && i < 32 && fd < 0; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int m = bpf_map_get_fd_by_id(ids[i]);

		if (m < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(m, &mi, &mlen) && !strcmp(mi.name, SLUICE_MAP_RWOULD))
			fd = m;
		else
			close(m);
	}
	return fd;
}

static int rw_fd = -1;

/* bpfrun_reset() knows nothing of sluice_rwould: zero every slot. */
static bool clear_rwould(struct bpfrun *r)
{
	void *zero = calloc((size_t)r->ncpus, sizeof(struct sluice_rwould));
	__u32 slot;
	bool ok = zero != NULL;

	for (slot = 0; ok && slot < SLUICE_MAX_RULES; slot++)
		ok = !bpf_map_update_elem(rw_fd, &slot, zero, BPF_ANY);
	free(zero);
	return ok;
}

static struct sluice_rwould rwould(__u32 slot)
{
	struct sluice_rwould w;

	if (sluice_percpu_sum(rw_fd, slot, (__u64 *)&w, sizeof(w) / sizeof(__u64)))
		memset(&w, 0xff, sizeof(w));
	return w;
}

/* The key's dropped counter (bucket), or ~0 when there is no bucket. */
static __u64 key_count(struct bpfrun *r, __u32 tag, const char *src)
{
	struct sluice_bucket b;

	return bpfrun_lookup(r, false, tag, src, 32, &b) ? ~0ULL : b.dropped;
}

/* How many events of reason `reason` came, and the first of them. */
static size_t events_of(struct bpfrun *r, __u8 reason, struct sluice_event *first)
{
	size_t i, n = 0;

	for (i = 0; i < r->nr_events; i++) {
		if (r->events[i].reason != reason)
			continue;
		if (!n++ && first)
			*first = r->events[i];
	}
	return n;
}

static void test_global(struct bpfrun *r)
{
	const char *t = "set --dry-run on";
	struct sluice_settings set;
	struct sluice_rstats rs;
	struct sluice_rwould w;
	struct sluice_event ev;
	size_t n;

	if (!bpfrun_setup(r, &set, 2) || !clear_rwould(r)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	set.flags |= SLUICE_DRY_RUN;
	bpfrun_configure(r, &set);
	bpfrun_expect(r, "198.18.0.1", 60, "PPPPP", "%s: burst 2, five packets all pass", t);
	w = rwould(0);
	TAP_TRUE(w.would_drop == 3 && w.would_drop_bytes == 180,
		 "%s: the default policy's slot counts 3 would-drops, 180 bytes (got %llu, %llu)",
		 t, (unsigned long long)w.would_drop, (unsigned long long)w.would_drop_bytes);
	TAP_TRUE(!bpfrun_rstats(r, 0, &rs) && rs.passed == 5 && rs.dropped == 0,
		 "%s: its passed/dropped say 5 passed, none dropped", t);
	TAP_EQ(key_count(r, TAG_DEFAULT, "198.18.0.1"), 3,
	       "%s: the key counts its 3 would-drops (what top and show read)", t);
	bpfrun_events(r);
	n = events_of(r, SLUICE_REASON_WOULD_DROP, &ev);
	TAP_TRUE(n == 1 && ev.sample == 64 && ev.slot == 0 && ev.key_prefixlen == 32 &&
			 ev.family == 4 && !memcmp(ev.addr, "\xc6\x12\x00\x01", 4),
		 "%s: one would-drop event (a sample of 64) names 198.18.0.1/32, slot 0 (got %zu)",
		 t, n);
	TAP_EQ(r->nr_events, n, "%s: and no drop event", t);

	/* Enforcing again: what the key counts from now on are drops; the
	 * would-drop counters stay where they were. */
	set.flags &= ~SLUICE_DRY_RUN;
	bpfrun_configure(r, &set);
	bpfrun_expect(r, "198.18.0.1", 60, "D", "dry-run off: the next packet drops");
	w = rwould(0);
	TAP_TRUE(w.would_drop == 3, "dry-run off: a drop is no would-drop (got %llu)",
		 (unsigned long long)w.would_drop);
	TAP_EQ(key_count(r, TAG_DEFAULT, "198.18.0.1"), 4,
	       "dry-run off: the key's count goes on with the drop");
	bpfrun_events(r);
	TAP_EQ(events_of(r, SLUICE_REASON_LIMITED, NULL), 1, "dry-run off: a drop event again");
}

/* A --dry-run rule next to an enforcing default: each counts in its slot. */
static void test_rule(struct bpfrun *r)
{
	const char *t = "rule --dry-run";
	struct sluice_settings set;
	struct sluice_policy p;
	struct sluice_rwould w, w0;
	struct sluice_event ev;

	if (!bpfrun_setup(r, &set, 1) || !clear_rwould(r)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	bpfrun_policy(&p, SLUICE_ACT_LIMIT, 1);
	p.flags |= SLUICE_POLICY_DRY_RUN;
	set.nr_rules = 1;
	if (bpfrun_rule(r, 0, "198.18.3.0/24", &p, RULE_SLOT) || bpfrun_configure(r, &set)) {
		tap_ok(false, "%s: put the rule", t);
		return;
	}
	bpfrun_expect(r, "198.18.3.1", 100, "PPP", "%s: its source passes", t);
	bpfrun_expect(r, "198.19.0.1", 100, "PDD", "%s: a source of the default drops", t);
	w = rwould(RULE_SLOT);
	w0 = rwould(0);
	TAP_TRUE(w.would_drop == 2 && w.would_drop_bytes == 200,
		 "%s: the rule's slot counts 2 would-drops, 200 bytes (got %llu, %llu)", t,
		 (unsigned long long)w.would_drop, (unsigned long long)w.would_drop_bytes);
	TAP_TRUE(w0.would_drop == 0 && w0.would_drop_bytes == 0,
		 "%s: the enforcing default's slot counts none (got %llu)", t,
		 (unsigned long long)w0.would_drop);
	TAP_EQ(key_count(r, SLUICE_TAG(RULE_SLOT, SLUICE_ALGO_TOKEN_BUCKET, 1), "198.18.3.1"), 2,
	       "%s: the rule's key counts 2", t);
	TAP_EQ(key_count(r, TAG_DEFAULT, "198.19.0.1"), 2, "%s: the default's key counts 2", t);
	bpfrun_events(r);
	TAP_TRUE(events_of(r, SLUICE_REASON_WOULD_DROP, &ev) == 1 && ev.slot == RULE_SLOT,
		 "%s: one would-drop event, of the rule's slot", t);
	TAP_TRUE(events_of(r, SLUICE_REASON_LIMITED, &ev) == 1 && ev.slot == 0,
		 "%s: one drop event, of the default's", t);
}

/* Under the global dry-run a deny rule's packets are would-drops of its slot. */
static void test_deny(struct bpfrun *r)
{
	const char *t = "deny rule under dry-run";
	struct sluice_settings set;
	struct sluice_policy p;
	struct sluice_rwould w;

	if (!bpfrun_setup(r, &set, 2) || !clear_rwould(r)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	bpfrun_policy(&p, SLUICE_ACT_DENY, 0);
	set.nr_rules = 1;
	set.flags |= SLUICE_DRY_RUN;
	if (bpfrun_rule(r, 0, "198.18.0.66/32", &p, DENY_SLOT) || bpfrun_configure(r, &set)) {
		tap_ok(false, "%s: put the rule", t);
		return;
	}
	bpfrun_expect(r, "198.18.0.66", 100, "PP", "%s: its source passes", t);
	w = rwould(DENY_SLOT);
	TAP_TRUE(w.would_drop == 2 && w.would_drop_bytes == 200,
		 "%s: the rule's slot counts 2 would-drops, 200 bytes (got %llu, %llu)", t,
		 (unsigned long long)w.would_drop, (unsigned long long)w.would_drop_bytes);
}

/* A key the table refuses under fail-closed is a would-drop of its policy.
 * Only the LRU table (--table lru) refuses keys: a plain hash of 1 in place
 * of sluice_buckets refuses the second. On the set table (sets) a full set
 * gives the new key a way: no would-drop at all. */
static void test_fail_closed(bool sets)
{
	const char *t = sets ? "--table sets: a full set, fail-closed, under dry-run" :
			       "--table lru: refused key, fail-closed, under dry-run";
	struct bpfrun_opts o = { .buckets_type = BPF_MAP_TYPE_HASH,
				 .max_keys = 1,
				 .table = BPFRUN_LRU };
	struct bpfrun_opts os = { .max_keys = 4, .sets_n = { 1, 1 }, .table = BPFRUN_SETS };
	struct sluice_settings set;
	struct sluice_rwould w;
	struct bpfrun r;
	int fd;

	if (bpfrun_open(&r, sets ? &os : &o)) {
		tap_ok(false, "%s: load", t);
		return;
	}
	fd = rw_fd;
	rw_fd = rwould_fd(&r);
	if (rw_fd < 0 || !bpfrun_setup(&r, &set, 200) || !clear_rwould(&r)) {
		tap_ok(false, "%s: setup", t);
		goto out;
	}
	set.flags |= SLUICE_FAIL_CLOSED | SLUICE_DRY_RUN;
	bpfrun_configure(&r, &set);
	if (sets) {
		/* Five keys in one set of four ways: the fifth evicts one. */
		bpfrun_expect(&r, "198.18.0.1", 60, "P", "%s: the first key fits", t);
		bpfrun_expect(&r, "198.18.0.2", 60, "P", "%s: the second", t);
		bpfrun_expect(&r, "198.18.0.3", 60, "P", "%s: the third", t);
		bpfrun_expect(&r, "198.18.0.4", 60, "P", "%s: the fourth", t);
		bpfrun_expect(&r, "198.18.0.5", 60, "P", "%s: the fifth takes a way", t);
		w = rwould(0);
		TAP_TRUE(w.would_drop == 0 && w.would_drop_bytes == 0,
			 "%s: no would-drop: the table refused nothing (got %llu)", t,
			 (unsigned long long)w.would_drop);
		TAP_EQ(bpfrun_count_keys(&r, false), 4, "%s: the set holds 4 keys", t);
		goto out;
	}
	bpfrun_expect(&r, "198.18.0.1", 60, "P", "%s: the first key fits", t);
	bpfrun_expect(&r, "198.18.0.2", 60, "P", "%s: the refused one passes", t);
	w = rwould(0);
	TAP_TRUE(w.would_drop == 1 && w.would_drop_bytes == 60,
		 "%s: counted as a would-drop of the default's slot (got %llu)", t,
		 (unsigned long long)w.would_drop);
out:
	if (rw_fd >= 0)
		close(rw_fd);
	rw_fd = fd;
	bpfrun_close(&r);
}

int main(void)
{
	struct bpfrun r;

	bpfrun_one_cpu();
	if (!bpfrun_load(&r, NULL))
		return tap_done();
	rw_fd = rwould_fd(&r);
	if (!tap_ok(rw_fd >= 0, "the program has a map %s", SLUICE_MAP_RWOULD)) {
		bpfrun_close(&r);
		return tap_done();
	}
	test_global(&r);
	test_rule(&r);
	test_deny(&r);
	test_fail_closed(false);
	test_fail_closed(true);
	close(rw_fd);
	bpfrun_close(&r);
	return tap_done();
}
