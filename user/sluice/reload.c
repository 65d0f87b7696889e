// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice reload IFACE [--config FILE]: make the settings and rules exactly
 * what FILE says, in one atomic change. A config file is the whole desired
 * state: what it does not set is the default, a rule it does not list is
 * removed. Buckets survive where the state format of their policy did not
 * change (a new rate or burst keeps them; a new algorithm, window or prefix
 * starts them full), so a reload under a flood never hands a held source a
 * fresh burst. `sluice run` does the same on SIGHUP.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "cli.h"
#include "opts.h"
#include "pinlock.h"

#define DEFAULT_CONFIG_DIR "/etc/sluice"

void reload_usage(FILE *f)
{
	fprintf(f, "  sluice reload IFACE [--config FILE]\n"
		   "      make the settings and rules of IFACE exactly what FILE says\n"
		   "      (default " DEFAULT_CONFIG_DIR "/IFACE.conf), in one atomic change\n");
}

static void reload_help(void)
{
	printf("Usage:\n");
	reload_usage(stdout);
	printf("\n"
	       "FILE holds sluicectl editing commands, one per line ('set ...', 'rule add\n"
	       "...', '#' comments): the default policy and settings become the defaults\n"
	       "plus what the 'set' lines say, the rules become exactly the 'rule add'\n"
	       "lines. Buckets of policies whose algorithm, window and key prefix did not\n"
	       "change are kept. A bad line changes nothing (exit status 2, FILE:LINE).\n"
	       "\n"
	       "FILE must be a regular file. Replace it by writing the new one beside it and\n"
	       "renaming it into place (mv FILE.new FILE): a file rewritten in place may be\n"
	       "read half written, so one that another process has open for writing, or\n"
	       "that changes, for a second, or that changed while it was read, is refused\n"
	       "(exit status 1) and nothing changes.\n");
}

void default_config_path(const char *ifname, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.conf", DEFAULT_CONFIG_DIR, ifname);
}

int sluice_reload(const char *ifname, const char *path)
{
	struct sluice_cmd_file *file = NULL;
	struct sluice_cmd_diff diff = {};
	char err[2 * SLUICE_ERR_LEN];
	struct sluice_handle h;
	struct sluice_txn t;
	int lock_fd = -1, ret, status = SLUICE_EXIT_RUNTIME;

	/* Read and check the whole file before anything is locked. */
	ret = sluice_cmd_file_read(path, &file, err, sizeof(err));
	if (ret)
		return sluice_cli_err(sluice_cmd_file_err_is_usage(ret) ? -EINVAL : ret, "%s", err);
	lock_fd = lock_pin_root(err, sizeof(err));
	if (lock_fd < 0) {
		sluice_cli_err(0, "%s", err);
		goto out_free;
	}
	ret = sluice_open(ifname, &h, err, sizeof(err));
	if (ret) {
		sluice_cli_err(0, "%s", err);
		if (ret == -ENODEV)
			status = SLUICE_EXIT_USAGE;
		goto out_unlock;
	}
	ret = sluice_check_standing(&h, true, err, sizeof(err));
	if (!ret)
		ret = sluice_txn_begin(&h, &t, err, sizeof(err));
	if (ret) {
		sluice_cli_err(0, "%s", err);
		goto out_close;
	}
	ret = sluice_cmd_file_replace(&t, file, &diff, err, sizeof(err));
	if (!ret)
		ret = sluice_txn_commit(&t, err, sizeof(err));
	sluice_txn_end(&t);
	if (ret) {
		status = sluice_cli_err(ret, "%s", err);
		goto out_close;
	}
	printf("sluice reloaded %s from %s: %u rule%s added, %u removed, %u changed, %u "
	       "unchanged; default policy %s, settings %s\n",
	       ifname, path, diff.added, diff.added == 1 ? "" : "s", diff.removed, diff.changed,
	       diff.unchanged, diff.default_changed ? "changed" : "unchanged",
	       diff.settings_changed ? "changed" : "unchanged");
	print_policy_line(&h);
	status = SLUICE_EXIT_OK;
out_close:
	sluice_close(&h);
out_unlock:
	unlock_pin_root(lock_fd);
out_free:
	sluice_cmd_file_free(file);
	return status;
}

int do_reload(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL;
	char path[300];
	int c;

	if (argc >= 2 && sluice_is_help(argv[1])) {
		reload_help();
		return SLUICE_EXIT_OK;
	}
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hv", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'v':
			set_verbose();
			break;
		case 'h':
			reload_help();
			return SLUICE_EXIT_OK;
		case ':':
			return sluice_cli_usage("reload", "option '%s' needs a value",
						argv[optind - 1]);
		default:
			return sluice_cli_usage("reload", "unknown option '%s' for 'sluice reload'",
						argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return sluice_cli_usage("reload", "missing IFACE: e.g. 'sluice reload eth0'");
	if (optind + 1 < argc)
		return sluice_cli_usage("reload", "one interface at a time: '%s' is extra",
					argv[optind + 1]);
	if (refuse_shape_name("reload", argv[optind]))
		return SLUICE_EXIT_USAGE;
	if (!valid_ifname(argv[optind]))
		return sluice_cli_usage("reload", "'%s' is not an interface name", argv[optind]);
	if (!config) {
		default_config_path(argv[optind], path, sizeof(path));
		config = path;
		if (access(path, F_OK) && errno == ENOENT)
			return sluice_cli_usage("reload",
						"no config file for %s: %s does not "
						"exist. Give one with --config FILE (its 'set' and "
						"'rule add' lines become the whole state of %s: "
						"what it does not set is the default, a rule it "
						"does not list is removed), or write %s",
						argv[optind], path, argv[optind], path);
	}
	return sluice_reload(argv[optind], config);
}
