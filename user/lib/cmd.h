/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The editing commands of sluicectl (set, rule add, rule del), usable on a
 * transaction by the ctl tool, by batch files and by `sluice attach --config`.
 */
#ifndef SLUICE_CMD_H
#define SLUICE_CMD_H

#include "libsluice.h"

/*
 * Parse one editing command (argv[0] is "set" or "rule") and apply it to the
 * transaction's copy. Returns 0, -EINVAL for a usage error (err says what),
 * or another -errno. Nothing is live until sluice_txn_commit().
 */
int sluice_cmd_edit(struct sluice_txn *t, int argc, char **argv, char *err, size_t errlen);

/*
 * Apply a file of editing commands, one per line, '#' comments and blank
 * lines allowed: every line is parsed and checked first, then all of them
 * are made live in one commit. On any error nothing changes, and err names
 * the file and line. -EINVAL for a bad line, another -errno otherwise.
 */
int sluice_cmd_apply_file(struct sluice_handle *h, const char *path, char *err, size_t errlen);

#endif /* SLUICE_CMD_H */
