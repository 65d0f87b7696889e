/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The loader `sluice`'s command line: its -j and -v (cli.c; errors are
 * reported with log.h's sluice_cli_err() and sluice_cli_usage()), the
 * subcommands that main.c dispatches to, and what they offer each other.
 */
#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "libsluice.h"

extern bool json_output; /* -j: results and errors as JSON on stdout */
extern bool verbose; /* -v */

struct cmd {
	const char *name;
	int (*func)(int argc, char **argv);
};

/* -v, given before or after the command. */
void set_verbose(void);

/* ---- the subcommands: argv[0] is the subcommand's name ---- */

int do_attach(int argc, char **argv);
int do_detach(int argc, char **argv);
int do_status(int argc, char **argv);
int do_run(int argc, char **argv);
int do_reload(int argc, char **argv);
int do_shape(int argc, char **argv);

void attach_usage(FILE *f);
void detach_usage(FILE *f);
void status_usage(FILE *f);
void run_usage(FILE *f);
void reload_usage(FILE *f);
void shape_usage(FILE *f);

/* ---- what the subcommands offer each other ---- */

struct attach_target;
struct attach_opts;

/* Attach (or upgrade) the target t (xdp_target, shape_target: target.h) as
 * the options say; prints what it did. Returns an exit status. On failure
 * nothing this call created is left behind (attach.c). */
int sluice_attach(const struct attach_target *t, struct attach_opts *o);
/* The summary lines of attach and reload: the default policy with both
 * values of every limit (sluice_policy_text()) and the settings:
 * "  policy: limit token-bucket 100/s burst 100, keyed by ..." (attach.c). */
void print_policy_line(struct sluice_handle *h);

/* Detach the state `name` (IFACE, or shape:IFACE: the shaper of IFACE);
 * remove the pinned state unless keep_state. Returns an exit status
 * (detach.c). */
int sluice_detach(const char *ifname, bool keep_state, bool quiet);
/* The detach command of target t: "detach", or "shape detach" (argv[0]),
 * help its help. */
int detach_cmd(const char *cmd, const struct attach_target *t, void (*help)(void), int argc,
	       char **argv);
/* The status command (status.c): of every state, or only of target only's
 * ("shape status": IFACE then names shape:IFACE), usage its usage and none
 * what it says when there is none. */
int status_cmd(const char *cmd, const struct attach_target *only, void (*usage)(FILE *f),
	       const char *none, int argc, char **argv);

/* Make IFACE's settings and rules exactly what the file at path says
 * (reload.c); prints a summary. Returns an exit status. */
int sluice_reload(const char *ifname, const char *path);
/* /etc/sluice/IFACE.conf */
void default_config_path(const char *ifname, char *buf, size_t len);

#endif /* SLUICE_CLI_H */
