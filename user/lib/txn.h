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

/*
 * A rule that matches on the transport header (include/sluice/l4rules.h):
 * its source CIDR and L4 match, and its policy. A transaction keeps them in
 * the order the datapath evaluates them (sluice_l4rule_cmp()); two rules
 * are the same rule when their CIDR and match are.
 */
struct sluice_txn_l4 {
	struct sluice_l4rule r;
	struct sluice_policy policy;
};

struct sluice_txn_books; /* txn.c: an index of the rules, their slots */

/*
 * The policies' second keys (sluice_also, SLUICE_POLICY_ALSO()) as a
 * transaction sees them: the entries, which of them a live policy names
 * (never written while it does: a packet may be reading it), and which this
 * transaction wrote (put into the map at commit, before any policy names
 * them).
 */
struct sluice_also_tab {
	struct sluice_also e[SLUICE_ALSO_IDS];
	__u16 live;
	__u16 dirty;
	bool loaded; /* e[] read from the map: on first need, not at begin */
	const struct sluice_handle *h; /* whose map: the transaction's that made it */
};

struct sluice_txn {
	struct sluice_handle *h;
	struct sluice_settings set; /* copy of the live settings, edit freely */
	struct sluice_txn_rule *rules; /* copy of the live rules, edit freely */
	size_t nr_rules;
	bool rules_changed; /* set by the rule helpers below */
	/* The rules that match on the transport header, in evaluation order
	 * (room for SLUICE_L4_RULES_MAX; NULL while there are none). */
	struct sluice_txn_l4 *l4;
	size_t nr_l4;
	bool l4_changed; /* set by the L4 rule helpers below */
	/* Bookkeeping of the helpers below; code that edits rules[] directly
	 * calls sluice_txn_rules_replaced() afterwards. */
	struct sluice_txn_books *books;
	/* The second keys (made on first use; also_shared: another
	 * transaction's, which frees it) */
	struct sluice_also_tab *also;
	bool also_shared;
};
/* rules[] was changed other than through the helpers: rebuild the index. */
void sluice_txn_rules_replaced(struct sluice_txn *t);

/* Lock the interface and copy the live settings and rules. */
int sluice_txn_begin(struct sluice_handle *h, struct sluice_txn *t, char *err, size_t errlen);
/* Make the edited copy live atomically: the idle halves are written, `active`
 * (and the rule generation) flips in one store, and the call returns after an
 * RCU grace period, when no packet can still be reading the old half. */
int sluice_txn_commit(struct sluice_txn *t, char *err, size_t errlen);
/* Write the policies of t's slots into both halves of sluice_policies
 * (which the datapath applies), changing nothing else: attach makes them
 * the live state's before a program reads them. */
void sluice_txn_put_policies(struct sluice_txn *t);
/* Unlock and drop the copy; nothing changed. Safe after commit. A
 * transaction commits once: begin another for the next change. */
void sluice_txn_end(struct sluice_txn *t);

/* Rule edits on a transaction; they allocate a stats slot and a tag. */
struct sluice_txn_rule *sluice_txn_find_rule(struct sluice_txn *t, const struct sluice_cidr *c);
int sluice_txn_put_rule(struct sluice_txn *t, const struct sluice_cidr *c,
			const struct sluice_policy *p, char *err, size_t errlen);
int sluice_txn_del_rule(struct sluice_txn *t, const struct sluice_cidr *c, char *err,
			size_t errlen);
/* The same for rules that match on the transport header: the rule of CIDR
 * c and match m. put keeps them in evaluation order; -ENOSPC past
 * SLUICE_L4_RULES_MAX, -ENOENT from del for a rule that is not there. */
struct sluice_txn_l4 *sluice_txn_find_l4(struct sluice_txn *t, const struct sluice_cidr *c,
					 const struct sluice_match *m);
int sluice_txn_put_l4(struct sluice_txn *t, const struct sluice_cidr *c,
		      const struct sluice_match *m, const struct sluice_policy *p, char *err,
		      size_t errlen);
int sluice_txn_del_l4(struct sluice_txn *t, const struct sluice_cidr *c,
		      const struct sluice_match *m, char *err, size_t errlen);
/* Every rule, of both kinds, goes. */
void sluice_txn_flush_rules(struct sluice_txn *t);
/* The CIDR of an L4 rule, and the rule as "CIDR --proto ... " (for messages
 * and listings). */
void sluice_l4_cidr(const struct sluice_l4rule *r, struct sluice_cidr *c);
void sluice_l4_name(const struct sluice_l4rule *r, char *buf, size_t len);

/* Give p the second key a (NULL: none): the index of an entry equal to a,
 * or of a free one, which a then fills. -ENOSPC (with a sentence) when every
 * index is taken by the live policies and this transaction's. */
int sluice_txn_also_put(struct sluice_txn *t, const struct sluice_also *a, struct sluice_policy *p,
			char *err, size_t errlen);
/* n (a transaction built apart, for a file's whole state) gives its
 * policies second keys in t's table: their indices are t's. */
int sluice_txn_also_share(struct sluice_txn *n, struct sluice_txn *t);
/* Do policies a (as live) and b (as edited) keep state alike: the same
 * state format (sluice_same_state_format()), and second keys of the same
 * prefixes where both have one? If not, b takes a new tag (in the set table
 * an IPv4 key's identity is its address, whatever its length). */
bool sluice_txn_same_format(struct sluice_txn *t, const struct sluice_policy *a,
			    const struct sluice_policy *b);
/* The second key p names in t, or NULL. */
const struct sluice_also *sluice_txn_also_of(struct sluice_txn *t, const struct sluice_policy *p);
/* The entries of h's sluice_also whose bit is set in `which` into out (the
 * others, and all when the state has none, zero): one lookup each. */
void sluice_also_read(const struct sluice_handle *h, __u16 which, struct sluice_also *out);
/* The second key p names, read from h into *buf: buf, or NULL (none). */
const struct sluice_also *sluice_also_of(const struct sluice_handle *h,
					 const struct sluice_policy *p, struct sluice_also *buf);

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
