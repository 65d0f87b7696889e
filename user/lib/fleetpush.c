// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Which keys a sync of the fleet agent pushes (user/sluice/fleet.c).
 *
 * Pushing every key with usage at every sync costs Redis a GET and a SET
 * per key, and a spoofed flood makes a million keys active at once, each
 * with a packet or two. Such a key cannot move the fleet's bound by much: a
 * box that holds back at most theta of a key's usage lets the fleet admit at
 * most N x theta more of it than it would know of (docs/fleet.md, "The
 * bound"). So a key's usage stays on the box (in sluice_fleet_use, where the
 * datapath adds to it) until
 *
 *   - it reaches theta in one of its limits (the agent gives theta: a
 *     fraction of the box's share of the burst, burst/N);
 *   - or the fleet said, at the key's last push, that the key is in debt:
 *     its fleet-wide bucket is not full, so every use counts, and the key
 *     is pushed at every sync until the debt has run out, as every key was
 *     before thresholds;
 *   - or its oldest usage not pushed is max_age old.
 *
 * The table: what the last sync kept (held keys and when their usage began,
 * keys in debt and until when), read while this sync writes its own; two
 * open-addressed tables that swap at every sync, an entry valid when its
 * generation is the table's. So nothing is ever deleted or cleared: a key
 * that is neither held nor in debt any more is simply not written again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleetpush.h"

#define GEN_MASK 0x7fffffffU
#define IN_DEBT 0x80000000U /* t is when the debt runs out, not when usage began */
#define MIN_SLOTS 1024

struct ent {
	struct sluice_key k;
	__u32 gen; /* the sync that wrote it (GEN_MASK bits), and IN_DEBT */
	__u32 t; /* ms on the table's clock: usage began, or the debt ends */
};

struct sluice_fleet_push {
	struct ent *tab[2];
	size_t slots, max; /* max: entries a table takes (3/4 of its slots) */
	size_t used; /* entries written into the current table */
	size_t held;
	__u32 gen; /* of the current table, tab[gen & 1] */
	__u64 base_ns; /* the table's clock: ms since the first sync */
	__u32 now_ms;
};

_Static_assert(sizeof(struct ent) == 32, "fleet push entry");

static __u64 mix(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

__u64 sluice_key_hash(const struct sluice_key *k)
{
	__u64 w[3];

	memcpy(w, k, sizeof(w));
	return mix(w[0] ^ mix(w[1] ^ mix(w[2])));
}

static size_t slot_of(const struct sluice_fleet_push *p, const struct sluice_key *k)
{
	return (size_t)sluice_key_hash(k) & (p->slots - 1);
}

static bool same(const struct sluice_key *a, const struct sluice_key *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* The entry of k in the table of generation gen, or NULL. */
static struct ent *find(struct sluice_fleet_push *p, __u32 gen, const struct sluice_key *k)
{
	struct ent *t = p->tab[gen & 1];
	size_t i = slot_of(p, k), n;

	if (!gen)
		return NULL;
	for (n = 0; n < p->slots; n++, i = (i + 1) & (p->slots - 1)) {
		if ((t[i].gen & GEN_MASK) != gen)
			return NULL;
		if (same(&t[i].k, k))
			return &t[i];
	}
	return NULL;
}

/* Write k into the current table (a new entry, or the one it has): NULL
 * when the table is full. */
static struct ent *put(struct sluice_fleet_push *p, const struct sluice_key *k)
{
	struct ent *t = p->tab[p->gen & 1];
	size_t i = slot_of(p, k), n;

	for (n = 0; n < p->slots; n++, i = (i + 1) & (p->slots - 1)) {
		if ((t[i].gen & GEN_MASK) == p->gen) {
			if (same(&t[i].k, k))
				return &t[i];
			continue;
		}
		if (p->used >= p->max)
			return NULL;
		p->used++;
		t[i].k = *k;
		t[i].gen = p->gen;
		t[i].t = 0;
		return &t[i];
	}
	return NULL;
}

int sluice_fleet_push_new(size_t cap, struct sluice_fleet_push **out)
{
	struct sluice_fleet_push *p = calloc(1, sizeof(*p));
	size_t slots = MIN_SLOTS;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	while (slots / 4 * 3 < cap && slots < ((size_t)1 << 40))
		slots *= 2;
	p->slots = slots;
	p->max = slots / 4 * 3;
	/* calloc: generation 0 is no sync's (the first is 1) */
	p->tab[0] = calloc(slots, sizeof(struct ent));
	p->tab[1] = calloc(slots, sizeof(struct ent));
	if (!p->tab[0] || !p->tab[1]) {
		sluice_fleet_push_free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

void sluice_fleet_push_free(struct sluice_fleet_push *p)
{
	if (!p)
		return;
	free(p->tab[0]);
	free(p->tab[1]);
	free(p);
}

void sluice_fleet_push_begin(struct sluice_fleet_push *p, __u64 now)
{
	if (!p->gen)
		p->base_ns = now;
	/* ms on a 32-bit clock: every time compared is within max age (at
	 * most an hour) or a debt (bounded by fleetbound.h) of now, so the
	 * differences never wrap. */
	p->now_ms = (__u32)((now - p->base_ns) / 1000000ULL);
	p->gen = (p->gen + 1) & GEN_MASK;
	if (!p->gen) {
		/* 2^31 syncs: an entry that old could pass for a new one */
		memset(p->tab[0], 0, p->slots * sizeof(struct ent));
		memset(p->tab[1], 0, p->slots * sizeof(struct ent));
		p->gen = 2; /* tab[0], as generation 0 would have been */
	}
	p->used = 0;
	p->held = 0;
}

static bool debt_runs(const struct sluice_fleet_push *p, const struct ent *e)
{
	return e && (e->gen & IN_DEBT) && (__s32)(e->t - p->now_ms) > 0;
}

/* The generation of the last sync's table (the other one); 0: none. */
static __u32 last_gen(const struct sluice_fleet_push *p)
{
	return (p->gen - 1) & GEN_MASK;
}

bool sluice_fleet_push_want(struct sluice_fleet_push *p, const struct sluice_key *k,
			    const __u64 used[2], const __u64 theta[2], __u64 max_age_ns)
{
	struct ent *old = find(p, last_gen(p), k), *e;
	__u32 first;
	int j;

	if (debt_runs(p, old))
		return true;
	for (j = 0; j < 2; j++)
		if (used[j] && (!theta[j] || used[j] >= theta[j]))
			return true;
	if (!used[0] && !used[1])
		return false;
	/* An entry of an ended debt: its usage begins now. */
	first = old && !(old->gen & IN_DEBT) ? old->t : p->now_ms;
	if (max_age_ns && (__u64)(__u32)(p->now_ms - first) * 1000000ULL >= max_age_ns)
		return true;
	e = put(p, k);
	if (!e)
		return true; /* no room to remember it: pushed, as without a threshold */
	e->t = first;
	p->held++;
	return false;
}

void sluice_fleet_push_debt(struct sluice_fleet_push *p, const struct sluice_key *k, __u64 debt_ns)
{
	__u64 ms = (debt_ns + 999999ULL) / 1000000ULL;
	struct ent *e;

	if (!debt_ns)
		return;
	e = put(p, k);
	if (!e)
		return; /* pushed at the next sync only past theta: at most theta more */
	/* A debt beyond 2^30 ms (12 days) is no answer the agent keeps
	 * (fleetbound.h bounds it far below). */
	e->t = p->now_ms + (__u32)(ms < (1U << 30) ? ms : (1U << 30));
	e->gen = p->gen | IN_DEBT;
}

size_t sluice_fleet_push_end(struct sluice_fleet_push *p)
{
	__u32 lg = last_gen(p);
	struct ent *t = p->tab[lg & 1];
	size_t i;

	/* Keys in debt the last sync knew, and this one did not see (they
	 * used nothing since: held by the debt itself), stay in debt. */
	if (lg)
		for (i = 0; i < p->slots; i++) {
			struct ent *e;

			if ((t[i].gen & GEN_MASK) != lg || !debt_runs(p, &t[i]))
				continue;
			if (find(p, p->gen, &t[i].k))
				continue;
			e = put(p, &t[i].k);
			if (!e)
				break;
			e->t = t[i].t;
			e->gen = p->gen | IN_DEBT;
		}
	return p->held;
}
