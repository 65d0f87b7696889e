// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl -b FILE: many edits, checked first, made live in one change. */
#include <stdio.h>

#include "sluicectl.h"
#include "cmd.h"

void batch_help(FILE *f)
{
	fprintf(f,
		"Usage: sluicectl [-i IFACE] -b FILE\n"
		"\n"
		"Apply the editing commands of FILE, one per line, without the 'sluicectl':\n"
		"  set ..., rule add ..., rule del ...\n"
		"Blank lines are ignored, and so is everything after a word that starts\n"
		"with '#'. Every line is checked first (nothing changes if one is wrong, and\n"
		"the error names FILE:LINE); then all of them become live at once: a packet\n"
		"sees the settings before the file or after it, never in between.\n"
		"\n"
		"Example file:\n"
		"  # default: 200 packets/s and 20 Mbit/s per source\n"
		"  set --rate 200/s --rate 20mbit --burst 400\n"
		"  rule add 198.18.0.0/24 --rate 10/s     # a noisy lab\n"
		"  rule add 198.19.0.0/16 --exempt\n");
}

int do_batch(const char *path)
{
	char err[SLUICE_ERR_LEN];
	struct sluice_handle h;
	int ret, st;

	/* Bad lines are usage errors whether or not sluice is attached. */
	ret = sluice_cmd_check_file(path, err, sizeof(err));
	if (ret)
		return ctl_err(ret, "%s", err);
	st = ctl_open(&h);
	if (st)
		return st;
	ret = sluice_cmd_apply_file(&h, path, err, sizeof(err));
	sluice_close(&h);
	return ret ? ctl_err(ret, "%s", err) : SLUICE_EXIT_OK;
}
