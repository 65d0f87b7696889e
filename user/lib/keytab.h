/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A state's key table (keytab.c): sluice_buckets, or --table sets.
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_KEYTAB_H
#define SLUICE_KEYTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

#include "maps.h"

/*
 * A state's key table: the LRU hash sluice_buckets, or the set-associative
 * sluice_sets4 and sluice_sets6 (include/sluice/sets.h), mapped and read in
 * place. The walk's callback gets a struct sluice_key and a struct
 * sluice_bucket (a way's state in the LRU's form) either way.
 *
 * Beside it, the table of wide keys (struct sluice_fkey: the keys of the
 * policies of --key src,dport or flow, and their new-key aggregates) of the
 * same kind: sluice_flows (an LRU hash) beside sluice_buckets, sluice_setsf
 * (sets of 4 ways, both families in one array) beside the sets. A state
 * pinned before wide keys has none (its fds -1): it holds no wide key.
 */
struct sluice_keytab {
	bool sets;
	/* The state's layout word (the mapped config's; NULL: this one's), read
	 * at every look: a set table of layout 5 or 6 not upgraded yet has its
	 * keys where those layouts put them (sluice_key_sets()'s legacy), and
	 * attach may upgrade it while this table is open. */
	const __u32 *layout;
	__u64 seed; /* config.set_seed */
	int buckets_fd, fd[2]; /* fd: sluice_sets4, sluice_sets6 */
	void *mem[2];
	size_t len[2];
	__u32 nsets[2];
	/* wide keys: sluice_flows (LRU) or sluice_setsf (sets, mapped) */
	int flows_fd, setsf_fd;
	void *fmem;
	size_t flen;
	__u32 fsets;
};

/* Not owning the fds. 0 or -errno (a sets table whose maps are missing). */
int sluice_keytab_open(struct sluice_keytab *t, bool sets, __u64 seed, int buckets_fd, int sets4_fd,
		       int sets6_fd);
/* After sluice_keytab_open(): the wide keys' table, sluice_flows' fd and
 * sluice_setsf's (either -1: missing; only the one of the table's kind is
 * read). 0 or -errno (sluice_setsf could not be mapped). */
int sluice_keytab_open_wide(struct sluice_keytab *t, int flows_fd, int setsf_fd);
/* Are wide keys on (the state was attached with --max-flows): its wide table
 * holds more than SLUICE_FLOWS_OFF? */
bool sluice_keytab_wide_on(const struct sluice_keytab *t);
/* Does the state have a table of wide keys? */
bool sluice_keytab_has_wide(const struct sluice_keytab *t);
void sluice_keytab_close(struct sluice_keytab *t);
/* The state of key k (masked, tagged as the datapath keys it): 0 or -ENOENT. */
int sluice_keytab_lookup(const struct sluice_keytab *t, const struct sluice_key *k,
			 struct sluice_bucket *b);
/* Forget key k (its next packet starts a full bucket): 0 or -ENOENT. */
int sluice_keytab_delete(struct sluice_keytab *t, const struct sluice_key *k);
/* fn for every key (as sluice_map_walk()); fn NULL counts. Keys or -errno. */
long sluice_keytab_walk(const struct sluice_keytab *t, sluice_walk_fn fn, void *ctx);
long sluice_keytab_count(const struct sluice_keytab *t);
/* The same, and how many of each family: n[0] IPv4, n[1] IPv6. */
long sluice_keytab_count_families(const struct sluice_keytab *t, __u64 n[2]);
/* The set table only: forget every key match() says to (NULL: all); how many. */
typedef bool (*sluice_key_match_fn)(const struct sluice_key *k, void *ctx);
long sluice_keytab_flush(struct sluice_keytab *t, sluice_key_match_fn match, void *ctx);
/* Keys it can hold (--table sets: per family, both counted; wide keys not
 * counted), and its memory (the wide keys' table's included). */
__u64 sluice_keytab_capacity(const struct sluice_keytab *t);
__u64 sluice_keytab_bytes(const struct sluice_keytab *t);

/* ---- wide keys, and every key of both tables ---- */

/* A wide key's state: 0 or -ENOENT (also when the state has no wide table). */
int sluice_keytab_lookup_wide(const struct sluice_keytab *t, const struct sluice_fkey *f,
			      struct sluice_bucket *b);
/* Forget wide key f: 0 or -ENOENT. */
int sluice_keytab_delete_wide(struct sluice_keytab *t, const struct sluice_fkey *f);
/*
 * A key of either table as a walk hands it: a plain key (sluice_buckets,
 * the sets) as a wide one of mode SLUICE_KEY_SRC with every other field 0
 * (sluice_fkey_of_key()), wide false; a wide key as stored, wide true (its
 * new-key aggregate too has mode SLUICE_KEY_SRC: `wide` says where it is).
 */
typedef int (*sluice_fkey_walk_fn)(const struct sluice_fkey *k, bool wide,
				   const struct sluice_bucket *b, void *ctx);
/* fn for every wide key (fn NULL counts): how many, or -errno (fn's own
 * non-zero return stops the walk and is returned). */
long sluice_keytab_walk_wide(const struct sluice_keytab *t, sluice_fkey_walk_fn fn, void *ctx);
/* fn for every key of both tables, the plain table's first. */
long sluice_keytab_walk_all(const struct sluice_keytab *t, sluice_fkey_walk_fn fn, void *ctx);
long sluice_keytab_count_wide(const struct sluice_keytab *t);
/* Delete key k of the table `wide` says (as the walks hand them). */
int sluice_keytab_delete_any(struct sluice_keytab *t, const struct sluice_fkey *k, bool wide);
/* Forget every wide key match() says to (NULL: all), either kind of table:
 * how many, or -errno. */
typedef bool (*sluice_fkey_match_fn)(const struct sluice_fkey *k, void *ctx);
long sluice_keytab_flush_wide(struct sluice_keytab *t, sluice_fkey_match_fn match, void *ctx);
/* Wide keys it can hold, and that table's memory (0 without one). */
__u64 sluice_keytab_wide_capacity(const struct sluice_keytab *t);
__u64 sluice_keytab_wide_bytes(const struct sluice_keytab *t);
/* How many keys of a set table (wide ones too) are not in a set where this
 * layout looks for them (a state of layout 5 or 6 that attach would
 * upgrade): 0 when none, or for the LRU. */
long sluice_keytab_misplaced(const struct sluice_keytab *t);

#endif /* SLUICE_KEYTAB_H */
