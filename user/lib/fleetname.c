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
 */
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

void sluice_fleet_names_refresh(struct sluice_fleet_names *t, struct sluice_handle *h)
{
	struct sluice_policies pol;
	__u64 seq;

	sluice_read_settings(h, &pol.set, &seq);
	if (t->read && seq == t->seq)
		return;
	if (sluice_read_policies(h, &pol, false, NULL, 0))
		return;
	sluice_fleet_names_set(t, pol.l4, pol.nr_l4);
	sluice_free_policies(&pol);
	/* The version read before the rules: if they changed meanwhile, the
	 * next call reads them again. */
	t->seq = seq;
	t->read = true;
}

void sluice_fleet_key_name(const struct sluice_fleet_names *t, const struct sluice_key *k, int lane,
			   char *buf, size_t len)
{
	struct sluice_cidr c = { .family = k->family, .prefixlen = k->prefixlen };
	const char *match = NULL;
	char text[INET6_ADDRSTRLEN + 8];
	__u32 slot = SLUICE_TAG_SLOT(k->tag);
	size_t i;

	for (i = 0; i < t->n && !match; i++)
		if (t->v[i].slot == slot)
			match = t->v[i].match;
	memcpy(c.addr, k->addr, 16);
	sluice_format_cidr(&c, true, text, sizeof(text));
	if (match)
		snprintf(buf, len, "%c:%s:%s", lane ? 'b' : 'p', match, text);
	else
		snprintf(buf, len, "%c:%s", lane ? 'b' : 'p', text);
}
