// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A full key table, as it really behaves: a new key never finds it full.
 * Both tables evict to make room, the insert succeeds, and neither
 * update_failed nor fail-closed ever see it; --new-keys bounds how many keys
 * a churn of new sources may create, and so how much it can evict. These
 * run on the table the environment picks (SLUICE_TEST_TABLE).
 *
 * Which key goes is the tables' own behaviour, checked on each pinned:
 *  - the LRU hash (--table lru, sluice_buckets): the kernel evicts the key
 *    least recently used, so a source held at its limit and idle through
 *    the churn is evicted and comes back with a full bucket;
 *  - the set table (--table sets): a new key takes the way free soonest, so
 *    the held source (its bucket the furthest ahead of now) stays held
 *    through the same churns.
 * A 64-key table here (--max-keys 64), one CPU, the test clock.
 *
 * Every assertion documents a sentence of docs/keys-and-tables.md ("A full key table")
 * and of sluice(8) (--max-keys, --table, --fail-closed, --new-keys).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <linux/bpf.h>

#include "libsluice.h"
#include "../lib/bpfrun.h"
#include "../lib/tap.h"

#define MAX_KEYS 64
#define CHURN (10 * MAX_KEYS) /* distinct new sources, one packet each */
#define BURST 4 /* the default policy: 1/h burst 4, never refilled here */
#define HELD "198.18.0.1"

/* The tag sluice_settings_init() gives the default policy. */
#define TAG_DEFAULT SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 1)

/*
 * The churn: CHURN new sources, source i 198.19.(i / 250).(i % 250 + 1) (three
 * /24s, none of them HELD's), each sending `per` packets in a row. Returns
 * how many of its packets passed.
 *
 * The kernel's LRU is approximate: a key looked up again since its creation
 * sits on its active list, ahead of the keys only inserted, which go first.
 * One packet per source (per 1) churns only the churn's own keys; from two
 * on (per 2), the churn's keys are used too, and the keys idle longest go,
 * whichever they are.
 */
static unsigned int churn(struct bpfrun *r, unsigned int per)
{
	unsigned int i, k, passed = 0;
	char src[32];

	for (i = 0; i < CHURN; i++) {
		snprintf(src, sizeof(src), "198.19.%u.%u", i / 250, i % 250 + 1);
		for (k = 0; k < per; k++)
			if (bpfrun_send(r, src, 60) == XDP_PASS)
				passed++;
	}
	return passed;
}

static bool setup(struct bpfrun *r, struct sluice_settings *set, bool fail_closed, bool new_keys)
{
	if (!bpfrun_setup(r, set, BURST))
		return false;
	if (fail_closed)
		set->flags |= SLUICE_FAIL_CLOSED;
	/* --new-keys 1/h with a burst of 4: the held source takes one, the
	 * churn three; past them new sources share their /24's bucket. */
	if (new_keys && sluice_limit_set(&set->new_keys, 1, BPFRUN_HOUR, 4, NULL, 0))
		return false;
	return !bpfrun_configure(r, set);
}

/* (1) The flood of new sources never meets a full table. */
static void test_flood(struct bpfrun *r)
{
	const char *t = "10 x --max-keys new sources, fail-closed";
	struct sluice_settings set;
	struct sluice_stats st;
	unsigned int passed;
	int keys;

	if (!setup(r, &set, true, false)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	passed = churn(r, 1);
	keys = bpfrun_count_keys(r, false);
	if (bpfrun_stats(r, &st)) {
		tap_ok(false, "%s: read stats", t);
		return;
	}
	TAP_TRUE(keys > 0 && keys <= MAX_KEYS,
		 "%s: the table holds at most --max-keys (%d) keys: the %s evicts to make "
		 "room (%d held)",
		 t, MAX_KEYS, r->table_sets ? "set table" : "LRU", keys);
	TAP_EQ(st.new_keys, CHURN, "%s: new_keys counts every key created, evicted ones too", t);
	TAP_TRUE(st.new_keys - keys >= CHURN - MAX_KEYS,
		 "%s: evicted_estimate (new_keys - keys = %llu) counts the evictions, at least "
		 "%d",
		 t, (unsigned long long)(st.new_keys - keys), CHURN - MAX_KEYS);
	TAP_EQ(st.update_failed, 0,
	       "%s: update_failed stays 0: the table evicts instead of refusing a key", t);
	TAP_TRUE(passed == CHURN && st.dropped == 0,
		 "%s: fail-closed dropped none of them: no key was refused", t);
}

/* HELD sends BURST + 1 packets: its burst, then a drop. */
static bool hold(struct bpfrun *r, const char *t)
{
	return bpfrun_expect(r, HELD, 60, "PPPPD", "%s: %s is held at its limit (burst %d)", t,
			     HELD, BURST);
}

/*
 * (2) The LRU's documented weakness: a held source that sends nothing while
 * the churn fills the table is evicted, and comes back with a full bucket.
 */
static void test_evicted_comes_back(struct bpfrun *r)
{
	const char *t = "--table lru: a held source, idle through a churn of sources sending twice";
	struct sluice_settings set;
	struct sluice_stats st;
	struct sluice_bucket b;

	if (!setup(r, &set, true, false)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	hold(r, t);
	churn(r, 2);
	TAP_EQ(bpfrun_lookup(r, false, TAG_DEFAULT, HELD, 32, &b), -ENOENT,
	       "%s: the churn evicted %s's bucket, idle longest", t, HELD);
	bpfrun_expect(r, HELD, 60, "PPPPD",
		      "%s: evicted, %s is admitted again with a full burst of %d", t, HELD, BURST);
	if (!bpfrun_stats(r, &st))
		TAP_EQ(st.update_failed, 0, "%s: update_failed stays 0: nothing was refused", t);
}

/* (2b) The LRU is approximate: sources seen once evict each other first. */
static void test_one_shot_churn(struct bpfrun *r)
{
	const char *t = "--table lru: a held source, idle through a churn of sources sending once";
	struct sluice_settings set;
	struct sluice_bucket b;

	if (!setup(r, &set, true, false)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	hold(r, t);
	churn(r, 1);
	TAP_TRUE(!bpfrun_lookup(r, false, TAG_DEFAULT, HELD, 32, &b),
		 "%s: %s's bucket, used since its creation, outlives keys only inserted", t, HELD);
	bpfrun_expect(r, HELD, 60, "D", "%s: %s stays held", t, HELD);
}

/*
 * (2c) The set table's answer: a new key takes the way free soonest. Every
 * churn source's bucket (1 or 2 packets of debt) is free before the held
 * source's (4 of debt), so the held source is never the victim, whatever
 * the churn, and stays held; nothing is refused.
 */
static void test_sets_keep_held(struct bpfrun *r, unsigned int per)
{
	char t[96];
	struct sluice_settings set;
	struct sluice_stats st;
	struct sluice_bucket b;
	unsigned int passed;

	snprintf(t, sizeof(t),
		 "--table sets: a held source, idle through a churn of sources sending %s",
		 per == 1 ? "once" : "twice");
	if (!setup(r, &set, true, false)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	hold(r, t);
	passed = churn(r, per);
	/* Its bucket still holds its debt: 4 packets of 1/h, 3 hours and more
	 * ahead of now (a full bucket would be at or before now). */
	TAP_TRUE(!bpfrun_lookup(r, false, TAG_DEFAULT, HELD, 32, &b) &&
			 b.s[0] > (SCN_T0 + 3 * BPFRUN_HOUR) << SLUICE_TICK_SHIFT,
		 "%s: %s's bucket, free last of its set, was never the victim", t, HELD);
	bpfrun_expect(r, HELD, 60, "D", "%s: %s stays held", t, HELD);
	if (bpfrun_stats(r, &st)) {
		tap_ok(false, "%s: read stats", t);
		return;
	}
	TAP_EQ(st.update_failed, 0, "%s: update_failed stays 0: nothing was refused", t);
	TAP_TRUE(passed == CHURN * per && st.new_keys >= CHURN + 1,
		 "%s: every churn packet passed (%u of %u), each source a key of its own", t,
		 passed, CHURN * per);
}

/*
 * (3) --new-keys is the defence: past its burst, new sources share their
 * /24's bucket, so the churn creates a handful of keys and evicts none.
 */
static void test_new_keys_defend(struct bpfrun *r)
{
	const char *t = "a held source, idle through the churn, --new-keys 1/h burst 4";
	struct sluice_settings set;
	struct sluice_stats st;
	struct sluice_bucket b;

	if (!setup(r, &set, true, true)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	hold(r, t);
	churn(r, 2);
	if (bpfrun_stats(r, &st)) {
		tap_ok(false, "%s: read stats", t);
		return;
	}
	/* HELD and 3 churn sources with keys of their own, then the churn's
	 * three /24 aggregates: 7 keys, far from the 64 that would evict. */
	TAP_EQ(st.new_keys, 1 + 3 + 3,
	       "%s: the churn created 3 keys of its own and 3 aggregates, no more", t);
	TAP_EQ(st.aggregated, 2 * (CHURN - 3),
	       "%s: every packet of every other new source was charged to its /24's bucket", t);
	TAP_EQ(st.update_failed, 0, "%s: update_failed stays 0", t);
	TAP_TRUE(!bpfrun_lookup(r, false, TAG_DEFAULT, HELD, 32, &b),
		 "%s: %s's bucket was not evicted", t, HELD);
	bpfrun_expect(r, HELD, 60, "D", "%s: %s stays held", t, HELD);
}

/* Open a 64-key table of `table` (0: the environment's) into r. */
static bool open_table(struct bpfrun *r, int table)
{
	struct bpfrun_opts o = { .max_keys = MAX_KEYS, .table = table };

	if (!bpfrun_open(r, &o))
		return true;
	tap_ok(false, "load the sluice program with the test clock, --max-keys %d, --table %s",
	       MAX_KEYS,
	       table == BPFRUN_SETS ? "sets" :
	       table == BPFRUN_LRU  ? "lru" :
				      bpfrun_default_table());
	return false;
}

int main(void)
{
	struct bpfrun r, other;
	bool sets;

	/* The LRU keeps free keys per CPU: one CPU makes what it evicts, and
	 * when, the same on every run. */
	bpfrun_one_cpu();
	if (!open_table(&r, 0))
		return tap_done();
	test_flood(&r);
	test_new_keys_defend(&r);
	/* Each table's own eviction, pinned: the environment's table first,
	 * then the other one, loaded for this. */
	sets = r.table_sets;
	if (!sets) {
		test_evicted_comes_back(&r);
		test_one_shot_churn(&r);
	} else {
		test_sets_keep_held(&r, 2);
		test_sets_keep_held(&r, 1);
	}
	bpfrun_close(&r);
	if (open_table(&other, sets ? BPFRUN_LRU : BPFRUN_SETS)) {
		if (sets) {
			test_evicted_comes_back(&other);
			test_one_shot_churn(&other);
		} else {
			test_sets_keep_held(&other, 2);
			test_sets_keep_held(&other, 1);
		}
		bpfrun_close(&other);
	}
	return tap_done();
}
