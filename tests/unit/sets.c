// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The set-associative table's host-side math, include/sluice/sets.h: the
 * keyed hash against a plain SipHash-1-3 written here (whose rounds are
 * first proven on SipHash-2-4's published vectors), its keying by the seed,
 * how evenly sluice_set_index() spreads keys, a way's identity and flags,
 * when a way becomes free for each algorithm, and the layout.
 *
 * Random keys come from a fixed-seed generator, so every run checks the
 * same keys and a bound is either always met or never.
 */
#include <arpa/inet.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/sets.h>
#include "../lib/tap.h"

#define TICKS_PER_MS (1000000ULL << SLUICE_TICK_SHIFT)

/* ---- a fixed-seed generator (splitmix64) ---- */

static __u64 rng_state = 0x5eed5e75ULL;

static __u64 rnd(void)
{
	__u64 z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A tag as a policy has one: any slot, algorithm, generation, maybe aggregate. */
static __u32 rnd_tag(void)
{
	__u64 r = rnd();
	__u32 tag = SLUICE_TAG(r % SLUICE_MAX_RULES, (r >> 16) % SLUICE_ALGO_MAX, r >> 24);

	return (r >> 40) & 1 ? tag | SLUICE_TAG_AGGREGATE : tag;
}

/* A random key of a family (its address bytes past the family stay 0). */
static void rnd_key(struct sluice_key *k, int family)
{
	__u64 a = rnd(), b = rnd();

	memset(k, 0, sizeof(*k));
	k->tag = rnd_tag();
	k->family = family;
	if (family == 4) {
		k->prefixlen = rnd() % 33;
		memcpy(k->addr, &a, 4);
	} else {
		k->prefixlen = rnd() % 129;
		memcpy(k->addr, &a, 8);
		memcpy(k->addr + 8, &b, 8);
	}
}

/* ---- a plain SipHash-c-d, written from the paper, not from sets.h ---- */

static __u64 rotl(__u64 x, int b)
{
	return (x << b) | (x >> (64 - b));
}

struct sip {
	__u64 v0, v1, v2, v3;
};

static void sip_round(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = rotl(s->v2, 32);
}

/* SipHash-c-d of n 64-bit words (the last one the final block). */
static __u64 sip_words(int c, int d, __u64 k0, __u64 k1, const __u64 *m, size_t n)
{
	struct sip s = {
		.v0 = k0 ^ 0x736f6d6570736575ULL,
		.v1 = k1 ^ 0x646f72616e646f6dULL,
		.v2 = k0 ^ 0x6c7967656e657261ULL,
		.v3 = k1 ^ 0x7465646279746573ULL,
	};
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		s.v3 ^= m[i];
		for (r = 0; r < c; r++)
			sip_round(&s);
		s.v0 ^= m[i];
	}
	s.v2 ^= 0xff;
	for (r = 0; r < d; r++)
		sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

static __u64 le64(const __u8 *p, size_t n)
{
	__u64 v = 0;
	size_t i;

	for (i = 0; i < n; i++)
		v |= (__u64)p[i] << (8 * i);
	return v;
}

/* SipHash-c-d of a byte string, with a 16-byte key: the paper's definition. */
static __u64 sip_bytes(int c, int d, const __u8 key[16], const __u8 *msg, size_t len)
{
	__u64 m[16];
	size_t n = 0, i;

	for (i = 0; i + 8 <= len; i += 8)
		m[n++] = le64(msg + i, 8);
	m[n++] = (__u64)(len & 0xff) << 56 | le64(msg + i, len - i);
	return sip_words(c, d, le64(key, 8), le64(key + 8, 8), m, n);
}

/*
 * The construction sets.h documents, from the words up: SipHash-1-3 keyed by
 * (seed, seed ^ 0x9e3779b97f4a7c15) of the address (IPv4: its 4 bytes as one
 * little-endian word; IPv6: bytes 0-7 and 8-15, two little-endian words) and
 * a final block tag << 32 | family << 8 | prefixlen.
 */
static __u64 ref_key_hash(__u64 seed, const struct sluice_key *k)
{
	__u64 m[3];
	size_t n = 0;

	if (k->family == 4) {
		m[n++] = le64(k->addr, 4);
	} else {
		m[n++] = le64(k->addr, 8);
		m[n++] = le64(k->addr + 8, 8);
	}
	m[n++] = (__u64)k->tag << 32 | (__u64)k->family << 8 | k->prefixlen;
	return sip_words(1, 3, seed, seed ^ 0x9e3779b97f4a7c15ULL, m, n);
}

/* ---- the hash ---- */

static void test_siphash24_vectors(void)
{
	/* The reference implementation's vectors: key 00..0f, message 00..len-1. */
	static const struct {
		size_t len;
		__u64 want;
	} v[] = {
		{ 0, 0x726fdb47dd0e0e31ULL },  { 1, 0x74f839c593dc67fdULL },
		{ 7, 0xab0200f58b01d137ULL },  { 8, 0x93f5f5799a932462ULL },
		{ 15, 0xa129ca6149be45e5ULL }, /* the paper's example */
		{ 16, 0x3f2acc7f57c29bdbULL }, { 63, 0x958a324ceb064572ULL },
	};
	__u8 key[16], msg[64];
	size_t i;

	for (i = 0; i < 16; i++)
		key[i] = i;
	for (i = 0; i < 64; i++)
		msg[i] = i;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		__u64 got = sip_bytes(2, 4, key, msg, v[i].len);

		if (!tap_ok(got == v[i].want,
			    "reference SipHash-2-4: the published vector for %zu bytes", v[i].len))
			tap_diag("  got %016llx, want %016llx", (unsigned long long)got,
				 (unsigned long long)v[i].want);
	}
}

static void test_key_hash_is_siphash13(int family)
{
	const int n = 200000;
	int i, bad = 0;

	for (i = 0; i < n; i++) {
		struct sluice_key k;
		__u64 seed = rnd(), got, want;

		rnd_key(&k, family);
		got = sluice_key_hash(seed, &k);
		want = ref_key_hash(seed, &k);
		if (got != want && bad++ < 3)
			tap_diag("  seed %016llx tag %08x /%u: got %016llx, want %016llx",
				 (unsigned long long)seed, k.tag, k.prefixlen,
				 (unsigned long long)got, (unsigned long long)want);
	}
	tap_ok(bad == 0,
	       "sluice_key_hash() is SipHash-1-3 of the documented words: IPv%d, %d random keys (%d differ)",
	       family, n, bad);
}

/* Every field of the key is in the hash: changing one moves the key. */
static void test_key_hash_fields(void)
{
	const int n = 10000;
	int i, same[4] = { 0, 0, 0, 0 };

	for (i = 0; i < n; i++) {
		struct sluice_key k, o;
		__u64 seed = rnd(), h;

		rnd_key(&k, 6);
		h = sluice_key_hash(seed, &k);
		o = k;
		o.addr[rnd() % 16] ^= 1 << (rnd() % 8);
		same[0] += sluice_key_hash(seed, &o) == h;
		o = k;
		o.tag ^= 1U << (rnd() % 32);
		same[1] += sluice_key_hash(seed, &o) == h;
		o = k;
		o.prefixlen ^= 1 << (rnd() % 7);
		same[2] += sluice_key_hash(seed, &o) == h;
		o = k;
		o.family = 4;
		memset(o.addr + 4, 0, 12);
		same[3] += sluice_key_hash(seed, &o) == sluice_key_hash(seed, &k);
	}
	TAP_EQ(same[0], 0, "hash: a bit flipped in the address changes it (%d keys)", n);
	TAP_EQ(same[1], 0, "hash: a bit flipped in the tag changes it (%d keys)", n);
	TAP_EQ(same[2], 0, "hash: another prefix length changes it (%d keys)", n);
	TAP_EQ(same[3], 0, "hash: the family is hashed (%d keys as IPv4 and IPv6)", n);
}

static void test_keyed(void)
{
	const int n = 10000;
	const __u32 nsets = 1024;
	static struct sluice_key keys[10000];
	static __u64 seeds[10000], hashes[10000];
	int i, kept = 0, again = 0, fp_kept = 0;

	for (i = 0; i < n; i++) {
		__u64 s2 = rnd(), h2;

		seeds[i] = rnd();
		rnd_key(&keys[i], i & 1 ? 6 : 4);
		hashes[i] = sluice_key_hash(seeds[i], &keys[i]);
		h2 = sluice_key_hash(s2, &keys[i]);
		kept += sluice_set_index(hashes[i], nsets) == sluice_set_index(h2, nsets);
		fp_kept += (__u32)(hashes[i] >> 32) == (__u32)(h2 >> 32);
	}
	/* Again, in another order: nothing but the seed and the key counts. */
	for (i = n - 1; i >= 0; i--)
		again += sluice_key_hash(seeds[i], &keys[i]) == hashes[i];
	/* By chance n / nsets (about 10) keep their set; allow 1% of n. */
	tap_ok(kept <= n / 100,
	       "keyed: under another seed %d of %d keys keep their set of %u (chance: ~%u, bound %d)",
	       kept, n, nsets, n / nsets, n / 100);
	TAP_EQ(fp_kept, 0, "keyed: under another seed the fingerprint half changes (%d keys)", n);
	TAP_EQ(again, n, "keyed: the same seed gives the same hash (%d keys)", n);

	/* Only the seed's low bit differs: k1 must follow the seed as k0 does. */
	kept = 0;
	for (i = 0; i < n; i++) {
		struct sluice_key k;
		__u64 s = rnd();

		rnd_key(&k, 4);
		kept += sluice_set_index(sluice_key_hash(s, &k), nsets) ==
			sluice_set_index(sluice_key_hash(s ^ 1, &k), nsets);
	}
	tap_ok(kept <= n / 100,
	       "keyed: seeds one bit apart, %d of %d keys keep their set (bound %d)", kept, n,
	       n / 100);
}

/* ---- the set index ---- */

/* Chi-square of counts against a uniform spread over n bins of total keys. */
static double chi_square(const __u32 *cnt, __u32 n, __u64 keys)
{
	double e = (double)keys / n, x = 0;
	__u32 i;

	for (i = 0; i < n; i++)
		x += ((double)cnt[i] - e) * ((double)cnt[i] - e) / e;
	return x;
}

static void test_spread(__u32 n, int family)
{
	__u64 keys = (__u64)n * 32 < 200000 ? 200000 : (__u64)n * 32;
	__u64 seed = rnd(), i, out = 0;
	__u32 *cnt = calloc(n, sizeof(*cnt));
	struct sluice_key k = { .tag = SLUICE_TAG(1, SLUICE_ALGO_TOKEN_BUCKET, 1),
				.family = family };
	double x, df = n - 1, bound = df + 8 * sqrt(2 * df) + 10;

	if (!cnt) {
		tap_ok(false, "spread over %u sets: out of memory", n);
		return;
	}
	/* Adjacent sources, as a flood from one subnet sends them. */
	k.prefixlen = family == 4 ? 32 : 64;
	for (i = 0; i < keys; i++) {
		__u32 a = htonl(0xc6120000U + (__u32)i), s;

		if (family == 4) {
			memcpy(k.addr, &a, 4);
		} else {
			k.addr[0] = 0x20;
			k.addr[1] = 0x01;
			k.addr[3] = 0x02;
			memcpy(k.addr + 4, &a, 4);
		}
		s = sluice_set_index(sluice_key_hash(seed, &k), n);
		if (s >= n) {
			out++;
			continue;
		}
		cnt[s]++;
	}
	x = chi_square(cnt, n, keys);
	TAP_EQ(out, 0, "spread: every set index of %llu IPv%d keys is below %u",
	       (unsigned long long)keys, family, n);
	tap_ok(x <= bound,
	       "spread: %llu adjacent IPv%d keys over %u sets, chi-square %.1f (df %.0f, bound %.0f)",
	       (unsigned long long)keys, family, n, x, df, bound);
	free(cnt);
}

static void test_index_bounds(void)
{
	static const __u32 ns[] = { 1, 2, 3, 1000, 262144, 0x7fffffff, 0xffffffff };
	static const __u64 hs[] = {
		0, 1, 0xffffffffULL, 0x80000000ULL, 0xffffffff00000000ULL, 0xffffffffffffffffULL
	};
	int bad = 0, i, j;

	for (i = 0; i < (int)(sizeof(ns) / sizeof(ns[0])); i++) {
		for (j = 0; j < (int)(sizeof(hs) / sizeof(hs[0])); j++)
			bad += sluice_set_index(hs[j], ns[i]) >= ns[i];
		for (j = 0; j < 100000; j++)
			bad += sluice_set_index(rnd(), ns[i]) >= ns[i];
	}
	TAP_EQ(bad, 0, "set index: always below n, for extreme hashes and n up to 2^32 - 1");
	TAP_EQ(sluice_set_index(0xffffffffULL, 3), 2,
	       "set index: the largest hash takes the last set");
	TAP_EQ(sluice_set_index(0xffffffff00000000ULL, 3), 0,
	       "set index: only the low 32 bits choose the set");
}

/* ---- a key's other set (two-choice) ---- */

static void test_alt(void)
{
	static const __u32 ns[] = { 1, 2, 3, 1000, 262144, 0x7fffffff, 0xffffffff };
	int bad = 0, notinv = 0, i, j;

	for (i = 0; i < (int)(sizeof(ns) / sizeof(ns[0])); i++)
		for (j = 0; j < 100000; j++) {
			__u64 m = rnd();
			__u32 own = sluice_set_index(rnd(), ns[i]),
			      alt = sluice_set_alt(own, m, ns[i]);

			bad += alt >= ns[i];
			notinv += sluice_set_alt(alt, m, ns[i]) != own;
		}
	TAP_EQ(bad, 0, "other set: always below n, n from 1 to 2^32 - 1");
	TAP_EQ(notinv, 0, "other set: the other set's other set is the own set (a way knows both)");
	TAP_EQ(sluice_set_alt(0, rnd(), 1), 0, "other set: one set is its own other set");
}

/* Keys of one own group: their other groups spread over all groups, as
 * keys do (two keys that share one group rarely share the other), and a
 * key's two groups are one group about 1/n of the time. */
static void test_alt_spread(void)
{
	const __u32 n = 1024;
	const __u64 keys = 16 * n;
	__u32 *cnt = calloc(n, sizeof(*cnt));
	__u64 seed = rnd(), i, same = 0, found = 0;
	double x, df = n - 1, bound = df + 8 * sqrt(2 * df) + 10;

	if (!cnt) {
		tap_ok(false, "other group: out of memory");
		return;
	}
	for (i = 0; found < keys && i < 2 * n * keys; i++) {
		struct sluice_key k;
		__u64 h;
		__u32 base[2];

		rnd_key(&k, i & 1 ? 6 : 4);
		h = sluice_key_hash(seed, &k);
		if (sluice_set_pair(h, sluice_way_ident(&k, h), n * SLUICE_SET_GROUP, base) == 1)
			same++;
		if (base[0] != 7 * SLUICE_SET_GROUP)
			continue;
		cnt[base[1] / SLUICE_SET_GROUP]++;
		found++;
	}
	x = chi_square(cnt, n, found);
	tap_ok(found == keys && x <= bound,
	       "other group: %llu keys of group 7 have their other groups over %u groups, chi-square %.1f (df %.0f, bound %.0f)",
	       (unsigned long long)found, n, x, df, bound);
	/* i keys, each one group with chance 1/n: i/n, a few hundred */
	tap_ok(same < 2 * i / n + 20, "other group: %llu of %llu keys have one group (chance %llu)",
	       (unsigned long long)same, (unsigned long long)i, (unsigned long long)(i / n));
	free(cnt);
}

/* The sets a reader looks in (sluice_key_sets()): a key's two groups, whole
 * and in order, own first; a table that ends in part of a group (pinned
 * by an older sluice) has only the sets it has; legacy (layouts 5 and 6):
 * the own set and its other one. */
static void test_key_sets(void)
{
	static const __u32 ns[] = { 1, 2, 4, 6, 8, 1000, 262144, 262146 };
	int bad = 0, order = 0, legacy = 0, i, j, c;

	for (i = 0; i < (int)(sizeof(ns) / sizeof(ns[0])); i++)
		for (j = 0; j < 20000; j++) {
			__u64 h = rnd(), m = rnd();
			__u32 out[SLUICE_KEY_SETS], base[2], own, alt;
			int n = sluice_key_sets(h, m, ns[i], 0, out),
			    g = sluice_set_pair(h, m, ns[i], base);

			for (c = 0; c < n; c++) {
				bad += out[c] >= ns[i];
				/* c-th: group c / 4's, set c % 4 of it, while whole */
				if (ns[i] % SLUICE_SET_GROUP == 0)
					order += out[c] !=
						 base[c / SLUICE_SET_GROUP] + c % SLUICE_SET_GROUP;
			}
			if (ns[i] % SLUICE_SET_GROUP == 0)
				bad += n != g * SLUICE_SET_GROUP;
			else if (ns[i] < SLUICE_SET_GROUP)
				bad += n != (int)ns[i];
			own = sluice_set_index(h, ns[i]);
			alt = sluice_set_alt(own, m, ns[i]);
			n = sluice_key_sets(h, m, ns[i], 1, out);
			legacy += out[0] != own || (n == 2 ? out[1] != alt : alt != own);
		}
	TAP_EQ(bad, 0, "key sets: each below n, whole groups (a table of fewer sets: all of them)");
	TAP_EQ(order, 0, "key sets: the own group's 4 sets, then the other's");
	TAP_EQ(legacy, 0, "key sets, legacy (layouts 5 and 6): the own set, then its other one");
	/* A layout-5 key (in its own set) is in its own group, whatever the
	 * table's size (a last group in part included); for whole groups the
	 * own group is also the multiply-shift index of n / 4 groups. */
	for (i = 0, bad = 0, c = 0; i < 200000; i++) {
		__u32 n = (__u32)(rnd() % (1U << 30)) + 1, w = n - n % SLUICE_SET_GROUP;
		__u32 base[2], out[SLUICE_KEY_SETS], own;
		__u64 h = rnd();
		int k, in = 0;

		own = sluice_set_index(h, n);
		k = sluice_key_sets(h, rnd(), n, 0, out);
		while (k--)
			in |= out[k] == own;
		bad += !in;
		sluice_set_pair(h, 0, n, base);
		bad += base[0] / SLUICE_SET_GROUP >= sluice_set_groups(n);
		if (w)
			c += sluice_set_index(h, w) / SLUICE_SET_GROUP !=
			     sluice_set_index(h, w / SLUICE_SET_GROUP);
	}
	TAP_EQ(bad, 0, "a key's own set is in its two groups' sets, for any number of sets");
	TAP_EQ(c, 0, "whole groups: the own group is the index of n / 4 groups");
}

/* ---- a way's identity ---- */

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

static void test_fingerprint(void)
{
	const int n = 100000;
	__u32 *fp = malloc(n * sizeof(*fp));
	__u64 seed = rnd();
	int i, dup = 0, bad = 0;

	if (!fp) {
		tap_ok(false, "fingerprint: out of memory");
		return;
	}
	for (i = 0; i < n; i++) {
		struct sluice_key k;
		__u64 h;

		rnd_key(&k, 6);
		k.tag = SLUICE_TAG(3, SLUICE_ALGO_TOKEN_BUCKET, 7);
		k.prefixlen = 128;
		/* Half the keys one /64 apart at most: only their low bits differ. */
		if (i & 1)
			memset(k.addr, 0x20, 8);
		h = sluice_key_hash(seed, &k);
		fp[i] = (__u32)sluice_way_ident(&k, h);
		bad += fp[i] != (__u32)(ref_key_hash(seed, &k) >> 32);
	}
	qsort(fp, n, sizeof(*fp), cmp_u32);
	for (i = 1; i < n; i++)
		dup += fp[i] == fp[i - 1];
	TAP_EQ(bad, 0,
	       "fingerprint: an IPv6 ident's low 32 bits are the hash's high half (%d keys)", n);
	/* Pairs sharing 32 random bits by chance: n^2 / 2^33, about 1.2. */
	tap_ok(dup <= 10,
	       "fingerprint: %d of %d IPv6 keys share their low 32 bits with another (chance ~1, bound 10)",
	       dup, n);
	free(fp);
}

static void test_ident(void)
{
	int i, bad4 = 0, badhi = 0, badmatch = 0, badtag = 0, badalgo = 0, badlive = 0;

	for (i = 0; i < 100000; i++) {
		struct sluice_key k;
		__u64 seed = rnd(), h, id, flagged;
		__u32 a;

		rnd_key(&k, i & 1 ? 6 : 4);
		h = sluice_key_hash(seed, &k);
		id = sluice_way_ident(&k, h);
		memcpy(&a, k.addr, 4);
		if (k.family == 4)
			bad4 += (__u32)id != a;
		badhi += (__u32)(id >> 32) != (k.tag | SLUICE_WAY_LIVE);
		badlive += !(id >> 32 & SLUICE_WAY_LIVE) ||
			   (id >> 32 & (SLUICE_WAY_BUSY | SLUICE_WAY_AUX));
		flagged = id | (__u64)(SLUICE_WAY_BUSY | SLUICE_WAY_AUX) << 32;
		badmatch += SLUICE_WAY_MATCH(flagged) != id || SLUICE_WAY_MATCH(id) != id ||
			    SLUICE_WAY_MATCH(id | (__u64)SLUICE_WAY_BUSY << 32) != id ||
			    SLUICE_WAY_MATCH(id | (__u64)SLUICE_WAY_AUX << 32) != id;
		badtag += SLUICE_WAY_TAG(id) != k.tag || SLUICE_WAY_TAG(flagged) != k.tag;
		badalgo += SLUICE_WAY_ALGO(flagged) != ((k.tag >> 13) & 7);
	}
	TAP_EQ(bad4, 0, "ident: an IPv4 key's low 32 bits are its address as it lies in the key");
	TAP_EQ(badhi, 0, "ident: the high half is the tag with SLUICE_WAY_LIVE");
	TAP_EQ(badlive, 0, "ident: a new identity is live, neither busy nor aux");
	TAP_EQ(badmatch, 0, "ident: SLUICE_WAY_MATCH strips BUSY and AUX, and nothing else");
	TAP_EQ(badtag, 0, "ident: SLUICE_WAY_TAG gives the tag back, aggregate bit and all");
	TAP_EQ(badalgo, 0, "ident: SLUICE_WAY_ALGO gives the tag's algorithm");

	{
		struct sluice_key k = { .tag = SLUICE_TAG(SLUICE_MAX_RULES - 1,
							  SLUICE_ALGO_FIXED_WINDOW, 0x1fff) |
					       SLUICE_TAG_AGGREGATE,
					.family = 4,
					.prefixlen = 24,
					.addr = { 198, 18, 7, 0 } };
		__u64 id = sluice_way_ident(&k, 0);

		TAP_EQ(id, ((__u64)(k.tag | SLUICE_WAY_LIVE) << 32) | htonl(0xc6120700U),
		       "ident: 198.18.7.0/24 of the last slot, aggregate: exact value");
		TAP_EQ(SLUICE_WAY_ALGO(id), SLUICE_ALGO_FIXED_WINDOW,
		       "ident: the fixed window's algorithm back");
		TAP_EQ(SLUICE_WAY_MATCH(id) == SLUICE_WAY_MATCH(id ^ 1), 0,
		       "ident: MATCH keeps the key bits (one address bit apart: no match)");
		TAP_EQ(SLUICE_WAY_MATCH(id) ==
			       SLUICE_WAY_MATCH(id & ~((__u64)SLUICE_WAY_LIVE << 32)),
		       0, "ident: MATCH keeps LIVE (an empty way never matches a key)");
	}
}

/* ---- when a way is free ---- */

static __u64 way_ident(__u8 algo)
{
	struct sluice_key k = { .tag = SLUICE_TAG(5, algo, 9), .family = 4, .prefixlen = 32 };

	return sluice_way_ident(&k, 0);
}

static void test_free_at_buckets(void)
{
	static const __u8 algos[] = { SLUICE_ALGO_TOKEN_BUCKET, SLUICE_ALGO_LEAKY_BUCKET };
	int a, i, bad = 0;

	for (a = 0; a < 2; a++) {
		__u64 id = way_ident(algos[a]);

		TAP_EQ(sluice_way_free_at(id, 0, 0, 0), 0, "free at: %s, zero state: free now",
		       a ? "leaky bucket" : "token bucket");
		TAP_EQ(sluice_way_free_at(id, 700, 300, SLUICE_WAY_META(32, 0)), 700,
		       "free at: %s, the packet clock later: its TAT",
		       a ? "leaky bucket" : "token bucket");
		TAP_EQ(sluice_way_free_at(id | (__u64)SLUICE_WAY_AUX << 32, 300, 700,
					  SLUICE_WAY_META(32, 100)),
		       700, "free at: %s, the byte clock later: its TAT (window in meta ignored)",
		       a ? "leaky bucket" : "token bucket");
		for (i = 0; i < 10000; i++) {
			__u64 s0 = rnd() >> (rnd() % 64), s1 = rnd() >> (rnd() % 64);

			bad += sluice_way_free_at(id, s0, s1, (__u32)rnd()) != (s0 > s1 ? s0 : s1);
		}
		TAP_EQ(bad, 0, "free at: %s, max(s0, s1) for 10000 random states",
		       a ? "leaky bucket" : "token bucket");
	}
}

static void test_window_ms(void)
{
	int i, bad = 0;

	TAP_EQ(sluice_window_ms(100 * TICKS_PER_MS), 100, "window ms: 100 ms is 100");
	TAP_EQ(sluice_window_ms(100 * TICKS_PER_MS + 1), 101,
	       "window ms: a tick over 100 ms rounds up to 101");
	TAP_EQ(sluice_window_ms(100 * TICKS_PER_MS - 1), 100,
	       "window ms: a tick under 100 ms rounds up to 100");
	TAP_EQ(sluice_window_ms(1), 1, "window ms: one tick rounds up to 1 ms");
	for (i = 0; i < 100000; i++) {
		__u64 w = 1 + rnd() % (3600ULL * 1000 * TICKS_PER_MS); /* up to an hour */
		__u64 ms = sluice_window_ms(w);

		bad += ms * TICKS_PER_MS < w || (ms - 1) * TICKS_PER_MS >= w;
	}
	TAP_EQ(bad, 0,
	       "window ms: rounds up, never below the window nor a whole ms over (100000 windows)");
}

/* Run a window algorithm once at `now`; free_at must be the end of its window(s). */
static void test_free_at_windows(void)
{
	static const __u8 algos[] = { SLUICE_ALGO_FIXED_WINDOW, SLUICE_ALGO_SLIDING_WINDOW };
	int a, i;

	for (a = 0; a < 2; a++) {
		__u64 id = way_ident(algos[a]), w = 100 * TICKS_PER_MS;
		const char *name = a ? "sliding window" : "fixed window";
		__u32 meta = SLUICE_WAY_META(32, sluice_window_ms(w));
		int bad = 0, early = 0;

		TAP_EQ(sluice_way_free_at(id, 0, 0, meta), 0, "free at: %s, zero state: free now",
		       name);
		TAP_EQ(sluice_way_free_at(id, SLUICE_WIN_PACK(41, 3), 5, meta), (41ULL + 1 + a) * w,
		       "free at: %s, window 41 of 100 ms: at %s", name,
		       a ? "42 x 100 ms + 100 ms" : "42 x 100 ms");
		/* The real algorithm's state, at random times, whole-ms windows. */
		for (i = 0; i < 10000; i++) {
			__u64 wi = (1 + rnd() % 60000) * TICKS_PER_MS;
			__u64 now = rnd() % (wi << 20), s[2] = { 0, 0 };
			__u32 m = SLUICE_WAY_META(32, sluice_window_ms(wi));

			if (a)
				sluice_sliding_window(s, now, wi, 10);
			else
				sluice_fixed_window(&s[0], now, wi, 10);
			bad += sluice_way_free_at(id, s[0], s[1], m) != (now / wi + 1 + a) * wi;
		}
		TAP_EQ(bad, 0,
		       "free at: %s, after a packet: the end of its %swindow (10000, whole ms)",
		       name, a ? "next " : "");
		/* Windows not a whole ms: the meta's ms is rounded up, never early. */
		for (i = 0; i < 10000; i++) {
			__u64 wi = 1 + rnd() % (60000 * TICKS_PER_MS);
			__u64 now = rnd() % (wi << 20), s[2] = { 0, 0 };
			__u32 ms = sluice_window_ms(wi);

			if (a)
				sluice_sliding_window(s, now, wi, 10);
			else
				sluice_fixed_window(&s[0], now, wi, 10);
			early += sluice_way_free_at(id, s[0], s[1], SLUICE_WAY_META(32, ms)) !=
					 (now / wi + 1 + a) * ms * TICKS_PER_MS ||
				 (now / wi + 1 + a) * ms * TICKS_PER_MS < (now / wi + 1 + a) * wi;
		}
		TAP_EQ(early, 0,
		       "free at: %s, any window: (window + %d) x its ms rounded up, never before its end",
		       name, 1 + a);
	}
}

/* At free_at a way's state admits as a new key's would; in the window before, not. */
static void test_free_at_means_free(void)
{
	__u64 w = 250 * TICKS_PER_MS, now = 1000 * w + 17;
	__u32 meta = SLUICE_WAY_META(32, sluice_window_ms(w)), limit = 5, i, before = 0, at = 0;
	__u64 s[2] = { 0, 0 }, t, f;

	for (i = 0; i < limit; i++)
		sluice_sliding_window(s, now, w, limit);
	f = sluice_way_free_at(way_ident(SLUICE_ALGO_SLIDING_WINDOW), s[0], s[1], meta);
	{
		__u64 b[2] = { s[0], s[1] }, c[2] = { s[0], s[1] };

		for (t = 0; t < limit; t++) {
			before += sluice_sliding_window(b, f - w / 2, w, limit) == SLUICE_PASS;
			at += sluice_sliding_window(c, f, w, limit) == SLUICE_PASS;
		}
	}
	TAP_EQ(at, limit, "free at: a full sliding window admits its whole limit again at free_at");
	TAP_TRUE(
		before < limit,
		"free at: ... and halfway through the window before it (the count still weighs), less (%u of %u)",
		before, limit);
}

/*
 * What a claim resets a way's first word to (bpf/lib/sets.h, step 4): 0, or
 * SLUICE_FRESH when the evicted word was 0. Both must be a new key's state
 * for every algorithm at every now, the clock at 0 and inside the first
 * window included: the same verdicts and the same state written as the LRU
 * table's zero state, and free at once. (The 1 it was before is a packet
 * counted in window 0, and a TAT not yet full at now 0.)
 */
static void test_reset_values(void)
{
	static const __u8 algos[] = { SLUICE_ALGO_TOKEN_BUCKET, SLUICE_ALGO_LEAKY_BUCKET,
				      SLUICE_ALGO_SLIDING_WINDOW, SLUICE_ALGO_FIXED_WINDOW };
	static const char *const names[] = { "token bucket", "leaky bucket", "sliding window",
					     "fixed window" };
	__u64 W = 1000 * TICKS_PER_MS;
	const __u64 nows[] = { 0, 1, W / 2, W - 1, W, W + 1, 2 * W, 1000 * W + 17 };
	const __u64 resets[] = { 0, SLUICE_FRESH };
	struct sluice_policy p;
	int a, i, r, k;

	for (a = 0; a < 4; a++) {
		int bad = 0, not_free = 0;

		memset(&p, 0, sizeof(p));
		p.algo = algos[a];
		p.tag = SLUICE_TAG(1, algos[a], 1);
		if (algos[a] <= SLUICE_ALGO_LEAKY_BUCKET) {
			/* 10/s burst 5: 100 ms a packet */
			p.pkt.interval = 100 * TICKS_PER_MS;
			p.pkt.tolerance = 5 * p.pkt.interval;
		} else {
			p.window = W;
			p.window_limit = 5;
		}
		for (i = 0; i < (int)(sizeof(nows) / sizeof(nows[0])); i++)
			for (r = 0; r < 2; r++) {
				__u64 z[2] = { 0, 0 }, f[2] = { resets[r], 0 };

				for (k = 0; k < 8; k++)
					bad += sluice_admit(&p, z, nows[i], 60) !=
					       sluice_admit(&p, f, nows[i], 60);
				bad += memcmp(z, f, sizeof(z)) != 0;
				not_free += sluice_way_free_at(way_ident(algos[a]), resets[r], 0,
							       SLUICE_WAY_META(32, 1000)) != 0;
			}
		TAP_EQ(bad, 0,
		       "reset values: %s: 0 and SLUICE_FRESH give a zero state's verdicts "
		       "and state, at 0, inside the first window, at its end, its boundary, "
		       "past it",
		       names[a]);
		TAP_EQ(not_free, 0, "reset values: %s: 0 and SLUICE_FRESH are free at once",
		       names[a]);
	}
	{
		__u64 tat = 1;

		TAP_EQ(sluice_gcra(&tat, 0, 100, 100) == SLUICE_DROP, 1,
		       "reset values: a TAT of 1 tick is not full at now 0 (burst 1 drops)");
	}
	TAP_EQ(sluice_way_free_at(way_ident(SLUICE_ALGO_FIXED_WINDOW), SLUICE_WIN_PACK(0, 1), 0,
				  SLUICE_WAY_META(32, 1000)),
	       W, "reset values: a count of 1 in window 0 is a real window, held until 1 x window");
	TAP_EQ(sluice_way_free_at(way_ident(SLUICE_ALGO_SLIDING_WINDOW), SLUICE_WIN_PACK(0, 1), 0,
				  SLUICE_WAY_META(32, 1000)),
	       2 * W, "reset values: ... and a sliding window's until 2 x window");
}

/* ---- sizes and layout ---- */

static void test_layout(void)
{
	TAP_EQ(sluice_sets_for(0), 4, "sets for 0 keys: 4 (one group)");
	TAP_EQ(sluice_sets_for(1), 4, "sets for 1 key: 4");
	TAP_EQ(sluice_sets_for(16), 4, "sets for 16 keys: 4");
	TAP_EQ(sluice_sets_for(17), 8, "sets for 17 keys: 8");
	TAP_EQ(sluice_sets_for(1000000), 250000, "sets for 1000000 keys: 250000");
	TAP_EQ(sluice_sets_for(1000001), 250004, "sets for 1000001 keys: 250004");
	TAP_EQ(sluice_sets_for(0xffffffffU), 0x40000000U,
	       "sets for 2^32 - 1 keys: 2^30, no overflow");
	{
		__u32 n, bad = 0;

		for (n = 0; n < 100000; n++)
			bad += sluice_sets_for(n) != (n ? (n + 15) / 16 * 4 : 4);
		TAP_EQ(bad, 0,
		       "sets for N: 4 x ceil(N / 16) (whole groups), at least 4, for N < 100000");
	}
	TAP_EQ(SLUICE_SET_GROUP, 4, "4 sets a group: 16 ways a key's choice");
	TAP_EQ(SLUICE_SET_WAYS, 4, "4 ways a set");
	TAP_EQ(sizeof(struct sluice_set4), 128, "IPv4 set: 128 bytes");
	TAP_EQ(sizeof(struct sluice_set4) / SLUICE_SET_WAYS, 32, "IPv4: 32 bytes a key");
	TAP_EQ(sizeof(struct sluice_set6), 192, "IPv6 set: 192 bytes");
	TAP_EQ(sizeof(struct sluice_set6) / SLUICE_SET_WAYS, 48, "IPv6: 48 bytes a key");
	TAP_EQ(_Alignof(struct sluice_set4), 64, "IPv4 set: 64-byte aligned");
	TAP_EQ(_Alignof(struct sluice_set6), 64, "IPv6 set: 64-byte aligned");
	TAP_EQ(offsetof(struct sluice_set4, x), 64,
	       "IPv4 set: the ways' identities and s0 fill the first line");
	TAP_EQ(offsetof(struct sluice_set6, x), 64,
	       "IPv6 set: the ways' identities and s0 fill the first line");
	TAP_EQ(offsetof(struct sluice_set6, x[1]) - offsetof(struct sluice_set6, x[0]), 32,
	       "IPv6 set: an aux of 32 bytes a way");
	TAP_EQ(offsetof(struct sluice_way_aux6, addr), 16,
	       "IPv6 aux: the address after s1, dropped, meta");
	{
		struct sluice_set4 arr[3];

		TAP_EQ(((unsigned long)&arr[1] - (unsigned long)&arr[0]), 128,
		       "IPv4 sets: one every 128 bytes in an array");
	}
	TAP_EQ(SLUICE_WAY_META_PREFIX(SLUICE_WAY_META(128, 3600000)), 128,
	       "meta: the prefix length back");
	TAP_EQ(SLUICE_WAY_META_WINDOW_MS(SLUICE_WAY_META(128, 3600000)), 3600000,
	       "meta: an hour's window back in ms");
}

int main(void)
{
	test_siphash24_vectors();
	test_key_hash_is_siphash13(4);
	test_key_hash_is_siphash13(6);
	test_key_hash_fields();
	test_keyed();
	test_spread(1, 4);
	test_spread(3, 4);
	test_spread(1000, 4);
	test_spread(1000, 6);
	test_spread(262144, 4);
	test_spread(262144, 6);
	test_index_bounds();
	test_alt();
	test_alt_spread();
	test_key_sets();
	test_fingerprint();
	test_ident();
	test_free_at_buckets();
	test_window_ms();
	test_free_at_windows();
	test_free_at_means_free();
	test_reset_values();
	test_layout();
	return tap_done();
}
