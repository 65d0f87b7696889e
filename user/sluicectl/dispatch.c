// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl: the dispatch of command words, for main.c and every object. */
#include <stdio.h>
#include <string.h>

#include "sluicectl.h"

int ctl_dispatch(const char *object, const struct ctl_cmd *cmds, int argc, char **argv,
		 void (*help)(FILE *f))
{
	const struct ctl_cmd *found = NULL;
	const char *what = object ? "command" : "object";
	bool exact = false;
	size_t len;
	int i, nr = 0;

	if (argc < 1) {
		help(stderr);
		return SLUICE_EXIT_USAGE;
	}
	/* "sluicectl help rule" is the help object's business */
	if (sluice_is_help(argv[0]) && (object || argc == 1)) {
		help(stdout);
		return SLUICE_EXIT_OK;
	}
	/* An exact name, or a prefix of exactly one: "sluicectl rule l". */
	len = strlen(argv[0]);
	for (i = 0; cmds[i].name; i++) {
		if (!strcmp(cmds[i].name, argv[0])) {
			found = &cmds[i];
			nr = 1;
			exact = true;
			break;
		}
		if (!strncmp(cmds[i].name, argv[0], len)) {
			found = &cmds[i];
			nr++;
		}
	}
	if (nr == 1 && len > 0 && !exact && found->changes)
		return sluice_cli_usage(object,
					"'%s' is short for '%s%s%s', which changes state: only "
					"commands that read may be shortened; write it in full, "
					"'sluicectl %s%s%s'",
					argv[0], object ? object : "", object ? " " : "",
					found->name, object ? object : "", object ? " " : "",
					found->name);
	if (nr == 1 && len > 0)
		return found->func(argc - 1, argv + 1);
	if (nr > 1 && len > 0)
		return sluice_cli_usage(object, "%s '%s' is ambiguous", what, argv[0]);
	if (object)
		return sluice_cli_usage(object, "unknown command '%s %s'", object, argv[0]);
	return sluice_cli_usage(NULL, "unknown object '%s'", argv[0]);
}
