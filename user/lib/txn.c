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
 * sluice_read_policies()).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>

#include "libsluice.h"

#define fail sluice_err

static void wait_grace_period(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return;
	/* nohz_full kernels refuse MEMBARRIER_CMD_GLOBAL; an XDP program runs
	 * for microseconds, so a long sleep is a grace period in practice. */
	pr_debug("membarrier: %s; sleeping instead\n", strerror(errno));
	usleep(200 * 1000);
}

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
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		struct sluice_txn_rule *r = realloc(w->rules, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		w->rules = r;
		w->cap = cap;
	}
	memcpy(&w->rules[w->n].rule, val, sizeof(struct sluice_rule));
	w->rules[w->n].key = *k;
	w->rules[w->n].key.gen = 0;
	w->n++;
	return 0;
}

/* Read every rule of generation gen into a malloc()ed array. */
static int read_rules(int fd, __u8 gen, struct sluice_txn_rule **out, size_t *nr)
{
	struct rules_walk w = { .gen = gen };
	long ret = sluice_map_walk(fd, collect_rule, &w);

	if (ret < 0) {
		free(w.rules);
		return (int)ret;
	}
	*out = w.rules;
	*nr = w.n;
	return 0;
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
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 64;
		struct sluice_rule_key *n = realloc(g->keys, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		g->keys = n;
		g->cap = cap;
	}
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

int sluice_txn_begin(struct sluice_handle *h, struct sluice_txn *t, char *err, size_t errlen)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->h = h;
	if (h->lock_fd < 0) {
		h->lock_fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (h->lock_fd < 0)
			return fail(err, errlen, -errno, "Couldn't open %s: %s", h->dir,
				    strerror(errno));
	}
	ret = sluice_lock_fd(h->lock_fd, h->dir, err, errlen);
	if (ret)
		return ret;
	t->set = h->cfg->settings[__atomic_load_n(&h->cfg->active, __ATOMIC_ACQUIRE) & 1];
	ret = read_rules(h->rules_fd, t->set.rules_gen, &t->rules, &t->nr_rules);
	if (ret) {
		flock(h->lock_fd, LOCK_UN);
		return fail(err, errlen, ret, "Couldn't read the rules of %s: %s", h->ifname,
			    strerror(-ret));
	}
	return 0;
}

void sluice_txn_end(struct sluice_txn *t)
{
	free(t->rules);
	t->rules = NULL;
	t->nr_rules = 0;
	if (t->h && t->h->lock_fd >= 0)
		flock(t->h->lock_fd, LOCK_UN);
	t->h = NULL;
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

struct sluice_txn_rule *sluice_txn_find_rule(struct sluice_txn *t, const struct sluice_cidr *c)
{
	size_t i;

	for (i = 0; i < t->nr_rules; i++) {
		struct sluice_rule *r = &t->rules[i].rule;

		if (r->family == c->family && r->prefixlen == c->prefixlen &&
		    !memcmp(t->rules[i].key.addr, c->addr, c->family == 4 ? 4 : 16))
			return &t->rules[i];
	}
	return NULL;
}

static __u32 free_slot(const struct sluice_txn *t)
{
	static unsigned char used[SLUICE_MAX_RULES];
	__u32 s;
	size_t i;

	memset(used, 0, sizeof(used));
	for (i = 0; i < t->nr_rules; i++)
		used[SLUICE_TAG_SLOT(t->rules[i].rule.policy.tag) & (SLUICE_MAX_RULES - 1)] = 1;
	for (s = 1; s < SLUICE_MAX_RULES; s++)
		if (!used[s])
			return s;
	return 0;
}


int sluice_txn_put_rule(struct sluice_txn *t, const struct sluice_cidr *c,
			const struct sluice_policy *p, char *err, size_t errlen)
{
	struct sluice_txn_rule *r = sluice_txn_find_rule(t, c);
	struct sluice_policy np = *p;
	int ret;

	ret = sluice_policy_check(&np, err, errlen);
	if (ret)
		return ret;
	if (r) {
		np.tag = r->rule.policy.tag;
		if (!sluice_same_state_format(&r->rule.policy, &np))
			sluice_txn_retag(t, &np);
	} else {
		__u32 slot = free_slot(t);
		struct sluice_txn_rule *n;

		if (!slot)
			return fail(err, errlen, -ENOSPC, "too many rules: at most %d",
				    SLUICE_MAX_RULES - 1);
		n = realloc(t->rules, (t->nr_rules + 1) * sizeof(*n));
		if (!n)
			return fail(err, errlen, -ENOMEM, "out of memory");
		t->rules = n;
		r = &t->rules[t->nr_rules++];
		memset(r, 0, sizeof(*r));
		r->rule.family = c->family;
		r->rule.prefixlen = c->prefixlen;
		sluice_rule_key_init(&r->key, 0, c->family, c->addr, c->prefixlen);
		np.tag = 0;
		assign_tag(t, &np, slot);
	}
	r->rule.policy = np;
	t->rules_changed = true;
	return 0;
}

int sluice_txn_del_rule(struct sluice_txn *t, const struct sluice_cidr *c, char *err,
			size_t errlen)
{
	struct sluice_txn_rule *r = sluice_txn_find_rule(t, c);
	char buf[64];

	if (!r) {
		sluice_format_cidr(c, true, buf, sizeof(buf));
		return fail(err, errlen, -ENOENT, "there is no rule for %s: see 'sluicectl rule list'",
			    buf);
	}
	*r = t->rules[--t->nr_rules];
	t->rules_changed = true;
	return 0;
}

/* Tell lock-free readers that what they read may be changing. The fence
 * keeps the stores that follow from being seen before the new seq. */
static void bump_seq(struct sluice_config *cfg)
{
	__atomic_store_n(&cfg->seq, cfg->seq + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

int sluice_txn_commit(struct sluice_txn *t, char *err, size_t errlen)
{
	struct sluice_handle *h = t->h;
	struct sluice_config *cfg = h->cfg;
	__u32 active = __atomic_load_n(&cfg->active, __ATOMIC_ACQUIRE) & 1;
	__u8 old_gen = t->set.rules_gen, new_gen = old_gen;
	size_t i;
	int ret;

	ret = sluice_policy_check(&t->set.def, err, errlen);
	if (ret)
		return ret;
	if (t->rules_changed) {
		new_gen = !old_gen;
		/* Counters of new slots are cleared below: readers retry. */
		bump_seq(cfg);
		/* Leftovers of a writer that died mid-change are not live. */
		ret = clear_gen(h->rules_fd, new_gen);
		for (i = 0; !ret && i < t->nr_rules; i++) {
			struct sluice_txn_rule *r = &t->rules[i];
			struct sluice_rule live;
			__u32 slot = SLUICE_TAG_SLOT(r->rule.policy.tag);

			/* A rule new to this change starts its counters at 0. */
			r->key.gen = old_gen;
			if (bpf_map_lookup_elem(h->rules_fd, &r->key, &live) ||
			    SLUICE_TAG_SLOT(live.policy.tag) != slot)
				ret = sluice_clear_rstats(h, slot);
			r->key.gen = new_gen;
			if (!ret && bpf_map_update_elem(h->rules_fd, &r->key, &r->rule, BPF_ANY))
				ret = -errno;
		}
		if (ret) {
			clear_gen(h->rules_fd, new_gen);
			return fail(err, errlen, ret, "Couldn't write the rules of %s: %s; nothing "
				    "was changed", h->ifname, strerror(-ret));
		}
		t->set.rules_gen = new_gen;
		t->set.nr_rules = t->nr_rules;
	}

	cfg->settings[!active] = t->set;
	bump_seq(cfg);
	__atomic_store_n(&cfg->active, !active, __ATOMIC_RELEASE);
	wait_grace_period();

	/* The old half and the old rules change from here on. */
	bump_seq(cfg);
	if (t->rules_changed) {
		ret = clear_gen(h->rules_fd, old_gen);
		if (ret)
			pr_warn("warning: Couldn't clear the old rules of %s: %s (harmless: the "
				"next change clears them)\n", h->ifname, strerror(-ret));
	}
	/* Keep the idle half equal to the live one, so a reader of the pinned
	 * map (bpftool) sees the same settings in both. */
	cfg->settings[active] = t->set;
	t->rules_changed = false;
	return 0;
}

void sluice_rule_cidr(const struct sluice_txn_rule *r, struct sluice_cidr *c)
{
	memset(c, 0, sizeof(*c));
	c->family = r->rule.family;
	c->prefixlen = r->rule.prefixlen;
	memcpy(c->addr, r->key.addr, r->rule.family == 4 ? 4 : 16);
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

/* How often a reader tries again while writers keep changing the rules. */
#define READ_TRIES 100

int sluice_read_policies(struct sluice_handle *h, struct sluice_policies *pol, bool with_stats,
			 char *err, size_t errlen)
{
	int ret = 0, try;
	__u64 seq;
	size_t i;

	memset(pol, 0, sizeof(*pol));
	for (try = 0; try < READ_TRIES; try++) {
		sluice_free_policies(pol);
		sluice_read_settings(h, &pol->set, &seq);
		ret = read_rules(h->rules_fd, pol->set.rules_gen, &pol->rules, &pol->nr_rules);
		if (ret)
			return fail(err, errlen, ret, "Couldn't read the rules of %s: %s",
				    h->ifname, strerror(-ret));
		if (with_stats) {
			pol->rstats = calloc(pol->nr_rules + 1, sizeof(*pol->rstats));
			if (!pol->rstats) {
				sluice_free_policies(pol);
				return fail(err, errlen, -ENOMEM, "out of memory");
			}
		}
		for (i = 0; with_stats && i <= pol->nr_rules; i++) {
			const struct sluice_policy *p = i < pol->nr_rules ?
								&pol->rules[i].rule.policy :
								&pol->set.def;
			__u32 slot = SLUICE_TAG_SLOT(p->tag);

			ret = sluice_read_rstats(h, slot, &pol->rstats[i]);
			if (ret) {
				sluice_free_policies(pol);
				return fail(err, errlen, ret,
					    "Couldn't read the counters of policy slot %u of %s: "
					    "%s", slot, h->ifname, strerror(-ret));
			}
		}
		/* One whole version: nothing changed while we read it. */
		if (!sluice_settings_changed(h, seq) && pol->nr_rules == pol->set.nr_rules)
			break;
	}
	if (try == READ_TRIES) {
		sluice_free_policies(pol);
		return fail(err, errlen, -EAGAIN,
			    "the rules of %s kept changing while they were read (%d tries): try "
			    "again", h->ifname, READ_TRIES);
	}
	if (pol->nr_rules)
		qsort(pol->rules, pol->nr_rules, sizeof(*pol->rules), cmp_rules);
	return 0;
}

void sluice_free_policies(struct sluice_policies *pol)
{
	free(pol->rules);
	free(pol->rstats);
	pol->rules = NULL;
	pol->rstats = NULL;
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
