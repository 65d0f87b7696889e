// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The scenario tables of the unit suite (tests/lib/scenario.c), every
 * algorithm, through the loaded program with the test clock: the verdicts
 * must be identical, packet for packet, to those of algo.h on the host, and
 * to the hand-worked ones where a table has them; the counters must add up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/algo.h>
#include "libsluice.h"
#include "../lib/bpfrun.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

/* Under the default policy, or (rule set) under a rule covering src. */
static void run_table(struct bpfrun *r, const struct scn *s, const char *src, const char *rule)
{
	char how[96];
	struct sluice_stats st, want;
	struct scn_run host;
	int *prog;
	size_t i, passed = 0;
	__u64 bytes = 0, dropped_bytes = 0;
	long bad;

	if (!scn_run_host(s, &host))
		return;
	prog = calloc(host.n, sizeof(*prog));
	if (!prog) {
		tap_ok(false, "%s: memory", s->name);
		goto out;
	}
	snprintf(how, sizeof(how), "from %s%s%s", src, rule ? " under rule " : "",
		 rule ? rule : "");
	if (bpfrun_scenario(r, &host.p, rule, src, host.pk, host.n, prog)) {
		tap_ok(false, "%s %s: run", s->name, how);
		goto out;
	}
	bad = scn_first_mismatch(prog, host.v, host.n);
	if (!tap_ok(bad < 0, "%s %s: %zu verdicts identical to the host's", s->name, how, host.n))
		tap_diag("  packet %ld at %llu ns, %u B: program %s, host %s", bad,
			 (unsigned long long)host.pk[bad].t_ns, host.pk[bad].len,
			 scn_verdict_name(prog[bad]), scn_verdict_name(host.v[bad]));
	if (!s->nr_random) {
		bad = scn_first_unwanted(host.pk, prog, host.n);
		if (!tap_ok(bad < 0, "%s %s: verdicts as worked out", s->name, how))
			tap_diag("  packet %ld at %llu ns, %u B: program %s, want %s", bad,
				 (unsigned long long)host.pk[bad].t_ns, host.pk[bad].len,
				 scn_verdict_name(prog[bad]), scn_verdict_name(host.pk[bad].want));
	}

	for (i = 0; i < host.n; i++) {
		__u32 len = host.pk[i].len;

		bytes += len;
		if (prog[i] == SLUICE_PASS)
			passed++;
		else
			dropped_bytes += len;
	}
	memset(&want, 0, sizeof(want));
	want.rx = host.n;
	want.rx_bytes = bytes;
	want.passed = passed;
	want.dropped = host.n - passed;
	want.dropped_bytes = dropped_bytes;
	want.limited = host.n - passed;
	want.new_keys = 1;
	/* One drop event per 64 drops on this CPU; the ring holds them all. */
	if (bpfrun_stats(r, &st)) {
		tap_ok(false, "%s: read stats", s->name);
		goto out;
	}
	bpfrun_stats_eq(&st, &want, "%s %s: every counter", s->name, how);
	if (rule) {
		struct sluice_rstats rs;

		TAP_TRUE(!bpfrun_rstats(r, BPFRUN_RULE_SLOT, &rs) && rs.passed == passed &&
				 rs.dropped == host.n - passed &&
				 rs.dropped_bytes == dropped_bytes &&
				 rs.passed_bytes == bytes - dropped_bytes,
			 "%s %s: the rule's counters", s->name, how);
	}
out:
	free(prog);
	scn_run_free(&host);
}

int main(void)
{
	struct bpfrun r;
	size_t i;

	if (!bpfrun_load(&r, NULL))
		return tap_done();
	for (i = 0; i < scn_nr_tables; i++) {
		run_table(&r, &scn_tables[i], "198.18.0.1", NULL);
		if (scn_tables[i].nr_random)
			continue;
		/* IPv6 sources take another parse and key path, and a rule's
		 * policy another lookup: the same verdicts. */
		run_table(&r, &scn_tables[i], "2001:2::1", NULL);
		run_table(&r, &scn_tables[i], "198.18.0.1", "198.18.0.0/24");
		run_table(&r, &scn_tables[i], "2001:2::1", "2001:2::/64");
	}
	bpfrun_close(&r);
	return tap_done();
}
