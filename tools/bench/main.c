// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-bench: the measuring half of `make bench` (tools/bench/run.sh runs
 * it, and builds the namespaces of the end-to-end part around it).
 *
 *   sluice-bench cost ...      in-kernel cost per packet (BPF_PROG_TEST_RUN)
 *   sluice-bench tccost ...    the same for the shaper's tc program (tccost.c)
 *   sluice-bench accuracy ...  admitted / (rate x time + burst), 1 and 2 CPUs
 *   sluice-bench xdp ...       attach a bench program to a device, read its counters
 */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "bench.h"

int cmd_fleetfill(int argc, char **argv); /* fleetfill.c, for tools/bench/fleet.sh */

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "cost", cmd_cost,
	  "in-kernel cost per packet of every case, as JSON (render.py: tables)" },
	{ "tccost", cmd_tccost, "the shaper's cost per packet (sluice_tc, tc_bare, sluice_xdp)" },
	{ "accuracy", cmd_accuracy, "admitted against rate x time + burst, every algorithm" },
	{ "fleetfill", cmd_fleetfill, "keep N keys active for a fleet agent, time its syncs" },
	{ "xdp", cmd_xdp, "attach drop, floor or sluice to a device; read its XDP counters" },
	{ "sizing", cmd_sizing,
	  "a set table's fill and held sources under a flood, 50-200% loads" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: sluice-bench COMMAND [ARGS]  (root)\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].help);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return SLUICE_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return SLUICE_EXIT_OK;
	}
	sluice_quiet_libs();
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "sluice-bench: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return SLUICE_EXIT_USAGE;
}
