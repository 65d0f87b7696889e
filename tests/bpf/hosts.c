// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Host rules: /32 and /128 rules in the hash sluice_hosts, asked before the
 * trie when settings.rule_maps has SLUICE_RULES_HOSTS, and the trie skipped
 * when it has SLUICE_RULES_NO_PREFIX. A host rule is the longest prefix, so
 * it beats every trie rule that holds its address; a miss falls through to
 * the trie; only the live generation counts; with rule_maps 0 (a layout-4
 * state) the hash is never asked.
 *
 *   198.18.3.0/24        trie, slot 1: exempt
 *   198.18.3.7/32        hash, slot 2: deny
 *   2001:2:0:105::/64    trie, slot 3: exempt
 *   2001:2:0:105::7/128  hash, slot 4: deny
 *   the default (slot 0): 1/h burst 2
 */
#include <string.h>

#include "libsluice.h"
#include "../lib/bpfrun.h"
#include "../lib/tap.h"

static bool setup(struct bpfrun *r, __u8 live_gen, __u8 rule_maps, __u8 rules_gen)
{
	struct sluice_policy deny, exempt;
	struct sluice_settings set;

	if (!bpfrun_setup(r, &set, 2))
		return false;
	set.nr_rules = 4;
	set.rules_gen = live_gen;
	set.rule_maps = rule_maps;
	bpfrun_policy(&deny, SLUICE_ACT_DENY, 0);
	bpfrun_policy(&exempt, SLUICE_ACT_EXEMPT, 0);
	return !bpfrun_configure(r, &set) &&
	       !bpfrun_rule(r, rules_gen, "198.18.3.0/24", &exempt, 1) &&
	       !bpfrun_host_rule(r, rules_gen, "198.18.3.7/32", &deny, 2) &&
	       !bpfrun_rule(r, rules_gen, "2001:2:0:105::/64", &exempt, 3) &&
	       !bpfrun_host_rule(r, rules_gen, "2001:2:0:105::7/128", &deny, 4);
}

struct send {
	const char *src;
	const char *want;
	int slot;
	const char *why;
};

static void run(struct bpfrun *r, const char *name, const struct send *sends, size_t n)
{
	char letters[16];
	size_t i;

	for (i = 0; i < n; i++) {
		const struct send *w = &sends[i];
		struct sluice_rstats before, after;

		bpfrun_rstats(r, (__u32)w->slot, &before);
		bpfrun_sendn(r, w->src, 100, (unsigned int)strlen(w->want), letters);
		bpfrun_rstats(r, (__u32)w->slot, &after);
		if (!tap_ok(!strcmp(letters, w->want) &&
				    after.passed + after.dropped - before.passed - before.dropped ==
					    strlen(w->want),
			    "%s: %s sends %s, counted in slot %d: %s", name, w->src, w->want,
			    w->slot, w->why))
			tap_diag("  got %s", letters);
	}
}

int main(void)
{
	static const struct send hashed[] = {
		{ "198.18.3.7", "DDD", 2, "the /32 host rule beats the /24 that holds it" },
		{ "198.18.3.8", "PPP", 1, "a miss in the hash falls through to the trie" },
		{ "2001:2:0:105::7", "DD", 4, "the /128 host rule beats the /64" },
		{ "2001:2:0:105::8", "PPP", 3, "a miss in the hash: the /64" },
		{ "198.18.9.9", "PPD", 0, "no rule: the default" },
	};
	static const struct send no_prefix[] = {
		{ "198.18.3.7", "DD", 2, "the host rule still" },
		{ "198.18.3.8", "PPD", 0, "the trie is not asked: the default" },
	};
	static const struct send trie_only[] = {
		{ "198.18.3.7", "PPP", 1, "the hash is not asked: the /24 exempt" },
		{ "2001:2:0:105::7", "PPP", 3, "nor for IPv6: the /64 exempt" },
	};
	static const struct send other_gen[] = {
		{ "198.18.3.7", "PPD", 0, "a host rule of the idle generation never matches" },
	};
	struct bpfrun r;

	if (bpfrun_open(&r, NULL)) {
		tap_ok(false, "load the sluice program with the test clock");
		return tap_done();
	}
	if (tap_ok(setup(&r, 0, SLUICE_RULES_HOSTS, 0), "setup: hosts in the hash"))
		run(&r, "hosts", hashed, sizeof(hashed) / sizeof(hashed[0]));
	if (tap_ok(setup(&r, 0, SLUICE_RULES_HOSTS | SLUICE_RULES_NO_PREFIX, 0),
		   "setup: hosts only"))
		run(&r, "no prefix", no_prefix, sizeof(no_prefix) / sizeof(no_prefix[0]));
	if (tap_ok(setup(&r, 0, 0, 0), "setup: rule_maps 0 (layout 4)"))
		run(&r, "trie only", trie_only, sizeof(trie_only) / sizeof(trie_only[0]));
	if (tap_ok(setup(&r, 1, SLUICE_RULES_HOSTS | SLUICE_RULES_NO_PREFIX, 0),
		   "setup: the rules in generation 0, generation 1 live"))
		run(&r, "idle generation", other_gen, sizeof(other_gen) / sizeof(other_gen[0]));
	bpfrun_close(&r);
	return tap_done();
}
