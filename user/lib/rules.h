/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Inside libsluice: where the rules of a state are (rules.c), for the
 * transactions that change them (txn.c). Not for the tools.
 */
#ifndef SLUICE_RULES_H
#define SLUICE_RULES_H

#include "libsluice.h"

/* Where the rules of one generation are: settings.rule_maps and, for the
 * hash, config.hash_lens of that generation. */
struct sluice_rule_place {
	__u8 maps;
	__u8 lens[2][SLUICE_HASH_LENS]; /* [0 IPv4, 1 IPv6] */
};
/* The place of the rules of settings s (its generation's lens). */
void sluice_rule_place_of(const struct sluice_handle *h, const struct sluice_settings *s,
			  struct sluice_rule_place *p);
/* Where rules[0..nr) go: a family of few lengths (sluice.h) all in the
 * hash, else its whole-address rules only (when the state has a hash). */
void sluice_rule_place_for(const struct sluice_handle *h, const struct sluice_txn_rule *rules,
			   size_t nr, struct sluice_rule_place *p);
bool sluice_rule_place_same(const struct sluice_rule_place *a, const struct sluice_rule_place *b);
/* Which map holds rule r at place p. */
int sluice_rule_fd(const struct sluice_handle *h, const struct sluice_rule_place *p,
		   const struct sluice_txn_rule *r);
/* Does sluice_ruletab hold the live rules of version seq? */
bool sluice_ruletab_valid(const struct sluice_handle *h, __u64 seq, __u32 nr_rules);
/* The rules of settings s (of version seq), malloc()ed: one copy of
 * sluice_ruletab when it holds them (*from_tab), else a walk of the maps. */
int sluice_read_rules(const struct sluice_handle *h, const struct sluice_settings *s, __u64 seq,
		      struct sluice_txn_rule **out, size_t *nr, bool *from_tab);
/* Delete every entry of generation gen from the trie and the hash. */
int sluice_clear_rule_gen(const struct sluice_handle *h, __u8 gen);
/* Delete rules[0..nr) of generation gen from where place p put them. */
int sluice_delete_rules(const struct sluice_handle *h, const struct sluice_rule_place *p,
			const struct sluice_txn_rule *rules, size_t nr, __u8 gen);

/* An index of a rule array by CIDR: open addressing, linear probing. */
struct sluice_rindex {
	__u32 *pos; /* index + 1; 0 empty; TOMB a deleted entry */
	size_t cap, used; /* used counts tombstones too */
};
int sluice_rindex_build(struct sluice_rindex *ix, const struct sluice_txn_rule *rules, size_t nr);
/* The index in rules of the rule of CIDR c, or -1. */
long sluice_rindex_find(const struct sluice_rindex *ix, const struct sluice_txn_rule *rules,
			const struct sluice_cidr *c);
/* rules[i] is new (and not in the index): index it. */
int sluice_rindex_add(struct sluice_rindex *ix, const struct sluice_txn_rule *rules, size_t i);
/* The rule at i (still in rules[i]) goes, and the one at last moves into i. */
void sluice_rindex_del(struct sluice_rindex *ix, const struct sluice_txn_rule *rules, size_t i,
		       size_t last);

#endif /* SLUICE_RULES_H */
