/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The pinned state of one interface (state.c): its handle, opening it, its
 * standing, its settings and counters.
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_STATE_H
#define SLUICE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <net/if.h>
#include <linux/types.h>
#include <sluice/maps.h>
#include <sluice/sluice.h>

#include "keytab.h"

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

/* The would-drop counters of one policy slot (sluice_clear_rstats() zeroes
 * them with the others); -ENOENT when the state has no sluice_rwould (pinned
 * by an older sluice: unknown until the next attach adds it). */
int sluice_read_rwould(const struct sluice_handle *h, __u32 slot, struct sluice_rwould *out);

/* Now, in ns of CLOCK_MONOTONIC (bpf_ktime_get_ns()'s clock), and in the
 * datapath's ticks. */
__u64 sluice_now_ns(void);
/* CLOCK_REALTIME in ns: for times shown to people (a last sync's age). */
__u64 sluice_realtime_ns(void);
__u64 sluice_now_ticks(void);

#endif /* SLUICE_STATE_H */
