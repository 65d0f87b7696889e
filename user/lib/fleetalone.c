// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Keys on their own: the outage share of keys whose Redis shard is down.
 *
 * A box whose Redis fails falls back to rate/N for every fleet policy at
 * once: the datapath reads one ok_until (include/sluice/sluice.h). Under a
 * Redis Cluster one shard may fail while the others answer; the box then
 * stays synced (the whole rate, shared, for the keys of the shards up),
 * and holds each key of a shard down to what an outage would give it: its
 * datapath charges what it admits once, at the whole rate, and the agent
 * charges it again here, n-fold, on a bucket of the key's own at this box
 * (GCRA: tat = max(tat, now) + n x used), and raises the key's bucket in
 * the datapath to that tat at each sync. So over any span the box admits
 * at most burst/N + rate/N x the span of the key, plus what it admitted in
 * the one interval before the agent saw it (the interval's term the bound
 * has for any key: docs/fleet.md). Nothing of it is pushed later: as in an
 * outage, what the box admitted on its own is never charged to the fleet.
 *
 * The table: open addressing by the key's hash; an entry whose tat has
 * passed is a full bucket, the same as none, and is dropped when the
 * table is rebuilt (when it is 3/4 full, into one twice as large while
 * below max).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleetalone.h"
#include "fleetpush.h"

#define MIN_SLOTS 1024

struct ent {
	struct sluice_key k;
	__u32 lane; /* + 1: 0 is an empty slot */
	__u32 pad;
	__u64 tat_us;
};

struct sluice_fleet_alone {
	struct ent *tab;
	size_t slots, used, max_slots;
};

int sluice_fleet_alone_new(size_t max, struct sluice_fleet_alone **out)
{
	struct sluice_fleet_alone *a = calloc(1, sizeof(*a));

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->slots = MIN_SLOTS;
	a->max_slots = MIN_SLOTS;
	while (a->max_slots < 2 * max)
		a->max_slots *= 2;
	a->tab = calloc(a->slots, sizeof(*a->tab));
	if (!a->tab) {
		free(a);
		return -ENOMEM;
	}
	*out = a;
	return 0;
}

void sluice_fleet_alone_free(struct sluice_fleet_alone *a)
{
	if (!a)
		return;
	free(a->tab);
	free(a);
}

static size_t slot_of(const struct sluice_key *k, __u32 lane, size_t slots)
{
	return (size_t)(sluice_key_hash(k) + lane * 0x9e3779b97f4a7c15ULL) & (slots - 1);
}

static struct ent *find(struct ent *tab, size_t slots, const struct sluice_key *k, __u32 lane)
{
	size_t i = slot_of(k, lane, slots), n;

	for (n = 0; n < slots; n++, i = (i + 1) & (slots - 1)) {
		struct ent *e = &tab[i];

		if (!e->lane || (e->lane == lane && !memcmp(&e->k, k, sizeof(*k))))
			return e;
	}
	return NULL;
}

/* Keep the entries whose tat is to come, in a table of slots. */
static int rebuild(struct sluice_fleet_alone *a, size_t slots, __u64 now_us)
{
	struct ent *t = calloc(slots, sizeof(*t));
	size_t i;

	if (!t)
		return -ENOMEM;
	a->used = 0;
	for (i = 0; i < a->slots; i++) {
		struct ent *e = &a->tab[i], *d;

		if (!e->lane || e->tat_us <= now_us)
			continue;
		d = find(t, slots, &e->k, e->lane);
		*d = *e;
		a->used++;
	}
	free(a->tab);
	a->tab = t;
	a->slots = slots;
	return 0;
}

__u64 sluice_fleet_alone_charge(struct sluice_fleet_alone *a, const struct sluice_key *k,
				unsigned int lane, double used_us, __u32 n, __u64 now_us)
{
	double add = used_us * (n ? n : 1);
	struct ent *e;
	__u64 tat;

	if (a->used + 1 > a->slots / 4 * 3) {
		size_t live = 0, i, to = a->slots;

		for (i = 0; i < a->slots; i++)
			live += a->tab[i].lane && a->tab[i].tat_us > now_us;
		if (live + 1 > to / 2 && to < a->max_slots)
			to *= 2;
		rebuild(a, to, now_us);
	}
	e = find(a->tab, a->slots, k, lane + 1);
	/* A table full of buckets not full (past max): this charge alone. */
	if (!e || (!e->lane && a->used + 1 > a->slots / 4 * 3))
		return add > 0 ? (__u64)add : 0;
	if (!e->lane) {
		e->k = *k;
		e->lane = lane + 1;
		e->tat_us = 0;
		a->used++;
	}
	tat = e->tat_us > now_us ? e->tat_us : now_us;
	tat += add > 0 ? (__u64)add : 0;
	e->tat_us = tat;
	return tat - now_us;
}

size_t sluice_fleet_alone_count(const struct sluice_fleet_alone *a, __u64 now_us)
{
	size_t i, n = 0;

	for (i = 0; i < a->slots; i++)
		n += a->tab[i].lane && a->tab[i].tat_us > now_us;
	return n;
}
