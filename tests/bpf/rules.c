// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Rules: the LPM trie keyed by generation + address (IPv4 as ::ffff:a.b.c.d),
 * written directly. Exempt, deny, a limit; the longest prefix wins for
 * nested IPv4 and IPv6 prefixes; each rule counts in its own sluice_rstats
 * slot; only the live generation is looked up.
 *
 * Nested rules, slot: policy
 *   198.18.0.0/16        1: deny
 *   198.18.3.0/24        2: exempt
 *   198.18.3.16/28       3: 1/h burst 1
 *   2001:2:0:100::/56    4: deny
 *   2001:2:0:105::/64    5: exempt
 *   2001:2:0:105::10/124 6: 1/h burst 1
 * and the default policy (slot 0), 1/h burst 2, for everything else.
 */
#include <string.h>

#include "libsluice.h"
#include "../lib/bpfrun.h"
#include "../lib/tap.h"

#define NR_SLOTS 7

static bool setup(struct bpfrun *r, __u8 gen, __u32 nr_rules)
{
	struct sluice_settings set;

	if (!bpfrun_setup(r, &set, 2))
		return false;
	set.nr_rules = nr_rules;
	set.rules_gen = gen;
	return !bpfrun_configure(r, &set);
}

static bool put_rules(struct bpfrun *r, __u8 gen)
{
	struct sluice_policy deny, exempt, limit;

	bpfrun_policy(&deny, SLUICE_ACT_DENY, 0);
	bpfrun_policy(&exempt, SLUICE_ACT_EXEMPT, 0);
	bpfrun_policy(&limit, SLUICE_ACT_LIMIT, 1);
	return !bpfrun_rule(r, gen, "198.18.0.0/16", &deny, 1) &&
	       !bpfrun_rule(r, gen, "198.18.3.0/24", &exempt, 2) &&
	       !bpfrun_rule(r, gen, "198.18.3.16/28", &limit, 3) &&
	       !bpfrun_rule(r, gen, "2001:2:0:100::/56", &deny, 4) &&
	       !bpfrun_rule(r, gen, "2001:2:0:105::/64", &exempt, 5) &&
	       !bpfrun_rule(r, gen, "2001:2:0:105::10/124", &limit, 6);
}

struct send {
	const char *src;
	__u32 len;
	const char *want;
	int slot; /* whose counters it adds to */
	const char *why;
};

static const struct send sends[] = {
	{ "198.18.9.9", 100, "DD", 1, "in the /16 deny only" },
	{ "198.18.3.1", 200, "PPP", 2, "the /24 exempt beats the /16 deny" },
	{ "198.18.3.17", 300, "PD", 3, "the /28 limit beats the /24 exempt" },
	{ "198.18.3.31", 300, "PD", 3, "the same /28 rule, its own /32 key" },
	{ "198.18.3.32", 400, "PP", 2, "just past the /28: exempt" },
	{ "198.19.0.1", 500, "PPD", 0, "outside every rule: the default" },
	{ "2001:2:0:1ff::1", 120, "D", 4, "in the /56 deny only" },
	{ "2001:2:0:105::1", 220, "PP", 5, "the /64 exempt beats the /56 deny" },
	{ "2001:2:0:105::1f", 320, "PD", 6, "the /124 limit beats the /64 exempt" },
	{ "2001:2:0:105::20", 420, "P", 5, "just past the /124: exempt" },
	{ "2001:2:0:200::1", 520, "PPD", 0, "outside every rule: the default" },
};

static void test_nested(struct bpfrun *r)
{
	struct sluice_rstats want[NR_SLOTS], got;
	struct sluice_stats st, st_want;
	char letters[16];
	size_t i, k;
	int s;

	memset(want, 0, sizeof(want));
	memset(&st_want, 0, sizeof(st_want));
	if (!setup(r, 0, 6) || !put_rules(r, 0)) {
		tap_ok(false, "nested rules: setup");
		return;
	}
	for (i = 0; i < sizeof(sends) / sizeof(sends[0]); i++) {
		const struct send *w = &sends[i];
		size_t n = strlen(w->want);

		bpfrun_sendn(r, w->src, w->len, (unsigned int)n, letters);
		if (!tap_ok(!strcmp(letters, w->want), "rules: %s sends %s: %s", w->src, w->want,
			    w->why))
			tap_diag("  got %s", letters);
		for (k = 0; k < n; k++) {
			bool pass = w->want[k] == 'P';

			st_want.rx++;
			st_want.rx_bytes += w->len;
			if (pass) {
				want[w->slot].passed++;
				want[w->slot].passed_bytes += w->len;
				st_want.passed++;
			} else {
				want[w->slot].dropped++;
				want[w->slot].dropped_bytes += w->len;
				st_want.dropped++;
				st_want.dropped_bytes += w->len;
			}
			if (w->slot == 2 || w->slot == 5)
				st_want.exempt++;
			else if (!pass && (w->slot == 1 || w->slot == 4))
				st_want.denied++;
			else if (!pass)
				st_want.limited++;
		}
	}
	/* Keys were made for the limited sources only: 198.18.3.17, .31,
	 * 198.19.0.1, 2001:2:0:105::/64 under slot 6, 2001:2:0:200::/64. */
	st_want.new_keys = 5;
	for (s = 0; s < NR_SLOTS; s++) {
		if (bpfrun_rstats(r, (__u32)s, &got)) {
			tap_ok(false, "rules: read slot %d", s);
			continue;
		}
		if (!tap_ok(!memcmp(&got, &want[s], sizeof(got)),
			    "rules: slot %d counts %llu passed (%llu B), %llu dropped (%llu B)", s,
			    (unsigned long long)want[s].passed,
			    (unsigned long long)want[s].passed_bytes,
			    (unsigned long long)want[s].dropped,
			    (unsigned long long)want[s].dropped_bytes))
			tap_diag("  got %llu passed (%llu B), %llu dropped (%llu B)",
				 (unsigned long long)got.passed,
				 (unsigned long long)got.passed_bytes,
				 (unsigned long long)got.dropped,
				 (unsigned long long)got.dropped_bytes);
	}
	if (!bpfrun_stats(r, &st))
		bpfrun_stats_eq(&st, &st_want, "rules: every counter");
	else
		tap_ok(false, "rules: read stats");
	/* A rule's key carries the rule's tag: slot 3 generation 1. */
	TAP_TRUE(!bpfrun_lookup(r, false, SLUICE_TAG(3, SLUICE_ALGO_TOKEN_BUCKET, 1), "198.18.3.17",
				32, &(struct sluice_bucket){ 0 }),
		 "rules: 198.18.3.17 is keyed under its rule's tag");
}

/* Only the generation settings.rules_gen names is looked up. */
static void test_generation(struct bpfrun *r)
{
	struct sluice_settings set;
	struct sluice_policy deny;
	char got[8];

	bpfrun_policy(&deny, SLUICE_ACT_DENY, 0);
	if (!setup(r, 0, 1) || bpfrun_rule(r, 1, "198.19.0.0/16", &deny, 1)) {
		tap_ok(false, "rule generation: setup");
		return;
	}
	bpfrun_sendn(r, "198.19.0.1", 60, 1, got);
	TAP_TRUE(!strcmp(got, "P"),
		 "rule generation: a rule of generation 1 is not seen while 0 "
		 "is live (got %s)",
		 got);
	sluice_settings_init(&set);
	sluice_limit_set(&set.def.pkt, 1, BPFRUN_HOUR, 2, NULL, 0);
	set.nr_rules = 1;
	set.rules_gen = 1;
	if (bpfrun_configure(r, &set)) {
		tap_ok(false, "rule generation: flip");
		return;
	}
	bpfrun_sendn(r, "198.19.0.1", 60, 1, got);
	TAP_TRUE(!strcmp(got, "D"), "rule generation: it is after the flip to 1 (got %s)", got);
	set.nr_rules = 0;
	if (bpfrun_configure(r, &set)) {
		tap_ok(false, "rule generation: no rules");
		return;
	}
	bpfrun_sendn(r, "198.19.0.1", 60, 1, got);
	TAP_TRUE(!strcmp(got, "P"), "rule generation: nr_rules 0 skips the lookup (got %s)", got);
}

/*
 * A rule matches sources of its own family only. IPv4 rules are stored as
 * ::ffff:a.b.c.d, so the lookup must not let an IPv6 source in
 * ::ffff:0:0/96 (which anyone can put in a packet) take an IPv4 rule, nor
 * an IPv6 rule such as ::/0 take every IPv4 source.
 */
static void test_family(struct bpfrun *r)
{
	struct sluice_policy exempt, deny;
	char got[8];

	bpfrun_policy(&exempt, SLUICE_ACT_EXEMPT, 0);
	bpfrun_policy(&deny, SLUICE_ACT_DENY, 0);
	if (!setup(r, 0, 2) || bpfrun_rule(r, 0, "198.18.3.0/24", &exempt, 2) ||
	    bpfrun_rule(r, 0, "2001:2::/48", &deny, 4)) {
		tap_ok(false, "rule family: setup");
		return;
	}
	bpfrun_sendn(r, "198.18.3.1", 60, 3, got);
	TAP_TRUE(!strcmp(got, "PPP"), "rule family: 198.18.3.1 is exempt by 198.18.3.0/24 (got %s)",
		 got);
	bpfrun_sendn(r, "::ffff:198.18.3.1", 60, 3, got);
	if (!tap_ok(!strcmp(got, "PPD"), "rule family: IPv6 ::ffff:198.18.3.1 is not exempt by "
					 "the IPv4 rule 198.18.3.0/24: default, PPD"))
		tap_diag("  got %s: an IPv6 source took an IPv4 rule", got);

	if (!setup(r, 0, 1) || bpfrun_rule(r, 0, "::/0", &deny, 4)) {
		tap_ok(false, "rule family: setup ::/0");
		return;
	}
	bpfrun_sendn(r, "2001:2::1", 60, 1, got);
	TAP_TRUE(!strcmp(got, "D"), "rule family: 2001:2::1 is denied by ::/0 (got %s)", got);
	bpfrun_sendn(r, "198.18.0.1", 60, 3, got);
	if (!tap_ok(!strcmp(got, "PPD"), "rule family: IPv4 198.18.0.1 is not denied by the IPv6 "
					 "rule ::/0: default, PPD"))
		tap_diag("  got %s: an IPv4 source took an IPv6 rule", got);
}

int main(void)
{
	struct bpfrun r;

	if (!bpfrun_load(&r, NULL))
		return tap_done();
	test_nested(&r);
	test_generation(&r);
	test_family(&r);
	bpfrun_close(&r);
	return tap_done();
}
