/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The live policies (rules.c): a snapshot of them, the rule a packet gets.
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_POLICIES_H
#define SLUICE_POLICIES_H

#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

#include "parse.h"
#include "state.h"
#include "txn.h"

/* The CIDR a rule matches. */
void sluice_rule_cidr(const struct sluice_txn_rule *r, struct sluice_cidr *c);

/*
 * A snapshot of the live policies: the settings with the default policy, and
 * the rules sorted by family, address and prefix length. Taken under the
 * interface's lock, so it is one whole version; with_stats, the counters of
 * every policy too, read under the same lock (so no slot changes hands).
 */
struct sluice_policies {
	struct sluice_settings set;
	struct sluice_txn_rule *rules;
	size_t nr_rules;
	/* with_stats: nr_rules + 1 entries, each rule's, then the default's */
	struct sluice_rstats *rstats;
	/* with_stats, the same for would-drops; NULL when the state has no
	 * sluice_rwould (unknown) */
	struct sluice_rwould *rwould;
	/* with_stats: how many policies count on each slot (> 1: shared) */
	__u32 *slot_users;
	/* The rules that match on the transport header, in the order the
	 * datapath evaluates them (before any rule of a CIDR alone); with
	 * with_stats their counters as rstats and rwould have them. */
	struct sluice_txn_l4 *l4;
	size_t nr_l4;
	struct sluice_rstats *l4_rstats;
	struct sluice_rwould *l4_rwould;
	/* The second keys the policies name (SLUICE_POLICY_ALSO(), sluice_also;
	 * all zero when the state has none) */
	struct sluice_also also[SLUICE_ALSO_IDS];
};
int sluice_read_policies(struct sluice_handle *h, struct sluice_policies *pol, bool with_stats,
			 char *err, size_t errlen);
void sluice_free_policies(struct sluice_policies *pol);
/* The rules that match on the transport header under settings s, in
 * evaluation order, into out (room for SLUICE_L4_RULES_MAX); *nr 0 when
 * there are none or the state has no maps for them. Without the lock: a
 * reader checks that the settings did not change meanwhile. */
void sluice_read_l4(const struct sluice_handle *h, const struct sluice_settings *s,
		    struct sluice_txn_l4 *out, size_t *nr);
/* How many rules settings s has in force, of both kinds (its rules of a
 * CIDR alone and those on the transport header). */
__u32 sluice_rules_count(const struct sluice_handle *h, const struct sluice_settings *s);
/* The rule a packet from addr gets under settings s, as the datapath finds
 * it (the rule hash, once per length, then the trie): 1 and *out, or 0 for none. */
int sluice_lookup_rule(const struct sluice_handle *h, const struct sluice_settings *s, __u8 family,
		       const __u8 *addr, struct sluice_rule *out);
/* Policy i of a snapshot: the rules in order, then (i == nr_rules) the
 * default; name gets "198.18.0.0/15" or "default", family 4, 6 or 0. */
const struct sluice_policy *sluice_policy_at(const struct sluice_policies *pol, size_t i,
					     char *name, size_t len, int *family);

#endif /* SLUICE_POLICIES_H */
