// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluicectl: tune a running sluice and read its counters.
 *
 *   sluicectl [-i IFACE] [-j] [-v] OBJECT COMMAND ...
 *   sluicectl [-i IFACE] -b FILE
 *   sluicectl --version
 *
 * This file reads the global options and dispatches from a table, like
 * bpftool's main.c; every object lives in its own file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sluicectl.h"

/* From the file VERSION, through the Makefile. */
#ifndef SLUICE_VERSION
#error "SLUICE_VERSION is not defined: build with make, which reads it from the file VERSION"
#endif

struct ctl_opts ctl;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: sluicectl [-i IFACE] [-j] [-v] OBJECT COMMAND [ARGS]\n"
		"       sluicectl [-i IFACE] -b FILE\n"
		"       sluicectl --version\n"
		"\n"
		"Tune a running sluice (see sluice(8)) and read its counters.\n"
		"\n"
		"Objects and commands:\n"
		"  set [--rate RATE [--burst N] [--delay N|--nodelay]]... [--algo ALGO]\n"
		"      [--window DUR] [--prefix4 LEN] [--prefix6 LEN] [--key MODE]\n"
		"      [--fleet on|off] [--penalty DUR|off] [--also-rate RATE|off]\n"
		"      [--also-burst N] [--also-prefix4 LEN] [--also-prefix6 LEN]\n"
		"      [--dry-run on|off] [--new-keys RATE|off] [--fail-closed on|off]\n"
		"        change the default policy and the settings\n"
		"  rule add CIDR ((--rate RATE [--burst N] [--delay N|--nodelay])...\n"
		"      [--algo ALGO] [--window DUR] [--prefix LEN] [--key MODE]\n"
		"      [--penalty DUR|off] [--also-rate RATE [--also-burst N]\n"
		"      [--also-prefix LEN] [--also-prefix4 LEN] [--also-prefix6 LEN]]\n"
		"      | --exempt | --deny) [--fleet [on|off]] [--dry-run [on|off]]\n"
		"        add a rule, or replace the rule of CIDR\n"
		"  rule del CIDR          delete a rule\n"
		"  rule flush             delete every rule\n"
		"  rule list              rules, their policies and counters\n"
		"  stats [--watch DUR] [--prometheus]\n"
		"                         the datapath's counters\n"
		"  top [-n N] [--watch [DUR] [--count N]]\n"
		"                         the sources with the most drops, once or live\n"
		"  show ADDR|KEY [KEYSPEC]  one source's (or key's) policy and state\n"
		"  flush [ADDR|CIDR [KEYSPEC]]  forget state: full buckets again\n"
		"  help | OBJECT help     this help, or an object's\n"
		"\n"
		"Options:\n"
		"  -i, --interface IFACE  the interface (may be left out when sluice is attached\n"
		"                         to exactly one); shape:IFACE for its shaper\n"
		"                         ('sluice shape attach'), which takes --delay\n"
		"  -j, --json             JSON output (also after the command); errors as\n"
		"                         {\"error\": \"...\"} on stdout\n"
		"  -b, --batch FILE       apply the lines of FILE (set, rule ...) in one change:\n"
		"                         all lines are checked first, then all apply; FILE may\n"
		"                         be a pipe, or - (standard input)\n"
		"  -v, --verbose          show what libbpf says\n"
		"  -V, --version          print the version and the map layout version\n"
		"  -h, --help             this help\n"
		"\n"
		"RATE  packets: 100/s 6000/m 1/h 100pps   bytes: 10mbit 1gbit 500kbps\n"
		"      a --rate without --burst gets one second's worth (100/s: burst 100)\n"
		"N     a count; a byte rate's --burst and --delay also 64k, 2m (1024s)\n"
		"DUR   100ms 1.5s 1m 1h 1d (a bare number is seconds); words are lower case\n"
		"ALGO  token-bucket (default) | leaky-bucket | sliding-window | fixed-window |\n"
		"      sliding-log\n"
		"MODE  src (default) | src,dport | flow: what a key holds besides the source\n"
		"KEYSPEC  a wide key's words after its source, as show prints them: tcp/443,\n"
		"      icmp, or a flow's '> 198.18.1.1 tcp/40000>443'\n"
		"\n"
		"Exit status: 0 success, 1 runtime failure, 2 usage error. See sluicectl(8).\n");
}

static void help_top(FILE *f)
{
	usage(f);
}

static int do_help(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*help)(FILE *f);
	} helps[] = {
		{ "set", set_help },     { "rule", rule_help }, { "stats", stats_help },
		{ "top", top_help },     { "show", show_help }, { "flush", flush_help },
		{ "batch", batch_help },
	};
	size_t i;

	if (argc == 0) {
		usage(stdout);
		return SLUICE_EXIT_OK;
	}
	for (i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
		if (!strcmp(argv[0], helps[i].name)) {
			helps[i].help(stdout);
			return SLUICE_EXIT_OK;
		}
	}
	return sluice_cli_usage(NULL,
				"no help for '%s': give one of set, rule, stats, top, show, "
				"flush or batch",
				argv[0]);
}

static const struct ctl_cmd objects[] = {
	{ "set", do_set, true },    { "rule", do_rule, false }, { "stats", do_stats, false },
	{ "top", do_top, false },   { "show", do_show, false }, { "flush", do_flush, true },
	{ "help", do_help, false }, { NULL, NULL, false },
};

/* The value of an option: "-iX", "-i X", "--interface=X", "--interface X". */
static const char *opt_value(int argc, char **argv, int *i, size_t skip)
{
	const char *a = argv[*i];

	if (a[skip] == '=' && a[1] == '-')
		return a + skip + 1;
	if (a[skip] && a[1] != '-')
		return a + skip;
	if (*i + 1 < argc)
		return argv[++*i];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *batch = NULL;
	int i, j, n;

	/* Line-buffered: --watch output is read line by line by people and pipes. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	sluice_set_cmdline(argc, argv);
	sluice_cli_init("sluicectl", &ctl.json);
	sluice_set_log_level(SLUICE_LOG_INFO);
	sluice_quiet_libs();

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			ctl.json = true;
		} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			sluice_set_log_level(SLUICE_LOG_DEBUG);
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return SLUICE_EXIT_OK;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("sluicectl %s (map layout %d)\n", SLUICE_VERSION,
			       SLUICE_LAYOUT_VERSION);
			return SLUICE_EXIT_OK;
		} else if (!strncmp(a, "-i", 2) || !strncmp(a, "--interface", 11)) {
			size_t skip = a[1] == '-' ? 11 : 2;
			const char *first = ctl.iface;

			if (a[1] == '-' && a[skip] && a[skip] != '=')
				return sluice_cli_usage(NULL, "unknown option '%s'", a);
			ctl.iface = opt_value(argc, argv, &i, skip);
			if (!ctl.iface || !*ctl.iface)
				return sluice_cli_usage(NULL,
							"-i needs an interface name: -i eth0");
			/* One command, one interface: of two, one would be ignored. */
			if (first)
				return sluice_cli_usage(NULL,
							"-i is given twice ('%s' and '%s'): a "
							"command is for one interface",
							first, ctl.iface);
		} else if (!strncmp(a, "-b", 2) || !strncmp(a, "--batch", 7)) {
			size_t skip = a[1] == '-' ? 7 : 2;
			const char *first = batch;

			if (a[1] == '-' && a[skip] && a[skip] != '=')
				return sluice_cli_usage(NULL, "unknown option '%s'", a);
			batch = opt_value(argc, argv, &i, skip);
			if (!batch || !*batch)
				return sluice_cli_usage(NULL, "-b needs a file: -b rules.conf");
			/* A file is one change; of two, one would be dropped unsaid. */
			if (first)
				return sluice_cli_usage(
					NULL,
					"-b is given twice ('%s' and '%s'): put the "
					"commands in one file",
					first, batch);
		} else if (a[1] != '-' && strspn(a + 1, "jv") == strlen(a + 1)) {
			/* grouped short flags: -jv */
			ctl.json = ctl.json || strchr(a, 'j');
			if (strchr(a, 'v'))
				sluice_set_log_level(SLUICE_LOG_DEBUG);
		} else {
			return sluice_cli_usage(NULL, "unknown option '%s'", a);
		}
	}

	if (batch) {
		if (i < argc)
			return sluice_cli_usage(
				NULL,
				"-b FILE takes no command, but '%s' follows it: put "
				"the commands in the file",
				argv[i]);
		return do_batch(batch);
	}
	if (i >= argc) {
		usage(stderr);
		return SLUICE_EXIT_USAGE;
	}
	/* Like bpftool, take -j after the command too: "sluicectl rule list -j".
	 * No value of any command is "-j", so this cannot eat one. */
	for (j = i, n = i; j < argc; j++) {
		if (!strcmp(argv[j], "-j") || !strcmp(argv[j], "--json"))
			ctl.json = true;
		else
			argv[n++] = argv[j];
	}
	argv[n] = NULL;
	return ctl_dispatch(NULL, objects, n - i, argv + i, help_top);
}
