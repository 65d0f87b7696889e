// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The bookkeeping of a transaction's rules (txn.c, slots.c), on a config in
 * memory: the index by CIDR agrees with a plain search through thousands of
 * adds and deletes; counter slots are a rule's own up to SLUICE_OWN_SLOTS,
 * then shared by rules of one policy, never by rules of two; a new policy
 * still gets a slot past 5,000 rules; the limit names itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libsluice.h"
#include "../lib/scratch.h"
#include "../lib/tap.h"

static void cidr_of(unsigned int i, struct sluice_cidr *c)
{
	char buf[64];

	/* /32s of 198.18.0.0/16, every seventh a /28 of 198.19.0.0/16 */
	if (i % 7 == 6)
		snprintf(buf, sizeof(buf), "198.19.%u.%u/28", (i / 7 / 16) & 255,
			 (i / 7 % 16) * 16);
	else
		snprintf(buf, sizeof(buf), "198.18.%u.%u/32", (i >> 8) & 255, i & 255);
	sluice_parse_cidr(buf, c, NULL, 0);
}

static void policy(struct sluice_policy *p, __u8 action, unsigned int rate)
{
	char err[SLUICE_ERR_LEN];

	struct sluice_settings s;

	sluice_settings_init(&s);
	*p = s.def;
	p->action = action;
	if (rate)
		sluice_limit_set(&p->pkt, rate, SLUICE_NS_PER_SEC, 10, err, sizeof(err));
}

/* The rule of c by a plain search. */
static struct sluice_txn_rule *plain_find(struct sluice_txn *t, const struct sluice_cidr *c)
{
	size_t i;

	for (i = 0; i < t->nr_rules; i++) {
		struct sluice_cidr rc;

		sluice_rule_cidr(&t->rules[i], &rc);
		if (rc.family == c->family && rc.prefixlen == c->prefixlen &&
		    !memcmp(rc.addr, c->addr, 16))
			return &t->rules[i];
	}
	return NULL;
}

static void test_index(void)
{
	struct sluice_policy deny;
	struct scratch s;
	unsigned int i, bad = 0, ops = 0;
	char err[SLUICE_ERR_LEN];

	scratch_init(&s);
	policy(&deny, SLUICE_ACT_DENY, 0);
	srand(7);
	for (i = 0; i < 20000; i++) {
		struct sluice_cidr c;
		unsigned int k = (unsigned int)rand() % 3000;

		cidr_of(k, &c);
		if (rand() % 3)
			bad += sluice_txn_put_rule(&s.t, &c, &deny, err, sizeof(err)) != 0;
		else if (sluice_txn_find_rule(&s.t, &c))
			bad += sluice_txn_del_rule(&s.t, &c, err, sizeof(err)) != 0;
		ops++;
		if (i % 97 == 0) {
			unsigned int q;

			for (q = 0; q < 3000; q += 13) {
				cidr_of(q, &c);
				bad += sluice_txn_find_rule(&s.t, &c) != plain_find(&s.t, &c);
			}
		}
	}
	tap_ok(!bad && s.t.nr_rules > 1000,
	       "index: %u adds and deletes, the index finds what a plain search finds (%zu rules)",
	       ops, s.t.nr_rules);
	sluice_txn_end(&s.t);
}

static __u32 slot_of(const struct sluice_txn_rule *r)
{
	return SLUICE_TAG_SLOT(r->rule.policy.tag);
}

static void test_slots(void)
{
	struct sluice_policy deny, exempt, rate;
	unsigned char *seen = calloc(SLUICE_MAX_RULES, 1);
	__u32 *first = calloc(SLUICE_MAX_RULES, sizeof(*first));
	char err[SLUICE_ERR_LEN];
	unsigned int i, mixed = 0, own = 0, distinct = 0;
	struct sluice_cidr c;
	struct scratch s;
	int ret = 0;

	scratch_init(&s);
	policy(&deny, SLUICE_ACT_DENY, 0);
	policy(&exempt, SLUICE_ACT_EXEMPT, 0);
	for (i = 0; i < 5000 && !ret; i++) {
		cidr_of(i, &c);
		ret = sluice_txn_put_rule(&s.t, &c, i % 2 ? &deny : &exempt, err, sizeof(err));
	}
	tap_ok(!ret && s.t.nr_rules == 5000, "slots: 5,000 rules of two policies fit");
	for (i = 0; i < s.t.nr_rules; i++) {
		__u32 sl = slot_of(&s.t.rules[i]);

		if (!seen[sl]) {
			seen[sl] = 1;
			first[sl] = i;
			distinct++;
		} else if (!sluice_policy_same_but_tag(&s.t.rules[first[sl]].rule.policy,
						       &s.t.rules[i].rule.policy) ||
			   s.t.rules[first[sl]].rule.policy.tag != s.t.rules[i].rule.policy.tag) {
			mixed++;
		}
		if (i < SLUICE_OWN_SLOTS)
			own += seen[sl] && first[sl] == i;
	}
	tap_ok(own == SLUICE_OWN_SLOTS, "slots: the first %d rules have a slot of their own (%u)",
	       SLUICE_OWN_SLOTS, own);
	tap_ok(distinct == SLUICE_OWN_SLOTS, "slots: past them the rules share: %u slots in all",
	       distinct);
	tap_ok(!mixed, "slots: rules on one slot have one policy, tag included");

	/* A new policy still gets a slot of its own. */
	policy(&rate, SLUICE_ACT_LIMIT, 77);
	cidr_of(6000, &c);
	ret = sluice_txn_put_rule(&s.t, &c, &rate, err, sizeof(err));
	{
		struct sluice_txn_rule *r = sluice_txn_find_rule(&s.t, &c);

		tap_ok(!ret && r && !seen[slot_of(r)],
		       "slots: a rule of a new policy past 5,000 rules gets a free slot");
	}
	/* A rule leaves its shared slot when its policy changes. */
	cidr_of(4999, &c);
	{
		struct sluice_txn_rule *r = sluice_txn_find_rule(&s.t, &c);
		__u32 before = r ? slot_of(r) : 0;

		ret = sluice_txn_put_rule(&s.t, &c, &rate, err, sizeof(err));
		r = sluice_txn_find_rule(&s.t, &c);
		tap_ok(!ret && r && slot_of(r) != before &&
			       sluice_policy_same_but_tag(&r->rule.policy, &rate),
		       "slots: a shared rule given another policy moves off its slot");
	}
	/* Fill every slot with policies of their own: the next is refused. */
	for (i = 0, ret = 0; i < SLUICE_MAX_RULES && !ret; i++) {
		policy(&rate, SLUICE_ACT_LIMIT, 1000 + i);
		cidr_of(7000 + i, &c);
		ret = sluice_txn_put_rule(&s.t, &c, &rate, err, sizeof(err));
	}
	tap_ok(ret == -ENOSPC && strstr(err, "too many different policies") &&
		       strstr(err, "4095 counter slots"),
	       "slots: a policy past the 4,095 slots is refused, naming them");
	tap_diag("%s", err);
	sluice_txn_end(&s.t);
	free(seen);
	free(first);
}

int main(void)
{
	test_index();
	test_slots();
	return tap_done();
}
