// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Where the rules of a state are, and reading them. A rule of a whole
 * address (/32, /128) is in the hash sluice_rulehash when settings.rule_maps
 * says so, every other rule in the trie sluice_rules, each keyed by its
 * generation. sluice_ruletab holds the live rules as one array, trusted while
 * config.ruletab_seq equals config.seq (txn.c keeps it); a reader copies it at
 * once, and walks the maps only when it is stale.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "array.h"
#include "rules.h"

struct rules_walk {
	__u8 gen;
	struct sluice_txn_rule *rules;
	size_t n, cap;
};

static int collect_rule(const void *key, const void *val, void *ctx)
{
	const struct sluice_rule_key *k = key;
	struct rules_walk *w = ctx;

	if (k->gen != w->gen)
		return 0;
	if (sluice_array_room(w->rules, w->n, w->cap, 16))
		return -ENOMEM;
	memcpy(&w->rules[w->n].rule, val, sizeof(struct sluice_rule));
	w->rules[w->n].key = *k;
	w->rules[w->n].key.gen = 0;
	w->n++;
	return 0;
}

void sluice_rule_place_of(const struct sluice_handle *h, const struct sluice_settings *s,
			  struct sluice_rule_place *p)
{
	memset(p, 0, sizeof(*p));
	p->maps = s->rule_maps;
	if (h->cfg && (s->rule_maps & SLUICE_RULES_HASHED))
		memcpy(p->lens, h->cfg->hash_lens[s->rules_gen & 1], sizeof(p->lens));
}

static bool in_lens(const __u8 *lens, __u8 len)
{
	int i;

	for (i = 0; i < SLUICE_HASH_LENS && lens[i]; i++)
		if (lens[i] == len)
			return true;
	return false;
}

void sluice_rule_place_for(const struct sluice_handle *h, const struct sluice_txn_rule *rules,
			   size_t nr, struct sluice_rule_place *p)
{
	static const __u8 whole[2] = { 32, 128 };
	unsigned char used[2][129];
	size_t count[2] = { 0, 0 };
	bool trie = false;
	int f, n, len;
	size_t i;

	memset(p, 0, sizeof(*p));
	memset(used, 0, sizeof(used));
	for (i = 0; i < nr; i++) {
		used[rules[i].rule.family == 6]
		    [rules[i].rule.prefixlen > 128 ? 0 : rules[i].rule.prefixlen] = 1;
		count[rules[i].rule.family == 6]++;
	}
	for (f = 0; f < 2 && h->hash_fd >= 0; f++) {
		int lengths = 0;

		for (len = 1; len <= 128; len++)
			lengths += used[f][len];
		n = 0;
		if (lengths <= SLUICE_HASH_FEW_LENS ||
		    (lengths <= SLUICE_HASH_LENS && count[f] >= SLUICE_HASH_MANY_RULES)) {
			for (len = 128; len >= 1; len--)
				if (used[f][len])
					p->lens[f][n++] = (__u8)len;
		} else if (used[f][whole[f]]) {
			p->lens[f][n++] = whole[f];
		}
		if (n)
			p->maps |= SLUICE_RULES_HASHED;
	}
	for (i = 0; i < nr && !trie; i++)
		trie = !(p->maps & SLUICE_RULES_HASHED) ||
		       !in_lens(p->lens[rules[i].rule.family == 6], rules[i].rule.prefixlen);
	if (!trie)
		p->maps |= SLUICE_RULES_NO_PREFIX;
}

bool sluice_rule_place_same(const struct sluice_rule_place *a, const struct sluice_rule_place *b)
{
	return a->maps == b->maps && !memcmp(a->lens, b->lens, sizeof(a->lens));
}

int sluice_rule_fd(const struct sluice_handle *h, const struct sluice_rule_place *p,
		   const struct sluice_txn_rule *r)
{
	return (p->maps & SLUICE_RULES_HASHED) &&
			       in_lens(p->lens[r->rule.family == 6], r->rule.prefixlen) ?
		       h->hash_fd :
		       h->rules_fd;
}

/* Every rule of generation gen of settings s, walking the maps (slow: two
 * calls a rule). */
static int walk_rules(const struct sluice_handle *h, const struct sluice_settings *s,
		      struct sluice_txn_rule **out, size_t *nr)
{
	struct rules_walk w = { .gen = s->rules_gen };
	long ret = 0;

	if (!(s->rule_maps & SLUICE_RULES_NO_PREFIX))
		ret = sluice_map_walk(h->rules_fd, collect_rule, &w);
	if (ret >= 0 && (s->rule_maps & SLUICE_RULES_HASHED))
		ret = h->hash_fd < 0 ? -ENOENT : sluice_map_walk(h->hash_fd, collect_rule, &w);
	if (ret < 0) {
		free(w.rules);
		return (int)ret;
	}
	*out = w.rules;
	*nr = w.n;
	return 0;
}

/* Does sluice_ruletab hold the live rules of version seq? */
bool sluice_ruletab_valid(const struct sluice_handle *h, __u64 seq, __u32 nr_rules)
{
	return h->ruletab && __atomic_load_n(&h->cfg->ruletab_seq, __ATOMIC_ACQUIRE) == seq &&
	       h->cfg->ruletab_nr == nr_rules && nr_rules <= h->ruletab_max;
}

/* The rules of settings s (of version seq): one copy of sluice_ruletab when
 * it holds them, else a walk of the trie. *from_tab says which. */
int sluice_read_rules(const struct sluice_handle *h, const struct sluice_settings *s, __u64 seq,
		      struct sluice_txn_rule **out, size_t *nr, bool *from_tab)
{
	*from_tab = sluice_ruletab_valid(h, seq, s->nr_rules);
	/* No packet looks a rule up while nr_rules is 0: whatever the maps
	 * hold then (what a writer that died left) is not in force. */
	if (*from_tab || !s->nr_rules) {
		*nr = *from_tab ? s->nr_rules : 0;
		*out = malloc((*nr ? *nr : 1) * sizeof(**out));
		if (!*out)
			return -ENOMEM;
		memcpy(*out, h->ruletab, *nr * sizeof(**out));
		return 0;
	}
	return walk_rules(h, s, out, nr);
}

struct gen_keys {
	__u8 gen;
	struct sluice_rule_key *keys;
	size_t n, cap;
};

static int collect_gen_key(const void *key, const void *val, void *ctx)
{
	const struct sluice_rule_key *k = key;
	struct gen_keys *g = ctx;

	(void)val;
	if (k->gen != g->gen)
		return 0;
	if (sluice_array_room(g->keys, g->n, g->cap, 64))
		return -ENOMEM;
	g->keys[g->n++] = *k;
	return 0;
}

/*
 * Delete every entry of generation gen: one walk to find them, then one
 * delete each. (Deleting during the walk would send the walk back to the
 * first key after every delete: O(rules^2) calls.)
 */
static int clear_gen(int fd, __u8 gen)
{
	struct gen_keys g = { .gen = gen };
	long walked = sluice_map_walk(fd, collect_gen_key, &g);
	int ret = walked < 0 ? (int)walked : 0;
	size_t i;

	for (i = 0; !ret && i < g.n; i++)
		if (bpf_map_delete_elem(fd, &g.keys[i]) && errno != ENOENT)
			ret = -errno;
	free(g.keys);
	return ret;
}

/* Clear generation gen of both rule maps. */
int sluice_clear_rule_gen(const struct sluice_handle *h, __u8 gen)
{
	int ret = clear_gen(h->rules_fd, gen);

	if (!ret && h->hash_fd >= 0)
		ret = clear_gen(h->hash_fd, gen);
	return ret;
}

/* Delete rules[0..nr) of generation gen from where rule_maps m put them;
 * the first error. A rule not there is looked for in the other map: a
 * state whose settings said its rules were elsewhere (sluice 0.4.0 committed
 * such settings on a reload) loses them all the same. */
int sluice_delete_rules(const struct sluice_handle *h, const struct sluice_rule_place *m,
			const struct sluice_txn_rule *rules, size_t nr, __u8 gen)
{
	int ret = 0, fd;
	size_t i;

	for (i = 0; i < nr; i++) {
		struct sluice_rule_key k = rules[i].key;

		k.gen = gen;
		fd = sluice_rule_fd(h, m, &rules[i]);
		if (!bpf_map_delete_elem(fd, &k))
			continue;
		if (errno == ENOENT && h->hash_fd >= 0 &&
		    !bpf_map_delete_elem(fd == h->hash_fd ? h->rules_fd : h->hash_fd, &k))
			continue;
		if (errno != ENOENT && !ret)
			ret = -errno;
	}
	return ret;
}

/* ---- an index of a rule array by CIDR ---- */

#define TOMB UINT32_MAX

static __u64 cidr_hash(__u8 family, __u8 prefixlen, const __u8 *addr)
{
	__u64 a, b, h;

	memcpy(&a, addr, 8);
	memcpy(&b, addr + 8, 8);
	h = (a * 0x9e3779b97f4a7c15ULL) ^ (b + 0x632be59bd9b4e019ULL) ^
	    ((__u64)family << 8 | prefixlen);
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

static bool rule_is(const struct sluice_txn_rule *r, __u8 family, __u8 prefixlen, const __u8 *addr)
{
	return r->rule.family == family && r->rule.prefixlen == prefixlen &&
	       !memcmp(r->key.addr, addr, 16);
}

static __u64 rule_hash(const struct sluice_txn_rule *r)
{
	return cidr_hash(r->rule.family, r->rule.prefixlen, r->key.addr);
}

int sluice_rindex_build(struct sluice_rindex *ix, const struct sluice_txn_rule *rules, size_t nr)
{
	size_t cap = 64, i;

	while (cap < 2 * nr + 2)
		cap *= 2;
	free(ix->pos);
	ix->pos = calloc(cap, sizeof(*ix->pos));
	ix->cap = ix->pos ? cap : 0;
	ix->used = 0;
	if (!ix->pos)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		size_t j = rule_hash(&rules[i]) & (cap - 1);

		while (ix->pos[j])
			j = (j + 1) & (cap - 1);
		ix->pos[j] = (__u32)i + 1;
		ix->used++;
	}
	return 0;
}

/* The slot of the index that holds the rule of that CIDR, or -1. */
static long rindex_slot(const struct sluice_rindex *ix, const struct sluice_txn_rule *rules,
			__u8 family, __u8 prefixlen, const __u8 *addr)
{
	size_t j;

	if (!ix->cap)
		return -1;
	for (j = cidr_hash(family, prefixlen, addr) & (ix->cap - 1); ix->pos[j];
	     j = (j + 1) & (ix->cap - 1))
		if (ix->pos[j] != TOMB && rule_is(&rules[ix->pos[j] - 1], family, prefixlen, addr))
			return (long)j;
	return -1;
}

long sluice_rindex_find(const struct sluice_rindex *ix, const struct sluice_txn_rule *rules,
			const struct sluice_cidr *c)
{
	__u8 addr[16] = {};
	long j;

	memcpy(addr, c->addr, c->family == 4 ? 4 : 16);
	j = rindex_slot(ix, rules, c->family, c->prefixlen, addr);
	return j < 0 ? -1 : (long)ix->pos[j] - 1;
}

/* rules[i] is new (and not in the index): index it. */
int sluice_rindex_add(struct sluice_rindex *ix, const struct sluice_txn_rule *rules, size_t i)
{
	size_t j;

	if (2 * (ix->used + 1) > ix->cap)
		return sluice_rindex_build(ix, rules, i + 1);
	for (j = rule_hash(&rules[i]) & (ix->cap - 1); ix->pos[j] && ix->pos[j] != TOMB;
	     j = (j + 1) & (ix->cap - 1))
		;
	if (!ix->pos[j])
		ix->used++;
	ix->pos[j] = (__u32)i + 1;
	return 0;
}

/* The rule at index i (still in rules[i]) goes, and the one at last moves
 * into i. */
void sluice_rindex_del(struct sluice_rindex *ix, const struct sluice_txn_rule *rules, size_t i,
		       size_t last)
{
	long j = rindex_slot(ix, rules, rules[i].rule.family, rules[i].rule.prefixlen,
			     rules[i].key.addr);

	if (j >= 0)
		ix->pos[j] = TOMB;
	if (last == i)
		return;
	j = rindex_slot(ix, rules, rules[last].rule.family, rules[last].rule.prefixlen,
			rules[last].key.addr);
	if (j >= 0)
		ix->pos[j] = (__u32)i + 1;
}

void sluice_rule_cidr(const struct sluice_txn_rule *r, struct sluice_cidr *c)
{
	memset(c, 0, sizeof(*c));
	c->family = r->rule.family;
	c->prefixlen = r->rule.prefixlen;
	memcpy(c->addr, r->key.addr, r->rule.family == 4 ? 4 : 16);
}

void sluice_read_l4(const struct sluice_handle *h, const struct sluice_settings *s,
		    struct sluice_txn_l4 *out, size_t *nr)
{
	__u32 gen = !!(s->flags & SLUICE_L4_GEN);
	__u64 all;
	size_t i;

	*nr = 0;
	if (!(s->flags & SLUICE_L4_ON) || !h->l4.bm)
		return;
	/* The rules of a generation are its first bits, one each. */
	all = h->l4.bm[SLUICE_L4BM_KEY(gen, SLUICE_L4BM_ALL, 0)];
	for (i = 0; i < SLUICE_L4_RULES_MAX && (all >> i & 1); i++) {
		out[i].r = h->l4.rules[gen * SLUICE_L4_RULES_MAX + i];
		out[i].policy = h->l4.pol[gen * SLUICE_L4_RULES_MAX + i];
	}
	*nr = i;
}

__u32 sluice_rules_count(const struct sluice_handle *h, const struct sluice_settings *s)
{
	__u32 gen = !!(s->flags & SLUICE_L4_GEN);

	if (!(s->flags & SLUICE_L4_ON) || !h->l4.bm)
		return s->nr_rules;
	return s->nr_rules +
	       (__u32)__builtin_popcountll(h->l4.bm[SLUICE_L4BM_KEY(gen, SLUICE_L4BM_ALL, 0)]);
}

void sluice_l4_cidr(const struct sluice_l4rule *r, struct sluice_cidr *c)
{
	memset(c, 0, sizeof(*c));
	c->family = r->family;
	c->prefixlen = r->prefixlen;
	memcpy(c->addr, r->addr, 16);
}

void sluice_l4_name(const struct sluice_l4rule *r, char *buf, size_t len)
{
	struct sluice_cidr c;
	char cidr[64], m[96];

	sluice_l4_cidr(r, &c);
	sluice_format_cidr(&c, true, cidr, sizeof(cidr));
	sluice_match_text(&r->m, m, sizeof(m));
	snprintf(buf, len, "%s %s", cidr, m);
}

static int cmp_rules(const void *a, const void *b)
{
	const struct sluice_txn_rule *x = a, *y = b;
	int d;

	if (x->rule.family != y->rule.family)
		return x->rule.family - y->rule.family;
	d = memcmp(x->key.addr, y->key.addr, 16);
	if (d)
		return d;
	return x->rule.prefixlen - y->rule.prefixlen;
}

/* How often a reader tries again without the lock while writers keep
 * changing the rules, or while what it reads does not add up though nothing
 * moved (STUCK_TRIES); then it waits for the lock (shared) and reads once. */
#define READ_TRIES 100
#define STUCK_TRIES 3

/* Wait (bounded) until no writer is at work on h, and keep them out: the fd
 * to close afterwards, or -errno. A fd of its own, never h->lock_fd: a
 * shared flock on the fd of a writer's own lock would turn it shared. */
static int lock_readers_way(const struct sluice_handle *h, char *err, size_t errlen)
{
	int fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;

	if (fd < 0)
		return sluice_err(err, errlen, -errno, "Couldn't open %s: %s", h->dir,
				  strerror(errno));
	ret = sluice_lock_fd_shared(fd, h->dir, err, errlen);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

int sluice_read_policies(struct sluice_handle *h, struct sluice_policies *pol, bool with_stats,
			 char *err, size_t errlen)
{
	struct sluice_rstats *by_slot = NULL;
	struct sluice_rwould *would_slot = NULL;
	unsigned char *have = NULL;
	int ret = 0, try, stuck = 0, lock_fd = -1;
	__u64 seq, last_seq = 0;
	bool from_tab;
	size_t i;

	memset(pol, 0, sizeof(*pol));
	if (with_stats) {
		/* Rules may share a slot: each slot is read once. */
		by_slot = calloc(SLUICE_MAX_RULES, sizeof(*by_slot) + sizeof(*would_slot) + 1);
		if (!by_slot)
			return sluice_err(err, errlen, -ENOMEM, "out of memory");
		would_slot = (struct sluice_rwould *)(by_slot + SLUICE_MAX_RULES);
		have = (unsigned char *)(would_slot + SLUICE_MAX_RULES);
	}
	for (try = 0;; try++) {
		if (lock_fd < 0 && (try == READ_TRIES || stuck == STUCK_TRIES)) {
			/*
			 * Still changing: a writer at work (a big rewrite, a
			 * grace period), or one that died between its rule
			 * update and its flip, whose count of rules the maps
			 * no longer match. Wait for the first to finish; with
			 * no writer at work what the maps hold is what every
			 * packet sees.
			 */
			lock_fd = lock_readers_way(h, err, errlen);
			if (lock_fd < 0) {
				free(by_slot);
				return lock_fd;
			}
		}
		sluice_free_policies(pol);
		if (have)
			memset(have, 0, SLUICE_MAX_RULES);
		sluice_read_settings(h, &pol->set, &seq);
		ret = sluice_read_rules(h, &pol->set, seq, &pol->rules, &pol->nr_rules, &from_tab);
		if (ret) {
			ret = sluice_err(err, errlen, ret, "Couldn't read the rules of %s: %s",
					 h->ifname, strerror(-ret));
			goto out;
		}
		pol->l4 = malloc(SLUICE_L4_RULES_MAX * sizeof(*pol->l4));
		if (!pol->l4) {
			ret = sluice_err(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
		sluice_read_l4(h, &pol->set, pol->l4, &pol->nr_l4);
		/* Sorted first: rstats[i] is the counters of rules[i]. */
		if (pol->nr_rules)
			qsort(pol->rules, pol->nr_rules, sizeof(*pol->rules), cmp_rules);
		if (with_stats) {
			pol->rstats = calloc(pol->nr_rules + 1, sizeof(*pol->rstats));
			pol->slot_users = calloc(SLUICE_MAX_RULES, sizeof(*pol->slot_users));
			if (h->rwould_fd >= 0)
				pol->rwould = calloc(pol->nr_rules + 1, sizeof(*pol->rwould));
			pol->l4_rstats = calloc(SLUICE_L4_RULES_MAX, sizeof(*pol->l4_rstats));
			pol->l4_rwould = calloc(SLUICE_L4_RULES_MAX, sizeof(*pol->l4_rwould));
			if (!pol->rstats || !pol->slot_users || !pol->l4_rstats ||
			    !pol->l4_rwould || (h->rwould_fd >= 0 && !pol->rwould)) {
				sluice_free_policies(pol);
				ret = sluice_err(err, errlen, -ENOMEM, "out of memory");
				goto out;
			}
		}
		/* i: rules[i], then the default, then l4[i - nr_rules - 1] */
		for (i = 0; with_stats && i <= pol->nr_rules + pol->nr_l4; i++) {
			size_t k = i - pol->nr_rules - 1;
			const struct sluice_policy *p = i < pol->nr_rules ?
								&pol->rules[i].rule.policy :
							i == pol->nr_rules ? &pol->set.def :
									     &pol->l4[k].policy;
			__u32 slot = SLUICE_TAG_SLOT(p->tag) & (SLUICE_MAX_RULES - 1);
			struct sluice_rstats *rs = i <= pol->nr_rules ? &pol->rstats[i] :
									&pol->l4_rstats[k];
			struct sluice_rwould *rw = !pol->rwould       ? NULL :
						   i <= pol->nr_rules ? &pol->rwould[i] :
									&pol->l4_rwould[k];

			if (!have[slot]) {
				ret = sluice_read_rstats(h, slot, &by_slot[slot]);
				if (!ret && pol->rwould)
					ret = sluice_read_rwould(h, slot, &would_slot[slot]);
				have[slot] = 1;
			}
			*rs = by_slot[slot];
			if (rw)
				*rw = would_slot[slot];
			pol->slot_users[slot]++;
			if (ret) {
				sluice_free_policies(pol);
				ret = sluice_err(
					err, errlen, ret,
					"Couldn't read the counters of policy slot %u of %s: "
					"%s",
					slot, h->ifname, strerror(-ret));
				goto out;
			}
		}
		/* Under the lock nothing changes: this is what packets see. */
		if (lock_fd >= 0) {
			pol->set.nr_rules = (__u32)pol->nr_rules;
			break;
		}
		/* One whole version: nothing changed while we read it. */
		if (sluice_settings_changed(h, seq)) {
			stuck = 0;
			continue;
		}
		if (pol->nr_rules == pol->set.nr_rules &&
		    (!from_tab || sluice_ruletab_valid(h, seq, pol->set.nr_rules)))
			break;
		/* The count is off though nothing moved: a writer between its
		 * rule update and its flip, or one that died there. */
		stuck = try && seq == last_seq ? stuck + 1 : 1;
		last_seq = seq;
	}
out:
	/* After the policies: an entry a live policy names is never written. */
	if (!ret) {
		__u16 which = (__u16)(1U << SLUICE_POLICY_ALSO(&pol->set.def));

		for (i = 0; i < pol->nr_rules; i++)
			which |= (__u16)(1U << SLUICE_POLICY_ALSO(&pol->rules[i].rule.policy));
		for (i = 0; i < pol->nr_l4; i++)
			which |= (__u16)(1U << SLUICE_POLICY_ALSO(&pol->l4[i].policy));
		sluice_also_read(h, which & (__u16)~1U, pol->also);
	}
	if (lock_fd >= 0)
		close(lock_fd);
	free(by_slot);
	return ret;
}

int sluice_lookup_rule(const struct sluice_handle *h, const struct sluice_settings *s, __u8 family,
		       const __u8 *addr, struct sluice_rule *out)
{
	struct sluice_rule_place p;
	struct sluice_rule_key rk;
	__u8 m[16];
	int i;

	if (!s->nr_rules)
		return 0;
	sluice_rule_place_of(h, s, &p);
	/* As the datapath: each hashed length, longest first, then the trie. */
	for (i = 0; i < SLUICE_HASH_LENS && h->hash_fd >= 0 && (p.maps & SLUICE_RULES_HASHED);
	     i++) {
		__u8 l = p.lens[family == 6][i];

		if (!l)
			break;
		memset(m, 0, sizeof(m));
		memcpy(m, addr, family == 4 ? 4 : 16);
		sluice_mask(m, l);
		sluice_rule_key_init(&rk, s->rules_gen, family, m, l);
		if (!bpf_map_lookup_elem(h->hash_fd, &rk, out))
			return 1;
	}
	sluice_rule_key_init(&rk, s->rules_gen, family, addr, family == 4 ? 32 : 128);
	if (!(p.maps & SLUICE_RULES_NO_PREFIX) && !bpf_map_lookup_elem(h->rules_fd, &rk, out))
		return 1;
	return 0;
}

void sluice_free_policies(struct sluice_policies *pol)
{
	free(pol->rules);
	free(pol->rstats);
	free(pol->rwould);
	free(pol->slot_users);
	free(pol->l4);
	free(pol->l4_rstats);
	free(pol->l4_rwould);
	pol->l4 = NULL;
	pol->l4_rstats = NULL;
	pol->l4_rwould = NULL;
	pol->nr_l4 = 0;
	pol->rules = NULL;
	pol->rstats = NULL;
	pol->rwould = NULL;
	pol->slot_users = NULL;
	pol->nr_rules = 0;
}

const struct sluice_policy *sluice_policy_at(const struct sluice_policies *pol, size_t i,
					     char *name, size_t len, int *family)
{
	struct sluice_cidr c;

	if (i >= pol->nr_rules) {
		if (name)
			snprintf(name, len, "default");
		if (family)
			*family = 0;
		return &pol->set.def;
	}
	sluice_rule_cidr(&pol->rules[i], &c);
	if (name)
		sluice_format_cidr(&c, true, name, len);
	if (family)
		*family = c.family;
	return &pol->rules[i].rule.policy;
}
