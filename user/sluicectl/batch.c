// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl -b FILE: many edits, checked first, made live in one change. */
#include <errno.h>
#include <stdio.h>

#include "sluicectl.h"
#include "cmd.h"

void batch_help(FILE *f)
{
	fprintf(f, "Usage: sluicectl [-i IFACE] -b FILE\n"
		   "\n"
		   "Apply the editing commands of FILE, one per line, without the 'sluicectl':\n"
		   "  set ..., rule add ..., rule del ..., rule flush\n"
		   "Blank lines are ignored, and so is everything after a word that starts\n"
		   "with '#'. FILE is read once, so it may be a pipe, or '-' for standard\n"
		   "input: ... | sluicectl -b -. Every line is checked first (nothing changes\n"
		   "if one is wrong, and the error names FILE:LINE); then all of them become\n"
		   "live at once: a packet sees the settings before the file or after it,\n"
		   "never in between. A file being written (changing while it is read) is\n"
		   "refused: replace a file by writing a new one and renaming it into place.\n"
		   "\n"
		   "Example file:\n"
		   "  # default: 200 packets/s and 20 Mbit/s per source\n"
		   "  set --rate 200/s --rate 20mbit --burst 400\n"
		   "  rule flush                             # the rules are these, no others\n"
		   "  rule add 198.18.0.0/24 --rate 10/s     # a noisy lab\n"
		   "  rule add 198.19.0.0/16 --exempt\n");
}

int do_batch(const char *path)
{
	char err[SLUICE_ERR_LEN];
	struct sluice_cmd_file *f;
	struct sluice_handle h;
	struct sluice_txn t;
	int ret, st;

	/* Read once: bad lines are usage errors whether or not sluice is
	 * attached, and a pipe has nothing left to give a second read. */
	ret = sluice_cmd_input_read(path, &f, err, sizeof(err));
	if (ret)
		return sluice_cli_err(sluice_cmd_file_err_is_usage(ret) ? -EINVAL : ret, "%s", err);
	st = ctl_open_write(&h);
	if (st)
		goto out_free;
	ret = sluice_txn_begin(&h, &t, err, sizeof(err));
	if (!ret) {
		ret = sluice_cmd_file_edit(&t, f, err, sizeof(err));
		if (!ret && sluice_cmd_file_nr(f))
			ret = sluice_txn_commit(&t, err, sizeof(err));
		sluice_txn_end(&t);
	}
	sluice_close(&h);
	st = ret ? sluice_cli_err(ret, "%s", err) : SLUICE_EXIT_OK;
out_free:
	sluice_cmd_file_free(f);
	return st;
}
