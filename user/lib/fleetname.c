// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The name a fleet key has in Redis. A rule of a CIDR alone gives each
 * source one policy, so the limit's lane and the masked source name a key
 * ("p:198.18.0.7/32"), as they always have. With rules that match on the
 * transport header one source meets several policies (its SYNs one, its
 * UDP the default), and their keys must not share a name. A box knows a
 * key's policy by its tag, whose slot and generation are the box's own
 * (another box may put the same rule on another slot): so the name holds
 * what is the same on every box given the same rules, the rule's match,
 * written canonically from struct sluice_match.
 *
 * The match alone is enough, without the rule's CIDR: a key is masked to a
 * prefix no shorter than its rule's CIDR, so every source of the key is in
 * the CIDR of each rule that could have made it; two rules of one match
 * both holding a source give it to one of them (the longer prefix), so one
 * source and one match name one rule.
 *
 * A policy's second key (--also-rate) charges a source's prefix, shorter
 * than the policy's own keys and maybe than its rule's CIDR, to a key of
 * the prefix tagged SLUICE_ALSO_TAG() of the policy's tag. Two policies
 * whose second keys cover one prefix (the default's /24 and that of a rule
 * 198.18.0.0/28 inside it) have two buckets of it on a box, by their tags;
 * and two rules of one match may both have sources in it. So such a key's
 * name says which policy, the same way on every box: nothing for the
 * default ("a:198.18.0.0/24"), the rule's CIDR for a rule of a CIDR alone
 * ("a:198.18.0.0/24@198.18.0.0/28"), its match and its CIDR for a rule on
 * L4 ("a:198.18.0.0/24@tcp,dport=443@198.18.0.0/15"). No two are alike: 'a'
 * is no own key's lane ('p', 'b'); the prefix holds no '@', so the first
 * one ends it; a match holds no '@' either, and a rule's text holds '/'
 * (its CIDR) but when it is too long for SLUICE_FLEET_MATCH_NAME - 1
 * characters: then "r=" and the FNV-1a hash of it, which holds none. So
 * the name fits SLUICE_FLEET_KEY_NAME as an own key's does. Rules that share
 * a slot share their second keys' buckets on the box, as their own keys':
 * the first in evaluation order of those on L4, else the first in CIDR
 * order (rule list's), names them.
 *
 * Under a Redis Cluster a name goes whole into the CRC16 that picks its
 * group (redis_cluster_parse.c), after the fleet's prefix, whose hash tag
 * comes first: a second key's name is hashed as any other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "libsluice.h"
#include "fleetname.h"

static __u64 fnv1a(const char *s)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

void sluice_fleet_match_name(const struct sluice_match *m, char *buf, size_t len)
{
	/* sluice_match_text(): "--opt value" pieces, in a fixed order, each
	 * value without a space or '=' */
	char text[320], out[320], *tok, *save = NULL;
	size_t at = 0;

	sluice_match_text(m, text, sizeof(text));
	out[0] = '\0';
	for (tok = strtok_r(text, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		const char *opt = tok + 2, *val = strtok_r(NULL, " ", &save);

		if (!val)
			break;
		/* "tcp", but "proto=47": a bare number could read as the
		 * start of an IPv6 address */
		if (!strcmp(opt, "proto") && sluice_proto_name(m->proto))
			at += (size_t)snprintf(out + at, sizeof(out) - at, "%s", val);
		else
			at += (size_t)snprintf(out + at, sizeof(out) - at, "%s%s=%s", at ? "," : "",
					       opt, val);
		if (at >= sizeof(out))
			break;
	}
	if (at >= SLUICE_FLEET_MATCH_NAME)
		snprintf(buf, len, "m=%016llx", (unsigned long long)fnv1a(out));
	else
		snprintf(buf, len, "%s", out);
}

void sluice_fleet_names_set(struct sluice_fleet_names *t, const struct sluice_txn_l4 *l4, size_t nr)
{
	size_t i, j;

	t->n = 0;
	for (i = 0; i < nr && t->n < SLUICE_L4_RULES_MAX; i++) {
		__u32 slot = SLUICE_TAG_SLOT(l4[i].policy.tag);

		/* Past SLUICE_OWN_SLOTS rules of one policy share a slot, and
		 * so their keys' buckets on this box: the first in evaluation
		 * order names them. */
		for (j = 0; j < t->n && t->v[j].slot != slot; j++)
			;
		if (j < t->n)
			continue;
		t->v[t->n].slot = slot;
		sluice_fleet_match_name(&l4[i].r.m, t->v[t->n].match, sizeof(t->v[t->n].match));
		t->n++;
	}
}

/* A policy whose second key the fleet shares. */
static bool fleet_also(const struct sluice_policy *p)
{
	__u32 id = SLUICE_POLICY_ALSO(p);

	return (p->flags & SLUICE_POLICY_FLEET) && id && id < SLUICE_ALSO_IDS;
}

/* The rule's text as a second key's name holds it (see the top). */
static void rule_text(const char *match, const struct sluice_cidr *c, char *buf, size_t len)
{
	char cidr[INET6_ADDRSTRLEN + 8], full[SLUICE_FLEET_MATCH_NAME + sizeof(cidr) + 2];

	sluice_format_cidr(c, true, cidr, sizeof(cidr));
	snprintf(full, sizeof(full), "%s%s%s", match ? match : "", match ? "@" : "", cidr);
	if (strlen(full) >= SLUICE_FLEET_MATCH_NAME)
		snprintf(buf, len, "r=%016llx", (unsigned long long)fnv1a(full));
	else
		snprintf(buf, len, "%s", full);
}

static int cmp_slot(const void *x, const void *y)
{
	const struct sluice_fleet_also_ent *a = x, *b = y;

	return a->slot < b->slot ? -1 : a->slot > b->slot;
}

int sluice_fleet_names_set_also(struct sluice_fleet_names *t, const struct sluice_policies *pol)
{
	struct sluice_fleet_also_ent *v = NULL;
	unsigned char seen[SLUICE_MAX_RULES] = { 0 };
	size_t i, n = 0, cap = pol->nr_l4 + pol->nr_rules;
	char match[SLUICE_FLEET_MATCH_NAME];
	struct sluice_cidr c;

	if (cap > SLUICE_MAX_RULES)
		cap = SLUICE_MAX_RULES;
	if (cap && !(v = calloc(cap, sizeof(*v))))
		return -ENOMEM;
	/* The rules on L4 first (evaluation order), as their own keys' names:
	 * a slot one of them has is named by the first of them. */
	for (i = 0; i < pol->nr_l4 && n < cap; i++) {
		const struct sluice_txn_l4 *r = &pol->l4[i];
		__u32 slot = SLUICE_TAG_SLOT(r->policy.tag) & (SLUICE_MAX_RULES - 1);

		if (!fleet_also(&r->policy) || seen[slot] || !slot)
			continue;
		seen[slot] = 1;
		memset(&c, 0, sizeof(c));
		c.family = r->r.family;
		c.prefixlen = r->r.prefixlen;
		memcpy(c.addr, r->r.addr, sizeof(c.addr));
		sluice_fleet_match_name(&r->r.m, match, sizeof(match));
		v[n].slot = slot;
		rule_text(match, &c, v[n].rule, sizeof(v[n].rule));
		n++;
	}
	/* Then the rules of a CIDR alone, in CIDR order (sluice_read_policies()). */
	for (i = 0; i < pol->nr_rules && n < cap; i++) {
		const struct sluice_policy *p = &pol->rules[i].rule.policy;
		__u32 slot = SLUICE_TAG_SLOT(p->tag) & (SLUICE_MAX_RULES - 1);

		if (!fleet_also(p) || seen[slot] || !slot)
			continue;
		seen[slot] = 1;
		sluice_rule_cidr(&pol->rules[i], &c);
		v[n].slot = slot;
		rule_text(NULL, &c, v[n].rule, sizeof(v[n].rule));
		n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_slot);
	free(t->also);
	t->also = v;
	t->n_also = n;
	return 0;
}

void sluice_fleet_names_refresh(struct sluice_fleet_names *t, struct sluice_handle *h)
{
	struct sluice_policies pol;
	__u64 seq;
	int ret;

	sluice_read_settings(h, &pol.set, &seq);
	if (t->read && seq == t->seq)
		return;
	if (sluice_read_policies(h, &pol, false, NULL, 0))
		return;
	sluice_fleet_names_set(t, pol.l4, pol.nr_l4);
	ret = sluice_fleet_names_set_also(t, &pol);
	sluice_free_policies(&pol);
	if (ret)
		return;
	/* The version read before the rules: if they changed meanwhile, the
	 * next call reads them again. */
	t->seq = seq;
	t->read = true;
}

void sluice_fleet_names_free(struct sluice_fleet_names *t)
{
	free(t->also);
	t->also = NULL;
	t->n_also = 0;
}

/*
 * A second key's key: see the top. One of a slot no rule with a fleet-wide
 * second key has now (its rule went or changed since the key was
 * collected) is named by this box's slot ("@s=SLOT", no rule's text): a
 * name of this box alone, never another policy's.
 */
static void also_name(const struct sluice_fleet_names *t, const struct sluice_key *k, int lane,
		      const char *prefix, char *buf, size_t len)
{
	struct sluice_fleet_also_ent want = { .slot = SLUICE_TAG_SLOT(k->tag) };
	const struct sluice_fleet_also_ent *e;
	/* A second key counts packets only: the datapath records no bytes
	 * of it, and 'A' would name them. */
	char lc = lane ? 'A' : 'a';

	if (!want.slot) {
		snprintf(buf, len, "%c:%s", lc, prefix);
		return;
	}
	e = t->n_also ? bsearch(&want, t->also, t->n_also, sizeof(want), cmp_slot) : NULL;
	if (e)
		snprintf(buf, len, "%c:%s@%s", lc, prefix, e->rule);
	else
		snprintf(buf, len, "%c:%s@s=%u", lc, prefix, want.slot);
}

void sluice_fleet_key_name(const struct sluice_fleet_names *t, const struct sluice_key *k, int lane,
			   char *buf, size_t len)
{
	struct sluice_cidr c = { .family = k->family, .prefixlen = k->prefixlen };
	const char *match = NULL;
	char text[INET6_ADDRSTRLEN + 8];
	__u32 slot = SLUICE_TAG_SLOT(k->tag);
	size_t i;

	memcpy(c.addr, k->addr, 16);
	sluice_format_cidr(&c, true, text, sizeof(text));
	if (SLUICE_TAG_IS_ALSO(k->tag)) {
		also_name(t, k, lane, text, buf, len);
		return;
	}
	for (i = 0; i < t->n && !match; i++)
		if (t->v[i].slot == slot)
			match = t->v[i].match;
	if (match)
		snprintf(buf, len, "%c:%s:%s", lane ? 'b' : 'p', match, text);
	else
		snprintf(buf, len, "%c:%s", lane ? 'b' : 'p', text);
}
