// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fixed scenario tables (tests/lib/scenario.c) through algo.h on the
 * host: every packet's verdict must be the one worked out by hand. The bpf
 * suite runs the same tables through the loaded program.
 */
#include "libsluice.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

static void run_table(const struct scn *s)
{
	struct scn_run r;
	long bad;

	if (!scn_run_host(s, &r))
		return;
	bad = scn_first_unwanted(r.pk, r.v, r.n);
	if (!tap_ok(bad < 0, "%s: %zu verdicts as worked out", s->name, r.n))
		tap_diag("  packet %ld at %llu ns, %u bytes: got %s, want %s", bad,
			 (unsigned long long)r.pk[bad].t_ns, r.pk[bad].len,
			 scn_verdict_name(r.v[bad]), scn_verdict_name(r.pk[bad].want));
	scn_run_free(&r);
}

int main(void)
{
	size_t i;

	for (i = 0; i < scn_nr_tables; i++)
		if (!scn_tables[i].nr_random)
			run_table(&scn_tables[i]);
	return tap_done();
}
