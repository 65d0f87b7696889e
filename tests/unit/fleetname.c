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
 * - no match's name reads as a CIDR (a bare protocol number would).
 */
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

int main(void)
{
	test_boxes();
	test_unchanged();
	test_matches();
	test_shared_slot();
	return tap_done();
}
