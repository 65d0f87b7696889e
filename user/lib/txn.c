// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Changes to the settings and rules of a live interface, made atomically.
 *
 * The datapath reads settings[active] of the mmapped config and the rules of
 * generation settings.rules_gen. A change writes the idle half and the idle
 * rule generation, publishes both with one release store of `active`, then
 * waits an RCU grace period (membarrier(MEMBARRIER_CMD_GLOBAL) is
 * synchronize_rcu(); XDP programs run inside RCU read sections) so that no
 * packet still reads the old half before it may be reused. Writers are
 * serialized by flock() on the pin directory (lock.c), waited for a bounded
 * time. Readers take no lock: config.seq is bumped before the rules or the
 * halves change, and a reader retries when it moved (sluice_read_settings(),
 * sluice_read_policies(); one that keeps failing waits for the lock shared).
 *
 * A writer may die anywhere (SIGKILL). What it leaves is the old state or
 * the new one whole: the idle generation is written before the flip, and
 * cleared by every writer before it writes it; the only change made in the
 * live generation is one rule, which packets see at once, and never to or
 * from no rules; the rule table, stale from a writer's first write on,
 * tells the next one to trust only what the maps hold. The settings
 * say where the rules are only as the commit writes them (rules_gen,
 * rule_maps, nr_rules): whatever a caller's copy says is replaced.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>

#include "rules.h"

static void wait_grace_period(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return;
	/* nohz_full kernels refuse MEMBARRIER_CMD_GLOBAL; an XDP program runs
	 * for microseconds, so a long sleep is a grace period in practice. */
	pr_debug("membarrier: %s; sleeping instead\n", strerror(errno));
	usleep(200 * 1000);
}

/* ---- a transaction's bookkeeping ---- */

struct sluice_txn_books {
	/* Of rules[]: valid while rules and nr_rules are these. */
	const struct sluice_txn_rule *base;
	size_t nr;
	struct sluice_rindex ix;
	struct sluice_slots *slots;
	/* The live rules when the transaction began, and their index. */
	const struct sluice_txn_rule *live; /* the mmapped rule table, or live_copy */
	struct sluice_txn_rule *live_copy;
	size_t nr_live;
	struct sluice_rindex live_ix;
	bool live_indexed;
	bool live_known; /* sluice_txn_begin() read them */
	bool built; /* the index was built once: a rebuild means rules[] was edited */
	bool from_tab; /* read from an up-to-date sluice_ruletab */
	struct sluice_rule_place live_place; /* where the live rules are */
	__u8 live_gen; /* their generation */
	/* The edits made through the helpers: one of them may be made in place. */
	unsigned int nr_ops;
	struct sluice_cidr op;
	/* The live rules that match on the transport header, as the
	 * transaction began (their generation: live_l4flags). */
	struct sluice_txn_l4 *live_l4;
	size_t nr_live_l4;
	__u32 live_l4flags; /* SLUICE_L4_ON, SLUICE_L4_GEN of the live settings */
};

static struct sluice_txn_books *books_of(struct sluice_txn *t)
{
	if (!t->books)
		t->books = calloc(1, sizeof(*t->books));
	return t->books;
}

static void books_free(struct sluice_txn *t)
{
	struct sluice_txn_books *b = t->books;

	if (!b)
		return;
	free(b->ix.pos);
	free(b->live_ix.pos);
	free(b->live_copy);
	free(b->live_l4);
	sluice_slots_free(b->slots);
	free(b);
	t->books = NULL;
}

void sluice_txn_rules_replaced(struct sluice_txn *t)
{
	if (t->books) {
		t->books->base = NULL;
		t->books->nr_ops += 2; /* no longer one edit */
	}
}

/* The index and the slots of rules[], rebuilt when rules[] changed behind
 * the helpers' back. NULL when out of memory. */
static struct sluice_txn_books *books_ready(struct sluice_txn *t)
{
	struct sluice_txn_books *b = books_of(t);
	size_t i;

	if (!b)
		return NULL;
	if (b->base && b->base == t->rules && b->nr == t->nr_rules)
		return b;
	if (b->built)
		b->nr_ops += 2; /* rules[] was edited behind the helpers' back */
	b->built = true;
	sluice_slots_free(b->slots);
	b->slots = sluice_slots_new();
	if (!b->slots || sluice_rindex_build(&b->ix, t->rules, t->nr_rules))
		return NULL;
	for (i = 0; i < t->nr_rules; i++)
		sluice_slots_add(b->slots, &t->rules[i].rule.policy);
	for (i = 0; i < t->nr_l4; i++)
		sluice_slots_add(b->slots, &t->l4[i].policy);
	b->base = t->rules;
	b->nr = t->nr_rules;
	return b;
}

static void books_sync(struct sluice_txn *t)
{
	t->books->base = t->rules;
	t->books->nr = t->nr_rules;
}

static struct sluice_also_tab *also_tab(struct sluice_txn *t);
static __u16 also_named(const struct sluice_txn *t);

int sluice_txn_begin(struct sluice_handle *h, struct sluice_txn *t, char *err, size_t errlen)
{
	struct sluice_txn_books *b;
	__u64 seq;
	int ret;

	memset(t, 0, sizeof(*t));
	t->h = h;
	if (h->lock_fd < 0) {
		h->lock_fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (h->lock_fd < 0)
			return sluice_err(err, errlen, -errno, "Couldn't open %s: %s", h->dir,
					  strerror(errno));
	}
	ret = sluice_lock_fd(h->lock_fd, h->dir, err, errlen);
	if (ret)
		return ret;
	seq = __atomic_load_n(&h->cfg->seq, __ATOMIC_ACQUIRE);
	t->set = h->cfg->settings[__atomic_load_n(&h->cfg->active, __ATOMIC_ACQUIRE) & 1];
	b = books_of(t);
	ret = b ? sluice_read_rules(h, &t->set, seq, &t->rules, &t->nr_rules, &b->from_tab) :
		  -ENOMEM;
	if (!ret && b->from_tab) {
		/* The table itself: no writer changes it while we hold the lock,
		 * and this transaction only once its change is made. */
		b->live = (const struct sluice_txn_rule *)h->ruletab;
	} else if (!ret) {
		b->live_copy = malloc((t->nr_rules ? t->nr_rules : 1) * sizeof(*b->live_copy));
		if (!b->live_copy)
			ret = -ENOMEM;
		else
			memcpy(b->live_copy, t->rules, t->nr_rules * sizeof(*b->live_copy));
		b->live = b->live_copy;
	}
	if (b)
		b->nr_live = t->nr_rules;
	if (ret) {
		sluice_txn_end(t);
		return sluice_err(err, errlen, ret, "Couldn't read the rules of %s: %s", h->ifname,
				  strerror(-ret));
	}
	b->live_known = true;
	b->live_gen = t->set.rules_gen & 1;
	sluice_rule_place_of(h, &t->set, &b->live_place);
	b->live_l4flags = t->set.flags & (SLUICE_L4_ON | SLUICE_L4_GEN);
	t->l4 = calloc(SLUICE_L4_RULES_MAX, sizeof(*t->l4));
	b->live_l4 = calloc(SLUICE_L4_RULES_MAX, sizeof(*b->live_l4));
	if (!t->l4 || !b->live_l4) {
		sluice_txn_end(t);
		return sluice_err(err, errlen, -ENOMEM, "out of memory");
	}
	sluice_read_l4(h, &t->set, t->l4, &t->nr_l4);
	memcpy(b->live_l4, t->l4, t->nr_l4 * sizeof(*t->l4));
	b->nr_live_l4 = t->nr_l4;
	/* The second keys the live policies name: never written meanwhile
	 * (their entries are read when first needed: most changes never). */
	if (!also_tab(t)) {
		sluice_txn_end(t);
		return sluice_err(err, errlen, -ENOMEM, "out of memory");
	}
	t->also->live = also_named(t);
	return 0;
}

void sluice_txn_end(struct sluice_txn *t)
{
	if (!t->also_shared)
		free(t->also);
	t->also = NULL;
	free(t->rules);
	t->rules = NULL;
	t->nr_rules = 0;
	free(t->l4);
	t->l4 = NULL;
	t->nr_l4 = 0;
	books_free(t);
	if (t->h && t->h->lock_fd >= 0)
		flock(t->h->lock_fd, LOCK_UN);
	t->h = NULL;
}

/* ---- the policies' second keys (sluice_also) ---- */

void sluice_also_read(const struct sluice_handle *h, __u16 which, struct sluice_also *out)
{
	__u32 id;

	memset(out, 0, SLUICE_ALSO_IDS * sizeof(*out));
	for (id = 1; h && h->also_fd >= 0 && id < SLUICE_ALSO_IDS; id++)
		if ((which & (1U << id)) && bpf_map_lookup_elem(h->also_fd, &id, &out[id]))
			memset(&out[id], 0, sizeof(out[id]));
}

const struct sluice_also *sluice_also_of(const struct sluice_handle *h,
					 const struct sluice_policy *p, struct sluice_also *buf)
{
	__u32 id = SLUICE_POLICY_ALSO(p);

	if (!id || !h || h->also_fd < 0 || bpf_map_lookup_elem(h->also_fd, &id, buf) ||
	    !buf->pkt.period_ns)
		return NULL;
	return buf;
}

/* t's table (a transaction without sluice_txn_begin(), attach's check on
 * a scratch state, starts with none live). */
static struct sluice_also_tab *also_tab(struct sluice_txn *t)
{
	if (!t->also) {
		t->also = calloc(1, sizeof(*t->also));
		if (t->also)
			t->also->h = t->h;
	}
	return t->also;
}

/* ... with its entries read from the map (but those it wrote itself). */
static struct sluice_also_tab *also_loaded(struct sluice_txn *t)
{
	struct sluice_also_tab *tab = also_tab(t);
	struct sluice_also e[SLUICE_ALSO_IDS];
	__u32 id;

	if (!tab || tab->loaded)
		return tab;
	sluice_also_read(tab->h, (__u16)~tab->dirty, e);
	for (id = 1; id < SLUICE_ALSO_IDS; id++)
		if (!(tab->dirty & (1U << id)))
			tab->e[id] = e[id];
	tab->loaded = true;
	return tab;
}

/* The indices t's policies name now. */
static __u16 also_named(const struct sluice_txn *t)
{
	__u16 m = (__u16)(1U << SLUICE_POLICY_ALSO(&t->set.def));
	size_t i;

	for (i = 0; i < t->nr_rules; i++)
		m |= (__u16)(1U << SLUICE_POLICY_ALSO(&t->rules[i].rule.policy));
	for (i = 0; i < t->nr_l4; i++)
		m |= (__u16)(1U << SLUICE_POLICY_ALSO(&t->l4[i].policy));
	return m & (__u16)~1U; /* 0: none */
}

int sluice_txn_also_put(struct sluice_txn *t, const struct sluice_also *a, struct sluice_policy *p,
			char *err, size_t errlen)
{
	struct sluice_also_tab *tab;
	__u16 taken;
	__u32 id;

	p->flags &= (__u8)~SLUICE_POLICY_ALSO_MASK;
	if (!a)
		return 0;
	tab = also_loaded(t);
	if (!tab)
		return sluice_err(err, errlen, -ENOMEM, "out of memory");
	for (id = 1; id < SLUICE_ALSO_IDS; id++)
		if (!memcmp(&tab->e[id], a, sizeof(*a)))
			goto found;
	/* Not one a live policy names, nor one this transaction gave. */
	taken = tab->live | also_named(t);
	for (id = 1; id < SLUICE_ALSO_IDS && (taken & (1U << id)); id++)
		;
	if (id == SLUICE_ALSO_IDS)
		return sluice_err(err, errlen, -ENOSPC,
				  "too many different second keys: %s holds at most %d "
				  "(--also-rate, --also-burst and --also-prefix4/6 as a whole), "
				  "counting those of the live policies until this change replaces "
				  "them; give policies the same second key, or remove some first",
				  t->h ? t->h->ifname : "an interface", SLUICE_ALSO_IDS - 1);
	tab->e[id] = *a;
	tab->dirty |= (__u16)(1U << id);
found:
	p->flags |= (__u8)(id << SLUICE_POLICY_ALSO_SHIFT);
	return 0;
}

int sluice_txn_also_share(struct sluice_txn *n, struct sluice_txn *t)
{
	if (!also_tab(t))
		return -ENOMEM;
	n->also = t->also;
	n->also_shared = true;
	return 0;
}

bool sluice_txn_same_format(struct sluice_txn *t, const struct sluice_policy *a,
			    const struct sluice_policy *b)
{
	const struct sluice_also *x = sluice_txn_also_of(t, a), *y = sluice_txn_also_of(t, b);

	return sluice_same_state_format(a, b) &&
	       (!x || !y || (x->prefix4 == y->prefix4 && x->prefix6 == y->prefix6));
}

const struct sluice_also *sluice_txn_also_of(struct sluice_txn *t, const struct sluice_policy *p)
{
	__u32 id = SLUICE_POLICY_ALSO(p);
	struct sluice_also_tab *tab = id ? also_loaded(t) : NULL;

	return tab && tab->e[id].pkt.period_ns ? &tab->e[id] : NULL;
}

/* The entries this transaction gave, into the map: before any policy that
 * names them is live. */
static int also_write(struct sluice_txn *t, char *err, size_t errlen)
{
	struct sluice_also_tab *tab = t->also;
	__u32 id;

	for (id = 1; tab && tab->dirty && id < SLUICE_ALSO_IDS; id++) {
		if (!(tab->dirty & (1U << id)))
			continue;
		if (t->h->also_fd < 0)
			return sluice_err(err, errlen, -EPROTO,
					  "the state of %s has no table of second keys (%s): "
					  "attach again (an upgrade in place keeps every key and "
					  "rule), then give --also-rate",
					  t->h->ifname, SLUICE_MAP_ALSO);
		if (bpf_map_update_elem(t->h->also_fd, &id, &tab->e[id], BPF_ANY))
			return sluice_err(err, errlen, -errno, "Couldn't write %s of %s: %s",
					  SLUICE_MAP_ALSO, t->h->ifname, strerror(errno));
		tab->dirty &= (__u16) ~(1U << id);
	}
	return 0;
}

/*
 * A generation never handed out before (until 8192 retags wrap it) and never
 * the one p had: config.tag_seq only grows, also across aborted changes.
 */
static void assign_tag(struct sluice_txn *t, struct sluice_policy *p, __u32 slot)
{
	__u64 gen;

	do
		gen = __atomic_add_fetch(&t->h->cfg->tag_seq, 1, __ATOMIC_RELAXED) & 0x1fff;
	while (!gen || SLUICE_TAG(slot, p->algo, gen) == p->tag);
	p->tag = SLUICE_TAG(slot, p->algo, gen);
}

void sluice_txn_retag(struct sluice_txn *t, struct sluice_policy *p)
{
	assign_tag(t, p, SLUICE_TAG_SLOT(p->tag));
}

static bool rule_is_cidr(const struct sluice_txn_rule *r, const struct sluice_cidr *c)
{
	return r->rule.family == c->family && r->rule.prefixlen == c->prefixlen &&
	       !memcmp(r->key.addr, c->addr, c->family == 4 ? 4 : 16);
}

struct sluice_txn_rule *sluice_txn_find_rule(struct sluice_txn *t, const struct sluice_cidr *c)
{
	struct sluice_txn_books *b = books_ready(t);
	long i;
	size_t k;

	if (b) {
		i = sluice_rindex_find(&b->ix, t->rules, c);
		return i < 0 ? NULL : &t->rules[i];
	}
	for (k = 0; k < t->nr_rules; k++) /* out of memory: the slow way */
		if (rule_is_cidr(&t->rules[k], c))
			return &t->rules[k];
	return NULL;
}

__u32 sluice_max_rules(const struct sluice_handle *h)
{
	__u32 trie = h->rules_fd >= 0 ? sluice_map_max_entries(h->rules_fd) / 2 : 0;

	if (h->ruletab && (!trie || h->ruletab_max < trie))
		return h->ruletab_max;
	return trie;
}

static int too_many_rules(const struct sluice_txn *t, char *err, size_t errlen)
{
	return sluice_err(err, errlen, -ENOSPC,
			  "too many rules for %s: it holds at most %u (attach it again with a "
			  "larger --max-rules after 'sluice detach %s')",
			  t->h->ifname, sluice_max_rules(t->h), t->h->ifname);
}

/*
 * np (its tag names its old slot, or none) goes on a slot of its own while
 * fewer than SLUICE_OWN_SLOTS are taken, then on the slot of rules with the
 * same policy if there is one, else on a free one. avoid: slots not to take
 * while others are free.
 */
int sluice_txn_place(struct sluice_txn *t, struct sluice_slots *sl, struct sluice_policy *np,
		     const unsigned char *avoid, char *err, size_t errlen)
{
	__u32 slot = 0;

	/* Past SLUICE_OWN_SLOTS a rule shares when it can, so that the slots
	 * left stay for policies no rule has yet. */
	if (sluice_slots_used(sl) >= SLUICE_OWN_SLOTS)
		slot = sluice_slots_find_same(sl, np);
	if (slot) {
		np->tag = sluice_slots_policy(sl, slot)->tag;
		sluice_slots_add(sl, np);
		return 0;
	}
	slot = sluice_slots_find_free(sl, avoid);
	if (!slot && avoid)
		slot = sluice_slots_find_free(sl, NULL);
	if (slot) {
		np->tag = 0;
		assign_tag(t, np, slot);
	} else {
		slot = sluice_slots_find_same(sl, np);
		if (!slot)
			return sluice_err(
				err, errlen, -ENOSPC,
				"too many different policies: the rules have %d counter slots, "
				"each for one rule or for rules of one policy; give more rules "
				"the same rate, --exempt or --deny, or fewer rules",
				SLUICE_MAX_RULES - 1);
		np->tag = sluice_slots_policy(sl, slot)->tag;
	}
	sluice_slots_add(sl, np);
	return 0;
}

/*
 * np replaces old, the policy of a rule that stays: it keeps old's tag (and
 * so its buckets) while the state format is the same, else a new generation
 * on the same slot; on a slot shared with other rules it stays while its
 * policy stays the slot's, else it moves to another.
 */
static int replace_policy(struct sluice_txn *t, struct sluice_txn_books *b,
			  const struct sluice_policy *old, struct sluice_policy *np, char *err,
			  size_t errlen)
{
	__u32 slot = SLUICE_TAG_SLOT(old->tag);
	int ret;

	np->tag = old->tag;
	if (sluice_slots_users(b->slots, slot) > 1) {
		if (!sluice_policy_same_but_tag(old, np)) {
			sluice_slots_drop(b->slots, slot);
			ret = sluice_txn_place(t, b->slots, np, NULL, err, errlen);
			if (ret) {
				sluice_slots_add(b->slots, old);
				return ret;
			}
		}
		return 0;
	}
	if (!sluice_txn_same_format(t, old, np))
		sluice_txn_retag(t, np);
	sluice_slots_drop(b->slots, slot);
	sluice_slots_add(b->slots, np);
	return 0;
}

static void note_op(struct sluice_txn_books *b, const struct sluice_cidr *c)
{
	b->nr_ops++;
	b->op = *c;
}

int sluice_txn_put_rule(struct sluice_txn *t, const struct sluice_cidr *c,
			const struct sluice_policy *p, char *err, size_t errlen)
{
	struct sluice_txn_books *b = books_ready(t);
	struct sluice_txn_rule *r;
	struct sluice_policy np = *p;
	__u32 max = sluice_max_rules(t->h);
	int ret;

	if (!b)
		return sluice_err(err, errlen, -ENOMEM, "out of memory");
	ret = sluice_policy_check(&np, err, errlen);
	if (ret)
		return ret;
	r = sluice_txn_find_rule(t, c);
	if (r) {
		ret = replace_policy(t, b, &r->rule.policy, &np, err, errlen);
		if (ret)
			return ret;
	} else {
		struct sluice_txn_rule *n;

		if (max && t->nr_rules >= max)
			return too_many_rules(t, err, errlen);
		ret = sluice_txn_place(t, b->slots, &np, NULL, err, errlen);
		if (ret)
			return ret;
		n = realloc(t->rules, (t->nr_rules + 1) * sizeof(*n));
		if (!n) {
			sluice_slots_drop(b->slots, SLUICE_TAG_SLOT(np.tag));
			return sluice_err(err, errlen, -ENOMEM, "out of memory");
		}
		t->rules = n;
		r = &t->rules[t->nr_rules++];
		memset(r, 0, sizeof(*r));
		r->rule.family = c->family;
		r->rule.prefixlen = c->prefixlen;
		sluice_rule_key_init(&r->key, 0, c->family, c->addr, c->prefixlen);
		if (sluice_rindex_add(&b->ix, t->rules, t->nr_rules - 1)) {
			sluice_slots_drop(b->slots, SLUICE_TAG_SLOT(np.tag));
			t->nr_rules--;
			b->base = NULL;
			b->built = false; /* rules[] is as it was: rebuild, not an edit */
			return sluice_err(err, errlen, -ENOMEM, "out of memory");
		}
	}
	r->rule.policy = np;
	books_sync(t);
	note_op(b, c);
	t->rules_changed = true;
	return 0;
}

int sluice_txn_del_rule(struct sluice_txn *t, const struct sluice_cidr *c, char *err, size_t errlen)
{
	struct sluice_txn_books *b = books_ready(t);
	struct sluice_txn_rule *r;
	char buf[64];
	size_t i;

	if (!b)
		return sluice_err(err, errlen, -ENOMEM, "out of memory");
	r = sluice_txn_find_rule(t, c);
	if (!r) {
		sluice_format_cidr(c, true, buf, sizeof(buf));
		return sluice_err(err, errlen, -ENOENT,
				  "there is no rule for %s: see 'sluicectl rule list'", buf);
	}
	i = (size_t)(r - t->rules);
	sluice_slots_drop(b->slots, SLUICE_TAG_SLOT(r->rule.policy.tag));
	sluice_rindex_del(&b->ix, t->rules, i, t->nr_rules - 1);
	*r = t->rules[--t->nr_rules];
	books_sync(t);
	note_op(b, c);
	t->rules_changed = true;
	return 0;
}

/* ---- rules that match on the transport header ---- */

/* The rule of CIDR c and match m, as the maps hold it. */
static struct sluice_l4rule l4_rule_of(const struct sluice_cidr *c, const struct sluice_match *m)
{
	struct sluice_l4rule r = { .m = *m, .family = c->family, .prefixlen = c->prefixlen };

	memcpy(r.addr, c->addr, 16);
	return r;
}

static bool l4_is(const struct sluice_l4rule *r, const struct sluice_cidr *c,
		  const struct sluice_match *m)
{
	struct sluice_l4rule w = l4_rule_of(c, m);

	return !memcmp(r, &w, sizeof(w));
}

struct sluice_txn_l4 *sluice_txn_find_l4(struct sluice_txn *t, const struct sluice_cidr *c,
					 const struct sluice_match *m)
{
	size_t i;

	for (i = 0; i < t->nr_l4; i++)
		if (l4_is(&t->l4[i].r, c, m))
			return &t->l4[i];
	return NULL;
}

/* Put t->l4 back in evaluation order (ties: the order they are in). */
static int l4_sort(struct sluice_txn *t)
{
	struct sluice_l4rule r[SLUICE_L4_RULES_MAX];
	struct sluice_txn_l4 was[SLUICE_L4_RULES_MAX];
	size_t order[SLUICE_L4_RULES_MAX], i;
	int ret;

	for (i = 0; i < t->nr_l4; i++)
		r[i] = t->l4[i].r;
	ret = sluice_l4rules_sort(r, t->nr_l4, order);
	if (ret)
		return ret;
	memcpy(was, t->l4, t->nr_l4 * sizeof(*was));
	for (i = 0; i < t->nr_l4; i++)
		t->l4[i] = was[order[i]];
	return 0;
}

int sluice_txn_put_l4(struct sluice_txn *t, const struct sluice_cidr *c,
		      const struct sluice_match *m, const struct sluice_policy *p, char *err,
		      size_t errlen)
{
	struct sluice_txn_books *b = books_ready(t);
	struct sluice_policy np = *p;
	struct sluice_txn_l4 *r;
	char name[160];
	int ret;

	if (!b)
		return sluice_err(err, errlen, -ENOMEM, "out of memory");
	if (!t->l4) {
		t->l4 = calloc(SLUICE_L4_RULES_MAX, sizeof(*t->l4));
		if (!t->l4)
			return sluice_err(err, errlen, -ENOMEM, "out of memory");
	}
	ret = sluice_policy_check(&np, err, errlen);
	if (ret)
		return ret;
	r = sluice_txn_find_l4(t, c, m);
	if (r) {
		ret = replace_policy(t, b, &r->policy, &np, err, errlen);
		if (ret)
			return ret;
	} else {
		struct sluice_l4rule nr = l4_rule_of(c, m);

		if (t->nr_l4 >= SLUICE_L4_RULES_MAX) {
			sluice_l4_name(&nr, name, sizeof(name));
			return sluice_err(
				err, errlen, -ENOSPC,
				"too many rules that match on ports, flags or protocols for "
				"%s: it holds at most %d of them (rule %s not added; rules of a "
				"CIDR alone have no such limit)",
				t->h->ifname, SLUICE_L4_RULES_MAX, name);
		}
		ret = sluice_txn_place(t, b->slots, &np, NULL, err, errlen);
		if (ret)
			return ret;
		r = &t->l4[t->nr_l4++];
		r->r = nr;
	}
	r->policy = np;
	t->l4_changed = true;
	return l4_sort(t) ? sluice_err(err, errlen, -ENOMEM, "out of memory") : 0;
}

int sluice_txn_del_l4(struct sluice_txn *t, const struct sluice_cidr *c,
		      const struct sluice_match *m, char *err, size_t errlen)
{
	struct sluice_txn_books *b = books_ready(t);
	struct sluice_txn_l4 *r;
	char name[160];
	size_t i;

	if (!b)
		return sluice_err(err, errlen, -ENOMEM, "out of memory");
	r = sluice_txn_find_l4(t, c, m);
	if (!r) {
		struct sluice_l4rule nr = l4_rule_of(c, m);

		sluice_l4_name(&nr, name, sizeof(name));
		return sluice_err(err, errlen, -ENOENT,
				  "there is no rule %s: see 'sluicectl rule list'", name);
	}
	sluice_slots_drop(b->slots, SLUICE_TAG_SLOT(r->policy.tag));
	i = (size_t)(r - t->l4);
	/* The order stays: the rest move up. */
	memmove(&t->l4[i], &t->l4[i + 1], (t->nr_l4 - i - 1) * sizeof(*t->l4));
	t->nr_l4--;
	t->l4_changed = true;
	return 0;
}

void sluice_txn_flush_rules(struct sluice_txn *t)
{
	if (t->nr_rules)
		t->rules_changed = true;
	if (t->nr_l4)
		t->l4_changed = true;
	t->nr_rules = 0;
	t->nr_l4 = 0;
	sluice_txn_rules_replaced(t);
}

/* Tell lock-free readers that what they read may be changing. The fence
 * keeps the stores that follow from being seen before the new seq. */
static void bump_seq(struct sluice_config *cfg)
{
	__atomic_store_n(&cfg->seq, cfg->seq + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/* Position of the live rule of CIDR c in b->live, or -1. */
static long live_find(struct sluice_txn_books *b, const struct sluice_cidr *c)
{
	if (!b->live_indexed) {
		if (sluice_rindex_build(&b->live_ix, b->live, b->nr_live))
			return -2;
		b->live_indexed = true;
	}
	return sluice_rindex_find(&b->live_ix, b->live, c);
}

static long live_find_rule(struct sluice_txn_books *b, const struct sluice_txn_rule *r)
{
	struct sluice_cidr c;

	sluice_rule_cidr(r, &c);
	return live_find(b, &c);
}

/* The settings but where the rules are, as the datapath reads them. */
static bool same_but_rules(const struct sluice_settings *a, const struct sluice_settings *b)
{
	struct sluice_settings x = *a, y = *b;

	x.nr_rules = y.nr_rules = 0;
	x.rules_gen = y.rules_gen = 0;
	x.rule_maps = y.rule_maps = 0;
	return !memcmp(&x, &y, sizeof(x));
}

/*
 * The one rule edit of t, when it may be made in place in the live
 * generation (one trie update is atomic for a packet): its index in rules
 * (-1: deleted) and in the live rules (-1: new). False when the change is
 * anything else: settings that change too, several edits, or rules[]
 * edited directly.
 */
static bool one_edit(struct sluice_txn *t, long *now, long *was)
{
	size_t i;
	struct sluice_txn_books *b = t->books;
	struct sluice_txn_rule *r;
	const struct sluice_settings *live;

	/* Only on a clean state (the table is published only once a change
	 * is whole, its old generation deleted), and never to or from no
	 * rules: the datapath skips the rules while settings.nr_rules is 0,
	 * so a writer killed between the map update and the flip would
	 * leave rules in the maps that no packet sees, or the reverse. With
	 * rules on both sides what the maps hold is what packets see. */
	if (!b || !b->from_tab || b->nr_ops != 1 || !b->nr_live || !t->nr_rules || !books_ready(t))
		return false;
	live = &t->h->cfg->settings[__atomic_load_n(&t->h->cfg->active, __ATOMIC_ACQUIRE) & 1];
	if (!same_but_rules(&t->set, live))
		return false;
	/* Only where the live rules are where this sluice puts them (not
	 * right after an upgrade, which left them all in the trie). */
	{
		struct sluice_rule_place lp;

		sluice_rule_place_for(t->h, b->live, b->nr_live, &lp);
		if (!sluice_rule_place_same(&lp, &b->live_place))
			return false;
	}
	/* ... and where the new rules go too: a change of the lengths in the
	 * hash is written whole. */
	{
		struct sluice_rule_place np;

		sluice_rule_place_for(t->h, t->rules, t->nr_rules, &np);
		if (!sluice_rule_place_same(&np, &b->live_place))
			return false;
	}
	r = sluice_txn_find_rule(t, &b->op);
	*now = r ? r - t->rules : -1;
	/* One search: cheaper than an index of the live rules. */
	*was = -1;
	for (i = 0; i < b->nr_live && *was < 0; i++)
		if (rule_is_cidr(&b->live[i], &b->op))
			*was = (long)i;
	/* The counts tell whether anything else happened to the rules. */
	if (*now >= 0 && *was < 0)
		return t->nr_rules == b->nr_live + 1;
	if (*now >= 0)
		return t->nr_rules == b->nr_live;
	return *was >= 0 && t->nr_rules + 1 == b->nr_live;
}

/* Slots whose counters start at 0: those no rule of this change held
 * before it. */
static int clear_new_slots(struct sluice_txn *t)
{
	struct sluice_txn_books *b = t->books;
	unsigned char *cont = calloc(SLUICE_MAX_RULES, 2);
	unsigned char *used = cont + SLUICE_MAX_RULES;
	int ret = 0;
	size_t i;

	if (!cont)
		return -ENOMEM;
	for (i = 0; i < t->nr_rules; i++) {
		__u32 slot = SLUICE_TAG_SLOT(t->rules[i].rule.policy.tag) & (SLUICE_MAX_RULES - 1);
		long was = live_find_rule(b, &t->rules[i]);

		if (was < -1) {
			ret = -ENOMEM;
			break;
		}
		used[slot] = 1;
		if (was >= 0 && SLUICE_TAG_SLOT(b->live[was].rule.policy.tag) == slot)
			cont[slot] = 1;
	}
	for (i = 0; !ret && i < t->nr_l4; i++) {
		const struct sluice_txn_l4 *r = &t->l4[i];
		__u32 slot = SLUICE_TAG_SLOT(r->policy.tag) & (SLUICE_MAX_RULES - 1);
		size_t k;

		used[slot] = 1;
		for (k = 0; k < b->nr_live_l4; k++)
			if (!memcmp(&b->live_l4[k].r, &r->r, sizeof(r->r)) &&
			    SLUICE_TAG_SLOT(b->live_l4[k].policy.tag) == slot)
				cont[slot] = 1;
	}
	for (i = 1; !ret && i < SLUICE_MAX_RULES; i++)
		if (used[i] && !cont[i])
			ret = sluice_clear_rstats(t->h, (__u32)i);
	free(cont);
	return ret;
}

/*
 * The rules that match on the transport header, written whole into the
 * generation packets do not read (the live settings name the other), with
 * the counters of their new slots at 0; t->set then names it. The flip of
 * the settings that follows makes it live, and after its grace period the
 * old one is idle for the next change.
 */
static int l4_write(struct sluice_txn *t, char *err, size_t errlen)
{
	struct sluice_handle *h = t->h;
	struct sluice_l4rule r[SLUICE_L4_RULES_MAX];
	__u32 gen = !(t->books->live_l4flags & SLUICE_L4_GEN);
	size_t i;
	int ret;

	if (!h->l4.bm)
		return sluice_err(err, errlen, -EOPNOTSUPP,
				  "the state of %s has no maps for rules that match on ports, "
				  "flags or protocols (it was attached by an older sluice): "
				  "attach it again ('sluice %sattach %s' adds them, keeping "
				  "the rest)",
				  h->ifname, sluice_state_verb(h), h->ifname);
	t->set.flags &= ~(SLUICE_L4_ON | SLUICE_L4_GEN);
	if (!t->nr_l4)
		return 0;
	ret = clear_new_slots(t);
	if (ret)
		return sluice_err(err, errlen, ret, "Couldn't clear the counters of %s: %s",
				  h->ifname, strerror(-ret));
	for (i = 0; i < t->nr_l4; i++)
		r[i] = t->l4[i].r;
	memset(&h->l4.rules[gen * SLUICE_L4_RULES_MAX], 0, SLUICE_L4_RULES_MAX * sizeof(*r));
	memset(&h->l4.pol[gen * SLUICE_L4_RULES_MAX], 0, SLUICE_L4_RULES_MAX * sizeof(*h->l4.pol));
	memcpy(&h->l4.rules[gen * SLUICE_L4_RULES_MAX], r, t->nr_l4 * sizeof(*r));
	for (i = 0; i < t->nr_l4; i++)
		h->l4.pol[gen * SLUICE_L4_RULES_MAX + i] = t->l4[i].policy;
	ret = sluice_l4bm_build(r, t->nr_l4, &h->l4.bm[gen * SLUICE_L4BM_WORDS]);
	if (ret)
		return sluice_err(err, errlen, ret, "Couldn't write the rules of %s: %s", h->ifname,
				  strerror(-ret));
	t->set.flags |= SLUICE_L4_ON | (gen ? SLUICE_L4_GEN : 0);
	return 0;
}

/*
 * The policies of t's slots under settings[half], which the datapath
 * applies (sluice_policies): the default's, each rule's, each L4 rule's.
 * Rules that share a slot share their policy. Slots no rule of t holds keep
 * what they had: nothing of t reads them.
 */
static void policies_put(struct sluice_txn *t, __u32 half)
{
	struct sluice_policy *pol = t->h->policies;
	size_t i;

	if (!pol)
		return;
	pol[SLUICE_POLICY_AT(half, 0)] = t->set.def;
	for (i = 0; i < t->nr_rules; i++) {
		const struct sluice_policy *p = &t->rules[i].rule.policy;

		pol[SLUICE_POLICY_AT(half, SLUICE_TAG_SLOT(p->tag))] = *p;
	}
	for (i = 0; i < t->nr_l4; i++)
		pol[SLUICE_POLICY_AT(half, SLUICE_TAG_SLOT(t->l4[i].policy.tag))] = t->l4[i].policy;
}

void sluice_txn_put_policies(struct sluice_txn *t)
{
	char err[SLUICE_ERR_LEN];

	/* (a state without the map has no policy naming an entry) */
	also_write(t, err, sizeof(err));
	policies_put(t, 0);
	policies_put(t, 1);
}

/* Publish t->set: the idle half, with its policies, one store of `active`,
 * a grace period; then the old half is the same again. */
static void flip_settings(struct sluice_txn *t)
{
	struct sluice_config *cfg = t->h->cfg;
	__u32 active = __atomic_load_n(&cfg->active, __ATOMIC_ACQUIRE) & 1;

	cfg->settings[!active] = t->set;
	policies_put(t, !active);
	bump_seq(cfg);
	__atomic_store_n(&cfg->active, !active, __ATOMIC_RELEASE);
	wait_grace_period();
	/* The old half and the old rules change from here on. */
	bump_seq(cfg);
	/* Keep the idle half equal to the live one, so a reader of the pinned
	 * map (bpftool) sees the same settings in both. */
	cfg->settings[active] = t->set;
	policies_put(t, active);
}

/* The table says it holds t's nr_rules rules of the current seq. */
static void ruletab_mark(struct sluice_txn *t)
{
	struct sluice_config *cfg = t->h->cfg;

	cfg->ruletab_nr = (__u32)t->nr_rules;
	__atomic_store_n(&cfg->ruletab_seq, __atomic_load_n(&cfg->seq, __ATOMIC_RELAXED),
			 __ATOMIC_RELEASE);
}

/* sluice_ruletab holds t's rules from now on (when it can hold them). */
static void ruletab_publish(struct sluice_txn *t)
{
	struct sluice_handle *h = t->h;

	if (!h->ruletab || t->nr_rules > h->ruletab_max)
		return;
	memcpy(h->ruletab, t->rules, t->nr_rules * sizeof(*t->rules));
	ruletab_mark(t);
}

/* The same after one edit made in place: rules[] is the table with that
 * edit (the helpers edit both alike), so only entry i changed. */
static void ruletab_publish_at(struct sluice_txn *t, long i)
{
	struct sluice_handle *h = t->h;

	if (!h->ruletab || t->nr_rules > h->ruletab_max)
		return;
	if (i >= 0 && (size_t)i < t->nr_rules)
		h->ruletab[i] = *(const struct sluice_rule_entry *)&t->rules[i];
	ruletab_mark(t);
}

/* Readers must not take sluice_ruletab for the live rules until the change
 * is whole; bumped seq makes the ones reading it now retry. */
static void ruletab_retire(struct sluice_config *cfg)
{
	__atomic_store_n(&cfg->ruletab_seq, 0, __ATOMIC_RELAXED);
	bump_seq(cfg);
}

/* One rule added, changed or removed in the live generation: one trie
 * update a packet sees whole, no copy of the others. */
static int commit_in_place(struct sluice_txn *t, long now, long was, char *err, size_t errlen)
{
	struct sluice_handle *h = t->h;
	struct sluice_txn_books *b = t->books;
	__u8 gen = b->live_gen;
	int ret = 0;

	ruletab_retire(h->cfg);
	if (now >= 0) {
		struct sluice_txn_rule *r = &t->rules[now];
		__u32 slot = SLUICE_TAG_SLOT(r->rule.policy.tag);
		struct sluice_rule_key k = r->key;
		bool same_slot = was >= 0 && SLUICE_TAG_SLOT(b->live[was].rule.policy.tag) == slot;
		size_t i, users = 0;

		/* A slot no live rule held starts its counters at 0. */
		for (i = 0; !same_slot && i < b->nr_live && !users; i++)
			users = SLUICE_TAG_SLOT(b->live[i].rule.policy.tag) == slot;
		if (!same_slot && !users) {
			/* Packets see the rule before the flip: its slot's
			 * policy in the live half first (no live rule reads
			 * it). A slot kept, or shared, keeps its policy until
			 * the flip: the old one, whole, with its own tag. */
			__u32 live = __atomic_load_n(&h->cfg->active, __ATOMIC_ACQUIRE);

			ret = sluice_clear_rstats(h, slot);
			if (h->policies)
				h->policies[SLUICE_POLICY_AT(live, slot)] = r->rule.policy;
		}
		k.gen = gen;
		if (!ret && bpf_map_update_elem(sluice_rule_fd(h, &b->live_place, r), &k, &r->rule,
						BPF_ANY))
			ret = -errno;
	} else {
		ret = sluice_delete_rules(h, &b->live_place, &b->live[was], 1, gen);
	}
	if (ret) {
		/* Nothing changed: the table still holds the live rules. */
		__atomic_store_n(&h->cfg->ruletab_seq, h->cfg->seq, __ATOMIC_RELEASE);
		return sluice_err(err, errlen, ret,
				  "Couldn't write the rules of %s: %s; nothing was "
				  "changed",
				  h->ifname, strerror(-ret));
	}
	t->set.nr_rules = (__u32)t->nr_rules;
	flip_settings(t);
	/* Added or changed: entry now; deleted: the last moved into was. */
	ruletab_publish_at(t, now >= 0 ? now : was);
	return 0;
}

/* Any change: the rules are written whole into the idle generation, which
 * the flip of the settings makes live with them. */
static int commit_whole(struct sluice_txn *t, char *err, size_t errlen)
{
	struct sluice_handle *h = t->h;
	struct sluice_txn_books *b = t->books;
	__u8 old_gen = b->live_gen, new_gen = !old_gen;
	struct sluice_rule_place place;
	__u32 max = sluice_max_rules(h);
	size_t written = 0;
	int ret = 0;

	if (max && t->nr_rules > max)
		return too_many_rules(t, err, errlen);
	sluice_rule_place_for(h, t->rules, t->nr_rules, &place);
	ruletab_retire(h->cfg);
	/* The idle generation is cleared whole first (one walk of each map):
	 * whatever a writer that died left there, or an older sluice (0.4.0's
	 * reload deleted a generation's rules from the wrong map), would come
	 * alive with this change, unseen by rule list. */
	ret = sluice_clear_rule_gen(h, new_gen);
	if (!ret)
		ret = clear_new_slots(t);
	for (; !ret && written < t->nr_rules; written++) {
		struct sluice_txn_rule *r = &t->rules[written];

		r->key.gen = new_gen;
		if (bpf_map_update_elem(sluice_rule_fd(h, &place, r), &r->key, &r->rule, BPF_ANY))
			ret = -errno;
		r->key.gen = 0;
	}
	if (ret) {
		sluice_delete_rules(h, &place, t->rules, written, new_gen);
		if (b->from_tab)
			__atomic_store_n(&h->cfg->ruletab_seq, h->cfg->seq, __ATOMIC_RELEASE);
		return sluice_err(err, errlen, ret,
				  "Couldn't write the rules of %s: %s; nothing "
				  "was changed",
				  h->ifname, strerror(-ret));
	}
	t->set.rules_gen = new_gen;
	t->set.nr_rules = (__u32)t->nr_rules;
	t->set.rule_maps = place.maps;
	/* The idle generation's lengths: no packet reads them before the flip. */
	memcpy(h->cfg->hash_lens[new_gen], place.lens, sizeof(place.lens));
	flip_settings(t);
	/* The old generation goes whole. From a clean state (the table) it
	 * holds exactly the table's rules; after a writer that died, or on a
	 * state whose settings said its rules were elsewhere, it may hold
	 * entries no list knows of: every entry of that generation goes. A
	 * leftover would come back to life when this generation is next
	 * written, unseen by 'rule list'. */
	if (b->from_tab)
		ret = sluice_delete_rules(h, &b->live_place, b->live, b->nr_live, old_gen);
	else
		ret = sluice_clear_rule_gen(h, old_gen);
	if (ret)
		pr_warn("warning: Couldn't clear the old rules of %s: %s (harmless: the "
			"next change clears them)\n",
			h->ifname, strerror(-ret));
	else
		ruletab_publish(t);
	return 0;
}

/* Are t's rules the live ones, entry for entry? */
static bool rules_same_as_live(struct sluice_txn *t)
{
	struct sluice_txn_books *b = t->books;
	size_t i;

	if (t->nr_rules != b->nr_live)
		return false;
	for (i = 0; i < t->nr_rules; i++) {
		long was = live_find_rule(b, &t->rules[i]);

		if (was < 0 ||
		    memcmp(&b->live[was].rule, &t->rules[i].rule, sizeof(struct sluice_rule)))
			return false;
	}
	return true;
}

/*
 * Only the settings change: the rules stay where they are. Only from a clean
 * state (the table up to date: the maps hold what it lists, as the last
 * change left them), with the rules the live ones and already where this
 * sluice puts them; else the change is written whole, which clears what a
 * dead writer left and moves rules an upgrade left in the trie.
 */
static bool settings_only(struct sluice_txn *t)
{
	struct sluice_txn_books *b = t->books;
	struct sluice_rule_place np;

	if (!b->from_tab || !rules_same_as_live(t))
		return false;
	sluice_rule_place_for(t->h, t->rules, t->nr_rules, &np);
	return sluice_rule_place_same(&np, &b->live_place);
}

int sluice_txn_commit(struct sluice_txn *t, char *err, size_t errlen)
{
	struct sluice_txn_books *b = t->books;
	long now, was;
	int ret;

	ret = sluice_policy_check(&t->set.def, err, errlen);
	if (ret)
		return ret;
	if (b && b->live_known) {
		ret = also_write(t, err, errlen);
		if (ret)
			return ret;
	}
	if (!b || !b->live_known)
		return sluice_err(err, errlen, -EINVAL,
				  "internal error: a change of %s committed "
				  "without sluice_txn_begin()",
				  t->h->ifname);
	/*
	 * Where the rules are is the commit's to say, never the caller's: a
	 * copy of the settings built from the defaults (a config file), or
	 * edited by hand, would otherwise describe rules that are not where
	 * it says, and every packet would miss them. From here on t->set says
	 * where the live rules are; each way of committing below moves them.
	 */
	t->set.rules_gen = b->live_gen;
	t->set.rule_maps = b->live_place.maps;
	t->set.nr_rules = (__u32)b->nr_live;
	t->set.flags = (t->set.flags & ~(SLUICE_L4_ON | SLUICE_L4_GEN)) | b->live_l4flags;
	if (t->l4_changed) {
		ret = l4_write(t, err, errlen);
		if (ret)
			return ret;
	}
	if (t->rules_changed && one_edit(t, &now, &was)) {
		ret = commit_in_place(t, now, was, err, errlen);
	} else if (!t->rules_changed && settings_only(t)) {
		ruletab_retire(t->h->cfg);
		flip_settings(t);
		ruletab_publish(t);
	} else {
		ret = commit_whole(t, err, errlen);
	}
	if (ret)
		return ret;
	t->rules_changed = false;
	t->l4_changed = false;
	/* One commit a transaction: what it started from is gone. */
	free(b->live_copy);
	b->live_copy = NULL;
	b->live = NULL;
	b->nr_live = 0;
	b->live_known = false;
	return 0;
}
