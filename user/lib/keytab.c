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
 *
 * Wide keys (--key src,dport|flow) live in a table of their own of the
 * same kind, read the same way: sluice_flows with bpf syscalls, or
 * sluice_setsf mapped, whose ways hold their whole key (struct
 * sluice_way_auxf), found by sluice_fkey_hash() and matched by identity and
 * by that key.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "array.h"
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
	t->flows_fd = t->setsf_fd = -1;
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
	if (t->fmem)
		munmap(t->fmem, t->flen);
	t->fmem = NULL;
	t->fsets = 0;
}

/* Are the keys where layouts 5 and 6 put them (struct sluice_keytab)? */
static int keytab_legacy(const struct sluice_keytab *t)
{
	return t->layout && __atomic_load_n(t->layout, __ATOMIC_ACQUIRE) < SLUICE_LAYOUT_VERSION;
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
	__u32 idx[SLUICE_KEY_SETS];
	void *set;
	int v6 = k->family == 6, w, c, nset;

	if (!t->sets)
		return bpf_map_lookup_elem(t->buckets_fd, k, b) ? -errno : 0;
	h = sluice_key_hash(t->seed, k);
	want = sluice_way_ident(k, h);
	nset = sluice_key_sets(h, want, t->nsets[v6], keytab_legacy(t), idx);
	for (c = 0; c < nset; c++) {
		set = set_at(t, v6, idx[c]);
		for (w = 0; w < SLUICE_SET_WAYS; w++)
			if (read_way(set, v6, w, want, &got, b))
				return 0;
	}
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
	__u32 idx[SLUICE_KEY_SETS];
	void *set;
	int v6 = k->family == 6, w, c, nset;

	if (!t->sets)
		return bpf_map_delete_elem(t->buckets_fd, k) ? -errno : 0;
	h = sluice_key_hash(t->seed, k);
	want = sluice_way_ident(k, h);
	nset = sluice_key_sets(h, want, t->nsets[v6], keytab_legacy(t), idx);
	for (c = 0; c < nset; c++) {
		set = set_at(t, v6, idx[c]);
		for (w = 0; w < SLUICE_SET_WAYS; w++) {
			__u64 id = __atomic_load_n(&way_at(set, w)->ident, __ATOMIC_ACQUIRE);

			if (SLUICE_WAY_MATCH(id) == want && !(id >> 32 & SLUICE_WAY_BUSY))
				return empty_way(set, w, id);
		}
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
	/* the wide keys' table counts while they are on (--max-flows) */
	__u64 wide = sluice_keytab_wide_on(t) ? sluice_keytab_wide_bytes(t) : 0;

	if (!t->sets)
		return sluice_map_bytes(t->buckets_fd) + wide;
	return sluice_map_bytes(t->fd[0]) + sluice_map_bytes(t->fd[1]) + wide;
}

/* ---- wide keys ---- */

int sluice_keytab_open_wide(struct sluice_keytab *t, int flows_fd, int setsf_fd)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	void *m;

	t->flows_fd = flows_fd;
	t->setsf_fd = setsf_fd;
	if (!t->sets || setsf_fd < 0)
		return 0;
	t->fsets = sluice_map_max_entries(setsf_fd);
	if (!t->fsets)
		return -EINVAL;
	len = (size_t)t->fsets * sizeof(struct sluice_setf);
	len = (len + (size_t)page - 1) / (size_t)page * (size_t)page;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, setsf_fd, 0);
	if (m == MAP_FAILED) {
		t->fsets = 0;
		return -errno;
	}
	t->fmem = m;
	t->flen = len;
	return 0;
}

bool sluice_keytab_wide_on(const struct sluice_keytab *t)
{
	if (t->sets)
		return t->fmem && t->fsets > SLUICE_FLOWS_OFF;
	return t->flows_fd >= 0 && sluice_map_max_entries(t->flows_fd) > SLUICE_FLOWS_OFF;
}

bool sluice_keytab_has_wide(const struct sluice_keytab *t)
{
	return t->sets ? t->fmem != NULL : t->flows_fd >= 0;
}

static struct sluice_setf *setf_at(const struct sluice_keytab *t, __u32 i)
{
	return &((struct sluice_setf *)t->fmem)[i];
}

/*
 * Read way w of a wide set: its key and state, if it holds a key whose
 * identity stayed the same while it was read (as read_way()). want
 * (non-zero): only that identity, and only key *match.
 */
static bool read_way_wide(struct sluice_setf *set, int w, __u64 want,
			  const struct sluice_fkey *match, struct sluice_fkey *k,
			  struct sluice_bucket *b)
{
	struct sluice_way *way = &set->w[w];
	struct sluice_way_auxf *x = &set->x[w];
	__u64 id = __atomic_load_n(&way->ident, __ATOMIC_ACQUIRE), s0;

	if (!(id >> 32 & SLUICE_WAY_LIVE) || (id >> 32 & SLUICE_WAY_BUSY))
		return false;
	if (want && SLUICE_WAY_MATCH(id) != want)
		return false;
	s0 = __atomic_load_n(&way->s0, __ATOMIC_ACQUIRE);
	b->s[0] = s0;
	b->s[1] = __atomic_load_n(&x->a.s1, __ATOMIC_RELAXED);
	b->dropped = __atomic_load_n(&x->a.dropped, __ATOMIC_RELAXED);
	memcpy(k, &x->key, sizeof(*k));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (s0 == SLUICE_FROZEN || __atomic_load_n(&way->ident, __ATOMIC_ACQUIRE) != id)
		return false;
	/* The identity holds 32 bits of the key's hash: the key itself says
	 * whether it is the one asked for. */
	if (match && memcmp(k, match, sizeof(*k)))
		return false;
	if (s0 == SLUICE_FRESH)
		b->s[0] = 0;
	return true;
}

int sluice_keytab_lookup_wide(const struct sluice_keytab *t, const struct sluice_fkey *f,
			      struct sluice_bucket *b)
{
	struct sluice_setf *set;
	struct sluice_fkey got;
	__u64 h, want;
	__u32 idx[SLUICE_KEY_SETS];
	int w, c, nset;

	if (!sluice_keytab_has_wide(t))
		return -ENOENT;
	if (!t->sets)
		return bpf_map_lookup_elem(t->flows_fd, f, b) ? -errno : 0;
	h = sluice_fkey_hash(t->seed, f);
	want = sluice_way_ident_wide(f, h);
	nset = sluice_key_sets(h, want, t->fsets, keytab_legacy(t), idx);
	for (c = 0; c < nset; c++) {
		set = setf_at(t, idx[c]);
		for (w = 0; w < SLUICE_SET_WAYS; w++)
			if (read_way_wide(set, w, want, f, &got, b))
				return 0;
	}
	return -ENOENT;
}

int sluice_keytab_delete_wide(struct sluice_keytab *t, const struct sluice_fkey *f)
{
	struct sluice_bucket b;
	struct sluice_setf *set;
	struct sluice_fkey got;
	__u64 h, want;
	__u32 idx[SLUICE_KEY_SETS];
	int w, c, nset;

	if (!sluice_keytab_has_wide(t))
		return -ENOENT;
	if (!t->sets)
		return bpf_map_delete_elem(t->flows_fd, f) ? -errno : 0;
	h = sluice_fkey_hash(t->seed, f);
	want = sluice_way_ident_wide(f, h);
	nset = sluice_key_sets(h, want, t->fsets, keytab_legacy(t), idx);
	for (c = 0; c < nset; c++) {
		set = setf_at(t, idx[c]);
		for (w = 0; w < SLUICE_SET_WAYS; w++) {
			__u64 id = __atomic_load_n(&set->w[w].ident, __ATOMIC_ACQUIRE);

			if (read_way_wide(set, w, want, f, &got, &b))
				return empty_way(set, w, id);
		}
	}
	return -ENOENT;
}

/* fn for every key of the wide set table, with the set, the way and the
 * identity it was read under (as each_way()). */
typedef int (*wide_way_fn)(struct sluice_setf *set, int w, __u64 id, const struct sluice_fkey *k,
			   const struct sluice_bucket *b, void *ctx);

static long each_wide_way(const struct sluice_keytab *t, wide_way_fn fn, void *ctx)
{
	struct sluice_bucket b;
	struct sluice_fkey k;
	long n = 0;
	__u32 i;
	int w;

	for (i = 0; i < t->fsets; i++) {
		struct sluice_setf *set = setf_at(t, i);

		for (w = 0; w < SLUICE_SET_WAYS; w++) {
			__u64 id = __atomic_load_n(&set->w[w].ident, __ATOMIC_ACQUIRE);
			int stop;

			if (!read_way_wide(set, w, 0, NULL, &k, &b))
				continue;
			stop = fn ? fn(set, w, id, &k, &b, ctx) : 0;
			if (stop)
				return stop;
			n++;
		}
	}
	return n;
}

struct fwalk_ctx {
	sluice_fkey_walk_fn fn;
	void *ctx;
};

static int wide_way_one(struct sluice_setf *set, int w, __u64 id, const struct sluice_fkey *k,
			const struct sluice_bucket *b, void *ctx)
{
	struct fwalk_ctx *c = ctx;

	(void)set, (void)w, (void)id;
	return c->fn ? c->fn(k, true, b, c->ctx) : 0;
}

static int flows_one(const void *key, const void *val, void *ctx)
{
	struct fwalk_ctx *c = ctx;

	return c->fn ? c->fn(key, true, val, c->ctx) : 0;
}

static int plain_one(const void *key, const void *val, void *ctx)
{
	struct fwalk_ctx *c = ctx;
	struct sluice_fkey f;

	if (!c->fn)
		return 0;
	sluice_fkey_of_key(&f, key);
	return c->fn(&f, false, val, c->ctx);
}

long sluice_keytab_walk_wide(const struct sluice_keytab *t, sluice_fkey_walk_fn fn, void *ctx)
{
	struct fwalk_ctx c = { fn, ctx };

	if (!sluice_keytab_has_wide(t))
		return 0;
	if (!t->sets)
		return sluice_map_walk(t->flows_fd, flows_one, &c);
	return each_wide_way(t, wide_way_one, &c);
}

long sluice_keytab_walk_all(const struct sluice_keytab *t, sluice_fkey_walk_fn fn, void *ctx)
{
	struct fwalk_ctx c = { fn, ctx };
	long plain, wide;

	plain = sluice_keytab_walk(t, plain_one, &c);
	if (plain < 0)
		return plain;
	wide = sluice_keytab_walk_wide(t, fn, ctx);
	return wide < 0 ? wide : plain + wide;
}

long sluice_keytab_count_wide(const struct sluice_keytab *t)
{
	return sluice_keytab_walk_wide(t, NULL, NULL);
}

int sluice_keytab_delete_any(struct sluice_keytab *t, const struct sluice_fkey *k, bool wide)
{
	return wide ? sluice_keytab_delete_wide(t, k) : sluice_keytab_delete(t, &k->k);
}

struct fflush_ctx {
	sluice_fkey_match_fn match;
	void *ctx;
	long n;
	/* the LRU's: the keys to delete once the walk is done (deleting while
	 * walking a hash map restarts or skips buckets) */
	struct sluice_fkey *keys;
	size_t nkeys, cap;
};

static int fflush_way(struct sluice_setf *set, int w, __u64 id, const struct sluice_fkey *k,
		      const struct sluice_bucket *b, void *ctx)
{
	struct fflush_ctx *c = ctx;

	(void)b;
	if ((!c->match || c->match(k, c->ctx)) && !empty_way(set, w, id))
		c->n++;
	return 0;
}

static int fflush_pick(const struct sluice_fkey *k, bool wide, const struct sluice_bucket *b,
		       void *ctx)
{
	struct fflush_ctx *c = ctx;

	(void)wide, (void)b;
	if (c->match && !c->match(k, c->ctx))
		return 0;
	if (sluice_array_room(c->keys, c->nkeys, c->cap, 256))
		return -ENOMEM;
	c->keys[c->nkeys++] = *k;
	return 0;
}

long sluice_keytab_flush_wide(struct sluice_keytab *t, sluice_fkey_match_fn match, void *ctx)
{
	struct fflush_ctx c = { .match = match, .ctx = ctx };
	long ret;
	size_t i;

	if (!sluice_keytab_has_wide(t))
		return 0;
	if (t->sets) {
		each_wide_way(t, fflush_way, &c);
		return c.n;
	}
	ret = sluice_keytab_walk_wide(t, fflush_pick, &c);
	for (i = 0; ret >= 0 && i < c.nkeys; i++) {
		if (!bpf_map_delete_elem(t->flows_fd, &c.keys[i]))
			c.n++;
		else if (errno != ENOENT) /* ENOENT: evicted meanwhile */
			ret = -errno;
	}
	free(c.keys);
	return ret < 0 ? ret : c.n;
}

__u64 sluice_keytab_wide_capacity(const struct sluice_keytab *t)
{
	if (!sluice_keytab_has_wide(t))
		return 0;
	if (!t->sets)
		return sluice_map_max_entries(t->flows_fd);
	return (__u64)t->fsets * SLUICE_SET_WAYS;
}

__u64 sluice_keytab_wide_bytes(const struct sluice_keytab *t)
{
	if (!sluice_keytab_has_wide(t))
		return 0;
	return sluice_map_bytes(t->sets ? t->setsf_fd : t->flows_fd);
}

/* A key read at set index i: is i one of the sets this layout places it
 * in (sluice_key_sets(), not legacy)? */
static bool placed_at(__u64 h, __u64 want, __u32 nsets, __u32 i)
{
	__u32 idx[SLUICE_KEY_SETS];
	int c, n = sluice_key_sets(h, want, nsets, 0, idx);

	for (c = 0; c < n; c++)
		if (idx[c] == i)
			return true;
	return false;
}

struct misplaced_ctx {
	const struct sluice_keytab *t;
	long n;
};

static int misplaced_one(void *set, int w, __u64 id, const struct sluice_key *k,
			 const struct sluice_bucket *b, void *ctx)
{
	struct misplaced_ctx *m = ctx;
	int v6 = k->family == 6;
	__u32 i = (__u32)(((char *)set - (char *)m->t->mem[v6]) / set_size(v6));

	(void)w;
	(void)b;
	m->n += !placed_at(sluice_key_hash(m->t->seed, k), SLUICE_WAY_MATCH(id), m->t->nsets[v6],
			   i);
	return 0;
}

static int misplaced_wide(struct sluice_setf *set, int w, __u64 id, const struct sluice_fkey *k,
			  const struct sluice_bucket *b, void *ctx)
{
	struct misplaced_ctx *m = ctx;
	__u32 i = (__u32)(set - (struct sluice_setf *)m->t->fmem);

	(void)w;
	(void)b;
	m->n += !placed_at(sluice_fkey_hash(m->t->seed, k), SLUICE_WAY_MATCH(id), m->t->fsets, i);
	return 0;
}

long sluice_keytab_misplaced(const struct sluice_keytab *t)
{
	struct misplaced_ctx m = { .t = t };

	if (!t->sets)
		return 0;
	each_way(t, misplaced_one, &m);
	if (sluice_keytab_has_wide(t))
		each_wide_way(t, misplaced_wide, &m);
	return m.n;
}
