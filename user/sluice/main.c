// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice: load, attach, inspect and run the sluice XDP rate limiter.
 *
 *   sluice [-v] [-j] COMMAND ...
 *   COMMAND := attach | detach | status | run | reload | shape | help
 *   sluice --version
 *
 * One file per command; this one reads the global options and dispatches
 * from a table, like bpftool's main.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* From the file VERSION, through the Makefile. */
#ifndef SLUICE_VERSION
#error "SLUICE_VERSION is not defined: build with make, which reads it from the file VERSION"
#endif

static void usage(FILE *f)
{
	fprintf(f, "Usage: sluice [-v] [-j] COMMAND [ARGS]\n"
		   "       sluice --version\n"
		   "\n"
		   "sluice limits the packet rate of every source address at XDP, before the\n"
		   "network stack sees the packet, and shapes what an interface sends (sluice\n"
		   "shape). Tune a running limiter or shaper with sluicectl(8).\n"
		   "\n"
		   "Commands:\n");
	attach_usage(f);
	detach_usage(f);
	status_usage(f);
	run_usage(f);
	reload_usage(f);
	shape_usage(f);
	fprintf(f, "  sluice help | sluice COMMAND help\n"
		   "\n"
		   "Global options:\n"
		   "  -v, --verbose   show what libbpf and libxdp say\n"
		   "  -j, --json      JSON output (status), errors as {\"error\": \"...\"}\n"
		   "  -V, --version   print the version and the map layout version\n"
		   "  -h, --help      this help\n"
		   "\n"
		   "A --rate without --burst gets one second's worth as its burst (100/s:\n"
		   "burst 100), everywhere; options are taken by their full names, once each.\n"
		   "\n"
		   "Exit status: 0 success, 1 runtime failure, 2 usage error. See sluice(8).\n");
}

/* clang-format off */
static const struct cmd cmds[] = {
	{ "attach", do_attach },
	{ "detach", do_detach },
	{ "status", do_status },
	{ "run", do_run },
	{ "reload", do_reload },
	{ "shape", do_shape },
	{ NULL, NULL },
};
/* clang-format on */

int main(int argc, char **argv)
{
	const struct cmd *c;
	int i;

	/* Reports are read line by line by tests and by people watching. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	sluice_set_cmdline(argc, argv);
	sluice_cli_init("sluice", &json_output);

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			set_verbose();
		} else if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			json_output = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return SLUICE_EXIT_OK;
		} else if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			/* Touches nothing: no root, no bpffs needed. */
			printf("sluice %s (map layout %d)\n", SLUICE_VERSION,
			       SLUICE_LAYOUT_VERSION);
			return SLUICE_EXIT_OK;
		} else if (!strcmp(argv[i], "-vj") || !strcmp(argv[i], "-jv")) {
			set_verbose();
			json_output = true;
		} else {
			return sluice_cli_usage(NULL, "unknown option '%s'", argv[i]);
		}
	}
	sluice_quiet_libs();

	if (i == argc) {
		if (json_output)
			return sluice_cli_usage(NULL, "missing command: attach, detach, status, "
						      "run, reload or shape");
		usage(stderr);
		return SLUICE_EXIT_USAGE;
	}
	if (!strcmp(argv[i], "help")) {
		/* "sluice help attach" is "sluice attach help", "sluice help
		 * shape attach" is "sluice shape attach help". */
		char *words[4] = { NULL };
		int n = argc - i - 1, k;

		if (n == 0) {
			usage(stdout);
			return SLUICE_EXIT_OK;
		}
		if (n > 2 || (n == 2 && strcmp(argv[i + 1], "shape")))
			return sluice_cli_usage(NULL,
						"help takes one command (or 'shape' and one "
						"of its commands), not '%s %s': sluice help "
						"COMMAND",
						argv[i + 1], argv[i + 2]);
		if (n == 2 && strcmp(argv[i + 2], "attach") && strcmp(argv[i + 2], "detach") &&
		    strcmp(argv[i + 2], "status"))
			return sluice_cli_usage(NULL,
						"no help for 'shape %s': give one of shape "
						"attach, shape detach or shape status",
						argv[i + 2]);
		for (k = 0; k < n; k++)
			words[k] = argv[i + 1 + k];
		words[n] = "help";
		for (c = cmds; c->name; c++)
			if (!strcmp(argv[i + 1], c->name))
				return c->func(n + 1, words);
		return sluice_cli_usage(NULL,
					"no help for '%s': give one of attach, detach, "
					"status, run, reload or shape",
					argv[i + 1]);
	}
	for (c = cmds; c->name; c++)
		if (!strcmp(argv[i], c->name))
			return c->func(argc - i, argv + i);
	return sluice_cli_usage(NULL,
				"unknown command '%s': use attach, detach, status, run, "
				"reload or shape",
				argv[i]);
}
