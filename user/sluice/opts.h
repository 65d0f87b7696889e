/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The options of the commands that attach (opts.c): sluice attach, sluice
 * shape attach and sluice run, read from one table in which each option
 * names the commands that take it; and the names they take.
 */
#ifndef SLUICE_OPTS_H
#define SLUICE_OPTS_H

#include <stdbool.h>
#include <net/if.h>
#include <linux/types.h>
#include <xdp/libxdp.h>

#include "libsluice.h"
#include "agent.h"

#define SET_ARGV_MAX 32

/* --table: the key table of a new state */
enum attach_table {
	ATTACH_TABLE_UNSET, /* not given: a new state's is sets, a pinned one's stays */
	ATTACH_TABLE_LRU,
	ATTACH_TABLE_SETS,
};

/* The XDP limiter's: sluice attach, sluice run. */
struct xdp_opts {
	enum xdp_attach_mode mode; /* XDP_MODE_NATIVE unless --mode */
	bool mode_given;
};

/* The shaper's: sluice shape attach. */
struct shape_opts {
	__u32 key_kind; /* SLUICE_KIND_KEY_DST with --key dst */
	bool key_given;
	__u64 horizon_ns; /* --horizon; 0: from the policies */
	__u64 queue_limit; /* --queue-limit; 0: from the policies */
};

/* What every attach takes (sluice_attach()), and the target's own. */
struct attach_opts {
	char ifname[IF_NAMESIZE];
	/* the state's name: ifname, or shape:IFACE for a shaper (pins, handle) */
	char name[SLUICE_STATE_NAME_MAX];
	unsigned int ifindex;
	/* --rate --burst --algo --window --prefix4 --prefix6 --new-keys
	 * --fail-closed/--fail-open (and the shaper's --delay --nodelay) as
	 * one "set" editing command (user/lib/cmd.h), argv[0] = "set" */
	char *set_argv[SET_ARGV_MAX];
	int set_argc;
	__u64 max_keys, max_log_keys, max_rules, fleet_keys, max_flows; /* 0: not given */
	enum attach_table table; /* --table */
	const char *config; /* --config FILE */
	bool resume, fresh; /* --resume, --fresh */
	bool run_owned; /* set by run: the attach is run's, which detaches on exit */
	bool resumed_kept; /* out: attach resumed a state kept by detach --keep-state */
	struct xdp_opts xdp; /* sluice attach, sluice run */
	struct shape_opts shape; /* sluice shape attach */
};

/* sluice run: an attach's options, and the run's. */
struct run_opts {
	struct attach_opts attach;
	bool keep_state;
	__u64 interval_ns;
	struct fleet_opts fleet;
	const char *metrics; /* ADDR:PORT or unix:PATH */
	const char *metrics_allow; /* --metrics-allow CIDR,...: NULL, any source */
	const char *metrics_group; /* --metrics-group: the unix socket's group */
};

/* The commands of the option table: each option names those that take it. */
enum opts_cmd {
	OPTS_ATTACH = 1 << 0, /* sluice attach */
	OPTS_RUN = 1 << 1, /* sluice run */
	OPTS_SHAPE = 1 << 2, /* sluice shape attach */
};

/*
 * Parse the options of cmd into o (and, for OPTS_RUN, r, whose attach is o)
 * and the one IFACE. Prints the problem and returns SLUICE_EXIT_USAGE on a
 * bad option or value, -1 when help was asked for (exit 0), 0 otherwise.
 */
int parse_attach_opts(enum opts_cmd cmd, int argc, char **argv, struct attach_opts *o,
		      struct run_opts *r);

/* A name the kernel could give an interface (and safe in a pin path). */
bool valid_ifname(const char *name);
/* A usage error for a shape:IFACE given to a limiter's command (run,
 * reload, attach): 0 when name is not one. */
int refuse_shape_name(const char *cmd, const char *name);

#endif /* SLUICE_OPTS_H */
