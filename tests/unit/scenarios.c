// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fixed scenario tables (tests/lib/scenario.c) through algo.h on the
 * host: every packet's verdict must be the one worked out by hand. The bpf
 * suite runs the same tables through the loaded program.
 */
#include <stdlib.h>

#include "libsluice.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

static void run_table(const struct scn *s)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_policy p;
	struct scn_pkt *pkts;
	int *got;
	size_t n, i;
	long bad;

	if (scn_policy(s, &p, err, sizeof(err))) {
		tap_ok(false, "%s: policy", s->name);
		tap_diag("  %s", err);
		return;
	}
	if (scn_packets(s, &pkts, &n)) {
		tap_ok(false, "%s: packets", s->name);
		return;
	}
	got = calloc(n, sizeof(*got));
	if (!got) {
		tap_ok(false, "%s: memory", s->name);
		free(pkts);
		return;
	}
	scn_host_run(&p, pkts, n, got);
	bad = -1;
	for (i = 0; i < n && bad < 0; i++)
		if (got[i] != pkts[i].want)
			bad = (long)i;
	if (!tap_ok(bad < 0, "%s: %zu verdicts as worked out", s->name, n))
		tap_diag("  packet %ld at %llu ns, %u bytes: got %s, want %s", bad,
			 (unsigned long long)pkts[bad].t_ns, pkts[bad].len,
			 scn_verdict_name(got[bad]), scn_verdict_name(pkts[bad].want));
	free(got);
	free(pkts);
}

int main(void)
{
	size_t i;

	for (i = 0; i < scn_nr_tables; i++)
		if (!scn_tables[i].nr_random)
			run_table(&scn_tables[i]);
	return tap_done();
}
