/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sluice: the set-associative key table (`--table sets`), as the datapath
 * and userspace both read it. Compiled into the BPF programs and the host
 * tools alike, as algo.h is.
 *
 * Two BPF_F_MMAPABLE arrays, one per family (sluice_sets4, sluice_sets6), of
 * sets of SLUICE_SET_WAYS ways. A set's first cache line holds, for every way,
 * its identity and its first state word: a key's packet on a token bucket
 * reads one line and writes one word. The rest of each way (its second state
 * word, its drop count, the key's prefix length, its window, and for IPv6 the
 * address) is in the lines after it, touched for byte limits, windows,
 * drops, and when a key is claimed.
 *
 *   IPv4 set: 64 + 4 x 16 = 128 bytes, 32 bytes a key
 *   IPv6 set: 64 + 4 x 32 = 192 bytes, 48 bytes a key
 *   wide set: 64 + 4 x 64 = 320 bytes, 80 bytes a key (sluice_setsf: the
 *             keys of --key src,dport and flow, both families, each way's
 *             aux holding its whole struct sluice_fkey)
 *
 * A key's own group of sets is a keyed hash (SipHash-1-3 of the key under
 * the state's random seed, struct sluice_config.set_seed) of its masked
 * address, tag, family and prefix length, so no remote sender can aim its
 * sources at a victim's group. A way's identity is the policy tag (with the way's own flags
 * in bits the tag never uses) and 32 bits of key: an IPv4 key's masked
 * address itself, an IPv6 key's or a wide key's fingerprint (the hash's
 * other half).
 *
 * A key has two groups of SLUICE_SET_GROUP consecutive sets (two-choice
 * hashing, sluice_set_alt() of groups): its own, and another one computed
 * from the own group and the way's identity, and it is in one of their
 * 2 x 16 ways. A new key takes a way that is free (empty, or whose state
 * says it is as good as no state: a bucket at or below now, a window that
 * ended), else the way that becomes free soonest, of both groups: eviction
 * by what the state means, so a held source (a bucket far ahead of now) is
 * the last a flood can evict. Between free ways it takes one in the group
 * with more empty ways: a full table then places about 98% of its
 * capacity, where two sets of 4 ways placed 92% and one set 80%
 * (docs/keys-and-tables.md).
 * The claim protocol is in bpf/lib/sets.h, with the proof that a key's
 * state read by another key can only cost that key packets.
 */
#ifndef SLUICE_SETS_H
#define SLUICE_SETS_H

#include <linux/types.h>
#include "sluice.h"
#include "algo.h" /* SLUICE_FROZEN, SLUICE_FRESH, SLUICE_WIN_COUNT */

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define SLUICE_SET_WAYS 4

/* Bits of a way's identity's upper half (the tag's): the tag itself uses
 * bit 31 (aggregate), 16..27 (slot < SLUICE_MAX_RULES), 13..15, 0..12. */
#define SLUICE_WAY_LIVE (1U << 30) /* the way holds a key */
#define SLUICE_WAY_BUSY (1U << 29) /* ... being claimed: not yet readable */
#define SLUICE_WAY_AUX (1U << 28) /* a bucket with a second clock (bytes) in aux.s1 */
#define SLUICE_WAY_FLAGS (SLUICE_WAY_LIVE | SLUICE_WAY_BUSY | SLUICE_WAY_AUX)
_Static_assert(((SLUICE_MAX_RULES - 1) << 16 & (SLUICE_WAY_FLAGS)) == 0,
	       "way flags clear of the tag's slot bits");

struct sluice_way {
	__u64 ident; /* (tag | SLUICE_WAY_*) << 32 | key bits; 0: empty */
	__u64 s0; /* the state's s[0] */
};
_Static_assert(sizeof(struct sluice_way) == 16, "sluice_way layout");

/* The rest of a way, after the set's first line. */
struct sluice_way_aux {
	__u64 s1; /* the state's s[1] */
	__u32 dropped; /* as sluice_bucket.dropped, saturating at SLUICE_WAY_DROPPED_MAX */
	__u32 meta; /* prefix length | window in ms (rounded up) << 8 */
};
_Static_assert(sizeof(struct sluice_way_aux) == 16, "sluice_way_aux layout");
#define SLUICE_WAY_DROPPED_MAX 0xffff0000U
#define SLUICE_WAY_META(prefixlen, window_ms) ((__u32)(prefixlen) | (__u32)(window_ms) << 8)
#define SLUICE_WAY_META_PREFIX(meta) (0xff & (meta))
#define SLUICE_WAY_META_WINDOW_MS(meta) ((meta) >> 8)

struct sluice_way_aux6 {
	struct sluice_way_aux a;
	__u8 addr[16]; /* the masked address */
};
_Static_assert(sizeof(struct sluice_way_aux6) == 32, "sluice_way_aux6 layout");

struct sluice_set4 {
	struct sluice_way w[SLUICE_SET_WAYS];
	struct sluice_way_aux x[SLUICE_SET_WAYS];
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct sluice_set4) == 128, "sluice_set4 layout");

struct sluice_set6 {
	struct sluice_way w[SLUICE_SET_WAYS];
	struct sluice_way_aux6 x[SLUICE_SET_WAYS];
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct sluice_set6) == 192, "sluice_set6 layout");

/* A way of the wide set: the rest of its state, and its whole key. */
struct sluice_way_auxf {
	struct sluice_way_aux a;
	struct sluice_fkey key; /* as claimed: tag, masked source, the mode's fields */
};
_Static_assert(sizeof(struct sluice_way_auxf) == 64, "sluice_way_auxf layout");

struct sluice_setf {
	struct sluice_way w[SLUICE_SET_WAYS];
	struct sluice_way_auxf x[SLUICE_SET_WAYS];
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct sluice_setf) == 320, "sluice_setf layout");

/*
 * A key's choice is between two groups of SLUICE_SET_GROUP consecutive sets
 * (16 ways each), not two sets: two choices of 16 ways place about 98% of
 * a full table, two of 4 placed 92% (docs/keys-and-tables.md). The sets
 * keep their layout; a group is a run of them, so a table has a whole
 * number of groups (sluice_sets_for()).
 */
#define SLUICE_SET_GROUP 4
#define SLUICE_GROUP_WAYS (SLUICE_SET_GROUP * SLUICE_SET_WAYS)
/* The most sets a key may be in: its two groups. */
#define SLUICE_KEY_SETS (2 * SLUICE_SET_GROUP)

/* Sets for max_keys keys (per family): whole groups, at least one. */
static inline __u32 sluice_sets_for(__u32 max_keys)
{
	__u32 n = max_keys / SLUICE_SET_WAYS + (max_keys % SLUICE_SET_WAYS != 0);

	n = n / SLUICE_SET_GROUP + (n % SLUICE_SET_GROUP != 0);
	return (n ? n : 1) * SLUICE_SET_GROUP;
}

/* The groups of a table of nsets sets: whole groups, and a last one in part
 * when nsets is not a multiple of SLUICE_SET_GROUP (a table pinned by an
 * older sluice). */
static inline __u32 sluice_set_groups(__u32 nsets)
{
	__u32 g = nsets / SLUICE_SET_GROUP + (nsets % SLUICE_SET_GROUP != 0);

	return g ? g : 1;
}

/* ---- The keyed hash: SipHash-1-3 over 64-bit words ---- */

static __always_inline __u64 sluice_rotl64(__u64 x, int b)
{
	return (x << b) | (x >> (64 - b));
}

/* Kept by hand: SipRound as four add-rotate-xor steps, one a line. */
/* clang-format off */
#define SLUICE_SIPROUND(v0, v1, v2, v3)                                                     \
	do {                                                                                \
		v0 += v1; v1 = sluice_rotl64(v1, 13); v1 ^= v0; v0 = sluice_rotl64(v0, 32); \
		v2 += v3; v3 = sluice_rotl64(v3, 16); v3 ^= v2;                             \
		v0 += v3; v3 = sluice_rotl64(v3, 21); v3 ^= v0;                             \
		v2 += v1; v1 = sluice_rotl64(v1, 17); v1 ^= v2; v2 = sluice_rotl64(v2, 32); \
	} while (0)
/* clang-format on */

/* The second half of the 128-bit SipHash key, from the state's 64-bit seed. */
#define SLUICE_SEED_K1(seed) ((seed) ^ 0x9e3779b97f4a7c15ULL)

/*
 * The hash of a masked key: its tag (with the aggregate bit), family and
 * prefix length are the final block, the address the message (one word for
 * IPv4, two for IPv6). Low 32 bits: the set (multiplied into [0, nsets));
 * high 32 bits: an IPv6 key's fingerprint.
 */
/* Kept by hand: each message word is one line (xor, round, xor). */
/* clang-format off */
static __always_inline __u64 sluice_key_hash(__u64 seed, const struct sluice_key *k)
{
	__u64 k0 = seed, k1 = SLUICE_SEED_K1(seed);
	__u64 v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
	__u64 v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
	__u64 m, b;

	if (k->family == 4) {
		__u32 a;

		__builtin_memcpy(&a, k->addr, 4);
		m = a;
		v3 ^= m; SLUICE_SIPROUND(v0, v1, v2, v3); v0 ^= m;
	} else {
		__builtin_memcpy(&m, k->addr, 8);
		v3 ^= m; SLUICE_SIPROUND(v0, v1, v2, v3); v0 ^= m;
		__builtin_memcpy(&m, k->addr + 8, 8);
		v3 ^= m; SLUICE_SIPROUND(v0, v1, v2, v3); v0 ^= m;
	}
	b = (__u64)k->tag << 32 | (__u64)k->family << 8 | k->prefixlen;
	v3 ^= b; SLUICE_SIPROUND(v0, v1, v2, v3); v0 ^= b;
	v2 ^= 0xff;
	SLUICE_SIPROUND(v0, v1, v2, v3);
	SLUICE_SIPROUND(v0, v1, v2, v3);
	SLUICE_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}
/* clang-format on */

static __always_inline __u32 sluice_set_index(__u64 hash, __u32 nsets)
{
	return (__u32)(((__u64)(__u32)hash * nsets) >> 32);
}

/* A key's own group, of hash h in a table of nsets sets: the group of the
 * set sluice_set_index() gives it, so a key that layout 5 put in its own
 * set is in its own group, whatever nsets. (For whole groups it is also
 * sluice_set_index(h, nsets / SLUICE_SET_GROUP).) */
static __always_inline __u32 sluice_set_group(__u64 h, __u32 nsets)
{
	return sluice_set_index(h, nsets) / SLUICE_SET_GROUP;
}

/*
 * A key's other group (two-choice hashing), of n groups: a key is in its
 * own group (sluice_set_index() of its hash) or in this one, and a new key
 * takes a way in the one with more room. Computed from the group and the
 * way's identity alone (its key without the claim's and the state's flags,
 * SLUICE_WAY_MATCH()), so anything that reads a way knows its other group
 * without the key's hash: (c - idx) mod n, with c a mix of the identity,
 * which maps each of the two groups to the other. The own group is a keyed
 * hash, so no sender can aim at the other either. One group: itself.
 * (Layouts 5 and 6 used it on single sets: sluice_key_sets()'s legacy.)
 */
static __always_inline __u32 sluice_set_alt(__u32 idx, __u64 match, __u32 nsets)
{
	__u32 c;

	/* murmur3's 64-bit finaliser: every bit of the identity in c */
	match ^= match >> 33;
	match *= 0xff51afd7ed558ccdULL;
	match ^= match >> 33;
	match *= 0xc4ceb9fe1a85ec53ULL;
	match ^= match >> 33;
	c = sluice_set_index(match, nsets);
	return c >= idx ? c - idx : c + (nsets - idx);
}

/* The groups a key of hash h and identity `match` may be in, as the first
 * set of each, in the order to look: its own, then its other one. How
 * many: 1 when they are one group. A group's sets past nsets (a table
 * pinned by an older sluice) do not exist. */
static __always_inline int sluice_set_pair(__u64 h, __u64 match, __u32 nsets, __u32 base[2])
{
	__u32 ng = sluice_set_groups(nsets);

	base[0] = sluice_set_group(h, nsets);
	base[1] = sluice_set_alt(base[0], match, ng);
	base[0] *= SLUICE_SET_GROUP;
	base[1] *= SLUICE_SET_GROUP;
	return base[1] == base[0] ? 1 : 2;
}

/*
 * The sets a key may be in, in the order to look, for readers on the host:
 * how many (up to SLUICE_KEY_SETS). legacy: as layouts 5 and 6 placed keys
 * (two sets a key, its own and sluice_set_alt() of it, each a group of
 * one), which a reader of a state not yet upgraded looks in.
 */
static inline int sluice_key_sets(__u64 h, __u64 match, __u32 nsets, int legacy,
				  __u32 out[SLUICE_KEY_SETS])
{
	__u32 base[2];
	int c, s, n = 0, groups;

	if (legacy) {
		out[0] = sluice_set_index(h, nsets);
		out[1] = sluice_set_alt(out[0], match, nsets);
		return out[1] == out[0] ? 1 : 2;
	}
	groups = sluice_set_pair(h, match, nsets, base);
	for (c = 0; c < groups; c++)
		for (s = 0; s < SLUICE_SET_GROUP; s++)
			if (base[c] + s < nsets)
				out[n++] = base[c] + s;
	return n;
}

/*
 * The hash of a wide key (struct sluice_fkey): the source's two words, the
 * destination's two, a word of the ports, protocol and mode, then the final
 * block of sluice_key_hash(). Every word is hashed whatever the family (an
 * IPv4 address's other bytes are 0): wide keys cost a few rounds more, and
 * only they pay for them. Its high half is the way's fingerprint.
 */
/* clang-format off */
static __always_inline __u64 sluice_fkey_hash(__u64 seed, const struct sluice_fkey *f)
{
	__u64 k0 = seed, k1 = SLUICE_SEED_K1(seed);
	__u64 v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
	__u64 v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
	__u64 m, b;

	__builtin_memcpy(&m, f->k.addr, 8);
	v3 ^= m; SLUICE_SIPROUND(v0, v1, v2, v3); v0 ^= m;
	__builtin_memcpy(&m, f->k.addr + 8, 8);
	v3 ^= m; SLUICE_SIPROUND(v0, v1, v2, v3); v0 ^= m;
	__builtin_memcpy(&m, f->dst, 8);
	v3 ^= m; SLUICE_SIPROUND(v0, v1, v2, v3); v0 ^= m;
	__builtin_memcpy(&m, f->dst + 8, 8);
	v3 ^= m; SLUICE_SIPROUND(v0, v1, v2, v3); v0 ^= m;
	m = (__u64)f->sport << 48 | (__u64)f->dport << 32 | (__u64)f->proto << 8 | f->mode;
	v3 ^= m; SLUICE_SIPROUND(v0, v1, v2, v3); v0 ^= m;
	b = (__u64)f->k.tag << 32 | (__u64)f->k.family << 8 | f->k.prefixlen;
	v3 ^= b; SLUICE_SIPROUND(v0, v1, v2, v3); v0 ^= b;
	v2 ^= 0xff;
	SLUICE_SIPROUND(v0, v1, v2, v3);
	SLUICE_SIPROUND(v0, v1, v2, v3);
	SLUICE_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}
/* clang-format on */

/* A wide key's way identity: its tag and its fingerprint. */
static __always_inline __u64 sluice_way_ident_wide(const struct sluice_fkey *f, __u64 h)
{
	return (__u64)(f->k.tag | SLUICE_WAY_LIVE) << 32 | (__u32)(h >> 32);
}

/* A way's identity for key k with hash h, without SLUICE_WAY_BUSY/AUX. */
static __always_inline __u64 sluice_way_ident(const struct sluice_key *k, __u64 h)
{
	__u32 lo;

	if (k->family == 4)
		__builtin_memcpy(&lo, k->addr, 4);
	else
		lo = (__u32)(h >> 32);
	return (__u64)(k->tag | SLUICE_WAY_LIVE) << 32 | lo;
}

/* An identity as matched: its key, without the claim's and the state's flags. */
#define SLUICE_WAY_MATCH(ident) ((ident) & ~((__u64)(SLUICE_WAY_BUSY | SLUICE_WAY_AUX) << 32))

/* The tag a way's identity holds. */
#define SLUICE_WAY_TAG(ident) ((__u32)((ident) >> 32) & ~SLUICE_WAY_FLAGS)
/* Its algorithm (the tag's bits 13..15; SLUICE_ALSO_ALGO: a second key). */
#define SLUICE_WAY_ALGO(ident) ((SLUICE_WAY_TAG(ident) >> 13) & 7)

/*
 * When a way's state becomes as good as no state (ticks; at or before now:
 * free now). Buckets: the later of their clocks (s1: the byte TAT when the
 * way has SLUICE_WAY_AUX, else 0); a fixed window: the end of its window; a
 * sliding window: the end of the next one (its count still weighs on that
 * one); window_ms from the way's meta. A new key's state (0, or
 * SLUICE_FRESH: algo.h) is free at 0, whatever the algorithm; a window of
 * number 0 is the first window of uptime, which ends at 1 x window.
 *
 * The window number is the state's, mod 2^32 (algo.h): past 2^32 windows
 * of uptime (13.6 years at the shortest window, 100 ms; never, within the
 * 36 years a tick count holds, for a window of 268 ms or more) a window way
 * reads as ended long ago, so a key counting in it may be evicted, and its
 * next packet starts a new window. Reconstructing the high bits would take
 * a division by the way's window on every claim.
 */
static __always_inline __u64 sluice_way_free_at(__u64 ident, __u64 s0, __u64 s1, __u32 meta)
{
	__u32 algo = SLUICE_WAY_ALGO(ident);
	__u64 w, win;

	/* (a policy's second key, SLUICE_ALSO_ALGO, is a token bucket) */
	if (algo <= SLUICE_ALGO_LEAKY_BUCKET || algo == SLUICE_ALSO_ALGO) {
		if (s0 == SLUICE_FRESH)
			s0 = 0;
		return s0 > s1 ? s0 : s1;
	}
	if (!SLUICE_WIN_COUNT(s0))
		return 0; /* 0 or SLUICE_FRESH: no window yet */
	/* window ms -> ticks: 1 ms = 16e6 ticks */
	w = (__u64)SLUICE_WAY_META_WINDOW_MS(meta) * (1000000ULL << SLUICE_TICK_SHIFT);
	win = s0 >> 32;
	return (win + (algo == SLUICE_ALGO_SLIDING_WINDOW ? 2 : 1)) * w;
}

/* A window in ticks as the way's meta keeps it: ms, rounded up. */
static __always_inline __u32 sluice_window_ms(__u64 window_ticks)
{
	__u64 ms = 1000000ULL << SLUICE_TICK_SHIFT;

	return (__u32)(window_ticks / ms + (window_ticks % ms != 0));
}

#endif /* SLUICE_SETS_H */
