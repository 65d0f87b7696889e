// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The name of a fleet key in Redis (user/lib/fleetname.c):
 * - a key of the default policy or of a rule of a CIDR alone keeps the name
 *   it always had ("p:198.18.0.7/32");
 * - a key of a rule that matches on the transport header names the rule's
 *   match, and only that: two boxes that put the same rules on other slots
 *   and generations name its keys alike;
 * - two matches one source may meet name two keys; a match written two
 *   ways is one name; a long match is a hash that still fits;
 * - no match's name reads as a CIDR (a bare protocol number would);
 * - a key of a policy's second key (--also-rate) names its policy by what
 *   is the same on every box (nothing for the default, the rule's CIDR,
 *   a rule on L4's match and CIDR): one name for one policy's prefix on
 *   every box, and apart from every own key's name, from the same prefix
 *   of another policy, and from the same prefix of two rules of one match;
 *   it fits, and holds no brace (Redis Cluster hashes the whole name).
 */
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "libsluice.h"
#include "fleetname.h"
#include "../lib/tap.h"

/* Read "OPT VAL OPT VAL ..." into *m; 0 or -EINVAL. */
static int match_of(const char *words, struct sluice_match *m)
{
	struct sluice_match_in in;
	char buf[256], err[SLUICE_ERR_LEN], *save = NULL, *opt, *val;
	int ret = 0;

	sluice_match_in_init(&in);
	snprintf(buf, sizeof(buf), "%s", words);
	for (opt = strtok_r(buf, " ", &save); opt && !ret; opt = strtok_r(NULL, " ", &save)) {
		val = strtok_r(NULL, " ", &save);
		ret = sluice_match_opt(&in, opt, val ? val : "", err, sizeof(err));
	}
	if (!ret)
		ret = sluice_match_finish(&in, err, sizeof(err));
	if (ret)
		tap_diag("  %s: %s", words, err);
	*m = in.m;
	return ret;
}

/* An L4 rule of match `words` on slot, generation gen. */
static void l4_rule(struct sluice_txn_l4 *r, const char *words, __u32 slot, __u32 gen)
{
	memset(r, 0, sizeof(*r));
	if (match_of(words, &r->r.m))
		tap_ok(false, "match %s reads", words);
	r->r.family = 4;
	r->r.prefixlen = 15;
	inet_pton(AF_INET, "198.18.0.0", r->r.addr);
	r->policy.tag = SLUICE_TAG(slot, 0, gen);
	r->policy.flags = SLUICE_POLICY_FLEET;
}

static struct sluice_key key4(const char *addr, __u32 tag)
{
	struct sluice_key k = { .tag = tag, .family = 4, .prefixlen = 32 };

	inet_pton(AF_INET, addr, k.addr);
	return k;
}

static void name(const struct sluice_fleet_names *t, const struct sluice_key *k, int lane,
		 char *buf)
{
	sluice_fleet_key_name(t, k, lane, buf, SLUICE_FLEET_KEY_NAME);
}

#define NAME_IS(got, want, what)                                          \
	do {                                                              \
		if (!tap_ok(!strcmp(got, want), "%s", what))              \
			tap_diag("  got \"%s\", want \"%s\"", got, want); \
	} while (0)

/* The same rules on two boxes, on other slots and generations. */
static void test_boxes(void)
{
	struct sluice_txn_l4 a[2], b[3];
	struct sluice_fleet_names ta = { 0 }, tb = { 0 };
	struct sluice_key k;
	char x[SLUICE_FLEET_KEY_NAME], y[SLUICE_FLEET_KEY_NAME];

	/* box A: SYN rule on slot 3, DNS rule on slot 4 */
	l4_rule(&a[0], "--proto tcp --tcp-flags syn", 3, 1);
	l4_rule(&a[1], "--proto udp --dport 53", 4, 1);
	sluice_fleet_names_set(&ta, a, 2);
	/* box B: the same two, another rule first, other slots and gens */
	l4_rule(&b[0], "--proto tcp --dport 443", 9, 7);
	l4_rule(&b[1], "--proto tcp --tcp-flags syn", 12, 300);
	l4_rule(&b[2], "--proto udp --dport 53", 2, 5);
	sluice_fleet_names_set(&tb, b, 3);
	TAP_EQ(ta.n, 2, "box A: two rules named");
	TAP_EQ(tb.n, 3, "box B: three rules named");

	k = key4("198.18.0.7", SLUICE_TAG(3, 0, 1));
	name(&ta, &k, 0, x);
	k = key4("198.18.0.7", SLUICE_TAG(12, 0, 300));
	name(&tb, &k, 0, y);
	NAME_IS(x, "p:tcp,tcp-flags=syn:198.18.0.7/32", "the SYN rule's key, by its match");
	NAME_IS(y, x, "the SYN rule's key: one name on slot 3 and on slot 12");

	k = key4("198.18.0.7", SLUICE_TAG(4, 0, 1));
	name(&ta, &k, 1, x);
	k = key4("198.18.0.7", SLUICE_TAG(2, 0, 5));
	name(&tb, &k, 1, y);
	NAME_IS(x, "b:udp,dport=53:198.18.0.7/32", "the DNS rule's byte lane");
	NAME_IS(y, x, "the DNS rule's key: one name on both boxes");

	/* The same source, its SYNs and its DNS: two keys. */
	k = key4("198.18.0.7", SLUICE_TAG(3, 0, 1));
	name(&ta, &k, 0, x);
	k = key4("198.18.0.7", SLUICE_TAG(4, 0, 1));
	name(&ta, &k, 0, y);
	TAP_TRUE(strcmp(x, y), "one source, two rules: two names (%s, %s)", x, y);

	/* A new generation of the same rule on the same slot: same name. */
	k = key4("198.18.0.7", SLUICE_TAG(3, 2, 77));
	name(&ta, &k, 0, y);
	k = key4("198.18.0.7", SLUICE_TAG(3, 0, 1));
	name(&ta, &k, 0, x);
	NAME_IS(y, x, "another algorithm or generation on the slot: the rule's name");
}

/* The default and rules of a CIDR alone: the names of before. */
static void test_unchanged(void)
{
	struct sluice_txn_l4 a[1];
	struct sluice_fleet_names none = { 0 }, t = { 0 };
	struct sluice_key k;
	char x[SLUICE_FLEET_KEY_NAME];

	k = key4("198.18.0.7", SLUICE_TAG(0, 0, 3));
	name(&none, &k, 0, x);
	NAME_IS(x, "p:198.18.0.7/32", "the default policy, no rule on L4: as before");
	k = key4("198.18.8.0", SLUICE_TAG(5, 1, 2));
	k.prefixlen = 24;
	name(&none, &k, 1, x);
	NAME_IS(x, "b:198.18.8.0/24", "a rule of a CIDR alone, a /24 key: as before");

	l4_rule(&a[0], "--proto tcp --tcp-flags syn", 6, 1);
	sluice_fleet_names_set(&t, a, 1);
	k = key4("198.18.0.7", SLUICE_TAG(0, 0, 3));
	name(&t, &k, 0, x);
	NAME_IS(x, "p:198.18.0.7/32", "the default beside a rule on L4: as before");
	k = key4("198.18.0.7", SLUICE_TAG(5, 0, 3));
	name(&t, &k, 0, x);
	NAME_IS(x, "p:198.18.0.7/32", "a CIDR rule's slot beside a rule on L4: as before");

	k = (struct sluice_key){ .tag = SLUICE_TAG(0, 0, 1), .family = 6, .prefixlen = 64 };
	inet_pton(AF_INET6, "2001:2::", k.addr);
	name(&t, &k, 0, x);
	NAME_IS(x, "p:2001:2::/64", "an IPv6 key of the default: as before");
	k.tag = SLUICE_TAG(6, 0, 1);
	name(&t, &k, 0, x);
	NAME_IS(x, "p:tcp,tcp-flags=syn:2001:2::/64", "an IPv6 key of the rule on L4");
}

static void test_matches(void)
{
	static const char *const distinct[] = {
		"--proto tcp --tcp-flags syn",
		"--proto tcp",
		"--proto udp",
		"--proto tcp --dport 443",
		"--proto tcp --dport 443-444",
		"--proto tcp --sport 443",
		"--proto udp --sport 53",
		"--proto tcp --tcp-flags syn,ack/syn,ack",
		"--proto tcp --tcp-flags syn --dport 443",
		"--proto icmp --icmp-type echo-request",
		"--proto icmp --icmp-type 8/0",
		"--proto 47",
		"--proto 48",
		"--dst 198.18.0.2",
		"--dst 198.18.0.0/24",
		"--proto udp --dport 53 --dst 198.18.0.2",
		"--proto udplite --sport 1000-65535 --dport 1000-65535",
		"--proto tcp --sport 1000-65535 --dport 1000-65535 --tcp-flags fin,syn,rst/syn",
		"--proto tcp --sport 1000-65535 --dport 1000-65535 --tcp-flags fin,syn,rst/fin",
	};
	const size_t n = sizeof(distinct) / sizeof(distinct[0]);
	char names[sizeof(distinct) / sizeof(distinct[0])][SLUICE_FLEET_MATCH_NAME];
	struct sluice_match m, m2;
	char x[SLUICE_FLEET_MATCH_NAME], y[SLUICE_FLEET_MATCH_NAME];
	struct sluice_cidr c;
	size_t i, j, dup = 0, cidr = 0, longest = 0;

	for (i = 0; i < n; i++) {
		memset(names[i], 0, sizeof(names[i]));
		if (match_of(distinct[i], &m))
			continue;
		sluice_fleet_match_name(&m, names[i], sizeof(names[i]));
		tap_diag("  %-75s %s", distinct[i], names[i]);
		if (strlen(names[i]) > longest)
			longest = strlen(names[i]);
		if (!sluice_parse_cidr(names[i], &c, NULL, 0))
			cidr++;
		for (j = 0; j < i; j++)
			dup += names[j][0] && !strcmp(names[i], names[j]);
	}
	TAP_EQ(dup, 0, "%zu different matches, %zu different names", n, n);
	TAP_EQ(cidr, 0, "no match's name reads as a CIDR");
	TAP_TRUE(longest < SLUICE_FLEET_MATCH_NAME, "every name fits (longest %zu)", longest);

	match_of("--proto 47", &m);
	sluice_fleet_match_name(&m, x, sizeof(x));
	NAME_IS(x, "proto=47", "a protocol without a name: proto=47, not a bare number");
	match_of("--proto tcp --dport 1000-65535 --sport 1000-65535 --tcp-flags fin,syn,rst/syn",
		 &m);
	sluice_fleet_match_name(&m, x, sizeof(x));
	TAP_TRUE(!strncmp(x, "m=", 2) && strlen(x) == 18, "a long match: its hash (%s)", x);

	/* The same match written two ways: one name. */
	match_of("--tcp-flags syn --proto tcp --dport 443", &m);
	match_of("--proto tcp --dport 443-443 --tcp-flags ack,syn/syn", &m2);
	sluice_fleet_match_name(&m, x, sizeof(x));
	sluice_fleet_match_name(&m2, y, sizeof(y));
	NAME_IS(x, "tcp,dport=443,tcp-flags=syn", "a match's name is canonical");
	NAME_IS(y, x, "the same match written another way: the same name");
}

/* Rules of one policy sharing a slot (past SLUICE_OWN_SLOTS): the first in
 * evaluation order names them. */
static void test_shared_slot(void)
{
	struct sluice_txn_l4 a[2];
	struct sluice_fleet_names t = { 0 };
	struct sluice_key k = key4("198.18.0.7", SLUICE_TAG(8, 0, 1));
	char x[SLUICE_FLEET_KEY_NAME];

	l4_rule(&a[0], "--proto tcp --dport 443", 8, 1);
	l4_rule(&a[1], "--proto tcp --dport 80", 8, 1);
	sluice_fleet_names_set(&t, a, 2);
	TAP_EQ(t.n, 1, "two rules on one slot: one entry");
	name(&t, &k, 0, x);
	NAME_IS(x, "p:tcp,dport=443:198.18.0.7/32", "the first in evaluation order names it");
}

/* ---- second keys ---- */

#define ALSO_ID(id) ((__u8)((id) << SLUICE_POLICY_ALSO_SHIFT))

/* A fleet policy of tag (slot, gen) with second key id (0: none). */
static void also_policy(struct sluice_policy *p, __u32 slot, __u32 gen, __u32 id)
{
	memset(p, 0, sizeof(*p));
	p->tag = SLUICE_TAG(slot, 0, gen);
	p->flags = SLUICE_POLICY_FLEET | ALSO_ID(id);
	p->prefix4 = 32;
	p->prefix6 = 64;
}

/* A rule of CIDR text on slot, generation gen, second key id. */
static void cidr_rule(struct sluice_txn_rule *r, const char *cidr, __u32 slot, __u32 gen, __u32 id)
{
	struct sluice_cidr c;

	memset(r, 0, sizeof(*r));
	if (sluice_parse_cidr(cidr, &c, NULL, 0))
		tap_ok(false, "CIDR %s reads", cidr);
	r->rule.family = c.family;
	r->rule.prefixlen = c.prefixlen;
	r->key.family = c.family;
	memcpy(r->key.addr, c.addr, 16);
	also_policy(&r->rule.policy, slot, gen, id);
}

/* The table of pol, L4 rules and second keys, as the agent makes it. */
static void names_of(struct sluice_fleet_names *t, const struct sluice_policies *pol)
{
	sluice_fleet_names_set(t, pol->l4, pol->nr_l4);
	if (sluice_fleet_names_set_also(t, pol))
		tap_ok(false, "the second keys' table is made");
}

/* The key of prefix text (ADDR/LEN) under tag's second key. */
static struct sluice_key also_key(const char *prefix, __u32 tag)
{
	struct sluice_key k = { .tag = SLUICE_ALSO_TAG(tag) };
	struct sluice_cidr c;

	if (sluice_parse_cidr(prefix, &c, NULL, 0))
		tap_ok(false, "prefix %s reads", prefix);
	k.family = c.family;
	k.prefixlen = c.prefixlen;
	memcpy(k.addr, c.addr, 16);
	return k;
}

/*
 * Two boxes with the same policies: the default with a second key, a rule
 * 198.18.0.0/28 with one, a rule on L4 (tcp dport 443, 198.18.0.0/15) with
 * one, a rule of the same match on 198.18.0.16/28 with one; box B has them
 * on other slots and generations, and a rule of its own first.
 */
struct also_box {
	struct sluice_policies pol;
	struct sluice_txn_rule rules[3];
	struct sluice_txn_l4 l4[3];
	struct sluice_fleet_names t;
};

static void also_box(struct also_box *b, const __u32 *slot, __u32 gen, bool extra)
{
	size_t i;

	memset(b, 0, sizeof(*b));
	also_policy(&b->pol.set.def, 0, gen, 1);
	/* CIDR order, as sluice_read_policies() sorts them */
	if (extra)
		cidr_rule(&b->rules[b->pol.nr_rules++], "198.18.0.0/27", slot[4], gen, 0);
	cidr_rule(&b->rules[b->pol.nr_rules++], "198.18.0.0/28", slot[0], gen, 2);
	b->pol.rules = b->rules;
	b->pol.l4 = b->l4;
	if (extra)
		l4_rule(&b->l4[b->pol.nr_l4++], "--proto udp --dport 53", slot[5], gen);
	l4_rule(&b->l4[b->pol.nr_l4++], "--proto tcp --dport 443", slot[1], gen);
	l4_rule(&b->l4[b->pol.nr_l4++], "--proto tcp --dport 443", slot[2], gen);
	b->l4[b->pol.nr_l4 - 1].r.prefixlen = 28;
	inet_pton(AF_INET, "198.18.0.16", b->l4[b->pol.nr_l4 - 1].r.addr);
	for (i = b->pol.nr_l4 - 2; i < b->pol.nr_l4; i++)
		b->l4[i].policy.flags |= ALSO_ID(3);
	names_of(&b->t, &b->pol);
}

static void test_also(void)
{
	static const __u32 slot_a[] = { 3, 4, 5, 0, 0, 0 }, slot_b[] = { 12, 9, 2, 0, 7, 8 };
	struct also_box *a = calloc(2, sizeof(*a)), *b = a + 1;
	struct sluice_key k;
	char y[SLUICE_FLEET_KEY_NAME], own[SLUICE_FLEET_KEY_NAME];
	char def[SLUICE_FLEET_KEY_NAME], rule[SLUICE_FLEET_KEY_NAME], l4a[SLUICE_FLEET_KEY_NAME],
		l4b[SLUICE_FLEET_KEY_NAME];

	if (!tap_ok(a != NULL, "two boxes' tables"))
		return;
	also_box(a, slot_a, 1, false);
	also_box(b, slot_b, 40, true);
	TAP_EQ(a->t.n_also, 3, "box A: three rules with a fleet-wide second key");
	TAP_EQ(b->t.n_also, 3, "box B: the same three (its own rules have none)");

	/* one name a policy and prefix, on both boxes */
	k = also_key("198.18.0.0/24", SLUICE_TAG(0, 0, 1));
	name(&a->t, &k, 0, def);
	k = also_key("198.18.0.0/24", SLUICE_TAG(0, 0, 40));
	name(&b->t, &k, 0, y);
	NAME_IS(def, "a:198.18.0.0/24", "the default's second key: 'a' and the prefix");
	NAME_IS(y, def, "the default's second key: one name on both boxes");

	k = also_key("198.18.0.0/24", SLUICE_TAG(3, 0, 1));
	name(&a->t, &k, 0, rule);
	k = also_key("198.18.0.0/24", SLUICE_TAG(12, 0, 40));
	name(&b->t, &k, 0, y);
	NAME_IS(rule, "a:198.18.0.0/24@198.18.0.0/28", "a CIDR rule's second key: and its CIDR");
	NAME_IS(y, rule, "a CIDR rule's second key: one name on slot 3 and on slot 12");

	k = also_key("198.18.0.0/24", SLUICE_TAG(4, 0, 1));
	name(&a->t, &k, 0, l4a);
	k = also_key("198.18.0.0/24", SLUICE_TAG(9, 0, 40));
	name(&b->t, &k, 0, y);
	NAME_IS(l4a, "a:198.18.0.0/24@tcp,dport=443@198.18.0.0/15",
		"a rule on L4's second key: its match and its CIDR");
	NAME_IS(y, l4a, "a rule on L4's second key: one name on both boxes");
	k = also_key("198.18.0.0/24", SLUICE_TAG(5, 0, 1));
	name(&a->t, &k, 0, l4b);
	k = also_key("198.18.0.0/24", SLUICE_TAG(2, 0, 40));
	name(&b->t, &k, 0, y);
	NAME_IS(l4b, "a:198.18.0.0/24@tcp,dport=443@198.18.0.16/28",
		"the same match on 198.18.0.16/28: its own CIDR");
	NAME_IS(y, l4b, "... one name on both boxes");

	/* apart from each other and from every own key's name */
	TAP_TRUE(strcmp(def, rule) && strcmp(def, l4a) && strcmp(rule, l4a) && strcmp(l4a, l4b),
		 "one /24, four policies' second keys: four names");
	k = key4("198.18.0.0", SLUICE_TAG(0, 0, 1));
	k.prefixlen = 24;
	name(&a->t, &k, 0, own);
	TAP_TRUE(strcmp(own, def) && strcmp(own, rule),
		 "a policy keyed by /24 (%s) is no second key's /24", own);
	k.tag = SLUICE_TAG(4, 0, 1);
	name(&a->t, &k, 0, own);
	TAP_TRUE(strcmp(own, l4a), "nor is a rule on L4's own /24 (%s)", own);

	/* a generation or algorithm of its own on the slot: the same name */
	k = also_key("198.18.0.0/24", SLUICE_TAG(3, 1, 77));
	name(&a->t, &k, 0, y);
	NAME_IS(y, rule, "another generation of the rule on its slot: the rule's name");
	/* the byte lane, which a second key never has, is no packet lane's */
	name(&a->t, &k, 1, y);
	TAP_TRUE(y[0] == 'A' && strcmp(y + 1, rule + 1) == 0, "a byte lane would be 'A' (%s)", y);
	/* a slot no rule with a second key has (the rule went): this box's */
	k = also_key("198.18.0.0/24", SLUICE_TAG(33, 0, 1));
	name(&a->t, &k, 0, y);
	NAME_IS(y, "a:198.18.0.0/24@s=33", "a slot of no such rule: named by the box's slot");
	free(a);
}

/* Rules of one policy sharing a slot: the first in CIDR order names their
 * second keys; a rule too long to spell is a hash, and the longest fits. */
static void test_also_long(void)
{
	struct sluice_txn_rule r[2];
	struct sluice_txn_l4 l4[2];
	struct sluice_policies pol;
	struct sluice_fleet_names t = { 0 };
	struct sluice_key k;
	char x[SLUICE_FLEET_KEY_NAME], y[SLUICE_FLEET_KEY_NAME], big[256];

	memset(&pol, 0, sizeof(pol));
	cidr_rule(&r[0], "198.18.0.0/28", 8, 1, 1);
	cidr_rule(&r[1], "198.18.0.16/28", 8, 1, 1);
	pol.rules = r;
	pol.nr_rules = 2;
	names_of(&t, &pol);
	TAP_EQ(t.n_also, 1, "two CIDR rules on one slot: one entry");
	k = also_key("198.18.0.0/24", SLUICE_TAG(8, 0, 1));
	name(&t, &k, 0, x);
	NAME_IS(x, "a:198.18.0.0/24@198.18.0.0/28", "the first in CIDR order names the slot");

	/* rules on L4 of IPv6 CIDRs long to write, one match long too */
	l4_rule(&l4[0], "--proto tcp --dport 1000-65535 --sport 1000-65535", 2, 1);
	l4_rule(&l4[1], "--proto tcp --dport 1000-65535 --sport 1000-65534", 3, 1);
	l4[0].r.family = l4[1].r.family = 6;
	l4[0].r.prefixlen = l4[1].r.prefixlen = 127;
	inet_pton(AF_INET6, "2001:2:ffff:ffff:ffff:ffff:ffff:fffe", l4[0].r.addr);
	inet_pton(AF_INET6, "2001:2:ffff:ffff:ffff:ffff:ffff:fffe", l4[1].r.addr);
	l4[0].policy.flags |= ALSO_ID(2);
	l4[1].policy.flags |= ALSO_ID(2);
	memset(&pol, 0, sizeof(pol));
	pol.l4 = l4;
	pol.nr_l4 = 2;
	sluice_fleet_names_free(&t);
	names_of(&t, &pol);
	k = also_key("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127", SLUICE_TAG(2, 0, 1));
	name(&t, &k, 0, x);
	sluice_fleet_key_name(&t, &k, 0, big, sizeof(big));
	k.tag = SLUICE_ALSO_TAG(SLUICE_TAG(3, 0, 1));
	name(&t, &k, 0, y);
	tap_diag("  %s", x);
	TAP_TRUE(strstr(x, "@r=") && strlen(strstr(x, "@r=")) == 19,
		 "a rule too long to spell: \"r=\" and its hash");
	TAP_TRUE(!strcmp(x, big) && strlen(x) < SLUICE_FLEET_KEY_NAME - 1,
		 "the longest name fits SLUICE_FLEET_KEY_NAME (%zu)", strlen(big));
	TAP_TRUE(strcmp(x, y), "two such rules: two hashes");
	TAP_TRUE(!strpbrk(x, "{}") && !strpbrk(y, "{}"),
		 "no brace: the fleet's prefix holds the only hash tag, and Redis Cluster hashes "
		 "the whole name");
	sluice_fleet_names_free(&t);
}

int main(void)
{
	test_boxes();
	test_unchanged();
	test_matches();
	test_shared_slot();
	test_also();
	test_also_long();
	return tap_done();
}
