/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sluicectl: what its subcommands share. One file per object (set, rule,
 * stats, top, show, flush, batch); the helpers below each name their file
 * (dispatch.c, open.c, keystate.c, table.c, edit.c).
 */
#ifndef SLUICECTL_H
#define SLUICECTL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "libsluice.h"

/* Global options, read by main.c before the object. */
struct ctl_opts {
	const char *iface; /* -i, or NULL: the only attached interface */
	bool json; /* -j */
	bool shape; /* the state opened is a shaper's (set by ctl_open*()) */
};
extern struct ctl_opts ctl;

/* A command word and what runs it; argv starts after the word. */
struct ctl_cmd {
	const char *name;
	int (*func)(int argc, char **argv);
	/* It changes state (an edit, a flush): only its full name runs it. */
	bool changes;
};

/* ---- dispatch.c ---- */

/* Run the command argv[0] names; help is the fallback for a missing word.
 * A unique prefix names a command that only reads ("rule l"); one that
 * changes state must be written in full, so that a slip of one letter
 * ("r f") never removes anything. Returns the exit status. */
int ctl_dispatch(const char *object, const struct ctl_cmd *cmds, int argc, char **argv,
		 void (*help)(FILE *f));

/* Errors: sluice_cli_err() and sluice_cli_usage() (libsluice, log.h). */

/* ---- open.c ---- */

/* Resolve -i and open the pinned maps of this namespace's interface; on
 * failure report and return the exit status (nonzero). ctl_open() is for
 * readers: the state of a vanished interface is shown, with a warning.
 * ctl_open_write() refuses it (sluice_check_standing()). */
int ctl_open(struct sluice_handle *h);
int ctl_open_write(struct sluice_handle *h);

/* ---- watch.c ---- */

/* --watch's value v for command cmd: 100ms to 1h into *ns; 0, or the usage
 * error's exit status, reported (optional: the value may be left out). */
int ctl_parse_watch(const char *cmd, const char *v, bool optional, __u64 *ns);

/* Read the live policies (sluice_read_policies()); on failure report and
 * return the exit status (nonzero). */
int ctl_read_policies(struct sluice_handle *h, struct sluice_policies *pol, bool with_stats);

/* ---- keystate.c ---- */

/* The policy that owns a key's tag, NULL if none does any more (a key of
 * an older generation, waiting to be evicted); match gets its name. A
 * policy's second key (SLUICE_TAG_IS_ALSO()) is owned by the policy as a
 * token bucket of the second key's limit and prefixes (*buf, which the
 * result then points to; match says "(also)"). */
const struct sluice_policy *ctl_policy_of_key(const struct sluice_policies *pol,
					      const struct sluice_key *k, char *match, size_t len,
					      struct sluice_policy *buf);
/* The second key policy p names (pol->also), or NULL. */
const struct sluice_also *ctl_also(const struct sluice_policies *pol,
				   const struct sluice_policy *p);
/* p's second key as a policy of its own: a token bucket of its limit, keyed
 * by its prefixes, tagged as its keys are. */
void ctl_also_policy(const struct sluice_policy *p, const struct sluice_also *a,
		     struct sluice_policy *out);

/* A policy in words and in JSON: sluice_policy_text(), sluice_policy_json()
 * (libsluice, fmt.c), with ctl.shape for a shaper's. */

/* The state of one key in its algorithm's terms, at `now` (ticks). */
struct ctl_state {
	int algo;
	bool full; /* nothing charged yet: a fresh bucket */
	/* token/leaky bucket */
	__u64 pkt_left, pkt_cap, pkt_wait_ns;
	bool has_pkt, has_bytes;
	__u64 bytes_left, bytes_cap, bytes_wait_ns;
	/* windows: counts in the current and previous window */
	__u64 cur, prev, limit, next_window_ns;
	double estimate; /* sliding window: prev x (1 - elapsed/window) + cur */
	bool admits; /* would the next packet pass now */
	/* sliding log */
	__u64 used, free_in_ns;
	__u64 dropped;
	/* token/leaky bucket of a shaper (ctl.shape): the key's queue */
	bool shape;
	struct sluice_shape_queue pkt_q, bytes_q;
};
void ctl_state_of(const struct sluice_policy *p, const void *val, __u64 now, struct ctl_state *s);
/* "150/200 pkts left, next now" style summary for tables. */
void ctl_fmt_state(const struct ctl_state *s, char *buf, size_t len);
void ctl_json_state(struct sluice_json *j, const struct ctl_state *s);

/* A key as "198.18.0.5/32". */
void ctl_fmt_key(const struct sluice_key *k, char *buf, size_t len);
/* A key of either table as "198.18.0.5/32", "198.18.0.5/32 tcp/443" or a
 * flow's "198.18.0.5/32 > 198.18.1.1 tcp/40000>443" (sluice_fkey_text()). */
void ctl_fmt_fkey(const struct sluice_fkey *k, char *buf, size_t len);
/* Its fields beside "key" in JSON: key_mode (src, src,dport, flow), and a
 * wide key's proto, dport, and a flow's sport and dst. */
void ctl_json_fkey(struct sluice_json *j, const struct sluice_fkey *k);

/* ---- table.c ---- */

/* A text table with columns sized to fit. */
#define CTL_MAX_COLS 16
struct ctl_table {
	int ncols;
	const char *head[CTL_MAX_COLS];
	bool right[CTL_MAX_COLS]; /* numbers: right-aligned */
	char **cells;
	size_t nrows, cap;
};
void ctl_table_init(struct ctl_table *t, const char *const *head, const char *align);
int ctl_table_row(struct ctl_table *t, ...); /* ncols const char * */
void ctl_table_print(const struct ctl_table *t, FILE *f);
void ctl_table_free(struct ctl_table *t);

/* ---- the objects, one file each (set.c, rule.c, stats.c, ...) ---- */

int do_set(int argc, char **argv);
int do_rule(int argc, char **argv);
int do_stats(int argc, char **argv);
int do_top(int argc, char **argv);
int do_show(int argc, char **argv);
int do_flush(int argc, char **argv);
int do_batch(const char *path);
void set_help(FILE *f);
void rule_help(FILE *f);
void stats_help(FILE *f);
void top_help(FILE *f);
void show_help(FILE *f);
void flush_help(FILE *f);
void batch_help(FILE *f);

/* ---- edit.c ---- */

/* Run one editing command (set, rule add, rule del) as its own transaction:
 * the words object [verb] and then argv; a help word first prints help. */
int ctl_edit(const char *object, const char *verb, int argc, char **argv, void (*help)(FILE *f));

#endif /* SLUICECTL_H */
