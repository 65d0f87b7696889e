// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The rule hash: rules of the prefix lengths listed in config.hash_lens live
 * in sluice_rulehash, asked once per length, longest first, before the trie
 * when settings.rule_maps has SLUICE_RULES_HASHED; the trie is skipped with
 * SLUICE_RULES_NO_PREFIX. A hashed length is longer than every trie rule of
 * its family, so a hash hit is the answer and a miss falls through; only the
 * live generation's lengths and rules count; with rule_maps 0 (a layout-4
 * state) the hash is never asked.
 *
 *   198.18.3.0/24        slot 1: exempt   (trie, or hashed with /32)
 *   198.18.3.7/32        slot 2: deny     (hashed)
 *   2001:2:0:105::/64    slot 3: exempt   (trie)
 *   2001:2:0:105::7/128  slot 4: deny     (hashed)
 *   the default (slot 0): 1/h burst 2
 */
#include <string.h>

#include "libsluice.h"
#include "../lib/bpfrun.h"
#include "../lib/tap.h"

/* rules_gen: where the rules go; live_gen: the live one. lens4: the IPv4
 * lengths in the hash ({32} or {32, 24}); IPv6 hashes /128 alone. */
static bool setup(struct bpfrun *r, __u8 live_gen, __u8 rule_maps, __u8 rules_gen,
		  const __u8 *lens4)
{
	struct sluice_policy deny, exempt;
	struct sluice_settings set;
	bool v4_24 = lens4[1] == 24;

	memset(r->hash_lens, 0, sizeof(r->hash_lens));
	memcpy(r->hash_lens[live_gen][0], lens4, SLUICE_HASH_LENS);
	r->hash_lens[live_gen][1][0] = 128;
	if (!bpfrun_setup(r, &set, 2))
		return false;
	set.nr_rules = 4;
	set.rules_gen = live_gen;
	set.rule_maps = rule_maps;
	bpfrun_policy(&deny, SLUICE_ACT_DENY, 0);
	bpfrun_policy(&exempt, SLUICE_ACT_EXEMPT, 0);
	return !bpfrun_configure(r, &set) &&
	       !(v4_24 ? bpfrun_hash_rule : bpfrun_rule)(r, rules_gen, "198.18.3.0/24", &exempt,
							 1) &&
	       !bpfrun_hash_rule(r, rules_gen, "198.18.3.7/32", &deny, 2) &&
	       !bpfrun_rule(r, rules_gen, "2001:2:0:105::/64", &exempt, 3) &&
	       !bpfrun_hash_rule(r, rules_gen, "2001:2:0:105::7/128", &deny, 4);
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

#define RUN(r, name, sends) run(r, name, sends, sizeof(sends) / sizeof(sends[0]))

int main(void)
{
	static const __u8 only32[SLUICE_HASH_LENS] = { 32 }, both[SLUICE_HASH_LENS] = { 32, 24 };
	static const struct send hashed[] = {
		{ "198.18.3.7", "DDD", 2, "the /32 in the hash beats the /24 that holds it" },
		{ "198.18.3.8", "PPP", 1, "a miss in the hash falls through to the trie" },
		{ "2001:2:0:105::7", "DD", 4, "the /128 in the hash beats the /64" },
		{ "2001:2:0:105::8", "PPP", 3, "a miss in the hash: the /64 in the trie" },
		{ "198.18.9.9", "PPD", 0, "no rule: the default" },
	};
	static const struct send two_lengths[] = {
		{ "198.18.3.7", "DD", 2, "/32 asked before /24: the longer wins" },
		{ "198.18.3.8", "PPP", 1, "the /24, found in the hash with its address masked" },
		{ "198.18.4.8", "PPD", 0, "outside both: the default" },
	};
	static const struct send no_prefix[] = {
		{ "198.18.3.7", "DD", 2, "the hashed rule still" },
		{ "198.18.3.8", "PPD", 0, "the trie is not asked: the default" },
	};
	static const struct send trie_only[] = {
		{ "198.18.3.7", "PPP", 1, "the hash is not asked: the /24 exempt" },
		{ "2001:2:0:105::7", "PPP", 3, "nor for IPv6: the /64 exempt" },
	};
	static const struct send other_gen[] = {
		{ "198.18.3.7", "PPD", 0, "a rule of the idle generation never matches" },
	};
	struct bpfrun r;

	if (!bpfrun_load(&r, NULL))
		return tap_done();
	if (tap_ok(setup(&r, 0, SLUICE_RULES_HASHED, 0, only32), "setup: /32 and /128 hashed"))
		RUN(&r, "hashed", hashed);
	if (tap_ok(setup(&r, 0, SLUICE_RULES_HASHED, 0, both), "setup: /32 and /24 hashed"))
		RUN(&r, "two lengths", two_lengths);
	if (tap_ok(setup(&r, 0, SLUICE_RULES_HASHED | SLUICE_RULES_NO_PREFIX, 0, only32),
		   "setup: the hash only"))
		RUN(&r, "no prefix", no_prefix);
	if (tap_ok(setup(&r, 0, 0, 0, only32), "setup: rule_maps 0 (layout 4)"))
		RUN(&r, "trie only", trie_only);
	if (tap_ok(setup(&r, 1, SLUICE_RULES_HASHED | SLUICE_RULES_NO_PREFIX, 0, only32),
		   "setup: the rules in generation 0, generation 1 live"))
		RUN(&r, "idle generation", other_gen);
	bpfrun_close(&r);
	return tap_done();
}
