/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Changes: one transaction per command (txn.c).
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_TXN_H
#define SLUICE_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

#include "parse.h"
#include "state.h"

struct sluice_slots;

struct sluice_txn_rule {
	struct sluice_rule rule;
	struct sluice_rule_key key; /* gen left 0; set at commit */
};
_Static_assert(sizeof(struct sluice_txn_rule) == sizeof(struct sluice_rule_entry) &&
		       __builtin_offsetof(struct sluice_txn_rule, key) ==
			       __builtin_offsetof(struct sluice_rule_entry, key),
	       "a txn rule is a sluice_ruletab entry");

struct sluice_txn_books; /* txn.c: an index of the rules, their slots */

struct sluice_txn {
	struct sluice_handle *h;
	struct sluice_settings set; /* copy of the live settings, edit freely */
	struct sluice_txn_rule *rules; /* copy of the live rules, edit freely */
	size_t nr_rules;
	bool rules_changed; /* set by the rule helpers below */
	/* Bookkeeping of the helpers below; code that edits rules[] directly
	 * calls sluice_txn_rules_replaced() afterwards. */
	struct sluice_txn_books *books;
};
/* rules[] was changed other than through the helpers: rebuild the index. */
void sluice_txn_rules_replaced(struct sluice_txn *t);

/* Lock the interface and copy the live settings and rules. */
int sluice_txn_begin(struct sluice_handle *h, struct sluice_txn *t, char *err, size_t errlen);
/* Make the edited copy live atomically: the idle halves are written, `active`
 * (and the rule generation) flips in one store, and the call returns after an
 * RCU grace period, when no packet can still be reading the old half. */
int sluice_txn_commit(struct sluice_txn *t, char *err, size_t errlen);
/* Unlock and drop the copy; nothing changed. Safe after commit. A
 * transaction commits once: begin another for the next change. */
void sluice_txn_end(struct sluice_txn *t);

/* Rule edits on a transaction; they allocate a stats slot and a tag. */
struct sluice_txn_rule *sluice_txn_find_rule(struct sluice_txn *t, const struct sluice_cidr *c);
int sluice_txn_put_rule(struct sluice_txn *t, const struct sluice_cidr *c,
			const struct sluice_policy *p, char *err, size_t errlen);
int sluice_txn_del_rule(struct sluice_txn *t, const struct sluice_cidr *c, char *err,
			size_t errlen);
/* New tag generation for a policy whose state format changes (algo, window,
 * prefix): its sources get fresh, full buckets instead of misread old ones.
 * Keeps the policy's slot (tag >> 16). */
void sluice_txn_retag(struct sluice_txn *t, struct sluice_policy *p);

/* Put np (a policy about to be a rule's) on a counter slot of sl: a free
 * one (one not in avoid, while there is one), else one whose rules have the
 * same policy, whose tag np then takes. -ENOSPC when neither is left. */
int sluice_txn_place(struct sluice_txn *t, struct sluice_slots *sl, struct sluice_policy *np,
		     const unsigned char *avoid, char *err, size_t errlen);

/* How many rules the pinned maps of h can hold (0: no limit known, a handle
 * on a copy). */
__u32 sluice_max_rules(const struct sluice_handle *h);

#endif /* SLUICE_TXN_H */
