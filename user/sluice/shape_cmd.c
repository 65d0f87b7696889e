// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice shape attach|detach|status IFACE: the shaper's commands, which are
 * the limiter's attach, detach and status run on the shaper's target
 * (shape.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "shape.h"
#include "target.h"

void shape_usage(FILE *f)
{
	fprintf(f,
		"  sluice shape attach IFACE [--rate RATE [--burst N] [--delay N | --nodelay]]...\n"
		"               [--algo ALGO] [--window DUR] [--prefix4 LEN] [--prefix6 LEN]\n"
		"               [--key src|dst] [--table sets|lru] [--max-keys N]\n"
		"               [--max-log-keys N] [--max-rules N] [--max-flows N]\n"
		"               [--new-keys RATE|off]\n"
		"               [--fail-closed|--fail-open] [--horizon DUR] [--queue-limit N]\n"
		"               [--config FILE] [--resume|--fresh]\n"
		"  sluice shape detach IFACE [--keep-state]\n"
		"  sluice shape status [-j] [IFACE]\n"
		"      shape what IFACE sends (tc egress and an fq qdisc): each key's packets\n"
		"      leave at its rate, a burst queued, beyond the queue dropped\n");
}

static void shape_help(void)
{
	printf("Usage:\n");
	shape_usage(stdout);
	printf("\n"
	       "  --rate RATE         the rate per key: 100/s 6000/m, or bytes: 10mbit 500kbps\n"
	       "  --burst N           the queue per key: N packets (bytes: 1514, 64k) beyond\n"
	       "                      the first wait for their turn; beyond the queue,\n"
	       "                      dropped; without it one second's worth of the rate\n"
	       "  --delay N           of a burst, the first N excess go at once, the rest wait\n"
	       "  --nodelay           every accepted packet goes at once (a meter, no queue)\n"
	       "  --algo ALGO         token-bucket (default) or leaky-bucket shape; the window\n"
	       "                      algorithms (with --window) only meter: drop, never delay\n"
	       "  --prefix4/--prefix6 LEN  keys share a bucket per /LEN (default 32, 64)\n"
	       "  --key src|dst       key by source (default: the client, on a gateway's\n"
	       "                      interface toward a backend) or by destination\n"
	       "  --table sets|lru    the key table: the set-associative table (default)\n"
	       "                      or an LRU hash, as 'sluice attach'\n"
	       "  --max-keys N        size of the key table (default %u); fixed once pinned;\n"
	       "                      sets: N keys per family, lru: N in all\n"
	       "  --max-rules N       most rules (default %u); fixed once pinned\n"
	       "  --horizon DUR       fq's horizon: no packet waits this long (default: the\n"
	       "                      longest queue of the policies x 1.25, at least 1s)\n"
	       "  --queue-limit N     packets fq holds in all (default: 10000, or 4 x the\n"
	       "                      per-flow limit, the largest burst + 1, when larger)\n"
	       "  --config FILE, --resume, --fresh   as 'sluice attach'\n"
	       "\n"
	       "sluice makes its fq (handle 51ce:) the root qdisc of IFACE, replacing the\n"
	       "kernel's default one (noqueue, pfifo_fast, mq: one fq for every queue), and\n"
	       "hangs its program on clsact's egress hook (handle 0x%x, priority 0x%x).\n"
	       "Any other root qdisc is refused and left alone. The state is shape:IFACE:\n"
	       "'sluicectl -i shape:IFACE' tunes it. Detach deletes the fq (the kernel puts\n"
	       "its default back) and the clsact if sluice made it. See sluice(8).\n",
	       SLUICE_DEFAULT_MAX_KEYS, SLUICE_DEFAULT_MAX_RULES, SHAPE_TC_HANDLE, SHAPE_TC_PRIO);
}

static void shape_detach_help(void)
{
	printf("Usage:\n");
	printf("  sluice shape detach IFACE [--keep-state]\n"
	       "\nRemoves sluice's tc filter from the egress of IFACE (only if its\n"
	       "program is the one pinned with the state), deletes sluice's fq root qdisc\n"
	       "(the kernel puts its default back; never another root), and the clsact\n"
	       "qdisc if sluice made it and no filter is left on it. Without --keep-state\n"
	       "the pins in %s/shape:IFACE/ are removed too.\n",
	       SLUICE_PIN_ROOT);
}

static void shape_status_usage(FILE *f)
{
	fprintf(f, "  sluice shape status [-j] [IFACE]\n"
		   "      show each shaper of this network namespace: its program,\n"
		   "      fq qdisc (options and fq's counters), policy and counters,\n"
		   "      with the delays it gave (shaped, delayed, mean and max delay,\n"
		   "      restamped, horizon_dropped)\n");
}

static int shape_attach_cmd(int argc, char **argv)
{
	struct attach_opts o;
	int ret;

	ret = parse_attach_opts(OPTS_SHAPE, argc, argv, &o, NULL);
	if (ret < 0) {
		shape_help();
		return SLUICE_EXIT_OK;
	}
	if (ret)
		return ret;
	return sluice_attach(&shape_target, &o);
}

int do_shape(int argc, char **argv)
{
	if (argc < 2) {
		if (json_output)
			return sluice_cli_usage("shape", "missing command: attach, detach or "
							 "status");
		fprintf(stderr, "Usage:\n");
		shape_usage(stderr);
		return SLUICE_EXIT_USAGE;
	}
	if (sluice_is_help(argv[1])) {
		shape_help();
		return SLUICE_EXIT_OK;
	}
	if (!strcmp(argv[1], "attach"))
		return shape_attach_cmd(argc - 1, argv + 1);
	if (!strcmp(argv[1], "detach"))
		return detach_cmd("shape detach", &shape_target, shape_detach_help, argc - 1,
				  argv + 1);
	if (!strcmp(argv[1], "status"))
		return status_cmd("shape status", &shape_target, shape_status_usage,
				  "sluice shapes no interface in this network namespace ('sluice "
				  "shape attach IFACE')\n",
				  argc - 1, argv + 1);
	return sluice_cli_usage("shape",
				"unknown command 'shape %s': use shape attach, shape "
				"detach or shape status",
				argv[1]);
}
