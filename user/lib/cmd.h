/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The editing commands of sluicectl (set, rule add, rule del, rule flush),
 * usable on a transaction by the ctl tool, by batch files and by config files
 * (`sluice attach --config`, `sluice reload`).
 *
 *   set [--rate RATE [--burst N] [--delay N|--nodelay]]... [--algo ALGO] [--window DUR]
 *       [--prefix4 LEN] [--prefix6 LEN] [--key MODE] [--fleet on|off] [--penalty DUR|off]
 *       [--dry-run on|off] [--new-keys RATE|off] [--fail-closed on|off]
 *   rule add CIDR [MATCH] ((--rate RATE [--burst N] [--delay N|--nodelay])...
 *       [--algo ALGO] [--window DUR] [--prefix LEN] [--key MODE] [--penalty DUR|off] | --exempt |
 *       --deny) [--fleet [on|off]] [--dry-run [on|off]]
 *   rule del CIDR [MATCH]
 *   MATCH: [--proto P] [--sport P[-Q]] [--dport P[-Q]] [--tcp-flags F]
 *       [--icmp-type T[/C]] (match.h): a rule that matches on the transport
 *       header too; such rules are evaluated first (sluice_l4rule_cmp()),
 *       and a CIDR may have one rule of each match
 *   rule flush
 *
 * --rate may be given twice, once as a packet rate and once as a byte rate:
 * a packet then passes only if both admit it. A --burst belongs to the --rate
 * before it (or, when it comes first, to the first --rate after it); for a
 * byte rate it counts bytes. --delay and --nodelay (a shaper's only: sluice
 * shape) belong to a --rate the same way. --dry-run, --new-keys and --fail-closed of set
 * are settings of the interface: given alone they leave the default policy
 * as it is. --new-keys admits at most RATE new sources (a packet rate, with
 * one second's worth at once), as `sluice attach --new-keys` does. --penalty
 * (100ms to 19d, in tenths of a second rounded up; 0 or off: none) boxes a
 * key of the policy that goes over its limit for that long. --key MODE (src,
 * the default; src,dport; flow) is what the policy's keys hold besides the
 * masked source (keyspec.h): a new mode gives the policy a new tag, as a
 * new prefix does; a rule's is src unless given, whatever the default's.
 * None of these
 * functions prints or exits.
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

/* What one editing command did, for the summary its caller prints. */
enum sluice_cmd_op {
	SLUICE_CMD_SET,
	SLUICE_CMD_RULE_ADD,
	SLUICE_CMD_RULE_DEL,
	SLUICE_CMD_RULE_FLUSH,
};
struct sluice_cmd_done {
	enum sluice_cmd_op op;
	struct sluice_cidr cidr; /* rule add, rule del */
	bool has_match; /* ... of a rule that matches on the transport header: */
	struct sluice_match match;
	bool policy_changed; /* set: an option of the default policy was given */
	bool settings_given; /* set: --dry-run, --fail-closed or --new-keys */
	bool replaced; /* rule add: the CIDR had a rule, now replaced */
	bool buckets_kept; /* the policy's sources keep their buckets (same tag) */
	/* a --rate given without --burst: its burst is one second's worth
	 * (sluice_default_burst()), [0] the packet rate's, [1] the byte rate's */
	bool burst_default[2];
};
/* sluice_cmd_edit(), saying what it did in *done (may be NULL). */
int sluice_cmd_edit_done(struct sluice_txn *t, int argc, char **argv, struct sluice_cmd_done *done,
			 char *err, size_t errlen);

/*
 * Check one editing command without an interface: syntax, every value, and
 * whatever does not depend on the live settings (a `set` that only changes
 * part of a policy is checked against it by sluice_cmd_edit). 0 or -EINVAL.
 * Lets a caller refuse bad input before it needs a pinned interface.
 */
int sluice_cmd_check(int argc, char **argv, char *err, size_t errlen);
/*
 * sluice_cmd_check() cannot know whose state an edit is for: it takes one
 * with a shaper's option (--delay, --nodelay) for a shaper's, any other for
 * a limiter's (--burst 0 refused). A caller that knows says it: shape true
 * for a shaper's state (--burst 0 taken), false for a limiter's (--delay
 * refused). sluice_cmd_edit() checks against the state itself.
 */
int sluice_cmd_check_kind(int argc, char **argv, bool shape, char *err, size_t errlen);

/*
 * Files of editing commands, one per line, '#' comments and blank lines
 * allowed. An input is read once, whole, and every line checked as it is
 * read, so what is applied is exactly what was checked.
 */
struct sluice_cmd_file; /* every line of one input, read once, checked */

/*
 * Read a config file (sluice attach --config, sluice reload, sluice run's
 * SIGHUP) whole and check every line with sluice_cmd_check(). It must be a
 * regular file (it is read again at every reload; a FIFO would block): any
 * other is -EINVAL, never waited for. A file is read while no process has it
 * open for writing and once it has settled (not modified for a moment): one
 * rewritten in place may be caught between its truncation and its last
 * write. One still open for writing or changing after a second, or changed
 * while it was read, is -EAGAIN, its message naming write-then-rename.
 * -EINVAL with "FILE:LINE: ..." for a bad line (or a file that does not
 * exist, is a directory or is not text), another -errno when it cannot be
 * read. On success *out is the file, for sluice_cmd_file_free(); on failure
 * it is NULL.
 */
int sluice_cmd_file_read(const char *path, struct sluice_cmd_file **out, char *err, size_t errlen);
/*
 * The same for an input of sluicectl -b: a regular file (checked the same
 * way), or a pipe, /dev/stdin, a FIFO, or "-" for standard input (named
 * "<stdin>" in messages), read to its end.
 */
int sluice_cmd_input_read(const char *path, struct sluice_cmd_file **out, char *err, size_t errlen);
/*
 * Whether an error of sluice_cmd_file_read() is the operator's to fix (exit
 * status 2): a bad line, or a path that cannot be opened as a file (missing,
 * a directory, a file where a directory should be, no permission, a loop of
 * links). What is left (an I/O error while reading, no memory) is runtime.
 */
bool sluice_cmd_file_err_is_usage(int ret);
/* How many commands it holds (lines that are not blank or comments). */
int sluice_cmd_file_nr(const struct sluice_cmd_file *f);
/*
 * Apply its commands in order on top of the transaction's copy (no commit).
 * On an error (err names FILE:LINE) the copy is left as it was before.
 */
int sluice_cmd_file_edit(struct sluice_txn *t, const struct sluice_cmd_file *f, char *err,
			 size_t errlen);

/* What sluice_cmd_file_replace() changed, for a summary. */
struct sluice_cmd_diff {
	unsigned int added, removed, changed, unchanged; /* rules */
	bool default_changed; /* the default policy */
	bool settings_changed; /* --new-keys, --fail-closed, --dry-run */
};

/*
 * Desired state: make the copy exactly what the file says. The settings
 * become the defaults (sluice_settings_init()) plus the file's commands, and
 * the rules exactly the file's (rules it does not have are removed). Every
 * bucket whose state format does not change is kept: the default policy and
 * the rule of a CIDR the copy had keep their tag when their algorithm,
 * window and key prefixes are the same, else get a new generation on the
 * same slot; a new CIDR gets a slot of its own. diff (may be NULL) says
 * what changed. On an error (err names FILE:LINE) the copy is unchanged.
 */
int sluice_cmd_file_replace(struct sluice_txn *t, const struct sluice_cmd_file *f,
			    struct sluice_cmd_diff *diff, char *err, size_t errlen);
void sluice_cmd_file_free(struct sluice_cmd_file *f);

#endif /* SLUICE_CMD_H */
