// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The datapath side of fleet-wide limits (SLUICE_POLICY_FLEET, sluice.h above
 * struct sluice_fleet_use): a box decides on its share of the limit, records
 * what its admitted packets cost the fleet, and the agent's two programs
 * (bpf/fleet.bpf.c) collect that usage and fold the fleet's debt back in.
 *
 * The datapath (build/sluice.bpf.o) and the agent's programs
 * (build/fleet.bpf.o, whose sluice_buckets, sluice_fleet and
 * sluice_fleet_use are the datapath's maps, as the agent reuses the pins)
 * both run on the test clock, set to the same instant in both. Every figure
 * is worked out by hand from the policy: rate 100/s is 10 ms, 160,000,000
 * ticks, a packet. One CPU, so that the LRU maps never evict what a few keys
 * put there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <sluice/algo.h>
#include <sluice/sets.h>
#include "libsluice.h"
#include "sluice.skel.h"
#include "fleet.skel.h"
#include "../lib/bpfrun.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)
#define C_PKT TICKS(SCN_MS(10)) /* one packet at 100/s */
#define C_BYTE 16000ULL /* one byte at 1,000,000 B/s: 1 us, in ticks */
#define FAR TICKS(SCN_T0 + BPFRUN_HOUR) /* ok_until an hour ahead: synced */
#define PAST TICKS(SCN_T0 - SCN_MS(1)) /* ok_until behind now: outage */
#define TAG_TB SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 1)
#define A "198.18.0.1"
#define B "198.18.0.2"
#define C "198.18.0.3"
#define D "198.18.0.4"
#define Z "198.18.0.99"

struct fleet {
	struct bpfrun r; /* the datapath */
	struct fleet_bpf *skel; /* the agent's programs on the datapath's maps */
	int fleet_fd, use_fd, io_fd, collect_fd, apply_fd;
	__u32 io_entries;
};

/* fleet.bpf.o on the maps of the datapath r, with its own sluice_fleet_io of
 * io_entries records (0: as many as sluice_fleet_use holds, as the agent
 * sizes it). */
static int fleet_open(struct fleet *f, __u32 io_entries)
{
	struct sluice_bpf *dp = f->r.skel;
	struct fleet_bpf *skel;
	int err;

	skel = fleet_bpf__open();
	if (!skel) {
		err = -errno;
		tap_diag("Couldn't open the fleet skeleton: %s", strerror(-err));
		return err;
	}
	skel->rodata->test_clock = 1;
	/* The datapath's key table, as the agent sets it from the state. */
	if (f->r.table_sets) {
		skel->rodata->table_sets = 1;
		skel->rodata->set_seed = f->r.seed;
		skel->rodata->sets_n[0] = bpf_map__max_entries(dp->maps.sluice_sets4);
		skel->rodata->sets_n[1] = bpf_map__max_entries(dp->maps.sluice_sets6);
	}
	if (!io_entries)
		io_entries = bpf_map__max_entries(dp->maps.sluice_fleet_use);
	err = bpf_map__reuse_fd(skel->maps.sluice_buckets, bpf_map__fd(dp->maps.sluice_buckets));
	if (!err)
		err = bpf_map__reuse_fd(skel->maps.sluice_sets4, f->r.sets_fd[0]);
	if (!err)
		err = bpf_map__reuse_fd(skel->maps.sluice_sets6, f->r.sets_fd[1]);
	if (!err)
		err = bpf_map__reuse_fd(skel->maps.sluice_fleet,
					bpf_map__fd(dp->maps.sluice_fleet));
	if (!err)
		err = bpf_map__reuse_fd(skel->maps.sluice_fleet_use,
					bpf_map__fd(dp->maps.sluice_fleet_use));
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.sluice_fleet_io, io_entries);
	if (!err)
		err = fleet_bpf__load(skel);
	if (err) {
		tap_diag("Couldn't load the fleet programs: %s", strerror(-err));
		fleet_bpf__destroy(skel);
		return err;
	}
	f->skel = skel;
	f->io_entries = io_entries;
	f->fleet_fd = bpf_map__fd(dp->maps.sluice_fleet);
	f->use_fd = bpf_map__fd(dp->maps.sluice_fleet_use);
	f->io_fd = bpf_map__fd(skel->maps.sluice_fleet_io);
	f->collect_fd = bpf_program__fd(skel->progs.sluice_fleet_collect);
	f->apply_fd = bpf_program__fd(skel->progs.sluice_fleet_apply);
	return 0;
}

/* Both objects read the same instant (each has its own .bss). */
static void clock_at(struct fleet *f, __u64 ns)
{
	bpfrun_clock(&f->r, ns);
	f->skel->bss->test_now_ns = ns;
}

static struct sluice_key key_of(__u32 tag, const char *src, __u8 prefixlen)
{
	struct sluice_key k;
	struct sluice_cidr c;

	memset(&k, 0, sizeof(k));
	if (sluice_parse_addr(src, &c, NULL, 0))
		return k;
	k.tag = tag;
	k.family = c.family;
	k.prefixlen = prefixlen;
	memcpy(k.addr, c.addr, 16);
	sluice_mask(k.addr, prefixlen);
	return k;
}

/* The usage of src's key; ~0 in both when it has no entry. */
static struct sluice_fleet_use use_of(struct fleet *f, __u32 tag, const char *src)
{
	struct sluice_key k = key_of(tag, src, 32);
	struct sluice_fleet_use u;

	if (bpf_map_lookup_elem(f->use_fd, &k, &u))
		memset(&u, 0xff, sizeof(u));
	return u;
}

static bool put_use(struct fleet *f, const char *src, __u64 pkt, __u64 bytes)
{
	struct sluice_key k = key_of(TAG_TB, src, 32);
	struct sluice_fleet_use u = { .used = { pkt, bytes } };

	return !bpf_map_update_elem(f->use_fd, &k, &u, BPF_ANY);
}

/* src's bucket; s[] all ~0 when it has none. */
static struct sluice_bucket bucket_of(struct fleet *f, __u32 tag, const char *src)
{
	struct sluice_bucket b;

	if (bpfrun_lookup(&f->r, false, tag, src, 32, &b))
		memset(&b, 0xff, sizeof(b));
	return b;
}

static bool set_fleet(struct fleet *f, __u32 live, __u64 ok_until)
{
	struct sluice_fleet v;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(f->fleet_fd, &zero, &v))
		return false;
	v.live = live;
	v.ok_until = ok_until;
	return !bpf_map_update_elem(f->fleet_fd, &zero, &v, BPF_ANY);
}

static struct sluice_fleet fleet_state(struct fleet *f)
{
	struct sluice_fleet v;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(f->fleet_fd, &zero, &v))
		memset(&v, 0xff, sizeof(v));
	return v;
}

static bool set_io_n(struct fleet *f, __u32 n)
{
	struct sluice_fleet v = fleet_state(f);
	__u32 zero = 0;

	v.io_n = n;
	return !bpf_map_update_elem(f->fleet_fd, &zero, &v, BPF_ANY);
}

/* One run of a fleet program, as the agent makes it: 0 and XDP_PASS. */
static int run_prog(int fd)
{
	__u8 frame[64] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = sizeof(frame));

	if (bpf_prog_test_run_opts(fd, &o))
		return -errno;
	return o.retval == XDP_PASS ? 0 : -EPROTO;
}

static bool collect(struct fleet *f, const char *t)
{
	return tap_ok(!run_prog(f->collect_fd), "%s: the collect program runs", t);
}

static bool apply(struct fleet *f, const char *t)
{
	return tap_ok(!run_prog(f->apply_fd), "%s: the apply program runs", t);
}

static bool get_rec(struct fleet *f, __u32 i, struct sluice_fleet_rec *rec)
{
	return !bpf_map_lookup_elem(f->io_fd, &i, rec);
}

static bool put_rec(struct fleet *f, __u32 i, const struct sluice_fleet_rec *rec)
{
	return !bpf_map_update_elem(f->io_fd, &i, rec, BPF_ANY);
}

/* Index of src's record among the first n of sluice_fleet_io, or -1. */
static long find_rec(struct fleet *f, __u32 n, __u32 tag, const char *src,
		     struct sluice_fleet_rec *rec)
{
	struct sluice_key k = key_of(tag, src, 32);
	__u32 i;

	for (i = 0; i < n; i++)
		if (get_rec(f, i, rec) && !memcmp(&rec->key, &k, sizeof(k)))
			return i;
	return -1;
}

static bool empty_use(struct fleet *f)
{
	struct sluice_key k;

	while (!bpf_map_get_next_key(f->use_fd, NULL, &k))
		if (bpf_map_delete_elem(f->use_fd, &k))
			return false;
	return errno == ENOENT;
}

static long use_keys(struct fleet *f)
{
	return sluice_count_keys(f->use_fd);
}

/* A token bucket of 100/s burst `burst` (flags: SLUICE_POLICY_*). */
static void bucket_policy(struct sluice_policy *p, __u64 burst, __u8 flags)
{
	memset(p, 0, sizeof(*p));
	p->tag = TAG_TB;
	p->algo = SLUICE_ALGO_TOKEN_BUCKET;
	p->action = SLUICE_ACT_LIMIT;
	p->flags = flags;
	p->prefix4 = 32;
	p->prefix6 = 64;
	sluice_limit_set(&p->pkt, 100, SLUICE_NS_PER_SEC, burst, NULL, 0);
}

/* Forget every key and its usage; the default policy p; N live, ok_until;
 * the clock at SCN_T0. */
static bool setup(struct fleet *f, struct sluice_settings *set, const struct sluice_policy *p,
		  __u32 live, __u64 ok_until)
{
	if (!bpfrun_setup(&f->r, set, 1) || !empty_use(f) || !set_fleet(f, live, ok_until))
		return false;
	set->def = *p;
	clock_at(f, SCN_T0);
	return !bpfrun_configure(&f->r, set);
}

/* A test's policy (bucket_policy()) on a fresh setup(), as a TAP check. */
static bool start(struct fleet *f, struct sluice_settings *set, struct sluice_policy *p,
		  __u64 burst, __u8 flags, __u32 live, __u64 ok_until, const char *t)
{
	bucket_policy(p, burst, flags);
	return tap_ok(setup(f, set, p, live, ok_until), "%s: setup", t);
}

static bool expect_at(struct fleet *f, __u64 ns, const char *src, const char *want, const char *t,
		      const char *when)
{
	clock_at(f, ns);
	return bpfrun_expect(&f->r, src, 60, want, "%s: %s sends %s", t, when, want);
}

/* 1. N = 3, synced: burst/3 at once, then the whole rate. */
static void test_synced(struct fleet *f)
{
	const char *t = "N=3 synced, 100/s burst 30";
	struct sluice_settings set;
	struct sluice_policy p;

	if (!start(f, &set, &p, 30, SLUICE_POLICY_FLEET, 3, FAR, t))
		return;
	expect_at(f, SCN_T0, A, "PPPPPPPPPPD", t, "t0");
	TAP_EQ(bucket_of(f, TAG_TB, A).s[0], TICKS(SCN_T0) + 10 * C_PKT,
	       "%s: the TAT is t0 + 10 packets' cost", t);
	expect_at(f, SCN_T0 + SCN_MS(10) - 1, A, "D", t, "t0 + 10 ms - 1 ns");
	expect_at(f, SCN_T0 + SCN_MS(10), A, "PD", t, "t0 + 10 ms");
	expect_at(f, SCN_T0 + SCN_MS(20) - 1, A, "D", t, "t0 + 20 ms - 1 ns");
	expect_at(f, SCN_T0 + SCN_MS(20), A, "PD", t, "t0 + 20 ms");

	t = "N=3 synced, 100/s burst 2";
	if (!start(f, &set, &p, 2, SLUICE_POLICY_FLEET, 3, FAR, t))
		return;
	expect_at(f, SCN_T0, A, "PD", t, "t0 (burst/3 < 1: one packet)");
	expect_at(f, SCN_T0 + SCN_MS(10) - 1, A, "D", t, "t0 + 10 ms - 1 ns");
	expect_at(f, SCN_T0 + SCN_MS(10), A, "PD", t, "t0 + 10 ms");
}

/* 2. N = 3, outage: rate/3 and burst/3. */
static void test_outage(struct fleet *f)
{
	const char *t = "N=3 outage, 100/s burst 30";
	struct sluice_settings set;
	struct sluice_policy p;

	if (!start(f, &set, &p, 30, SLUICE_POLICY_FLEET, 3, PAST, t))
		return;
	expect_at(f, SCN_T0, A, "PPPPPPPPPPD", t, "t0");
	TAP_EQ(bucket_of(f, TAG_TB, A).s[0], TICKS(SCN_T0) + 10 * 3 * C_PKT,
	       "%s: the TAT is t0 + 10 packets at 3 times their cost", t);
	expect_at(f, SCN_T0 + SCN_MS(30) - 1, A, "D", t, "t0 + 30 ms - 1 ns");
	expect_at(f, SCN_T0 + SCN_MS(30), A, "PD", t, "t0 + 30 ms");
	expect_at(f, SCN_T0 + SCN_MS(60) - 1, A, "D", t, "t0 + 60 ms - 1 ns");
	expect_at(f, SCN_T0 + SCN_MS(60), A, "PD", t, "t0 + 60 ms");
	/* Admitted on the box's own share: never the fleet's to charge later
	 * (issue 20, B8), so nothing is recorded for the agent to push. */
	TAP_EQ(use_keys(f), 0, "%s: the 12 packets admitted in the outage record no usage", t);

	/* ok_until == now is already the outage (now >= ok_until). */
	t = "N=3 outage, 100/s burst 2";
	if (!start(f, &set, &p, 2, SLUICE_POLICY_FLEET, 3, TICKS(SCN_T0), t))
		return;
	expect_at(f, SCN_T0, A, "PD", t, "t0, ok_until = t0 (burst/3 < 1: one packet)");
	expect_at(f, SCN_T0 + SCN_MS(10), A, "D", t, "t0 + 10 ms");
	expect_at(f, SCN_T0 + SCN_MS(30) - 1, A, "D", t, "t0 + 30 ms - 1 ns");
	expect_at(f, SCN_T0 + SCN_MS(30), A, "PD", t, "t0 + 30 ms");
}

/* Run a scenario's packets under p (from a fresh state and no usage). */
static bool run_scn(struct fleet *f, const struct sluice_policy *p, const struct scn_run *h, int *v)
{
	return empty_use(f) && !bpfrun_scenario(&f->r, p, NULL, A, h->pk, h->n, v);
}

/* One TAP line "name: N verdicts as the local policy's". */
static bool same_verdicts(const struct scn_run *h, const int *got, const int *want,
			  const char *name)
{
	long bad = scn_first_mismatch(got, want, h->n);

	if (tap_ok(bad < 0, "%s: %zu verdicts as the local policy's", name, h->n))
		return true;
	tap_diag("  packet %ld at %llu ns, %u B: fleet %s, local %s", bad,
		 (unsigned long long)h->pk[bad].t_ns, h->pk[bad].len, scn_verdict_name(got[bad]),
		 scn_verdict_name(want[bad]));
	return false;
}

/* 3. live 0 and live 1: the whole limit, verdict for verdict the local one. */
static void test_whole(struct fleet *f)
{
	static const struct {
		__u32 live;
		__u64 ok_until;
		const char *how;
	} cases[] = {
		{ 0, 0, "live 0 (no agent ever synced)" },
		{ 1, FAR, "live 1, synced" },
		{ 1, PAST, "live 1, outage" },
	};
	size_t i, c, j;

	for (i = 0; i < scn_nr_tables; i++) {
		const struct scn *s = &scn_tables[i];
		struct sluice_policy fp;
		struct scn_run h;
		int *local, *fleet;
		char name[160];

		if (s->algo > SLUICE_ALGO_LEAKY_BUCKET)
			continue;
		if (!scn_run_host(s, &h))
			continue;
		local = calloc(h.n, sizeof(int));
		fleet = calloc(h.n, sizeof(int));
		if (!tap_ok(local && fleet && run_scn(f, &h.p, &h, local), "%s: the local run",
			    s->name))
			goto next;
		fp = h.p;
		fp.flags |= SLUICE_POLICY_FLEET;
		for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			__u64 want[2] = { 0, 0 };
			struct sluice_fleet_use u;

			if (!tap_ok(set_fleet(f, cases[c].live, cases[c].ok_until) &&
					    run_scn(f, &fp, &h, fleet),
				    "%s, fleet %s: run", s->name, cases[c].how))
				continue;
			snprintf(name, sizeof(name), "%s, fleet %s", s->name, cases[c].how);
			same_verdicts(&h, fleet, local, name);
			/* The run was a fleet policy's: while synced every admitted
			 * packet is recorded, at the cost of the whole limit; on the
			 * box's own (no agent, an outage) none is. */
			for (j = 0; j < h.n; j++) {
				if (fleet[j] != SLUICE_PASS ||
				    TICKS(h.pk[j].t_ns) >= cases[c].ok_until)
					continue;
				if (h.p.pkt.interval | h.p.pkt.interval_frac)
					want[0] += sluice_limit_cost(&h.p.pkt, 1);
				if (h.p.bytes.interval | h.p.bytes.interval_frac)
					want[1] += sluice_limit_cost(&h.p.bytes, h.pk[j].len);
			}
			u = use_of(f, h.p.tag, A);
			if (!(want[0] | want[1]))
				memset(want, 0xff, sizeof(want)); /* no entry at all */
			if (!tap_ok(u.used[0] == want[0] && u.used[1] == want[1],
				    "%s, fleet %s: usage recorded of the %zu packets admitted "
				    "while synced, none of the others",
				    s->name, cases[c].how, scn_run_passed(&h)))
				tap_diag("  used %llu %llu, want %llu %llu",
					 (unsigned long long)u.used[0],
					 (unsigned long long)u.used[1], (unsigned long long)want[0],
					 (unsigned long long)want[1]);
		}
next:
		free(local);
		free(fleet);
		scn_run_free(&h);
	}
}

/* 4. What the datapath records, and what it does not. */
static void test_usage(struct fleet *f)
{
	const char *t = "usage";
	struct sluice_settings set;
	struct sluice_policy p;
	struct sluice_fleet_use u;
	struct sluice_bucket b;

	if (!start(f, &set, &p, 30, SLUICE_POLICY_FLEET, 3, FAR, t))
		return;
	expect_at(f, SCN_T0, A, "PPPPPPPPPPD", t, "N=3 synced, burst 30, at t0");
	u = use_of(f, TAG_TB, A);
	TAP_TRUE(u.used[0] == 10 * C_PKT && u.used[1] == 0,
		 "%s: 10 admitted packets record 10 x %llu ticks, no bytes (got %llu, %llu)", t,
		 (unsigned long long)C_PKT, (unsigned long long)u.used[0],
		 (unsigned long long)u.used[1]);
	expect_at(f, SCN_T0, A, "DDD", t, "three more at t0");
	u = use_of(f, TAG_TB, A);
	TAP_EQ(u.used[0], 10 * C_PKT, "%s: drops add nothing", t);
	TAP_EQ(use_keys(f), 1, "%s: one key with usage", t);

	/* Bytes: 100/s burst 30 and 1,000,000 B/s burst 250 B; 100-byte
	 * frames: two fit, the third the byte limit refuses (and hands its
	 * packet charge back). */
	t = "usage of a byte limit";
	bucket_policy(&p, 30, SLUICE_POLICY_FLEET);
	sluice_limit_set_bytes(&p.bytes, 1000000, SLUICE_NS_PER_SEC, 250, NULL, 0);
	if (!tap_ok(setup(f, &set, &p, 1, FAR), "%s: setup", t))
		return;
	clock_at(f, SCN_T0);
	bpfrun_expect(&f->r, A, 100, "PPD", "%s: live 1, 100-byte frames at t0 send PPD", t);
	u = use_of(f, TAG_TB, A);
	TAP_TRUE(u.used[0] == 2 * C_PKT && u.used[1] == 2 * 100 * C_BYTE,
		 "%s: used = 2 packets, 200 bytes x %llu ticks (got %llu, %llu)", t,
		 (unsigned long long)C_BYTE, (unsigned long long)u.used[0],
		 (unsigned long long)u.used[1]);
	b = bucket_of(f, TAG_TB, A);
	TAP_TRUE(b.s[0] == TICKS(SCN_T0) + 2 * C_PKT && b.s[1] == TICKS(SCN_T0) + 200 * C_BYTE,
		 "%s: the bucket holds the two packets only", t);

	t = "usage of a local policy";
	if (!start(f, &set, &p, 30, 0, 3, FAR, t))
		return;
	expect_at(f, SCN_T0, A, "PPPPPPPPPPPPPPPPPPPPPPPPPPPPPPD", t, "N=3 synced, burst 30, t0");
	TAP_EQ(use_keys(f), 0, "%s: no usage entry", t);

	/* New keys 1/h burst 1: the first source gets a bucket of its own,
	 * the second is charged to 198.18.0.0/24's aggregate bucket. */
	t = "usage of an aggregate key";
	if (!start(f, &set, &p, 30, SLUICE_POLICY_FLEET, 1, FAR, t))
		return;
	sluice_limit_set(&set.new_keys, 1, BPFRUN_HOUR, 1, NULL, 0);
	bpfrun_configure(&f->r, &set);
	expect_at(f, SCN_T0, A, "PP", t, "its own bucket");
	expect_at(f, SCN_T0, B, "PP", t, "the aggregate's");
	TAP_TRUE(!bpfrun_lookup(&f->r, false, TAG_TB | SLUICE_TAG_AGGREGATE, "198.18.0.0", 24, &b),
		 "%s: 198.18.0.0/24's aggregate bucket exists", t);
	TAP_EQ(use_keys(f), 1, "%s: one usage entry, the own key's", t);
	TAP_EQ(use_of(f, TAG_TB, A).used[0], 2 * C_PKT, "%s: the own key has 2 packets' usage", t);
}

/* Records of sluice_fleet_io, by key. */
static void expect_rec(struct fleet *f, __u32 n, const char *src, __u64 pkt, __u64 bytes,
		       const char *t)
{
	struct sluice_fleet_rec rec;
	long i = find_rec(f, n, TAG_TB, src, &rec);

	if (!tap_ok(i >= 0, "%s: a record of %s", t, src))
		return;
	if (!tap_ok(rec.used[0] == pkt && rec.used[1] == bytes && !rec.debt[0] && !rec.debt[1],
		    "%s: %s's record carries used %llu, %llu and no debt", t, src,
		    (unsigned long long)pkt, (unsigned long long)bytes))
		tap_diag("  used %llu %llu, debt %llu %llu", (unsigned long long)rec.used[0],
			 (unsigned long long)rec.used[1], (unsigned long long)rec.debt[0],
			 (unsigned long long)rec.debt[1]);
}

/* Usage of A (3 packets), B (1), C (2, then taken to 0 as if pushed) and D
 * (bytes only, put there by hand). */
static bool usage_abcd(struct fleet *f, struct sluice_settings *set)
{
	struct sluice_policy p;
	char got[8];

	bucket_policy(&p, 30, SLUICE_POLICY_FLEET);
	if (!setup(f, set, &p, 1, FAR))
		return false;
	return !strcmp(bpfrun_sendn(&f->r, A, 60, 3, got), "PPP") &&
	       !strcmp(bpfrun_sendn(&f->r, B, 60, 1, got), "P") &&
	       !strcmp(bpfrun_sendn(&f->r, C, 60, 2, got), "PP") && put_use(f, C, 0, 0) &&
	       put_use(f, D, 0, 5);
}

/* 5. collect: a record for every key with usage. */
static void test_collect(struct fleet *f)
{
	const char *t = "collect";
	struct sluice_fleet_rec junk;
	struct sluice_settings set;
	struct sluice_fleet st;
	struct fleet small;
	__u32 i;

	if (!tap_ok(usage_abcd(f, &set), "%s: setup", t))
		return;
	/* What a previous sync left in the records must not leak. */
	memset(&junk, 0xab, sizeof(junk));
	for (i = 0; i < 8; i++)
		put_rec(f, i, &junk);
	if (!collect(f, t))
		return;
	st = fleet_state(f);
	TAP_EQ(st.io_n, 3, "%s: io_n counts the 3 keys with usage (A, B, D; not C)", t);
	TAP_EQ(st.io_more, 0, "%s: io_more 0, every key has a record", t);
	expect_rec(f, st.io_n, A, 3 * C_PKT, 0, t);
	expect_rec(f, st.io_n, B, C_PKT, 0, t);
	expect_rec(f, st.io_n, D, 0, 5, t);
	TAP_TRUE(find_rec(f, st.io_n, TAG_TB, C, &junk) < 0, "%s: no record of C, whose usage is 0",
		 t);
	TAP_TRUE(use_of(f, TAG_TB, A).used[0] == 3 * C_PKT,
		 "%s: collecting takes nothing off the usage", t);

	/* An exchange of 2 records: the third key is counted in io_more. */
	t = "collect into 2 records";
	small.r = f->r;
	if (!tap_ok(!fleet_open(&small, 2), "%s: load", t))
		return;
	clock_at(&small, SCN_T0);
	if (collect(&small, t)) {
		st = fleet_state(&small);
		TAP_TRUE(st.io_n == 2 && st.io_more == 1, "%s: io_n 2, io_more 1 (got %u, %u)", t,
			 st.io_n, st.io_more);
	}
	fleet_bpf__destroy(small.skel);
}

/* 6. apply: take off what was pushed, fold in the fleet's debt. */
static void test_apply(struct fleet *f)
{
	const char *t = "apply without debt";
	struct sluice_settings set;
	struct sluice_policy p;
	struct sluice_fleet_rec rec;
	struct sluice_bucket ba, bb, b;
	struct sluice_fleet_use u;
	__u64 ta;

	if (!tap_ok(usage_abcd(f, &set), "%s: setup", t) || !collect(f, t))
		return;
	ba = bucket_of(f, TAG_TB, A);
	bb = bucket_of(f, TAG_TB, B);
	/* Used after the collect: stays for the next sync. */
	bpfrun_expect(&f->r, A, 60, "PP", "%s: A sends PP between collect and apply", t);
	if (!apply(f, t))
		return;
	TAP_EQ(use_of(f, TAG_TB, A).used[0], 2 * C_PKT,
	       "%s: A's 3 collected packets are taken off, the 2 sent since stay", t);
	u = use_of(f, TAG_TB, B);
	TAP_TRUE(u.used[0] == 0 && u.used[1] == 0, "%s: B's usage is 0", t);
	u = use_of(f, TAG_TB, D);
	TAP_TRUE(u.used[0] == 0 && u.used[1] == 0, "%s: D's byte usage is 0", t);
	b = bucket_of(f, TAG_TB, A);
	TAP_TRUE(b.s[0] == ba.s[0] + 2 * C_PKT && b.s[1] == ba.s[1],
		 "%s: debt 0 leaves A's bucket as its packets left it", t);
	b = bucket_of(f, TAG_TB, B);
	TAP_TRUE(!memcmp(&b, &bb, sizeof(b)), "%s: and B's", t);
	TAP_TRUE(bpfrun_lookup(&f->r, false, TAG_TB, D, 32, &b) == -ENOENT,
		 "%s: debt 0 creates no bucket for D", t);
	if (collect(f, "collect after apply"))
		TAP_EQ(fleet_state(f).io_n, 1, "collect after apply: only A's 2 packets are left");

	/* A record that pushed more than is left (an element the LRU reused
	 * since): the usage goes to 0, never below. */
	t = "apply of more than is left";
	if (!tap_ok(put_use(f, A, C_PKT, 0) && find_rec(f, 1, TAG_TB, A, &rec) == 0, "%s: setup",
		    t))
		return;
	rec.used[0] = 3 * C_PKT;
	rec.used[1] = 7;
	if (!put_rec(f, 0, &rec) || !apply(f, t))
		return;
	u = use_of(f, TAG_TB, A);
	TAP_TRUE(u.used[0] == 0 && u.used[1] == 0, "%s: the usage is 0 (got %llu, %llu)", t,
		 (unsigned long long)u.used[0], (unsigned long long)u.used[1]);

	/* N = 3 synced, 100/s burst 30: a box holds 10 packets (100 ms) of
	 * tolerance. A sent one packet at t0; at t0 + 5 ms the fleet owes
	 * 30 packets (300 ms): TAT = t0 + 305 ms, and a packet is admitted
	 * once TAT + 10 ms - now <= 100 ms, at t0 + 215 ms. */
	t = "apply of a debt";
	if (!start(f, &set, &p, 30, SLUICE_POLICY_FLEET, 3, FAR, t))
		return;
	expect_at(f, SCN_T0, A, "P", t, "t0");
	ta = SCN_T0 + SCN_MS(5);
	clock_at(f, ta);
	if (!collect(f, t) ||
	    !tap_ok(find_rec(f, fleet_state(f).io_n, TAG_TB, A, &rec) == 0, "%s: A's record", t))
		return;
	rec.debt[0] = 30 * C_PKT;
	if (!put_rec(f, 0, &rec) || !apply(f, t))
		return;
	b = bucket_of(f, TAG_TB, A);
	TAP_TRUE(b.s[0] == TICKS(ta) + 30 * C_PKT && b.s[1] == 0,
		 "%s: A's TAT is raised to now + the debt, its byte TAT untouched", t);
	TAP_EQ(use_of(f, TAG_TB, A).used[0], 0, "%s: and its usage taken off", t);
	expect_at(f, SCN_T0 + SCN_MS(10), A, "D", t, "t0 + 10 ms (the whole rate's next packet)");
	expect_at(f, SCN_T0 + SCN_MS(215) - 1, A, "D", t, "t0 + 215 ms - 1 ns");
	expect_at(f, SCN_T0 + SCN_MS(215), A, "PD", t, "t0 + 215 ms");
	expect_at(f, SCN_T0 + SCN_MS(225), A, "PD", t, "t0 + 225 ms");

	/* B sent its 10 packets at t0 (TAT t0 + 100 ms); a fleet debt of
	 * 50 ms is less than B's own: nothing changes. */
	t = "apply of a debt below the local one";
	if (!tap_ok(setup(f, &set, &p, 3, FAR), "%s: setup", t))
		return;
	expect_at(f, SCN_T0, B, "PPPPPPPPPPD", t, "t0");
	if (!collect(f, t) ||
	    !tap_ok(find_rec(f, fleet_state(f).io_n, TAG_TB, B, &rec) == 0, "%s: B's record", t))
		return;
	rec.debt[0] = 5 * C_PKT;
	rec.debt[1] = 0;
	if (!put_rec(f, 0, &rec) || !apply(f, t))
		return;
	b = bucket_of(f, TAG_TB, B);
	TAP_TRUE(b.s[0] == TICKS(SCN_T0) + 10 * C_PKT && b.s[1] == 0,
		 "%s: B's TAT stays t0 + 100 ms", t);
	expect_at(f, SCN_T0 + SCN_MS(10), B, "PD", t, "t0 + 10 ms");

	/* A key evicted here but spent elsewhere: apply creates its bucket
	 * with the debt. Z owes 30 packets at t0: admitted again at t0 +
	 * 300 + 10 - 100 ms. Y owes bytes only. */
	t = "apply of a debt to a missing bucket";
	if (!tap_ok(setup(f, &set, &p, 3, FAR), "%s: setup", t))
		return;
	memset(&rec, 0, sizeof(rec));
	rec.key = key_of(TAG_TB, Z, 32);
	rec.debt[0] = 30 * C_PKT;
	if (!put_rec(f, 0, &rec))
		return;
	rec.key = key_of(TAG_TB, "198.18.0.98", 32);
	rec.debt[0] = 0;
	rec.debt[1] = 1000 * C_BYTE;
	if (!put_rec(f, 1, &rec))
		return;
	rec.key = key_of(TAG_TB, "198.18.0.97", 32);
	rec.debt[1] = 0;
	if (!put_rec(f, 2, &rec) || !set_io_n(f, 3) || !apply(f, t))
		return;
	b = bucket_of(f, TAG_TB, Z);
	TAP_TRUE(b.s[0] == TICKS(SCN_T0) + 30 * C_PKT && b.s[1] == 0 && b.dropped == 0,
		 "%s: Z's bucket is created with TAT now + the debt", t);
	b = bucket_of(f, TAG_TB, "198.18.0.98");
	/* A claimed way's packet TAT is a free state, 0 or 1 (lib/sets.h). */
	TAP_TRUE(b.s[0] <= (f->r.table_sets ? 1 : 0) && b.s[1] == TICKS(SCN_T0) + 1000 * C_BYTE,
		 "%s: a byte debt makes the byte TAT", t);
	TAP_TRUE(bpfrun_lookup(&f->r, false, TAG_TB, "198.18.0.97", 32, &b) == -ENOENT,
		 "%s: a record without debt creates no bucket", t);
	TAP_EQ(use_keys(f), 0, "%s: nor a usage entry", t);
	TAP_EQ(bpfrun_count_keys(&f->r, false), 2, "%s: two buckets in the table", t);
	expect_at(f, SCN_T0 + SCN_MS(210) - 1, Z, "D", t, "t0 + 210 ms - 1 ns");
	TAP_EQ(use_keys(f), 0, "%s: Z's drop records no usage", t);
	expect_at(f, SCN_T0 + SCN_MS(210), Z, "PD", t, "t0 + 210 ms");
	u = use_of(f, TAG_TB, Z);
	TAP_TRUE(u.used[0] == C_PKT && u.used[1] == 0,
		 "%s: Z's usage is its one admitted packet (got %llu, %llu)", t,
		 (unsigned long long)u.used[0], (unsigned long long)u.used[1]);
}

/* ---- the set table's ways (r.table_sets) ---- */

/* The set of key k in the mapped table (of its groups' sets, the one that
 * holds it; its own group's first when none does), and which of its ways holds k (-1: none). */
static void *set_of(struct fleet *f, const struct sluice_key *k, int *way)
{
	int v6 = k->family == 6, i, c, n;
	__u64 h = sluice_key_hash(f->r.seed, k), want = sluice_way_ident(k, h);
	__u32 idx[SLUICE_KEY_SETS];
	void *set = NULL;

	n = sluice_key_sets(h, want, f->r.keys.nsets[v6], 0, idx);
	*way = -1;
	for (c = n - 1; c >= 0; c--) {
		void *s = (char *)f->r.keys.mem[v6] +
			  (size_t)idx[c] *
				  (v6 ? sizeof(struct sluice_set6) : sizeof(struct sluice_set4));

		if (!set || *way < 0)
			set = s;
		for (i = 0; i < SLUICE_SET_WAYS; i++)
			if (SLUICE_WAY_MATCH(((struct sluice_way *)s)[i].ident) == want) {
				set = s;
				*way = i;
			}
	}
	return set;
}

static struct sluice_way_aux *aux_of(void *set, int v6, int w)
{
	return v6 ? &((struct sluice_set6 *)set)->x[w].a : &((struct sluice_set4 *)set)->x[w];
}

/* Key src/prefixlen's way: its identity and aux (as copies); false if none. */
static bool way_of(struct fleet *f, const char *src, __u8 prefixlen, struct sluice_way *w,
		   struct sluice_way_aux *x)
{
	struct sluice_key k = key_of(TAG_TB, src, prefixlen);
	void *set;
	int i;

	set = set_of(f, &k, &i);
	if (i < 0)
		return false;
	*w = ((struct sluice_way *)set)[i];
	*x = *aux_of(set, k.family == 6, i);
	return true;
}

static bool has_aux(const struct sluice_way *w)
{
	return w->ident >> 32 & SLUICE_WAY_AUX;
}

static bool put_debt(struct fleet *f, __u32 i, const char *src, __u8 prefixlen, __u64 pkt,
		     __u64 bytes)
{
	struct sluice_fleet_rec rec;

	memset(&rec, 0, sizeof(rec));
	rec.key = key_of(TAG_TB, src, prefixlen);
	rec.debt[0] = pkt;
	rec.debt[1] = bytes;
	return put_rec(f, i, &rec);
}

/*
 * 7. The set table: what a way apply claims holds (the debt, the key's
 * prefix, SLUICE_WAY_AUX: the way's free time is never understated), a byte
 * debt on a way the datapath claimed without the flag, and a frozen way
 * (a claim by another key under way) left alone.
 */
static void test_sets(struct fleet *f)
{
	const char *t = "set table: apply claims a way";
	struct sluice_settings set;
	struct sluice_policy p;
	struct sluice_way w;
	struct sluice_way_aux x;
	struct sluice_bucket b;
	struct sluice_key k;
	__u8 before[192];
	void *st;
	int i;

	if (!f->r.table_sets) {
		tap_skip("this pass runs the LRU table; the set table's pass "
			 "(SLUICE_TEST_TABLE=sets) runs them",
			 "the set table's ways");
		return;
	}
	if (!start(f, &set, &p, 30, SLUICE_POLICY_FLEET, 3, FAR, t))
		return;
	if (!tap_ok(put_debt(f, 0, Z, 32, 30 * C_PKT, 0) &&
			    put_debt(f, 1, "198.18.0.98", 32, 0, 1000 * C_BYTE) &&
			    put_debt(f, 2, "2001:2::5", 64, 7 * C_PKT, 9 * C_BYTE) &&
			    set_io_n(f, 3),
		    "%s: records of Z, 198.18.0.98 (bytes) and 2001:2::5/64", t) ||
	    !apply(f, t))
		return;
	if (tap_ok(way_of(f, Z, 32, &w, &x), "%s: Z has a way", t)) {
		TAP_TRUE(w.s0 == TICKS(SCN_T0) + 30 * C_PKT && x.s1 == 0 && x.dropped == 0,
			 "%s: Z's way holds TAT now + the debt, no byte TAT, no drops", t);
		TAP_TRUE(x.meta == SLUICE_WAY_META(32, 0),
			 "%s: Z's way's meta is its prefix 32 and no window (got %#x)", t, x.meta);
		TAP_TRUE(has_aux(&w) && !(w.ident >> 32 & SLUICE_WAY_BUSY) &&
				 SLUICE_WAY_TAG(w.ident) == TAG_TB,
			 "%s: Z's way is published with its tag and SLUICE_WAY_AUX, though its "
			 "debt has no bytes (the record does not say the policy has none)",
			 t);
	}
	if (tap_ok(way_of(f, "198.18.0.98", 32, &w, &x), "%s: 198.18.0.98 has a way", t)) {
		TAP_TRUE(has_aux(&w), "%s: a byte debt's way carries SLUICE_WAY_AUX", t);
		TAP_TRUE((w.s0 == 0 || w.s0 == SLUICE_FRESH) &&
				 x.s1 == TICKS(SCN_T0) + 1000 * C_BYTE,
			 "%s: its byte TAT is now + the debt, its packet TAT free", t);
		TAP_TRUE(sluice_way_free_at(w.ident, w.s0, x.s1, x.meta) == x.s1,
			 "%s: eviction sees the way free at its byte TAT", t);
	}
	if (tap_ok(way_of(f, "2001:2::5", 64, &w, &x), "%s: 2001:2::5/64 has a way", t)) {
		TAP_TRUE(has_aux(&w) && w.s0 == TICKS(SCN_T0) + 7 * C_PKT &&
				 x.s1 == TICKS(SCN_T0) + 9 * C_BYTE &&
				 x.meta == SLUICE_WAY_META(64, 0),
			 "%s: the IPv6 key's way holds both debts, prefix 64, the flag", t);
		TAP_TRUE(!bpfrun_lookup(&f->r, false, TAG_TB, "2001:2::5", 64, &b) &&
				 b.s[0] == w.s0 && b.s[1] == x.s1,
			 "%s: the key table finds the IPv6 key (its address in the way)", t);
	}
	TAP_EQ(bpfrun_count_keys(&f->r, false), 3, "%s: three keys in the table", t);

	/* The datapath claims A's way for a policy without bytes: no flag. A
	 * byte debt (a policy the record cannot show) sets it. */
	t = "set table: a byte debt on a way without the flag";
	if (!start(f, &set, &p, 30, SLUICE_POLICY_FLEET, 3, FAR, t))
		return;
	expect_at(f, SCN_T0, A, "P", t, "t0");
	if (!tap_ok(way_of(f, A, 32, &w, &x) && !has_aux(&w),
		    "%s: A's way, claimed by a packet, has no SLUICE_WAY_AUX", t))
		return;
	if (!put_debt(f, 0, A, 32, 0, 0) || !set_io_n(f, 1) || !apply(f, t))
		return;
	TAP_TRUE(way_of(f, A, 32, &w, &x) && !has_aux(&w) && w.s0 == TICKS(SCN_T0) + C_PKT,
		 "%s: a record without debt changes nothing", t);
	if (!put_debt(f, 0, A, 32, 0, 500 * C_BYTE) || !apply(f, t))
		return;
	TAP_TRUE(way_of(f, A, 32, &w, &x) && has_aux(&w) && w.s0 == TICKS(SCN_T0) + C_PKT &&
			 x.s1 == TICKS(SCN_T0) + 500 * C_BYTE,
		 "%s: a byte debt sets the flag and the byte TAT, the packet TAT stays", t);
	TAP_EQ(bpfrun_count_keys(&f->r, false), 1, "%s: one key, no second way", t);

	/* A's way frozen (another key's claim between its freeze and its
	 * reset): apply writes nothing, neither TAT, nor a way of its own. */
	t = "set table: a frozen way";
	if (!start(f, &set, &p, 30, SLUICE_POLICY_FLEET, 3, FAR, t))
		return;
	expect_at(f, SCN_T0, A, "P", t, "t0");
	k = key_of(TAG_TB, A, 32);
	st = set_of(f, &k, &i);
	if (!tap_ok(i >= 0, "%s: A has a way", t))
		return;
	((struct sluice_way *)st)[i].s0 = SLUICE_FROZEN;
	memcpy(before, st, sizeof(struct sluice_set4));
	if (!put_debt(f, 0, A, 32, 30 * C_PKT, 0) || !put_debt(f, 1, A, 32, 0, 500 * C_BYTE) ||
	    !set_io_n(f, 2) || !apply(f, t))
		return;
	TAP_TRUE(!memcmp(before, st, sizeof(struct sluice_set4)),
		 "%s: records of a packet and a byte debt leave A's whole set as it was", t);
	/* The claim gives way: the next apply reaches A. */
	((struct sluice_way *)st)[i].s0 = TICKS(SCN_T0) + C_PKT;
	if (!apply(f, t))
		return;
	b = bucket_of(f, TAG_TB, A);
	TAP_TRUE(b.s[0] == TICKS(SCN_T0) + 30 * C_PKT && b.s[1] == TICKS(SCN_T0) + 500 * C_BYTE,
		 "%s: thawed, the same records raise both TATs", t);
	TAP_EQ(bpfrun_count_keys(&f->r, false), 1, "%s: one key", t);
}

/*
 * 8. The set table, one set of four ways: a key apply claimed with a byte
 * debt only (a free packet TAT, a byte TAT a second ahead) is the last a new
 * key evicts: SLUICE_WAY_AUX shows eviction its byte TAT.
 */
static void test_sets_evict(void)
{
	const char *t = "set table of one set: eviction";
	struct bpfrun_opts o = { .max_keys = SLUICE_SET_WAYS,
				 .sets_n = { 1, 1 },
				 .table = BPFRUN_SETS };
	struct sluice_settings set;
	struct sluice_policy p;
	struct sluice_way w;
	struct sluice_way_aux x;
	struct fleet f;
	const char *Y = "198.18.0.98";
	int n;

	memset(&f, 0, sizeof(f));
	if (!bpfrun_load(&f.r, &o))
		return;
	if (!tap_ok(!fleet_open(&f, 0), "%s: load the fleet programs", t))
		goto out;
	if (!start(&f, &set, &p, 30, SLUICE_POLICY_FLEET, 3, FAR, t))
		goto out;
	if (!tap_ok(f.r.keys.nsets[0] == 1, "%s: one set of IPv4 keys", t) ||
	    !put_debt(&f, 0, Y, 32, 0, 1000000 * C_BYTE) || !set_io_n(&f, 1) || !apply(&f, t))
		goto out;
	expect_at(&f, SCN_T0, A, "P", t, "t0");
	expect_at(&f, SCN_T0, B, "P", t, "t0");
	expect_at(&f, SCN_T0, C, "P", t, "t0");
	TAP_EQ(bpfrun_count_keys(&f.r, false), 4, "%s: Y, A, B, C fill the set", t);
	/* A, B and C are free 10 ms ahead, Y a second ahead. */
	expect_at(&f, SCN_T0, D, "P", t, "t0 (a fifth key)");
	TAP_TRUE(way_of(&f, Y, 32, &w, &x) && x.s1 == TICKS(SCN_T0) + 1000000 * C_BYTE,
		 "%s: Y, held by its byte debt, keeps its way", t);
	TAP_TRUE(way_of(&f, D, 32, &w, &x), "%s: D took a way", t);
	n = way_of(&f, A, 32, &w, &x) + way_of(&f, B, 32, &w, &x) + way_of(&f, C, 32, &w, &x);
	TAP_EQ(n, 2, "%s: one of A, B, C (free soonest) was evicted", t);
out:
	if (f.skel)
		fleet_bpf__destroy(f.skel);
	bpfrun_close(&f.r);
}

/* 9. The window algorithms have no share: the flag leaves them local. */
static void test_windows(struct fleet *f)
{
	size_t i;

	for (i = 0; i < scn_nr_tables; i++) {
		const struct scn *s = &scn_tables[i];
		struct sluice_policy fp;
		struct scn_run h;
		int *local, *fleet;
		char name[160];

		if (s->algo <= SLUICE_ALGO_LEAKY_BUCKET)
			continue;
		if (!scn_run_host(s, &h))
			continue;
		local = calloc(h.n, sizeof(int));
		fleet = calloc(h.n, sizeof(int));
		fp = h.p;
		fp.flags |= SLUICE_POLICY_FLEET;
		if (tap_ok(local && fleet && set_fleet(f, 3, PAST) && run_scn(f, &h.p, &h, local) &&
				   run_scn(f, &fp, &h, fleet),
			   "%s, flag set, N=3 outage: run", s->name)) {
			snprintf(name, sizeof(name), "%s, flag set, N=3 outage", s->name);
			same_verdicts(&h, fleet, local, name);
			TAP_EQ(use_keys(f), 0, "%s, flag set: no usage recorded", s->name);
		}
		free(local);
		free(fleet);
		scn_run_free(&h);
	}
}

int main(void)
{
	struct fleet f;

	bpfrun_one_cpu();
	memset(&f, 0, sizeof(f));
	if (!bpfrun_load(&f.r, NULL))
		return tap_done();
	if (!tap_ok(!fleet_open(&f, 0), "load the fleet programs on the datapath's maps")) {
		bpfrun_close(&f.r);
		return tap_done();
	}
	test_synced(&f);
	test_outage(&f);
	test_whole(&f);
	test_usage(&f);
	test_collect(&f);
	test_apply(&f);
	test_sets(&f);
	test_windows(&f);
	test_sets_evict();
	fleet_bpf__destroy(f.skel);
	bpfrun_close(&f.r);
	return tap_done();
}
