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
 */
struct sluice_keytab {
	bool sets;
	__u64 seed; /* config.set_seed */
	int buckets_fd, fd[2]; /* fd: sluice_sets4, sluice_sets6 */
	void *mem[2];
	size_t len[2];
	__u32 nsets[2];
};

/* Not owning the fds. 0 or -errno (a sets table whose maps are missing). */
int sluice_keytab_open(struct sluice_keytab *t, bool sets, __u64 seed, int buckets_fd, int sets4_fd,
		       int sets6_fd);
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
/* Keys it can hold (--table sets: per family, both counted), and its memory. */
__u64 sluice_keytab_capacity(const struct sluice_keytab *t);
__u64 sluice_keytab_bytes(const struct sluice_keytab *t);

#endif /* SLUICE_KEYTAB_H */
