/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Rules that match on the transport header (include/sluice/l4rules.h), on
 * the host (l4rules.c): their precedence, and the bit-vector tables the
 * datapath classifies them by. libsluice.h includes it, with the others.
 */
#ifndef SLUICE_USER_L4RULES_H
#define SLUICE_USER_L4RULES_H

#include <stddef.h>
#include <sluice/l4rules.h>

/*
 * The precedence: which of two rules is evaluated first (< 0: a). The one
 * whose match names more fields; then the narrower ports (the sum of the
 * named ranges' widths, an unnamed one counting as all 65536); then the
 * family (IPv4 first: no packet is held by rules of both); then the longer
 * source prefix. 0 when none of these tells them apart: the order they were
 * written in then decides (sluice_l4rules_sort() is stable).
 */
int sluice_l4rule_cmp(const struct sluice_l4rule *a, const struct sluice_l4rule *b);
/* Sort rules[0..n) by precedence, keeping the written order of ties; with
 * order (may be NULL), order[i] is the index rules[i] had before. */
int sluice_l4rules_sort(struct sluice_l4rule *rules, size_t n, size_t *order);
/* The tables of one generation (SLUICE_L4BM_WORDS words, at words) for
 * rules[0..n), in the order they are evaluated (n <= SLUICE_L4_RULES_MAX). */
int sluice_l4bm_build(const struct sluice_l4rule *rules, size_t n, __u64 *words);
/* The first of rules[0..n) that holds the packet, by a scan: what the
 * tables must give (the tests' reference), or -1. */
int sluice_l4rules_scan(const struct sluice_l4rule *rules, size_t n, __u8 family, const __u8 *addr,
			const struct sluice_l4 *l4);

#endif /* SLUICE_USER_L4RULES_H */
