/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * libsluice: what the loader, the ctl tool, the tests and the bench share.
 * Functions return 0 or -errno; those that take `err` write a sentence that
 * names what was wrong and what to do, for the caller to print.
 */
#ifndef SLUICE_LIBSLUICE_H
#define SLUICE_LIBSLUICE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <net/if.h>
#include <linux/pkt_sched.h>
#include <linux/types.h>
#include <sluice/maps.h>
#include <sluice/sluice.h>

/* ---- logging (log.c) ---- */

enum sluice_log_level { SLUICE_LOG_WARN, SLUICE_LOG_INFO, SLUICE_LOG_DEBUG };
void sluice_set_log_level(enum sluice_log_level level);
void sluice_log(enum sluice_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define pr_warn(...) sluice_log(SLUICE_LOG_WARN, __VA_ARGS__)
#define pr_info(...) sluice_log(SLUICE_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) sluice_log(SLUICE_LOG_DEBUG, __VA_ARGS__)
/* Route libbpf's and libxdp's messages through ours: only shown under -v. */
void sluice_quiet_libs(void);

/* Exit statuses of both binaries. */
#define SLUICE_EXIT_OK 0
#define SLUICE_EXIT_RUNTIME 1
#define SLUICE_EXIT_USAGE 2

#define SLUICE_ERR_LEN 512

/* An error for the user: "PROG: MSG" on stderr, or {"error": "MSG"} on stdout
 * under -j (json). */
void sluice_report(const char *prog, bool json, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* A usage error: the message and where to read more, "(see 'PROG WHAT help')",
 * or "(see 'PROG help')" when what is NULL. Returns SLUICE_EXIT_USAGE. */
int sluice_report_usage(const char *prog, bool json, const char *what, const char *fmt,
			va_list ap) __attribute__((format(printf, 4, 0)));
/* "help", "-h" and "--help" all ask for help. */
bool sluice_is_help(const char *word);

/* Write a message into err (when there is room for one) and return ret:
 * `return sluice_err(err, errlen, -EINVAL, "rate '%s' is zero", s);` */
int sluice_err(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- parsing of command-line values (parse.c) ---- */

/* A rate: `count` packets (or bytes, when is_bytes) per `period_ns`. */
struct sluice_rate {
	__u64 count;
	__u64 period_ns;
	bool is_bytes;
};

/* Packets: 100/s 6000/m 1/h 100pps. Bytes: 10mbit 1gbit 500kbps 2mbps 1000bps
 * (bit units are converted to bytes exactly, or refused if not a whole number
 * of bytes per second). */
int sluice_parse_rate(const char *s, struct sluice_rate *rate, char *err, size_t errlen);
/* A positive integer no larger than max, for --burst, -n, --max-keys. */
int sluice_parse_uint(const char *what, const char *s, __u64 max, __u64 *out, char *err,
		      size_t errlen);
/* A count, or a byte size as tc writes one: 1514, 64k, 2m, 1g (k, m, g: 1024,
 * 1024^2, 1024^3 bytes; kb, mb, gb the same). 0 is taken (the caller
 * refuses it where it means nothing); *sized says a unit was given, which
 * only a byte limit's --burst and --delay take. */
int sluice_parse_size(const char *what, const char *s, __u64 max, __u64 *out, bool *sized,
		      char *err, size_t errlen);
/* A duration: 100ms 1s 1m 1h (bare numbers are seconds); -ERANGE for one
 * too long to read. */
int sluice_parse_duration(const char *what, const char *s, __u64 *ns, char *err, size_t errlen);
/* token-bucket | leaky-bucket | sliding-window | fixed-window | sliding-log */
int sluice_parse_algo(const char *s, char *err, size_t errlen); /* enum or -EINVAL */
const char *sluice_algo_name(unsigned int algo);
/* sliding-window, fixed-window and sliding-log: a count per window, no burst. */
bool sluice_algo_is_window(unsigned int algo);
/* Every word and unit is lower case ("on", "lru", "token-bucket", "100/s",
 * "10mbit", "1.5s"): of names[], the one word is in another case of (for a
 * message that says what to write), or NULL. */
const char *sluice_case_hint(const char *word, const char *const *names, size_t n);
/* on|off */
int sluice_parse_onoff(const char *what, const char *s, bool *out, char *err, size_t errlen);

struct sluice_cidr {
	__u8 family; /* 4 or 6 */
	__u8 prefixlen; /* address bits */
	__u8 addr[16] __attribute__((aligned(8))); /* IPv4 in the first 4 bytes, masked */
};
/* An address (a host prefix) or CIDR; bits past the prefix must be zero. */
int sluice_parse_cidr(const char *s, struct sluice_cidr *c, char *err, size_t errlen);
int sluice_parse_addr(const char *s, struct sluice_cidr *c, char *err, size_t errlen);
/* "198.18.0.0/15", "2001:2::/48"; with_len false prints the address alone. */
void sluice_format_cidr(const struct sluice_cidr *c, bool with_len, char *buf, size_t len);
void sluice_mask(__u8 *addr, unsigned int prefixlen);
/* A human rate: "100/s", "10mbit" style, as the user would write it. */
void sluice_format_rate(const struct sluice_limit *l, bool is_bytes, char *buf, size_t len);
/* A duration in the largest unit it is a whole number of ("1h", "10s",
 * "1500ms"), else rounded: "1.234s", "2.5ms", "3.1us", "7ns". */
void sluice_format_duration(__u64 ns, char *buf, size_t len);

/* ---- policy derivation (policy.c) ---- */

/* Set l from a rate and a burst; refuses rates or bursts whose arithmetic
 * would overflow the datapath's u64s, with a message saying which. */
int sluice_limit_set(struct sluice_limit *l, __u64 count, __u64 period_ns, __u64 burst,
		     char *err, size_t errlen);
/* The same for a byte rate (burst in bytes): the tolerance is exactly what
 * `burst` bytes cost, since bytes are charged a whole packet at a time. */
int sluice_limit_set_bytes(struct sluice_limit *l, __u64 count, __u64 period_ns, __u64 burst,
			   char *err, size_t errlen);
/* Fill the window fields of p from a rate (count per period = per window). */
int sluice_window_set(struct sluice_policy *p, __u64 count, __u64 period_ns, char *err,
		      size_t errlen);
/* Check p is self-consistent for its algorithm (e.g. sliding-log limit <= 64,
 * byte limits only with the bucket algorithms). */
int sluice_policy_check(const struct sluice_policy *p, char *err, size_t errlen);
/* Do a and b read their sources' state the same way (algorithm, window,
 * key prefixes)? Then a change from one to the other keeps the buckets. */
bool sluice_same_state_format(const struct sluice_policy *a, const struct sluice_policy *b);
/*
 * A shaper's token/leaky bucket limit l with `delay` excess units going at
 * once (SLUICE_NODELAY: all): the longest a packet it accepts waits, in ns,
 * tolerance - delay x interval (0 with --nodelay).
 */
__u64 sluice_shape_longest_ns(const struct sluice_limit *l, __u32 delay);
/* The queue of a shaper's key on limit l, from its TAT (ticks) at `now`,
 * as the datapath would treat the next packet (algo.h, sluice_gcra_shape()):
 * base = max(TAT, now); ahead = base - now; the next packet is accepted
 * while ahead <= tolerance and waits max(0, ahead - delay x interval). */
struct sluice_shape_queue {
	__u64 ahead_units; /* packets (bytes) queued ahead, rounded up */
	__u64 ahead_ns; /* base - now */
	__u64 delay_ns; /* the delay the next packet would get */
	bool accepts; /* whether the next packet would be accepted (else dropped) */
};
void sluice_shape_queue(const struct sluice_limit *l, __u32 delay, __u64 tat, __u64 now,
			struct sluice_shape_queue *q);
/* The default policy's rate: --rate 100/s, packets per second. */
#define SLUICE_DEFAULT_RATE 100
/* Fresh default settings: token bucket 100/s burst 100 (its burst by
 * sluice_default_burst(), as any --rate without --burst), /32 and /64 keys. */
void sluice_settings_init(struct sluice_settings *s);
/* A policy's default burst for a rate when --burst is not given: one
 * second's worth of the rate, at least 1. */
__u64 sluice_default_burst(__u64 count, __u64 period_ns);

/* ---- network namespaces, and where their pins live (netns.c) ---- */

struct sluice_netns {
	__u64 ino; /* the nsfs inode of the caller's network namespace */
	__u64 cookie; /* its SO_NETNS_COOKIE; 0 where the kernel has none */
	bool initial; /* the initial namespace: pins in SLUICE_PIN_ROOT/IFACE */
	char root[128]; /* SLUICE_PIN_ROOT, or SLUICE_PIN_ROOT/netns:INODE */
};
/* The caller's network namespace (read once, then cached). */
int sluice_netns_self(struct sluice_netns *ns, char *err, size_t errlen);
/* Is o's namespace this one? */
bool sluice_netns_same(const struct sluice_netns *ns, const struct sluice_owner *o);
/* Where namespace ino (or the initial one) is, and how to run cmd there:
 * "network namespace net:[INO] ('ip netns' name N): run 'nsenter --net=... CMD'". */
void sluice_netns_where(__u64 ino, bool initial, const char *cmd, char *buf, size_t len);
/* How many other namespaces have a limiter on an interface called ifname;
 * buf says where the first one is (sluice_netns_where()). */
int sluice_netns_elsewhere(const char *ifname, const char *cmd, char *buf, size_t len);

/* The command line of this process, for messages that say "run 'nsenter
 * ... <it>' there". Set once by main(). */
void sluice_set_cmdline(int argc, char **argv);
const char *sluice_cmdline(void);

/* ---- the writers' lock (lock.c) ---- */

/* flock() dir (mkdir it first when create) within SLUICE_LOCK_TIMEOUT
 * seconds (default 5); on timeout -EWOULDBLOCK and err names the holder.
 * Returns the locked fd (close() unlocks) or -errno. */
int sluice_lock_dir(const char *dir, bool create, char *err, size_t errlen);
/* The same on an open fd of dir; 0 or -errno. */
int sluice_lock_fd(int fd, const char *dir, char *err, size_t errlen);
/* The same, shared: for a reader that must see no writer at work. */
int sluice_lock_fd_shared(int fd, const char *dir, char *err, size_t errlen);

/* The pin root's lock (attach, detach, reload): the locked fd or -errno;
 * unlock closes it. sluice_pin_root_locked(): this process holds it. */
int sluice_lock_pin_root(char *err, size_t errlen);
void sluice_unlock_pin_root(int fd);
bool sluice_pin_root_locked(void);

/* A claim held for a process's life (one `sluice run` per interface): the
 * directory path (made 0700, in a directory only root may write) flock()ed
 * without waiting. Returns the fd to keep, -EWOULDBLOCK when another
 * process holds it, or -errno with err saying why. */
int sluice_claim(const char *path, char *err, size_t errlen);
/* Give it up (removes path). */
void sluice_claim_release(const char *path, int fd);
/* Its holder's pid: 0 none, -1 one whose pid is not seen from here.
 * Looks only (/proc/locks): never takes the claim, even for a moment. */
int sluice_claim_holder(const char *path);
/* Remove path when no one holds it (a claim a killed process left): 0,
 * -EWOULDBLOCK when held, or -errno. */
int sluice_claim_drop_stale(const char *path);

/* ---- a renamed interface (rename.c) ---- */

#define SLUICE_RENAMED_FROM 1 /* name had no state: its interface's moved in from *other */
#define SLUICE_RENAMED_TO 2 /* name's state is the interface now called *other: moved */
/*
 * Follow a rename of the interface of the state `name` (IFACE or
 * shape:IFACE): a state belongs to an ifindex, its directory is named for
 * the interface. Moves the directory (under the pin root's lock) and
 * returns SLUICE_RENAMED_FROM or _TO with the other name in other
 * (SLUICE_STATE_NAME_MAX), 0 when there was nothing to follow, or -errno
 * with err (the new name's directory holds another state).
 */
int sluice_follow_rename(const char *name, char *other, size_t olen, char *err, size_t errlen);
/* name has no state: was its interface renamed, its state moved to the
 * state now called *to? 1 or 0. */
int sluice_renamed_to(const char *name, char *to, size_t len);
/* The state `name` goes (detach): forget the renames that lead to it. */
void sluice_rename_forget(const char *name);

/* ---- pinned state of one interface (state.c) ---- */

/* A failed system call on sluice's state, in words: "<what>: <strerror>",
 * and for EACCES and EPERM what it takes (root, or CAP_BPF with read access
 * to the pins; CAP_NET_ADMIN to attach), never a repair that destroys
 * anything. Returns ret. */
int sluice_sys_err(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Is ret a missing privilege (EACCES, EPERM)? */
bool sluice_is_perm_err(int ret);

/* How a pinned state stands with the caller (sluice_open() fills it in). */
enum sluice_standing {
	SLUICE_STANDING_OWNED, /* this namespace's interface, the same ifindex */
	SLUICE_STANDING_GONE, /* no such interface now, or another one of that name */
	SLUICE_STANDING_ORPHAN, /* made in a namespace that is gone (its inode reused) */
	SLUICE_STANDING_UNFINISHED, /* an attach that did not finish, or is running */
};

/*
 * A state's key table: the LRU hash sluice_buckets, or the set-associative
 * sluice_sets4 and sluice_sets6 (include/sluice/sets.h), mapped and read in
 * place. The walk's callback gets a struct sluice_key and a struct
 * sluice_bucket (a way's state in the LRU's form) either way.
 */
struct sluice_keytab {
	bool sets;
	__u64 seed; /* config.set_seed */
	int buckets_fd, fd[2]; /* fd: sluice_sets4, sluice_sets6 */
	void *mem[2];
	size_t len[2];
	__u32 nsets[2];
};
struct sluice_handle {
	char name[SLUICE_STATE_NAME_MAX]; /* the state's name: IFACE, or shape:IFACE */
	char ifname[IF_NAMESIZE]; /* its interface */
	bool shape; /* the shaper's state (sluice shape), not the limiter's */
	char dir[256]; /* SLUICE_PIN_ROOT[/netns:INODE]/<name> */
	/* One fd per pinned map (<sluice/maps.h>): buckets_fd, config_fd, ...;
	 * -1 for a map added in a later layout than the state was pinned in,
	 * until the next attach adds it. */
#define SLUICE_HANDLE_FD(name, layout, fd) int fd;
	SLUICE_MAPS(SLUICE_HANDLE_FD)
#undef SLUICE_HANDLE_FD
	struct sluice_config *cfg; /* the mmapped config entry */
	struct sluice_rule_entry *ruletab; /* mmapped; ruletab_max entries */
	__u32 ruletab_max;
	int lock_fd; /* flock()ed while a change is being made */
	unsigned int ifindex; /* of ifname in this namespace now; 0: none */
	enum sluice_standing standing;
	struct sluice_fleet *fleet; /* mmapped; NULL without sluice_fleet */
	/* The key table, as config.kind says (SLUICE_KIND_SETS): mapped when
	 * it is the set table. Read and change keys through it. */
	struct sluice_keytab keys;
};

/*
 * A state's name: an interface (its limiter) or shape:IFACE (its shaper).
 * Sets ifname (IF_NAMESIZE) and *shape; -EINVAL with a sentence for a name
 * that is neither (too long, empty, or another prefix).
 */
int sluice_state_name(const char *name, char *ifname, bool *shape, char *err, size_t errlen);
/* The words that name a state's commands in messages: "shape " for a
 * shaper ("sluice shape detach eth1"), "" for a limiter. */
const char *sluice_state_verb(const struct sluice_handle *h);

/* A handle with no map open: every fd -1. */
void sluice_handle_init(struct sluice_handle *h);
/* How many rules the pinned maps of h can hold (0: no limit known, a handle
 * on a copy). */
__u32 sluice_max_rules(const struct sluice_handle *h);

/* Mount bpffs at /sys/fs/bpf if nothing is mounted there. */
int sluice_ensure_bpffs(char *err, size_t errlen);
/* The pin directory of the caller's namespace, created (with the root
 * above it) when create. */
int sluice_pin_root(char *buf, size_t len, bool create, char *err, size_t errlen);
/* SLUICE_PIN_ROOT[/netns:INODE]/<name> for the caller's namespace (name: a
 * state's, IFACE or shape:IFACE). */
int sluice_pin_dir(const char *name, char *buf, size_t len, char *err, size_t errlen);
/* Open the pinned maps of the state `ifname` (IFACE, or shape:IFACE for the
 * shaper of IFACE) in the caller's namespace. -ENOENT with
 * "sluice is not attached to X: run 'sluice attach X'" when nothing is
 * pinned (and where the limiter of an X is, when another namespace has one);
 * -ENODEV when there is no such interface here and nothing is pinned. */
int sluice_open(const char *ifname, struct sluice_handle *h, char *err, size_t errlen);
void sluice_close(struct sluice_handle *h);
/* May h's state be changed (for_write) or read? 0, or -ESTALE (gone,
 * orphaned) / -EBUSY (unfinished) with a sentence that says what to do. A
 * reader may go on after a nonzero return, showing the sentence as a warning. */
int sluice_check_standing(const struct sluice_handle *h, bool for_write, char *err,
			  size_t errlen);
/* The states pinned in the caller's namespace (limiters by their interface,
 * shapers as shape:IFACE), sorted; returns how many (<= max) or -errno. */
int sluice_list_attached(char names[][SLUICE_STATE_NAME_MAX], int max);
/* Resolve -i: the given name, or the only state pinned (out holds
 * SLUICE_STATE_NAME_MAX). */
int sluice_pick_iface(const char *given, char *out, char *err, size_t errlen);
/* Check the layout version in cfg; message names both versions. */
int sluice_check_layout(const struct sluice_config *cfg, const char *ifname, char *err,
			size_t errlen);
/* A consistent copy of the live settings, read without the lock: retried
 * while a writer changes them. *seq (may be NULL) gets the version read. */
void sluice_read_settings(const struct sluice_handle *h, struct sluice_settings *out, __u64 *seq);
/* Has a change been made since sluice_read_settings() returned seq? */
bool sluice_settings_changed(const struct sluice_handle *h, __u64 seq);
/* Is h still the state pinned for its interface? 0; -ENOENT when nothing is
 * pinned any more (detached); -ESTALE when another state is (a fresh
 * attach since): reopen to follow it. */
int sluice_still_pinned(const struct sluice_handle *h);

/* The sum over every CPU of the `nr` u64s of a per-CPU map's value at key. */
int sluice_percpu_sum(int fd, __u32 key, __u64 *out, size_t nr);
/* A key's dropped counter is exact below one sample of drops; from there
 * each drop adds a sample with chance 1/sample (the datapath spares the hot
 * bucket's cache line): an unbiased estimate, standard deviation about
 * sqrt(sample x (N - sample)). The sample size, and whether a count is still
 * exact (a count of one sample may already stand for more drops). */
static inline __u64 sluice_drop_sample(const struct sluice_settings *s)
{
	return (__u64)s->event_mask + 1;
}

static inline bool sluice_drops_exact(const struct sluice_settings *s, __u64 dropped)
{
	return dropped < sluice_drop_sample(s);
}

/* Sum of the per-CPU counters. */
int sluice_read_stats(const struct sluice_handle *h, struct sluice_stats *out);
int sluice_read_rstats(const struct sluice_handle *h, __u32 slot, struct sluice_rstats *out);
/* Zero the counters of one policy slot (a new rule must start from 0). */
int sluice_clear_rstats(const struct sluice_handle *h, __u32 slot);
/* A named u64 of a struct, for printing, JSON and Prometheus' HELP lines. */
struct sluice_field {
	const char *name;
	size_t offset;
	const char *help; /* what it counts, one sentence */
};

/*
 * What `sluice status`, `sluicectl stats` and the Prometheus output show: the
 * counters of the datapath and what the key tables hold now.
 */
struct sluice_counters {
	struct sluice_stats stats; /* first: its field offsets hold here too */
	__u64 keys; /* entries now in sluice_buckets + sluice_logs */
	__u64 evicted_estimate; /* stats.new_keys - keys, 0 when negative */
	__u64 log_keys; /* of keys, those in sluice_logs */
	__u64 table_keys[2]; /* of keys, the key table's: IPv4, IPv6 */
};
/*
 * Read the counters, then count the keys (in that order: a key created
 * during the count is then not taken for an eviction). keys walks both
 * tables, about 0.3 s per million keys. Keys leave the tables by LRU
 * eviction and by `sluicectl flush`, so evicted_estimate counts flushed keys
 * too; it is an estimate since the walk is not atomic.
 */
int sluice_read_counters(const struct sluice_handle *h, struct sluice_counters *c);
/* The fields of struct sluice_counters: the first sluice_stats_nfields are
 * those of struct sluice_stats (by the names bpftool shows), then keys and
 * evicted_estimate; sluice_counters_nfields in all. */
extern const struct sluice_field sluice_stats_fields[];
extern const size_t sluice_stats_nfields;
extern const size_t sluice_counters_nfields;
/* The value of field f of the struct at base. */
__u64 sluice_field_get(const void *base, const struct sluice_field *f);

/* ---- walking a map (maps.c) ---- */

/* Called for each entry: 0 to go on, or -errno to stop the walk, which returns it. */
typedef int (*sluice_walk_fn)(const void *key, const void *val, void *ctx);
/*
 * Call fn for every entry of a hash, LRU hash or LPM trie map (not per-CPU):
 * with batched lookups where the kernel has them for the map, else one key
 * at a time. An entry added or removed during the walk may be seen or not.
 * With fn NULL it only counts. Returns how many entries it saw, or -errno.
 */
long sluice_map_walk(int fd, sluice_walk_fn fn, void *ctx);
/* ---- the key table (keytab.c): sluice_buckets, or --table sets ---- */

/* Not owning the fds. 0 or -errno (a sets table whose maps are missing). */
int sluice_keytab_open(struct sluice_keytab *t, bool sets, __u64 seed, int buckets_fd,
		       int sets4_fd, int sets6_fd);
void sluice_keytab_close(struct sluice_keytab *t);
/* The state of key k (masked, tagged as the datapath keys it): 0 or -ENOENT. */
int sluice_keytab_lookup(const struct sluice_keytab *t, const struct sluice_key *k,
			 struct sluice_bucket *b);
/* Forget key k (its next packet starts a full bucket): 0 or -ENOENT. */
int sluice_keytab_delete(struct sluice_keytab *t, const struct sluice_key *k);
/* fn for every key (as sluice_map_walk()); fn NULL counts. Keys or -errno. */
long sluice_keytab_walk(const struct sluice_keytab *t, sluice_walk_fn fn, void *ctx);
long sluice_keytab_count(const struct sluice_keytab *t);
/* The same, and how many of each family: n[0] IPv4, n[1] IPv6. */
long sluice_keytab_count_families(const struct sluice_keytab *t, __u64 n[2]);
/* The set table only: forget every key match() says to (NULL: all); how many. */
typedef bool (*sluice_key_match_fn)(const struct sluice_key *k, void *ctx);
long sluice_keytab_flush(struct sluice_keytab *t, sluice_key_match_fn match, void *ctx);
/* Keys it can hold (--table sets: per family, both counted), and its memory. */
__u64 sluice_keytab_capacity(const struct sluice_keytab *t);
__u64 sluice_keytab_bytes(const struct sluice_keytab *t);

/* Entries in a map; -errno on failure. */
long sluice_count_keys(int fd);
/* max_entries of a map, 0 on failure. */
__u32 sluice_map_max_entries(int fd);
/*
 * The memory a map holds. For a preallocated hash or array, from its own
 * geometry, as the kernel lays it out (a hash entry is a 48-byte header with
 * the key and the value, each rounded to 8 bytes, plus a 16-byte bucket per
 * entry rounded up to a power of two: 112 bytes a key in sluice_buckets),
 * the same figure on every kernel: /proc's memlock counts this way on 6.18
 * and counts less on 6.1. Otherwise (maps that allocate as they fill, the
 * ring buffer) the kernel's memlock. 0 when unknown.
 */
__u64 sluice_map_bytes(int fd);

/* Now, in ns of CLOCK_MONOTONIC (bpf_ktime_get_ns()'s clock), and in the
 * datapath's ticks. */
__u64 sluice_now_ns(void);
/* CLOCK_REALTIME in ns: for times shown to people (a last sync's age). */
__u64 sluice_realtime_ns(void);
__u64 sluice_now_ticks(void);

/* ---- changes: one transaction per command (txn.c) ---- */

struct sluice_txn_rule {
	struct sluice_rule rule;
	struct sluice_rule_key key; /* gen left 0; set at commit */
};
_Static_assert(sizeof(struct sluice_txn_rule) == sizeof(struct sluice_rule_entry) &&
		       __builtin_offsetof(struct sluice_txn_rule, key) ==
			       __builtin_offsetof(struct sluice_rule_entry, key),
	       "a txn rule is a sluice_ruletab entry");

struct sluice_txn_books; /* txn.c: an index of the rules, their slots */

struct sluice_txn {
	struct sluice_handle *h;
	struct sluice_settings set; /* copy of the live settings, edit freely */
	struct sluice_txn_rule *rules; /* copy of the live rules, edit freely */
	size_t nr_rules;
	bool rules_changed; /* set by the rule helpers below */
	/* Bookkeeping of the helpers below; code that edits rules[] directly
	 * calls sluice_txn_rules_replaced() afterwards. */
	struct sluice_txn_books *books;
};
/* rules[] was changed other than through the helpers: rebuild the index. */
void sluice_txn_rules_replaced(struct sluice_txn *t);

/* Lock the interface and copy the live settings and rules. */
int sluice_txn_begin(struct sluice_handle *h, struct sluice_txn *t, char *err, size_t errlen);
/* Make the edited copy live atomically: the idle halves are written, `active`
 * (and the rule generation) flips in one store, and the call returns after an
 * RCU grace period, when no packet can still be reading the old half. */
int sluice_txn_commit(struct sluice_txn *t, char *err, size_t errlen);
/* Unlock and drop the copy; nothing changed. Safe after commit. A
 * transaction commits once: begin another for the next change. */
void sluice_txn_end(struct sluice_txn *t);

/* Rule edits on a transaction; they allocate a stats slot and a tag. */
struct sluice_txn_rule *sluice_txn_find_rule(struct sluice_txn *t, const struct sluice_cidr *c);
int sluice_txn_put_rule(struct sluice_txn *t, const struct sluice_cidr *c,
			const struct sluice_policy *p, char *err, size_t errlen);
int sluice_txn_del_rule(struct sluice_txn *t, const struct sluice_cidr *c, char *err,
			size_t errlen);
/* New tag generation for a policy whose state format changes (algo, window,
 * prefix): its sources get fresh, full buckets instead of misread old ones.
 * Keeps the policy's slot (tag >> 16). */
void sluice_txn_retag(struct sluice_txn *t, struct sluice_policy *p);

/* ---- counter slots of a rule set (slots.c) ---- */

/* Which slots the rules of a set use, and by which policy, so that a rule
 * finds a free slot or, when none is left, one of the same policy to share. */
struct sluice_slots;
struct sluice_slots *sluice_slots_new(void);
void sluice_slots_free(struct sluice_slots *sl);
/* p (its tag names the slot) gets one more rule; a slot's first rule sets
 * its policy, the others must have the same. */
void sluice_slots_add(struct sluice_slots *sl, const struct sluice_policy *p);
void sluice_slots_drop(struct sluice_slots *sl, __u32 slot);
__u32 sluice_slots_users(const struct sluice_slots *sl, __u32 slot);
/* Slots with at least one rule. */
__u32 sluice_slots_used(const struct sluice_slots *sl);
/* Taken slots past which a rule shares the slot of its policy when it can. */
#define SLUICE_OWN_SLOTS (SLUICE_MAX_RULES / 2 - 1)
const struct sluice_policy *sluice_slots_policy(const struct sluice_slots *sl, __u32 slot);
/* A slot with no rule (and not avoid[slot] when avoid is given), or 0. */
__u32 sluice_slots_find_free(struct sluice_slots *sl, const unsigned char *avoid);
/* A slot whose rules have policy p but for the tag, or 0. */
__u32 sluice_slots_find_same(const struct sluice_slots *sl, const struct sluice_policy *p);
bool sluice_policy_same_but_tag(const struct sluice_policy *a, const struct sluice_policy *b);

/* Put np (a policy about to be a rule's) on a counter slot of sl: a free
 * one (one not in avoid, while there is one), else one whose rules have the
 * same policy, whose tag np then takes. -ENOSPC when neither is left. */
int sluice_txn_place(struct sluice_txn *t, struct sluice_slots *sl, struct sluice_policy *np,
		     const unsigned char *avoid, char *err, size_t errlen);

/* The CIDR a rule matches. */
void sluice_rule_cidr(const struct sluice_txn_rule *r, struct sluice_cidr *c);

/*
 * A snapshot of the live policies: the settings with the default policy, and
 * the rules sorted by family, address and prefix length. Taken under the
 * interface's lock, so it is one whole version; with_stats, the counters of
 * every policy too, read under the same lock (so no slot changes hands).
 */
struct sluice_policies {
	struct sluice_settings set;
	struct sluice_txn_rule *rules;
	size_t nr_rules;
	/* with_stats: nr_rules + 1 entries, each rule's, then the default's */
	struct sluice_rstats *rstats;
	/* with_stats, the same for would-drops; NULL when the state has no
	 * sluice_rwould (unknown) */
	struct sluice_rwould *rwould;
	/* with_stats: how many policies count on each slot (> 1: shared) */
	__u32 *slot_users;
};
int sluice_read_policies(struct sluice_handle *h, struct sluice_policies *pol, bool with_stats,
			 char *err, size_t errlen);
void sluice_free_policies(struct sluice_policies *pol);
/* The rule a packet from addr gets under settings s, as the datapath finds
 * it (the rule hash, once per length, then the trie): 1 and *out, or 0 for none. */
int sluice_lookup_rule(const struct sluice_handle *h, const struct sluice_settings *s,
		       __u8 family, const __u8 *addr, struct sluice_rule *out);
/* Policy i of a snapshot: the rules in order, then (i == nr_rules) the
 * default; name gets "198.18.0.0/15" or "default", family 4, 6 or 0. */
const struct sluice_policy *sluice_policy_at(const struct sluice_policies *pol, size_t i,
					     char *name, size_t len, int *family);

/* ---- Fleet-wide limits (fleet.c) ---- */

#define SLUICE_FLEET_STALE 4 /* a view only: synced, but not renewed in time */

/* The agent's state as it stands now: what the datapath decides on. */
struct sluice_fleet_view {
	struct sluice_fleet f; /* a copy, strings terminated */
	__u32 n; /* the N of rate/N and burst/N (at least 1) */
	bool shared; /* the datapath admits rate/N now (outage, stale, stopped) */
	int state_code; /* enum sluice_fleet_state, or SLUICE_FLEET_STALE */
	const char *state; /* "off", "synced", "outage", "stopped", "stale" */
	double last_ok_age_s; /* seconds since the last successful sync; -1: none */
};

/* -ENOENT when the state has no sluice_fleet (pinned by an older sluice). */
int sluice_fleet_view(const struct sluice_handle *h, struct sluice_fleet_view *v);
/* Is the default policy or a rule fleet-wide? */
bool sluice_has_fleet_policy(struct sluice_handle *h);
/* One line: "edge via unix:/run/redis.sock: synced, 3 boxes, ..." */
void sluice_fleet_summary(const struct sluice_fleet_view *v, bool fleet_policies, char *buf,
			  size_t len);
struct sluice_json;
struct sluice_rec;
/* "fleet": {state, outage_share (rate/N now), boxes, ...}, as JSON or as text
 * lines fleet_state, fleet_outage_share, ... (struct sluice_rec) */
void sluice_fleet_out(struct sluice_rec *r, const struct sluice_fleet_view *v);
void sluice_fleet_json(struct sluice_json *j, const struct sluice_fleet_view *v);

/* ---- folding the fleet's debt into a box's bucket (fleetfold.c) ---- */

/* The fleet policies' tolerances by tag, as of the settings of version seq. */
struct sluice_fleet_tol;
struct sluice_fleet_tols {
	struct sluice_fleet_tol *v;
	size_t n;
	__u64 seq;
	bool read;
};

/* Read the tolerances again when the settings changed since (a failed read
 * keeps the old table: a tag it lacks folds the whole debt). */
void sluice_fleet_tols_refresh(struct sluice_fleet_tols *t, struct sluice_handle *h);
void sluice_fleet_tols_free(struct sluice_fleet_tols *t);
/*
 * How far above now the fleet's debt d (ticks) raises a box's bucket, for a
 * limit of tolerance tol (the whole burst) of which the box's share holds
 * lt: within the burst (d <= tol) d x lt / tol, its share of the room the
 * fleet has left, rounded up; past it, lt plus all the debt beyond tol.
 * tol 0 or lt >= tol: d.
 */
__u64 sluice_fold_debt(__u64 d, __u64 tol, __u64 lt);
/* The fold of key k's lane (0 packets, 1 bytes) for a box holding 1/n of
 * the burst; the debt itself for a tag of no fleet policy (changed since). */
__u64 sluice_fleet_fold(const struct sluice_fleet_tols *t, const struct sluice_key *k, int lane,
			__u32 n, __u64 debt);

/* ---- a shaper's counters (maps.c) ---- */

/* Read sluice_shape_stats: summed over the CPUs, max_delay_ns the largest.
 * -ENOENT when the state has none (a limiter's, or pinned without it). */
int sluice_read_shape_stats(const struct sluice_handle *h, struct sluice_shape_stats *out);
/* Add one CPU's counters to sum, as sluice_read_shape_stats() does. */
void sluice_shape_stats_add(struct sluice_shape_stats *sum, const struct sluice_shape_stats *cpu);
/* The upper bound of delay histogram bucket i, in ns: 1000 << i ([0] < 1 us,
 * [i] < 2^i us), ~0 for the last (every longer delay). */
__u64 sluice_delay_bucket_le_ns(unsigned int i);

/* ---- Prometheus (prom.c) ---- */

/*
 * The counters of one interface in the Prometheus text format, labelled
 * interface="IFACE": every sluice_stats field as sluice_FIELD_total, each
 * policy's as sluice_policy_{passed,dropped,passed_bytes,dropped_bytes}_total
 * (policy="default" or the rule's CIDR), and the gauges sluice_keys,
 * sluice_log_keys, sluice_max_keys, sluice_max_log_keys,
 * sluice_key_table_keys and sluice_key_table_max_keys (family="ipv4" or
 * "ipv6"), sluice_evicted_estimate, sluice_rules and sluice_dry_run. A shaper's state
 * is labelled by its name, interface="shape:IFACE", so that the limiter and
 * the shaper of one interface keep apart, and adds sluice_prometheus_shape().
 */
int sluice_prometheus(FILE *f, struct sluice_handle *h, char *err, size_t errlen);
/*
 * A shaper's counters (sluice_prometheus() adds them for a shaper's state):
 * sluice_shape_{shaped,delayed,restamped,horizon_dropped}_total, the gauge
 * sluice_shape_max_delay_seconds and the histogram sluice_shape_delay_seconds
 * (le from 1e-06 doubling to 2^22 us, cumulative; +Inf and _count: delayed;
 * _sum: the delays' sum), labelled interface="NAME".
 */
void sluice_prometheus_shape(FILE *f, const char *name, const struct sluice_shape_stats *s);
/* The help text of sluice_stats field fl for a shaper's state (which counts
 * at tc egress, not XDP), or fl->help when shape is false. */
const char *sluice_stats_help(const struct sluice_field *fl, bool shape);

/* ---- JSON output (json.c): a tiny streaming writer, no allocation ---- */

struct sluice_json {
	FILE *f;
	int depth;
	bool need_comma[16];
};
void json_init(struct sluice_json *j, FILE *f);
void json_obj_begin(struct sluice_json *j, const char *key); /* key NULL in arrays/top */
void json_obj_end(struct sluice_json *j);
void json_arr_begin(struct sluice_json *j, const char *key);
void json_arr_end(struct sluice_json *j);
void json_str(struct sluice_json *j, const char *key, const char *val);
void json_u64(struct sluice_json *j, const char *key, __u64 val);
void json_f64(struct sluice_json *j, const char *key, double val);
void json_bool(struct sluice_json *j, const char *key, bool val);
void json_end(struct sluice_json *j); /* newline after the top value */

/*
 * A record of named values, written as JSON into j's open object, or (j
 * NULL) as text lines "name value" to f, the name padded to width, where a
 * name inside an object is the object's and its own joined by '_'
 * ("fleet_sync_errors" for fleet.sync_errors): one function writes both, so
 * the text always says what the JSON says, under the same name.
 */
struct sluice_rec {
	struct sluice_json *j;
	FILE *f;
	int width, depth;
	char prefix[96];
	size_t mark[8];
};
void sluice_rec_init(struct sluice_rec *r, struct sluice_json *j, FILE *f, int width);
void sluice_rec_begin(struct sluice_rec *r, const char *name); /* an object */
void sluice_rec_end(struct sluice_rec *r);
void sluice_rec_str(struct sluice_rec *r, const char *name, const char *v);
void sluice_rec_u64(struct sluice_rec *r, const char *name, __u64 v);
void sluice_rec_f64(struct sluice_rec *r, const char *name, double v);
void sluice_rec_bool(struct sluice_rec *r, const char *name, bool v);

/* ---- a policy, its settings and its key table in words and JSON (fmt.c) ---- */

/*
 * One writer for each: every command that prints a policy calls these (the
 * JSON fields are listed in sluicectl(8), JSON OUTPUT).
 *
 * The pieces, for tables: "100/s+10mbit", "200+1514B", "1s", "5+3000B" (a
 * shaper's delay; "nodelay"); "-" where they do not apply.
 */
const char *sluice_action_name(unsigned int action); /* limit, exempt, deny */
void sluice_fmt_rate(const struct sluice_policy *p, char *buf, size_t len);
void sluice_fmt_burst(const struct sluice_policy *p, char *buf, size_t len);
void sluice_fmt_window(const struct sluice_policy *p, char *buf, size_t len);
void sluice_fmt_delay(const struct sluice_policy *p, char *buf, size_t len);
/* One line with both values of every limit: "limit token-bucket 100/s burst
 * 100, keyed by /32 (IPv4) and /64 (IPv6)", "shape token-bucket 6/m burst 20
 * delay 5, keyed by /32", "deny (dry-run)". family 4 or 6: one family's key
 * prefix; 0: both. shape: a shaper's policy. */
void sluice_policy_text(const struct sluice_policy *p, int family, bool shape, char *buf,
			size_t len);
/* The policy's fields into the open JSON object: action, dry_run,
 * effective_dry_run (its own or global_dry), fleet, prefix4, prefix6, slot,
 * tag; for a limit algo and packets, bytes ({rate, count, period_ns,
 * per_second, burst}, a shaper's with nodelay and delay), or for a window
 * algorithm window_ns and window_limit. */
void sluice_policy_json(struct sluice_json *j, const struct sluice_policy *p, int family,
			bool shape, bool global_dry);
/* The settings of the interface, not of a policy: "dry-run off, fail-open,
 * new keys off"; "settings": {dry_run, fail_closed, new_keys}. */
void sluice_settings_text(const struct sluice_settings *s, char *buf, size_t len);
void sluice_settings_json(struct sluice_json *j, const struct sluice_settings *s);

/* What the key table holds and can hold, per family ([0] IPv4, [1] IPv6). */
struct sluice_keys_view {
	bool sets; /* the set table; else the LRU, whose families share max */
	__u64 used[2]; /* keys now */
	__u64 max_family[2]; /* what each family can hold (the LRU: max) */
	__u64 max; /* both families */
	__u64 bytes; /* memory */
};
/* From a handle and its counters (sluice_read_counters()). */
void sluice_keys_view(const struct sluice_handle *h, const struct sluice_counters *c,
		      struct sluice_keys_view *v);
/* "sets table: IPv4 64 of 64 (full), IPv6 1 of 64 keys (12.0 KiB)" */
void sluice_keys_text(const struct sluice_keys_view *v, char *buf, size_t len);
/* "key_table": {table, used, max, families_share_max, memlock, ipv4: {used, max,
 * full}, ipv6: {...}} */
void sluice_keys_out(struct sluice_rec *r, const struct sluice_keys_view *v);
/* A shaper's counters: "shape": {shaped, delayed, delay_ns, mean_delay_ns,
 * max_delay_ns, restamped, horizon_dropped, delay_histogram: {lt_1us, ...,
 * ge_Nus}} (text: the histogram's buckets that hold some). */
void sluice_shape_stats_out(struct sluice_rec *r, const struct sluice_shape_stats *s);

/* ---- would-drop counters per policy (state.c) ---- */

/* The would-drop counters of one policy slot (sluice_clear_rstats() zeroes
 * them with the others); -ENOENT when the state has no sluice_rwould (pinned
 * by an older sluice: unknown until the next attach adds it). */
int sluice_read_rwould(const struct sluice_handle *h, __u32 slot, struct sluice_rwould *out);

/* ---- qdiscs and tc filters over rtnetlink, for the shaper (tc.c) ---- */

/* An interface's root qdisc, as the kernel dumps it. */
struct sluice_qdisc {
	bool present; /* the interface has a root qdisc */
	char kind[16]; /* "noqueue", "mq", "fq", ... */
	__u32 handle; /* 0: the kernel's default root */
	__u32 qlen; /* packets queued now */
	__u32 drops; /* packets it dropped, for any reason */
	/* fq only: its options and its own counters (TCA_STATS_APP) */
	__u32 plimit, flow_plimit, horizon_us;
	bool has_horizon, horizon_drop, has_fq_stats;
	struct tc_fq_qd_stats fq;
};
/* The root qdisc of ifindex (q->present false: none) and whether it has a
 * clsact qdisc (clsact may be NULL). */
int sluice_qdisc_root(unsigned int ifindex, struct sluice_qdisc *q, bool *clsact, char *err,
		      size_t errlen);
/* The kernel's own root (handle 0: noqueue, pfifo_fast, mq, default fq_codel):
 * the shaper may replace it. */
bool sluice_qdisc_is_default(const struct sluice_qdisc *q);
/* The fq that sluice installs (kind fq, handle SLUICE_FQ_HANDLE). */
bool sluice_qdisc_is_ours(const struct sluice_qdisc *q);

struct sluice_fq_params {
	__u32 plimit; /* TCA_FQ_PLIMIT: packets queued in all */
	__u32 flow_plimit; /* TCA_FQ_FLOW_PLIMIT: packets queued per fq flow */
	__u32 horizon_us; /* TCA_FQ_HORIZON, with TCA_FQ_HORIZON_DROP */
};
/* Make sluice's fq (handle SLUICE_FQ_HANDLE) the root qdisc of ifindex,
 * replacing the root there (the caller checked it is the default or ours).
 * -ENOENT: the kernel has no fq (the message names CONFIG_NET_SCH_FQ). */
int sluice_fq_install(unsigned int ifindex, const struct sluice_fq_params *p, char *err,
		      size_t errlen);
/* Delete the root qdisc of handle `handle`: the kernel puts its default back. */
int sluice_qdisc_del_root(unsigned int ifindex, __u32 handle, char *err, size_t errlen);
/* How many tc filters hang on parent (e.g. clsact's egress hook), or -errno. */
int sluice_tc_count_filters(unsigned int ifindex, __u32 parent);

#endif /* SLUICE_LIBSLUICE_H */
