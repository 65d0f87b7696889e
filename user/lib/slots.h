/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The counter slots of a rule set (slots.c).
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_SLOTS_H
#define SLUICE_SLOTS_H

#include <stdbool.h>
#include <linux/types.h>
#include <sluice/sluice.h>

/* Which slots the rules of a set use, and by which policy, so that a rule
 * finds a free slot or, when none is left, one of the same policy to share. */
struct sluice_slots;
struct sluice_slots *sluice_slots_new(void);
void sluice_slots_free(struct sluice_slots *sl);
/* p (its tag names the slot) gets one more rule; a slot's first rule sets
 * its policy, the others must have the same. */
void sluice_slots_add(struct sluice_slots *sl, const struct sluice_policy *p);
void sluice_slots_drop(struct sluice_slots *sl, __u32 slot);
__u32 sluice_slots_users(const struct sluice_slots *sl, __u32 slot);
/* Slots with at least one rule. */
__u32 sluice_slots_used(const struct sluice_slots *sl);
/* Taken slots past which a rule shares the slot of its policy when it can. */
#define SLUICE_OWN_SLOTS (SLUICE_MAX_RULES / 2 - 1)
const struct sluice_policy *sluice_slots_policy(const struct sluice_slots *sl, __u32 slot);
/* A slot with no rule (and not avoid[slot] when avoid is given), or 0. */
__u32 sluice_slots_find_free(struct sluice_slots *sl, const unsigned char *avoid);
/* A slot whose rules have policy p but for the tag, or 0. */
__u32 sluice_slots_find_same(const struct sluice_slots *sl, const struct sluice_policy *p);
bool sluice_policy_same_but_tag(const struct sluice_policy *a, const struct sluice_policy *b);

#endif /* SLUICE_SLOTS_H */
