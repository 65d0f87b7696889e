/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The set-associative key table in the datapath (--table sets; the layout
 * and the hash are in include/sluice/sets.h): finding a key's way, and
 * claiming one for a new key.
 *
 * A key N is in one of two groups of SLUICE_SET_GROUP sets: its own and
 * its other one (include/sluice/sets.h, sluice_set_alt(); one group when
 * they are the same). A lookup scans the own group's sets, then the
 * other's. Claiming way v of set S (of one of N's two groups) for N, whose
 * scans found no way of N in either:
 *
 *  1. The victim: in each of N's groups, an empty way, else the way whose
 *     state becomes free soonest (sluice_way_free_at(): at or before now
 *     for a full bucket or an ended window); of the two, the one free
 *     sooner, and between two free now, the one in the group with more
 *     empty ways (the own group on a tie). Ways being claimed (BUSY) or
 *     frozen, empty ones included, are never taken: so only the CPU that
 *     froze a way ever writes its s0 before the way is published or given
 *     back.
 *  2. Freeze: CAS v.s0 from the value the decision read (o) to
 *     SLUICE_FROZEN. If it fails the victim's key was updated since the
 *     decision: decide again. Once frozen, no update of the victim's key can
 *     land: every algorithm's CAS loop that reads SLUICE_FROZEN returns
 *     SLUICE_RETRY without writing, and one that read o before fails its
 *     CAS. So the victim is evicted in exactly the state it was chosen by.
 *  3. CAS v.ident from the victim's to N | BUSY (it fails only if userspace
 *     emptied the way meanwhile, or the fleet agent's apply added
 *     SLUICE_WAY_AUX to it: s0 is put back, and the claim starts over).
 *  4. Reset the way: aux words to 0 (with N's prefix length, window, IPv6
 *     address), then s0 = f, where f is 0, or SLUICE_FRESH when o was 0.
 *     f is a new key's state for every algorithm at every now, 0 included
 *     (algo.h: a full bucket, no window yet; the aux words' 0 is a full
 *     byte bucket, no previous window), and f != o, so an update of the
 *     victim's key that read o before the freeze fails its CAS after the
 *     reset too. (No real state may stand for f: a TAT of 1 tick is not
 *     full at now 0, and a count of 1 in window 0 is a packet counted in
 *     the first window of uptime, which a box booted less than a window
 *     ago is in.)
 *  5. Duplicates: another CPU may have claimed another way for N at the same
 *     time, in either of N's groups (it may have seen other loads). Rescan
 *     both: a way of N (live or BUSY) other than v means this claim gives
 *     way: v is emptied (ident 0) and the lookup starts over (it uses the
 *     live way; a BUSY one it may not wait out, and then the packet is
 *     dropped as contended). Both claims make their ident CAS (a full
 *     barrier) before their rescan of both groups, so at least one of two
 *     concurrent claims sees the other; both may give way, never neither,
 *     so N never holds two ways (two buckets would admit twice its burst).
 *  6. Publish: CAS v.ident from N | BUSY to N. Until then N's packets that
 *     find N | BUSY look again (SETS_TRIES in all), and never decide on
 *     the way: past the tries they are dropped as contended.
 *
 * Why a state read across keys only costs packets: N's first decision is
 * on f, a free state. Updates of the victim in flight either landed before
 * the freeze (the victim was evicted with them, decided by the state it had
 * then: the victim's key admitted what its own state allowed) or fail (o
 * changed to SLUICE_FROZEN, then to f != o). What remains is the ABA of a
 * CPU that read an older value of the victim equal to f (its first state),
 * stalled in an interrupt across another CPU's later update of the victim
 * and a whole claim, then wrote: that charge lands on N, whose state it can
 * only make stricter for a key of the same policy. A refund (a byte limit
 * refusing what the packet limit took) is made only from the exact value its
 * charge wrote (algo.h), so it can never give N back what N did not pay.
 * An IPv6 fingerprint shared by two keys of one group and policy (2^-32 a
 * pair) makes them share one bucket: each pays for the other, nothing extra.
 */
#ifndef SLUICE_BPF_SETS_H
#define SLUICE_BPF_SETS_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <sluice/sluice.h>
#include <sluice/algo.h>
#include <sluice/sets.h>

/*
 * A lookup that met a claim of the same key under way, or a claim that lost
 * a CAS, looks again this many times in all before the packet is dropped as
 * contended. Two: each try is a copy of the loop's body for the verifier (a
 * third made the tc program too big for 6.1's), and a key's first packets
 * on two CPUs at once are rare (one source's packets mostly reach one queue).
 */
#define SETS_TRIES 2

enum sets_result {
	SETS_FOUND = 0,
	SETS_CLAIMED = 1, /* a new key: its way is fresh */
	SETS_MISSING = 2, /* not there (lookup only) */
	SETS_CONTENDED = 3, /* retries exhausted: drop, never admit */
};

/* A key's way: its state words and the rest of the way. */
struct way_ref {
	__u64 *s0;
	struct sluice_way_aux *x;
};

/* The table kinds: a compile-time constant wherever one is passed. */
#define SETS_V4 0
#define SETS_V6 1
#define SETS_WIDE 2 /* sluice_setsf: wide keys (struct sluice_fkey), both families */

static __always_inline void *sets_at(const int kind, __u32 idx)
{
	if (kind == SETS_WIDE)
		return bpf_map_lookup_elem(&sluice_setsf, &idx);
	return kind == SETS_V6 ? bpf_map_lookup_elem(&sluice_sets6, &idx) :
				 bpf_map_lookup_elem(&sluice_sets4, &idx);
}

static __always_inline struct sluice_way *set_way(void *set, int i)
{
	return &((struct sluice_way *)set)[i];
}

static __always_inline struct sluice_way_aux *set_aux(void *set, const int kind, int i)
{
	if (kind == SETS_WIDE)
		return &((struct sluice_setf *)set)->x[i].a;
	return kind == SETS_V6 ? &((struct sluice_set6 *)set)->x[i].a :
				 &((struct sluice_set4 *)set)->x[i];
}

/* The scan: the way of ident `want` in set, or SETS_SCAN_NONE, or
 * SETS_SCAN_BUSY: it is being claimed on another CPU. */
#define SETS_SCAN_NONE (-1)
#define SETS_SCAN_BUSY (-2)

static __always_inline int sets_scan(void *set, __u64 want)
{
	int i, busy = 0;

#pragma unroll
	for (i = 0; i < SLUICE_SET_WAYS; i++) {
		__u64 id = SLUICE_READ(set_way(set, i)->ident);

		if (SLUICE_WAY_MATCH(id) == want) {
			if (id & (__u64)SLUICE_WAY_BUSY << 32) {
				busy = 1;
				continue;
			}
			return i;
		}
	}
	return busy ? SETS_SCAN_BUSY : SETS_SCAN_NONE;
}

/* 1. The victim in one group: the way to claim (-1: every way is being
 * claimed; else the set within the group << 2 | the way), with the ident
 * and s0 the choice read, when it becomes free (0: now), and how many of
 * the group's ways are empty. */
struct sets_victim {
	__u64 id, s0, fa;
	__s32 way;
	__u32 empty;
};

/* What sets_find() is asked (the rest: the key). */
struct sets_req {
	__u64 seed; /* config.set_seed */
	__u64 now;
	__u64 window; /* a claim's: the policy's window (ticks; 0: a bucket) */
	__u32 flags; /* ... and sets_flags() */
	__u32 create; /* 0: find only */
	__u32 loc; /* out: the key's set << 2 | way (SETS_FOUND, SETS_CLAIMED) */
	__u64 hash; /* the key's hash, kept for a second call on the same key */
	__u32 hashed; /* hash holds it; 0 when the key changed */
	__s32 way; /* sets_find()'s own: the way, kept here and not in its frame */
	/* sets_get()'s own: the victim in each of the key's groups. Here and
	 * not in its frame (6.1's 512 bytes), and read back as the verifier
	 * reads memory: not as constants, which would have it walk the claim
	 * for every way and count of empty ways of each group apart. */
	struct sets_victim v[2];
	__u64 want; /* ... the key's identity */
	__u32 own, alt; /* ... its groups' first sets */
	/* A look with find_only found neither the key nor a claim of it under
	 * way: the next sets_get() of the key (the caller clears it when the
	 * key changes) decides on a claim without looking again first. */
	__u32 scanned;
};

/* One set of the group, the s-th: v holds the best of the sets before it. */
static __always_inline void sets_victim(void *set, const int kind, __u64 now, struct sets_victim *v,
					int s)
{
	int i;

#pragma unroll
	for (i = 0; i < SLUICE_SET_WAYS; i++) {
		__u64 id = SLUICE_READ(set_way(set, i)->ident);
		__u64 s0 = SLUICE_READ(set_way(set, i)->s0), fa;

		/* Frozen (an empty way too: another CPU is claiming it, its
		 * identity not yet written) or being claimed: never a victim. */
		if ((id & (__u64)SLUICE_WAY_BUSY << 32) || s0 == SLUICE_FROZEN) {
			continue;
		} else if (!id) {
			fa = 0;
			v->empty++;
		} else {
			struct sluice_way_aux *x = set_aux(set, kind, i);
			__u64 s1 = 0;
			__u32 meta = 0;

			if (id & (__u64)SLUICE_WAY_AUX << 32)
				s1 = SLUICE_READ(x->s1);
			if (SLUICE_WAY_ALGO(id) > SLUICE_ALGO_LEAKY_BUCKET)
				meta = SLUICE_READ(x->meta);
			fa = sluice_way_free_at(id, s0, s1, meta);
			if (fa < now)
				fa = 0; /* free now: every free way is as good */
		}
		if (SLUICE_READ(v->way) < 0 || fa < SLUICE_READ(v->fa)) {
			v->fa = fa;
			v->way = s << 2 | i;
			v->id = id;
			v->s0 = s0;
		}
	}
}

static __always_inline void sets_group_victim(const int kind, __u32 base, __u64 now,
					      struct sets_victim *v)
{
	int s;

	v->fa = ~0ULL;
	v->way = -1;
	v->empty = 0;
#pragma unroll
	for (s = 0; s < SLUICE_SET_GROUP; s++) {
		void *set = sets_at(kind, base + s);

		if (!set)
			break; /* a table pinned by an older sluice, ending in part of a group */
		sets_victim(set, kind, now, v, s);
	}
}

/* The way of ident `want` in the group of sets from base: 0 with its set
 * in q->loc and the way in q->way, or SETS_SCAN_NONE, or SETS_SCAN_BUSY. */
static __always_inline int sets_group_scan(const int kind, __u32 base, __u64 want,
					   struct sets_req *q)
{
	int s, busy = 0;

#pragma unroll
	for (s = 0; s < SLUICE_SET_GROUP; s++) {
		void *set = sets_at(kind, base + s);
		int i;

		if (!set)
			break;
		i = sets_scan(set, want);
		if (i >= 0) {
			q->loc = base + s;
			q->way = i;
			return 0;
		}
		if (i == SETS_SCAN_BUSY)
			busy = 1;
	}
	return busy ? SETS_SCAN_BUSY : SETS_SCAN_NONE;
}

/* A way of identity `want` in set, other than way `skip` (-1: none)? */
static __always_inline int sets_other(void *set, __u64 want, int skip)
{
	int i, found = 0;

#pragma unroll
	for (i = 0; i < SLUICE_SET_WAYS; i++) {
		if (i != skip && SLUICE_WAY_MATCH(SLUICE_READ(set_way(set, i)->ident)) == want)
			found = 1;
	}
	return found;
}

/* ... in the group of sets from base, other than way `way` of set `vset`? */
static __always_inline int sets_group_other(const int kind, __u32 base, __u64 want, __u32 vset,
					    int way)
{
	int s, found = 0;

#pragma unroll
	for (s = 0; s < SLUICE_SET_GROUP; s++) {
		void *set = sets_at(kind, base + s);

		if (!set)
			break;
		if (sets_other(set, want, base + s == vset ? way : -1))
			found = 1;
	}
	return found;
}

/* 2. to 6.: claim way `way` of set `vset` (at `set`), q->v[c]'s (its ident
 * and s0 when chosen), for key (identity q->want, published with q->flags;
 * of SETS_WIDE: a struct sluice_fkey), whose groups start at q->own and
 * q->alt (the same group when the key has one). 0: claimed, -1: look
 * again. What it needs is read from q when it needs it, not kept in the
 * frame. */
static __always_inline int sets_claim(void *set, const int kind, __u32 vset, int way, int c,
				      const struct sluice_key *key, struct sets_req *q)
{
	struct sluice_way *w = set_way(set, way & (SLUICE_SET_WAYS - 1));
	struct sluice_way_aux *x = set_aux(set, kind, way & (SLUICE_SET_WAYS - 1));
	struct sets_victim *v = &q->v[c & 1];
	__u64 busy = (__u64)SLUICE_WAY_BUSY << 32;
	__u64 window;

	/* 2. freeze */
	if (!sluice_cas(&w->s0, SLUICE_READ(v->s0), SLUICE_FROZEN))
		return -1;
	/* 3. take the identity */
	if (!sluice_cas(&w->ident, SLUICE_READ(v->id),
			SLUICE_READ(q->want) | (__u64)q->flags << 32 | busy)) {
		SLUICE_WRITE(w->s0, SLUICE_READ(v->s0));
		return -1;
	}
	/* 4. reset */
	SLUICE_WRITE(x->s1, 0);
	SLUICE_WRITE(x->dropped, 0);
	/* a claim's only division: not on a packet that finds its way */
	window = q->window;
	SLUICE_WRITE(x->meta,
		     SLUICE_WAY_META(key->prefixlen, window ? sluice_window_ms(window) : 0));
	if (kind == SETS_V6)
		__builtin_memcpy(((struct sluice_way_aux6 *)x)->addr, key->addr, 16);
	else if (kind == SETS_WIDE)
		__builtin_memcpy(&((struct sluice_way_auxf *)x)->key, key,
				 sizeof(struct sluice_fkey));
	SLUICE_WRITE(w->s0, SLUICE_READ(v->s0) ? 0 : SLUICE_FRESH);
	/* 5. duplicates, in both of the key's groups (one when the key has
	 * one: its way v is not a duplicate there either) */
	if (sets_group_other(kind, SLUICE_READ(q->own), SLUICE_READ(q->want), vset, way) ||
	    (SLUICE_READ(q->own) != SLUICE_READ(q->alt) &&
	     sets_group_other(kind, SLUICE_READ(q->alt), SLUICE_READ(q->want), vset, way))) {
		sluice_cas(&w->ident, SLUICE_READ(q->want) | (__u64)q->flags << 32 | busy, 0);
		return -1;
	}
	/* 6. publish */
	sluice_cas(&w->ident, SLUICE_READ(q->want) | (__u64)q->flags << 32 | busy,
		   SLUICE_READ(q->want) | (__u64)q->flags << 32);
	return 0;
}

/*
 * Find key's way (q->create 0), or find or claim it (q->create 1:
 * q->flags SLUICE_WAY_AUX or 0, q->window the policy's window in ticks, 0
 * for a bucket: with the key's prefix length, the claimed way's meta), of
 * hash q->hash. `kind` is a compile-time constant: SETS_V4 or SETS_V6 (the
 * family of key), or SETS_WIDE (key is a struct sluice_fkey). Out: the
 * way's set in q->loc, the way in q->way. With `find_only` (a compile-time
 * constant): one look at each group, no claim, no wait (q->create unread).
 *
 * The key is in its own group or its other one (sluice_set_alt()), looked
 * for in that order. A new key takes the better victim of the two: the one
 * free sooner, and between two free ones, the one in the group with more
 * empty ways (two-choice hashing: the less loaded group), its own on a tie.
 */
static __always_inline int sets_get(const struct sluice_key *key, const int kind,
				    struct sets_req *q, const int find_only)
{
	__u32 ng = sluice_set_groups(sets_n[kind]), g;
	int t;

	/* The groups and the identity in q, not in this frame (6.1's 512
	 * bytes: sets_find()'s and sluice_tc's together) */
	g = sluice_set_group(q->hash, sets_n[kind]);
	q->own = g * SLUICE_SET_GROUP;
	q->want = kind == SETS_WIDE ?
			  sluice_way_ident_wide((const struct sluice_fkey *)key, q->hash) :
			  sluice_way_ident(key, q->hash);
	/* live ways only: a key being claimed is SETS_MISSING here, and
	 * sets_find() waits for it */
	if (find_only) {
		t = sets_group_scan(kind, q->own, q->want, q);
		if (!t)
			return SETS_FOUND;
	}
	q->alt = sluice_set_alt(g, q->want, ng) * SLUICE_SET_GROUP;
	if (find_only) {
		int j = SETS_SCAN_NONE;

		if (q->alt != q->own) {
			j = sets_group_scan(kind, q->alt, q->want, q);
			if (!j)
				return SETS_FOUND;
		}
		q->scanned = t == SETS_SCAN_NONE && j == SETS_SCAN_NONE;
		return SETS_MISSING;
	}
	g = q->scanned; /* the find_only look just missed: no second look */
	q->scanned = 0;

	SLUICE_NOUNROLL
	for (t = 0; t < SETS_TRIES; t++) {
		int i = SETS_SCAN_NONE, j = SETS_SCAN_NONE;
		__u32 vset;
		void *set;

		if (!g || t) {
			i = sets_group_scan(kind, SLUICE_READ(q->own), SLUICE_READ(q->want), q);
			if (!i)
				return SETS_FOUND;
			if (SLUICE_READ(q->alt) != SLUICE_READ(q->own)) {
				j = sets_group_scan(kind, SLUICE_READ(q->alt), SLUICE_READ(q->want),
						    q);
				if (!j)
					return SETS_FOUND;
			}
		}
		if (i == SETS_SCAN_BUSY || j == SETS_SCAN_BUSY)
			continue; /* N is being claimed on another CPU: wait for it */
		if (!q->create)
			return SETS_MISSING;
		sets_group_victim(kind, SLUICE_READ(q->own), q->now, &q->v[0]);
		q->v[1].way = -1;
		if (SLUICE_READ(q->alt) != SLUICE_READ(q->own))
			sets_group_victim(kind, SLUICE_READ(q->alt), q->now, &q->v[1]);
		/* read back as memory (SLUICE_READ), not kept from the scans */
		j = SLUICE_READ(q->v[1].way) >= 0 &&
		    (SLUICE_READ(q->v[0].way) < 0 ||
		     SLUICE_READ(q->v[1].fa) < SLUICE_READ(q->v[0].fa) ||
		     (SLUICE_READ(q->v[1].fa) == SLUICE_READ(q->v[0].fa) &&
		      SLUICE_READ(q->v[1].empty) > SLUICE_READ(q->v[0].empty)));
		i = SLUICE_READ(q->v[j & 1].way);
		if (i < 0)
			continue; /* every way of both is being claimed */
		vset = (j ? SLUICE_READ(q->alt) : SLUICE_READ(q->own)) + ((__u32)i >> 2);
		set = sets_at(kind, vset);
		if (!set)
			continue; /* cannot happen: the victim's set was read */
		if (sets_claim(set, kind, vset, i & (SLUICE_SET_WAYS - 1), j, key, q))
			continue;
		q->loc = vset;
		q->way = i & (SLUICE_SET_WAYS - 1);
		return SETS_CLAIMED;
	}
	return SETS_CONTENDED;
}

/*
 * sets_get() for a key of either family: the SETS_* result. sets_find() is
 * it as a function of its own, which the verifier checks once, not at every
 * place the pipeline asks. With `find_only` (a compile-time constant) it
 * only looks, in both of the key's groups, once (q->create is not read):
 * sluice_xdp's own key looks inline first, and calls sets_find() only for
 * a key it did not find. The call's return (through the kernel's return
 * thunk where SRSO is mitigated) cost 12 ns a packet here, a fifth of the
 * set table's hot path. The claim stays in the function: inlined, it took
 * sluice_xdp past the million instructions 6.1's verifier walks.
 */
static __always_inline int sets_find_inline(const struct sluice_key *key, struct sets_req *q,
					    const int find_only)
{
	int g;

	if (!q->hashed) {
		q->hash = sluice_key_hash(q->seed, key);
		q->hashed = 1;
	}
	/* The set's index and the way go through q (the caller's frame), not
	 * this one's: on 6.1 sluice_tc's frame and this call's must together
	 * fit in 512 bytes, 32-byte rounded, and this one fits 128. */
	q->loc = 0;
	q->way = 0;
	if (key->family == 6)
		g = sets_get(key, SETS_V6, q, find_only);
	else
		g = sets_get(key, SETS_V4, q, find_only);
	q->loc = q->loc << 2 | (q->way & 3);
	return g;
}

__noinline int sets_find(const struct sluice_key *key, struct sets_req *q)
{
	if (!key || !q)
		return SETS_CONTENDED;
	return sets_find_inline(key, q, 0);
}

/* sets_ref()'s "family" of a wide key's way (sets_find_wide()). */
#define SETS_WIDE_FAMILY 0

/*
 * The way at loc (sets_find()) of a key of family `family`: 0, or -1. A
 * second lookup of the set sets_find() read, and it stays: sets_find() is a
 * global function, which the verifier checks once but which can hand back
 * only a scalar, and on an array the verifier inlines the lookup into a
 * bounds check and a multiply (no helper call), cheaper than any other way
 * back to the set.
 */
static __always_inline int sets_ref(__u8 family, __u32 loc, struct way_ref *r)
{
	__u32 idx = loc >> 2, i = loc & 3;

	if (family == SETS_WIDE_FAMILY) {
		struct sluice_setf *sf = bpf_map_lookup_elem(&sluice_setsf, &idx);

		if (!sf)
			return -1;
		r->s0 = &sf->w[i].s0;
		r->x = &sf->x[i].a;
	} else if (family == 6) {
		struct sluice_set6 *s6 = bpf_map_lookup_elem(&sluice_sets6, &idx);

		if (!s6)
			return -1;
		r->s0 = &s6->w[i].s0;
		r->x = &s6->x[i].a;
	} else {
		struct sluice_set4 *s4 = bpf_map_lookup_elem(&sluice_sets4, &idx);

		if (!s4)
			return -1;
		r->s0 = &s4->w[i].s0;
		r->x = &s4->x[i];
	}
	return 0;
}

/* A way's flags and window for a key of policy p. */
static __always_inline __u32 sets_flags(const struct sluice_policy *p)
{
	return p->algo <= SLUICE_ALGO_LEAKY_BUCKET && (p->bytes.interval | p->bytes.interval_frac) ?
		       SLUICE_WAY_AUX :
		       0;
}

static __always_inline __u64 sets_window(const struct sluice_policy *p)
{
	return p->algo > SLUICE_ALGO_LEAKY_BUCKET ? p->window : 0;
}

#endif /* SLUICE_BPF_SETS_H */
