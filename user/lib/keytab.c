// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The key table as userspace reads it: sluice_buckets (the LRU hash) or,
 * with --table sets, sluice_sets4 and sluice_sets6 (include/sluice/sets.h),
 * mapped into memory and read in place. One API for both: lookup, walk,
 * count, delete, size.
 *
 * Reading a way is a snapshot of words the datapath may be changing: a way
 * whose identity is not the same before and after its words were read is
 * skipped (it changed keys meanwhile), and a way claimed for a key that no
 * packet charged yet (SLUICE_FRESH) reads as the LRU's new key, 0. Deleting
 * a key empties its way with one CAS of its identity: the key's next packet
 * claims a way afresh, with a full bucket, as after an LRU delete; a claim
 * under way (BUSY) is left alone.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "libsluice.h"
#include <sluice/sets.h>

static size_t set_size(int v6)
{
	return v6 ? sizeof(struct sluice_set6) : sizeof(struct sluice_set4);
}

int sluice_keytab_open(struct sluice_keytab *t, bool sets, __u64 seed, int buckets_fd, int sets4_fd,
		       int sets6_fd)
{
	int v6;

	memset(t, 0, sizeof(*t));
	t->sets = sets;
	t->seed = seed;
	t->buckets_fd = buckets_fd;
	t->fd[0] = sets4_fd;
	t->fd[1] = sets6_fd;
	if (!sets)
		return 0;
	for (v6 = 0; v6 < 2; v6++) {
		long page = sysconf(_SC_PAGESIZE);
		size_t len;
		void *m;

		if (t->fd[v6] < 0) {
			sluice_keytab_close(t);
			return -ENOENT;
		}
		t->nsets[v6] = sluice_map_max_entries(t->fd[v6]);
		if (!t->nsets[v6]) {
			sluice_keytab_close(t);
			return -EINVAL;
		}
		len = (size_t)t->nsets[v6] * set_size(v6);
		len = (len + (size_t)page - 1) / (size_t)page * (size_t)page;
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd[v6], 0);
		if (m == MAP_FAILED) {
			int err = -errno;

			sluice_keytab_close(t);
			return err;
		}
		t->mem[v6] = m;
		t->len[v6] = len;
	}
	return 0;
}

void sluice_keytab_close(struct sluice_keytab *t)
{
	int v6;

	for (v6 = 0; v6 < 2; v6++)
		if (t->mem[v6])
			munmap(t->mem[v6], t->len[v6]);
	t->mem[0] = t->mem[1] = NULL;
}

static void *set_at(const struct sluice_keytab *t, int v6, __u32 i)
{
	return (char *)t->mem[v6] + (size_t)i * set_size(v6);
}

static struct sluice_way *way_at(void *set, int w)
{
	return &((struct sluice_way *)set)[w];
}

static struct sluice_way_aux *aux_at(void *set, int v6, int w)
{
	return v6 ? &((struct sluice_set6 *)set)->x[w].a : &((struct sluice_set4 *)set)->x[w];
}

/*
 * Read way w of a set: its key and state, if it holds a key whose identity
 * stayed the same while it was read. want (non-zero): only that identity.
 */
static bool read_way(void *set, int v6, int w, __u64 want, struct sluice_key *k,
		     struct sluice_bucket *b)
{
	struct sluice_way *way = way_at(set, w);
	struct sluice_way_aux *x = aux_at(set, v6, w);
	__u64 id = __atomic_load_n(&way->ident, __ATOMIC_ACQUIRE), s0;
	__u32 meta;

	if (!(id >> 32 & SLUICE_WAY_LIVE) || (id >> 32 & SLUICE_WAY_BUSY))
		return false;
	if (want && SLUICE_WAY_MATCH(id) != want)
		return false;
	s0 = __atomic_load_n(&way->s0, __ATOMIC_ACQUIRE);
	b->s[0] = s0;
	b->s[1] = __atomic_load_n(&x->s1, __ATOMIC_RELAXED);
	b->dropped = __atomic_load_n(&x->dropped, __ATOMIC_RELAXED);
	meta = __atomic_load_n(&x->meta, __ATOMIC_RELAXED);
	memset(k, 0, sizeof(*k));
	k->tag = SLUICE_WAY_TAG(id);
	k->family = v6 ? 6 : 4;
	k->prefixlen = SLUICE_WAY_META_PREFIX(meta);
	if (v6) {
		memcpy(k->addr, ((struct sluice_way_aux6 *)x)->addr, 16);
	} else {
		__u32 a = (__u32)id;

		memcpy(k->addr, &a, 4);
	}
	/* Frozen: being handed to another key; or it changed keys meanwhile. */
	if (s0 == SLUICE_FROZEN || __atomic_load_n(&way->ident, __ATOMIC_ACQUIRE) != id)
		return false;
	/* Claimed, not charged yet: a new key's state, which the LRU table
	 * writes as 0 (algo.h), so every reader reads one encoding. */
	if (s0 == SLUICE_FRESH)
		b->s[0] = 0;
	return true;
}

int sluice_keytab_lookup(const struct sluice_keytab *t, const struct sluice_key *k,
			 struct sluice_bucket *b)
{
	struct sluice_key got;
	__u64 h, want;
	void *set;
	int v6 = k->family == 6, w;

	if (!t->sets)
		return bpf_map_lookup_elem(t->buckets_fd, k, b) ? -errno : 0;
	h = sluice_key_hash(t->seed, k);
	want = sluice_way_ident(k, h);
	set = set_at(t, v6, sluice_set_index(h, t->nsets[v6]));
	for (w = 0; w < SLUICE_SET_WAYS; w++)
		if (read_way(set, v6, w, want, &got, b))
			return 0;
	return -ENOENT;
}

/* Empty the way that holds identity id (one CAS: 0 when it did, -ENOENT
 * when it holds another key by now). */
static int empty_way(void *set, int w, __u64 id)
{
	__u64 old = id;

	return __atomic_compare_exchange_n(&way_at(set, w)->ident, &old, 0, false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST) ?
		       0 :
		       -ENOENT;
}

int sluice_keytab_delete(struct sluice_keytab *t, const struct sluice_key *k)
{
	__u64 h, want;
	void *set;
	int v6 = k->family == 6, w;

	if (!t->sets)
		return bpf_map_delete_elem(t->buckets_fd, k) ? -errno : 0;
	h = sluice_key_hash(t->seed, k);
	want = sluice_way_ident(k, h);
	set = set_at(t, v6, sluice_set_index(h, t->nsets[v6]));
	for (w = 0; w < SLUICE_SET_WAYS; w++) {
		__u64 id = __atomic_load_n(&way_at(set, w)->ident, __ATOMIC_ACQUIRE);

		if (SLUICE_WAY_MATCH(id) == want && !(id >> 32 & SLUICE_WAY_BUSY))
			return empty_way(set, w, id);
	}
	return -ENOENT;
}

/*
 * fn for every way of a set table that holds a key (read_way()), with the
 * set, the way and the identity it was read under; a non-zero return stops
 * the walk and is returned. Else how many ways held a key.
 */
typedef int (*way_fn)(void *set, int w, __u64 id, const struct sluice_key *k,
		      const struct sluice_bucket *b, void *ctx);

static long each_way(const struct sluice_keytab *t, way_fn fn, void *ctx)
{
	struct sluice_bucket b;
	struct sluice_key k;
	long n = 0;
	int v6, w;
	__u32 i;

	for (v6 = 0; v6 < 2; v6++)
		for (i = 0; i < t->nsets[v6]; i++) {
			void *set = set_at(t, v6, i);

			for (w = 0; w < SLUICE_SET_WAYS; w++) {
				__u64 id =
					__atomic_load_n(&way_at(set, w)->ident, __ATOMIC_ACQUIRE);
				int stop;

				if (!read_way(set, v6, w, 0, &k, &b))
					continue;
				stop = fn ? fn(set, w, id, &k, &b, ctx) : 0;
				if (stop)
					return stop;
				n++;
			}
		}
	return n;
}

struct walk_ctx {
	sluice_walk_fn fn;
	void *ctx;
};

static int walk_one(void *set, int w, __u64 id, const struct sluice_key *k,
		    const struct sluice_bucket *b, void *ctx)
{
	struct walk_ctx *c = ctx;

	(void)set, (void)w, (void)id;
	return c->fn ? c->fn(k, b, c->ctx) : 0;
}

long sluice_keytab_walk(const struct sluice_keytab *t, sluice_walk_fn fn, void *ctx)
{
	struct walk_ctx c = { fn, ctx };

	if (!t->sets)
		return sluice_map_walk(t->buckets_fd, fn, ctx);
	return each_way(t, walk_one, &c);
}

struct flush_ctx {
	sluice_key_match_fn match;
	void *ctx;
	long n;
};

static int flush_one(void *set, int w, __u64 id, const struct sluice_key *k,
		     const struct sluice_bucket *b, void *ctx)
{
	struct flush_ctx *c = ctx;

	(void)b;
	if ((!c->match || c->match(k, c->ctx)) && !empty_way(set, w, id))
		c->n++;
	return 0;
}

long sluice_keytab_flush(struct sluice_keytab *t, sluice_key_match_fn match, void *ctx)
{
	struct flush_ctx c = { match, ctx, 0 };

	if (!t->sets)
		return -EINVAL;
	each_way(t, flush_one, &c);
	return c.n;
}

long sluice_keytab_count(const struct sluice_keytab *t)
{
	return sluice_keytab_walk(t, NULL, NULL);
}

static int count_family(const void *key, const void *val, void *ctx)
{
	__u64 *n = ctx;

	(void)val;
	n[((const struct sluice_key *)key)->family == 6]++;
	return 0;
}

long sluice_keytab_count_families(const struct sluice_keytab *t, __u64 n[2])
{
	n[0] = n[1] = 0;
	return sluice_keytab_walk(t, count_family, n);
}

__u64 sluice_keytab_capacity(const struct sluice_keytab *t)
{
	if (!t->sets)
		return sluice_map_max_entries(t->buckets_fd);
	return (__u64)(t->nsets[0] + t->nsets[1]) * SLUICE_SET_WAYS;
}

__u64 sluice_keytab_bytes(const struct sluice_keytab *t)
{
	if (!t->sets)
		return sluice_map_bytes(t->buckets_fd);
	return sluice_map_bytes(t->fd[0]) + sluice_map_bytes(t->fd[1]);
}
