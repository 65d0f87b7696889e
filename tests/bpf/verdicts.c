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
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_policy p;
	struct sluice_stats st, want;
	struct scn_pkt *pkts;
	int *host = NULL, *prog = NULL;
	size_t n, i, passed = 0;
	__u64 bytes = 0, dropped_bytes = 0;
	long bad;

	if (scn_policy(s, &p, err, sizeof(err)) || scn_packets(s, &pkts, &n)) {
		tap_ok(false, "%s: setup: %s", s->name, err);
		return;
	}
	host = calloc(n, sizeof(*host));
	prog = calloc(n, sizeof(*prog));
	if (!host || !prog) {
		tap_ok(false, "%s: memory", s->name);
		goto out;
	}
	scn_host_run(&p, pkts, n, host);
	snprintf(how, sizeof(how), "from %s%s%s", src, rule ? " under rule " : "",
		 rule ? rule : "");
	if (bpfrun_scenario(r, &p, rule, src, pkts, n, prog)) {
		tap_ok(false, "%s %s: run", s->name, how);
		goto out;
	}
	bad = scn_first_mismatch(prog, host, n);
	if (!tap_ok(bad < 0, "%s %s: %zu verdicts identical to the host's", s->name, how, n))
		tap_diag("  packet %ld at %llu ns, %u B: program %s, host %s", bad,
			 (unsigned long long)pkts[bad].t_ns, pkts[bad].len,
			 scn_verdict_name(prog[bad]), scn_verdict_name(host[bad]));
	if (!s->nr_random) {
		bad = -1;
		for (i = 0; i < n && bad < 0; i++)
			if (prog[i] != pkts[i].want)
				bad = (long)i;
		if (!tap_ok(bad < 0, "%s %s: verdicts as worked out", s->name, how))
			tap_diag("  packet %ld at %llu ns, %u B: program %s, want %s", bad,
				 (unsigned long long)pkts[bad].t_ns, pkts[bad].len,
				 scn_verdict_name(prog[bad]), scn_verdict_name(pkts[bad].want));
	}

	for (i = 0; i < n; i++) {
		__u32 len = pkts[i].len;

		bytes += len;
		if (prog[i] == SLUICE_PASS)
			passed++;
		else
			dropped_bytes += len;
	}
	memset(&want, 0, sizeof(want));
	want.rx = n;
	want.rx_bytes = bytes;
	want.passed = passed;
	want.dropped = n - passed;
	want.dropped_bytes = dropped_bytes;
	want.limited = n - passed;
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
				 rs.dropped == n - passed && rs.dropped_bytes == dropped_bytes &&
				 rs.passed_bytes == bytes - dropped_bytes,
			 "%s %s: the rule's counters", s->name, how);
	}
out:
	free(host);
	free(prog);
	free(pkts);
}

int main(void)
{
	struct bpfrun r;
	size_t i;

	if (bpfrun_open(&r, NULL)) {
		tap_ok(false, "load the sluice program with the test clock");
		return tap_done();
	}
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
