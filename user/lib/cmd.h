/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The editing commands of sluicectl (set, rule add, rule del), usable on a
 * transaction by the ctl tool, by batch files and by `sluice attach --config`.
 *
 *   set [--rate RATE [--burst N]]... [--algo ALGO] [--window DUR]
 *       [--prefix4 LEN] [--prefix6 LEN] [--dry-run on|off]
 *   rule add CIDR (--rate RATE [--burst N]... [--algo ALGO] [--window DUR]
 *       [--prefix LEN] | --exempt | --deny) [--dry-run [on|off]]
 *   rule del CIDR
 *
 * --rate may be given twice, once as a packet rate and once as a byte rate:
 * a packet then passes only if both admit it. A --burst belongs to the --rate
 * before it (or, when it comes first, to the first --rate after it); for a
 * byte rate it counts bytes. None of these functions prints or exits.
 */
#ifndef SLUICE_CMD_H
#define SLUICE_CMD_H

#include "libsluice.h"

/*
 * Parse one editing command (argv[0] is "set" or "rule") and apply it to the
 * transaction's copy. Returns 0, -EINVAL for a usage error (err says what),
 * or another -errno (-ENOENT: rule del of a rule that does not exist).
 * Nothing is live until sluice_txn_commit().
 */
int sluice_cmd_edit(struct sluice_txn *t, int argc, char **argv, char *err, size_t errlen);

/*
 * Check one editing command without an interface: syntax, every value, and
 * whatever does not depend on the live settings (a `set` that only changes
 * part of a policy is checked against it by sluice_cmd_edit). 0 or -EINVAL.
 * Lets a caller refuse bad input before it needs a pinned interface.
 */
int sluice_cmd_check(int argc, char **argv, char *err, size_t errlen);

/*
 * Apply a file of editing commands, one per line, '#' comments and blank
 * lines allowed: every line is parsed and checked first, then all of them
 * are made live in one commit. On any error nothing changes, and err names
 * the file and line. -EINVAL for a bad line, another -errno otherwise.
 */
int sluice_cmd_apply_file(struct sluice_handle *h, const char *path, char *err, size_t errlen);

/* Apply the lines of a file to an open transaction, without committing. */
int sluice_cmd_edit_file(struct sluice_txn *t, const char *path, char *err, size_t errlen);

/* sluice_cmd_check() for every line of a file; err names the file and line. */
int sluice_cmd_check_file(const char *path, char *err, size_t errlen);

#endif /* SLUICE_CMD_H */
