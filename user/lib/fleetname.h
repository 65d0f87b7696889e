/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The name a fleet key has in Redis (fleetname.c): the same on every box of
 * the fleet for the same policy and source, and different for two policies
 * one source may meet.
 */
#ifndef SLUICE_FLEETNAME_H
#define SLUICE_FLEETNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>
#include <sluice/l4rules.h>

#include "state.h"

/* A rule's match in a key's name: at most this many characters (and NUL). */
#define SLUICE_FLEET_MATCH_NAME 40
/* A whole key's name: "b:", a match and its NUL as ':', a CIDR of
 * INET6_ADDRSTRLEN with "/128". */
#define SLUICE_FLEET_KEY_NAME (2 + SLUICE_FLEET_MATCH_NAME + 46 + 4)

/*
 * The match of a rule on the transport header as a key's name holds it:
 * its options as sluicectl writes them, joined by ',' ("tcp,dport=443",
 * "udp,sport=53", "tcp,tcp-flags=syn", "proto=47"), or past
 * SLUICE_FLEET_MATCH_NAME - 1 characters "m=" and a 64-bit FNV-1a hash of
 * that text in hex. Never a CIDR's text: it holds '=' or a protocol's name.
 */
void sluice_fleet_match_name(const struct sluice_match *m, char *buf, size_t len);

/* The rules on the transport header by counter slot, as of the settings of
 * version seq: a key's tag names its slot, and the slot its rule. */
struct sluice_fleet_name_ent {
	__u32 slot;
	char match[SLUICE_FLEET_MATCH_NAME];
};
/* A rule with a fleet-wide second key, by counter slot: what names the rule
 * on every box (fleetname.c) */
struct sluice_fleet_also_ent {
	__u32 slot;
	char rule[SLUICE_FLEET_MATCH_NAME];
};
struct sluice_fleet_names {
	struct sluice_fleet_name_ent v[SLUICE_L4_RULES_MAX];
	size_t n;
	/* sorted by slot; NULL while no rule has a fleet-wide second key */
	struct sluice_fleet_also_ent *also;
	size_t n_also;
	__u64 seq;
	bool read;
};

struct sluice_txn_l4;
struct sluice_policies;
/* The table for rules l4[0..nr), in evaluation order (the first of rules
 * sharing a slot names it). */
void sluice_fleet_names_set(struct sluice_fleet_names *t, const struct sluice_txn_l4 *l4,
			    size_t nr);
/* The rules of pol with a fleet-wide second key, into t (after its rules on
 * L4: sluice_fleet_names_set()): 0, or -ENOMEM (t keeps those it had). */
int sluice_fleet_names_set_also(struct sluice_fleet_names *t, const struct sluice_policies *pol);
/* Read the rules again when the settings changed since (a failed read keeps
 * the old table). */
void sluice_fleet_names_refresh(struct sluice_fleet_names *t, struct sluice_handle *h);
void sluice_fleet_names_free(struct sluice_fleet_names *t);
/*
 * Key k's name for its lane (0 packets, 1 bytes): "p:198.18.0.7/32" for a
 * key of the default policy or of a rule of a CIDR alone (as before rules
 * on the transport header), "p:tcp,tcp-flags=syn:198.18.0.7/32" for one of
 * a rule that matches on it. Its slot is this box's own; the match is the
 * fleet's. A key of a policy's second key (SLUICE_TAG_IS_ALSO()) is
 * "a:198.18.0.0/24" for the default's, "a:198.18.0.0/24@198.18.0.0/28" for
 * a rule of a CIDR alone (its CIDR), "a:198.18.0.0/24@tcp@198.18.0.0/15"
 * for a rule on L4 (its match and CIDR), a long rule as "r=" and a hash
 * (fleetname.c).
 */
void sluice_fleet_key_name(const struct sluice_fleet_names *t, const struct sluice_key *k, int lane,
			   char *buf, size_t len);

#endif /* SLUICE_FLEETNAME_H */
