// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Counter slots of a rule set. Each policy's tag names a slot (tag >> 16):
 * the index of its per-CPU counters in sluice_rstats, and part of the key
 * of its sources' buckets. There are SLUICE_MAX_RULES - 1 slots for rules;
 * a rule gets one of its own while one is free, and past that shares the
 * slot of a rule with the same policy (an --exempt or --deny list of 100,000
 * CIDRs, or one limit for many networks). A rule gets a slot of its own
 * while fewer than SLUICE_OWN_SLOTS are taken; past that it shares when a
 * rule has its policy, so that the slots left serve new policies. Rules on
 * one slot count into one
 * set of counters and their sources' buckets carry the same tag, which is
 * safe since a rule's keys never reach outside its CIDR (a key prefix is
 * never shorter than the rule's). Rules on one slot always have the same
 * policy, tag included.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libsluice.h"

#define NR_SLOTS SLUICE_MAX_RULES
#define SHARE_CAP (2 * NR_SLOTS) /* power of two */

struct sluice_slots {
	__u32 users[NR_SLOTS];
	struct sluice_policy pol[NR_SLOTS]; /* the policy of the slot's rules */
	__u16 share[SHARE_CAP]; /* open addressing: slot, 0 empty */
	__u32 share_used;
	__u32 nfree; /* slots 1.. with no user */
	__u32 hint; /* where the search for a free slot starts */
};

/* Everything of a policy but its tag: rules with the same one may share. */
static __u64 policy_hash(const struct sluice_policy *p)
{
	struct sluice_policy q = *p;
	const unsigned char *b = (const unsigned char *)&q;
	__u64 h = 1469598103934665603ULL;
	size_t i;

	q.tag = 0;
	for (i = 0; i < sizeof(q); i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

bool sluice_policy_same_but_tag(const struct sluice_policy *a, const struct sluice_policy *b)
{
	struct sluice_policy x = *a, y = *b;

	x.tag = y.tag = 0;
	return !memcmp(&x, &y, sizeof(x));
}

struct sluice_slots *sluice_slots_new(void)
{
	struct sluice_slots *sl = calloc(1, sizeof(*sl));

	if (sl) {
		sl->nfree = NR_SLOTS - 1;
		sl->hint = 1;
	}
	return sl;
}

void sluice_slots_free(struct sluice_slots *sl)
{
	free(sl);
}

__u32 sluice_slots_used(const struct sluice_slots *sl)
{
	return NR_SLOTS - 1 - sl->nfree;
}

__u32 sluice_slots_users(const struct sluice_slots *sl, __u32 slot)
{
	return slot && slot < NR_SLOTS ? sl->users[slot] : 0;
}

const struct sluice_policy *sluice_slots_policy(const struct sluice_slots *sl, __u32 slot)
{
	return &sl->pol[slot & (NR_SLOTS - 1)];
}

static void share_rebuild(struct sluice_slots *sl)
{
	__u32 s;

	memset(sl->share, 0, sizeof(sl->share));
	sl->share_used = 0;
	for (s = 1; s < NR_SLOTS; s++) {
		__u32 i;

		if (!sl->users[s])
			continue;
		for (i = policy_hash(&sl->pol[s]) & (SHARE_CAP - 1); sl->share[i];
		     i = (i + 1) & (SHARE_CAP - 1))
			;
		sl->share[i] = (__u16)s;
		sl->share_used++;
	}
}

/* Entries of slots that lost their rules stay until a rebuild: a lookup
 * checks each candidate, and the table is rebuilt when it fills. */
static void share_insert(struct sluice_slots *sl, __u32 slot)
{
	__u32 i;

	if (sl->share_used + 1 > SHARE_CAP * 3 / 4) {
		share_rebuild(sl); /* slot has its user already: it is in */
		return;
	}
	for (i = policy_hash(&sl->pol[slot]) & (SHARE_CAP - 1); sl->share[i];
	     i = (i + 1) & (SHARE_CAP - 1))
		;
	sl->share[i] = (__u16)slot;
	sl->share_used++;
}

void sluice_slots_add(struct sluice_slots *sl, const struct sluice_policy *p)
{
	__u32 slot = SLUICE_TAG_SLOT(p->tag) & (NR_SLOTS - 1);

	if (!slot)
		return;
	if (sl->users[slot]++)
		return;
	sl->nfree--;
	sl->pol[slot] = *p;
	share_insert(sl, slot);
}

void sluice_slots_drop(struct sluice_slots *sl, __u32 slot)
{
	slot &= NR_SLOTS - 1;
	if (!slot || !sl->users[slot])
		return;
	if (!--sl->users[slot])
		sl->nfree++;
}

__u32 sluice_slots_find_free(struct sluice_slots *sl, const unsigned char *avoid)
{
	__u32 n, s;

	if (!sl->nfree)
		return 0;
	for (n = 0, s = sl->hint; n < NR_SLOTS - 1; n++, s = s + 1 < NR_SLOTS ? s + 1 : 1) {
		if (!sl->users[s] && !(avoid && avoid[s])) {
			sl->hint = s + 1 < NR_SLOTS ? s + 1 : 1;
			return s;
		}
	}
	return 0;
}

__u32 sluice_slots_find_same(const struct sluice_slots *sl, const struct sluice_policy *p)
{
	__u32 i, s;

	for (i = policy_hash(p) & (SHARE_CAP - 1); (s = sl->share[i]);
	     i = (i + 1) & (SHARE_CAP - 1))
		if (sl->users[s] && sluice_policy_same_but_tag(&sl->pol[s], p))
			return s;
	return 0;
}
