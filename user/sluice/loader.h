/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The loader `sluice`: what its subcommands (attach.c detach.c status.c
 * run.c) share. main.c dispatches; common.c holds the shared helpers.
 */
#ifndef SLUICE_LOADER_H
#define SLUICE_LOADER_H

#include <stdbool.h>
#include <net/if.h>
#include <linux/types.h>
#include <xdp/libxdp.h>

#include "libsluice.h"

/* ---- main.c ---- */

extern bool json_output; /* -j: results and errors as JSON on stdout */
extern bool verbose; /* -v */

/* An error for the user: "sluice: <msg>" on stderr, or {"error": "<msg>"}
 * on stdout under -j. */
void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A usage error: the message, then where to read more. Returns SLUICE_EXIT_USAGE. */
int usage_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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

void attach_usage(FILE *f);
void detach_usage(FILE *f);
void status_usage(FILE *f);
void run_usage(FILE *f);
void reload_usage(FILE *f);

/* ---- the fleet agent of run (fleet.c) ---- */

struct fleet_opts {
	const char *redis; /* --redis ADDR: NULL, no agent */
	const char *fleet; /* --fleet NAME */
	const char *password_file; /* --redis-password-file */
	const char *member; /* --fleet-member ID: default HOSTNAME/IFACE */
	__u64 sync_ns; /* --sync-interval */
	__u64 timeout_ns; /* --redis-timeout */
	__u64 max_keys; /* --sync-keys */
	__u64 member_ttl_ms; /* a box not heard from for this long is not counted */
	__u32 batch; /* --redis-batch: keys per script call */
	__u32 fleet_size; /* --fleet-size: N is at least this */
	__u32 fleet_max; /* --fleet-max: a count of boxes above it fails the sync */
};

#define FLEET_DEFAULT_SYNC_NS (100ULL * 1000000ULL)
#define FLEET_DEFAULT_BATCH 256
#define FLEET_DEFAULT_MAX 1024 /* --fleet-max (or --fleet-size, if more) */

/* run's fleet options, parsed by fleet_opts.c in this order */
enum {
	FLEET_OPT_REDIS,
	FLEET_OPT_FLEET,
	FLEET_OPT_PASSWORD,
	FLEET_OPT_MEMBER,
	FLEET_OPT_SYNC,
	FLEET_OPT_TIMEOUT,
	FLEET_OPT_KEYS,
	FLEET_OPT_BATCH,
	FLEET_OPT_SIZE,
	FLEET_OPT_MAX,
	FLEET_NR_OPTS,
};
int fleet_parse_opt(int which, const char *arg, struct fleet_opts *o, char *err, size_t errlen);
/* After every option: --fleet with --redis, the address, the defaults. */
int fleet_check_opts(struct fleet_opts *o, char *err, size_t errlen);
/* Before anything is attached: the password file as the agent will read it
 * (-errno and why: a file problem, not a usage error). */
int fleet_check_files(const struct fleet_opts *o, char *err, size_t errlen);
extern const char *const fleet_opt_help;

struct fleet_agent;
/* Start the agent on the limiter of ifname (attached). A refused password
 * fails; an unreachable Redis starts in an outage (rate/N), said once. */
int fleet_start(const struct fleet_opts *o, const char *ifname, struct fleet_agent **out,
		char *err, size_t errlen);
/* "; fleet NAME synced, 3 boxes, rtt 0.4 ms" for run's report ("" for none). */
void fleet_report(const struct fleet_agent *a, char *buf, size_t len);
/* Stop, leaving the state "stopped" (rate/N until an agent runs again). */
void fleet_stop(struct fleet_agent *a);

/* ---- attach options, shared by attach and run (common.c) ---- */

#define SET_ARGV_MAX 32

/* --table: the key table of a new state */
enum attach_table {
	ATTACH_TABLE_UNSET, /* not given: a new state's is LRU, a pinned one's stays */
	ATTACH_TABLE_LRU,
	ATTACH_TABLE_SETS,
};

struct attach_opts {
	char ifname[IF_NAMESIZE];
	/* the state's name: ifname, or shape:IFACE for a shaper (pins, handle) */
	char name[SLUICE_STATE_NAME_MAX];
	bool shape; /* sluice shape attach: tc egress and fq, not XDP */
	/* shape only */
	__u32 key_kind; /* SLUICE_KIND_KEY_DST with --key dst */
	bool key_given;
	__u64 horizon_ns; /* --horizon; 0: from the policies */
	__u64 queue_limit; /* --queue-limit; 0: from the policies */
	unsigned int ifindex;
	enum xdp_attach_mode mode; /* XDP_MODE_NATIVE unless --mode */
	bool mode_given;
	/* --rate --burst --algo --window --prefix4 --prefix6 --new-keys
	 * --fail-closed/--fail-open as one "set" editing command
	 * (user/lib/cmd.h), argv[0] = "set" */
	char *set_argv[SET_ARGV_MAX];
	int set_argc;
	__u64 max_keys, max_log_keys, max_rules, fleet_keys; /* 0: not given */
	enum attach_table table; /* --table */
	const char *config; /* --config FILE */
	bool resume, fresh; /* --resume, --fresh */
	bool run_owned; /* set by run: the attach is run's, which detaches on exit */
	bool resumed_kept; /* out: attach resumed a state kept by detach --keep-state */
	/* run only */
	bool keep_state;
	__u64 interval_ns;
	struct fleet_opts fleet;
	const char *metrics; /* ADDR:PORT or unix:PATH */
	const char *metrics_allow; /* --metrics-allow CIDR,...: NULL, any source */
	const char *metrics_group; /* --metrics-group: the unix socket's group */
};

/*
 * Parse the options of `cmd` ("attach", "run" or "shape attach"; run also
 * takes --interval, --metrics, --keep-state and the fleet's; shape attach
 * --delay, --nodelay, --key, --horizon and --queue-limit; all take --table) and
 * the one IFACE. Prints the problem and
 * returns SLUICE_EXIT_USAGE on a bad option or value, -1 when help was
 * printed (exit 0), 0 otherwise.
 */
int parse_attach_opts(const char *cmd, int argc, char **argv, struct attach_opts *o);

/* Attach (or upgrade) as the options say; prints what it did. Returns an
 * exit status. On failure nothing this call created is left behind. */
int sluice_attach(struct attach_opts *o);

/* Detach the state `name` (IFACE, or shape:IFACE: the shaper of IFACE);
 * remove the pinned state unless keep_state. Returns an exit status. */
int sluice_detach(const char *ifname, bool keep_state, bool quiet);

/* Make IFACE's settings and rules exactly what the file at path says
 * (reload.c); prints a summary. Returns an exit status. */
int sluice_reload(const char *ifname, const char *path);
/* /etc/sluice/IFACE.conf */
void default_config_path(const char *ifname, char *buf, size_t len);

/* A name the kernel could give an interface (and safe in a pin path). */
bool valid_ifname(const char *name);
/* A usage error for a shape:IFACE given to a limiter's command (run,
 * reload, attach): 0 when name is not one. */
int refuse_shape_name(const char *cmd, const char *name);

/* ---- the shaper: sluice shape (shape.c, shape_status.c) ---- */

/* Its cls_bpf filter on clsact's egress hook: always this handle and priority
 * (a priority after an operator's usual ones: their filters run first). */
#define SHAPE_TC_HANDLE 0x51ce
#define SHAPE_TC_PRIO 0x51ce
#define SHAPE_PROG_NAME "sluice_tc"

int do_shape(int argc, char **argv);
void shape_usage(FILE *f);
/* What sluice's filter on IFACE's egress runs: prog_id 0 when none; other_id
 * a program at sluice's handle and priority that is not sluice's. */
struct shape_hook {
	__u32 prog_id;
	__u32 other_id;
	char other_name[BPF_OBJ_NAME_LEN];
};
int shape_find(unsigned int ifindex, struct shape_hook *sh);
/* Detach's steps for shape:IFACE: remove sluice's filter when its program is
 * the one pinned in dir (1: removed, 0: none there, or -errno), then delete
 * sluice's root fq (the kernel puts its default back) and the clsact when
 * cfg says sluice made it and no filter is left on it. */
int shape_detach_filter(const char *ifname, unsigned int ifindex, const char *dir, char *err,
			size_t errlen);
int shape_restore_qdiscs(const char *ifname, unsigned int ifindex, struct sluice_config *cfg,
			 bool has_cfg, char *err, size_t errlen);
/* The shaper's lines of sluice status: the qdisc and the delay counters
 * (shape_status.c). */
/* "850 ns", "12.5 us", "3.2 ms", "2.50 s" */
void shape_fmt_ns(__u64 ns, char *buf, size_t len);
void shape_status_text(unsigned int ifindex, const struct sluice_handle *h);
void shape_status_json(struct sluice_json *j, unsigned int ifindex, const struct sluice_handle *h);
/* detach and status for the limiter ("detach", "status") and the shaper
 * ("shape detach", "shape status"), argv[0] the subcommand's name. */
int detach_cmd(const char *cmd, bool shape, int argc, char **argv);
int status_cmd(const char *cmd, bool shape, int argc, char **argv);

/* ---- the Prometheus server of run (metrics.c) ---- */

struct metrics_server;
/* Listen on ADDR:PORT ("127.0.0.1:9100", "[::1]:9100", port 0: any free
 * one) or unix:PATH (mode 0600, or 0660 for group's members when group is
 * given), serving nothing yet; allow (NULL: any) lists the sources that may
 * connect over TCP ("127.0.0.1,198.18.0.0/24"). Returns 0,
 * SLUICE_EXIT_USAGE when the text is not ADDR:PORT, or SLUICE_EXIT_RUNTIME
 * when it cannot listen, with err saying why (and, for bind errors, what to
 * do). */
int metrics_open(const char *spec, const char *allow, const char *group,
		 struct metrics_server **m, char *err, size_t errlen);
/* "http://127.0.0.1:41234/metrics": the address and port as bound. */
const char *metrics_url(const struct metrics_server *m);
/* Serve the counters of ifname (sluice_prometheus()) from threads of the
 * server's own, on a handle of its own: the caller never waits for a
 * client. 0 or -errno. */
int metrics_start(struct metrics_server *m, const char *ifname, char *err, size_t errlen);
/* Stop serving, close every connection and the socket, free m (may be NULL). */
void metrics_close(struct metrics_server *m);
/* The interface was renamed: label the counters with its new name (m may
 * be NULL). */
void metrics_rename(struct metrics_server *m, const char *ifname);

/* ---- finding sluice on an interface (common.c) ---- */

#define SLUICE_PROG_NAME "sluice_xdp"
/* Where a new program is pinned before it is renamed over SLUICE_PROG_PIN
 * (bpffs refuses names with a dot). */
#define PROG_PIN_NEW SLUICE_PROG_PIN "_new"

struct attachment {
	__u32 prog_id; /* the attached sluice program; 0: none */
	__u32 top_id; /* the program attached at the interface: ours, or the dispatcher */
	int slot; /* ours in the dispatcher: component N (its pin progN-prog); -1: none */
	enum xdp_attach_mode mode; /* how the interface's program is attached */
	bool dispatcher; /* ours is one component of libxdp's dispatcher */
	__u32 nr_progs; /* programs on the interface (dispatcher components, or 1) */
	__u32 other_id; /* a program that is not sluice's, attached directly */
	char other_name[BPF_OBJ_NAME_LEN];
};

/* What is attached to ifindex; 0 or -errno. Leaves no fd open (see
 * common.c on libxdp). */
int find_attachment(unsigned int ifindex, struct attachment *a);
/* Is a sluice program still attached to ifindex, as a (from
 * find_attachment()) says? 1 or 0, and a brought up to date, or -errno.
 * While nothing changed on the interface, one netlink question and at most
 * one stat(): for a loop that asks every interval. */
int attachment_check(unsigned int ifindex, struct attachment *a);
const char *mode_name(enum xdp_attach_mode mode);

/* Serialize attach, detach and reload (of any interface of the caller's
 * namespace) across processes: a timed flock() on the namespace's pin root,
 * created if missing. Returns the fd or -errno. */
int lock_pin_root(char *err, size_t errlen);
void unlock_pin_root(int fd);

/* The pinned maps, in one place (common.c says what added_later means). */
struct sluice_map_spec {
	const char *name;
	bool added_later; /* created by attach when an existing state lacks it */
};
#define SLUICE_MAX_MAPS 16
extern const struct sluice_map_spec sluice_maps[];
extern const size_t sluice_nr_maps;

/* Remove every pin (maps and program) in the pin directory dir, and dir. */
int remove_pins(const char *dir, char *err, size_t errlen);

/* ---- whose state it is (owner.c) ---- */

enum resume_kind {
	RESUME_NONE, /* nothing pinned: a fresh state */
	RESUME_UPGRADE, /* sluice runs on the interface: replace the program */
	RESUME_KEPT, /* kept for this interface by detach --keep-state */
	RESUME_ADOPT, /* --resume over a state that is not plainly this one's */
	RESUME_DROP, /* --fresh over a pinned state: removed, start empty */
};

struct resume_plan {
	enum resume_kind kind;
	char why[300]; /* ADOPT, DROP: why the state was not plainly ours */
};

/* What attach makes of cfg (NULL: nothing pinned) for ifname (ifindex
 * now): 0 and a plan, or -EEXIST and a message naming --resume and --fresh. */
int plan_resume(const char *ifname, unsigned int ifindex, const struct sluice_config *cfg,
		bool prog_attached, bool resume, bool fresh, struct resume_plan *p, char *err,
		size_t errlen);
/* Record ifindex of the caller's namespace as the owner, in state life. */
void owner_set(struct sluice_config *cfg, unsigned int ifindex, __u32 life);
/* "3 rules, 1200 keys, counters since 2026-12-01 09:00:00"; the creation
 * time from before when given (the config as it was before this call). */
void describe_state(struct sluice_handle *h, const struct sluice_config *before, char *buf,
		    size_t len);
/* "kept by 'sluice detach --keep-state' at ..." */
void describe_kept(const struct sluice_config *cfg, char *buf, size_t len);
/* One `sluice run` per interface: claim it (an fd to keep open, or
 * -EWOULDBLOCK when another run has it, or -errno with err saying why);
 * give it up; the pid of the run that has it (0: none; -1: one whose pid
 * is not known); remove a claim a killed run left (detach). */
int run_claim(unsigned int ifindex, char *err, size_t errlen);
void run_release(unsigned int ifindex, int fd);
int run_holder(unsigned int ifindex);
void run_drop_stale(unsigned int ifindex);

/* The summary lines of attach and reload: the default policy with both
 * values of every limit (sluice_policy_text()) and the settings:
 * "  policy: limit token-bucket 100/s burst 100, keyed by ...". */
void print_policy_line(struct sluice_handle *h);

#endif /* SLUICE_LOADER_H */
