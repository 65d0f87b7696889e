/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Running the sluice XDP program with BPF_PROG_TEST_RUN: load the skeleton
 * (never attached, never pinned), write its config, drive its test clock,
 * run crafted frames, read every counter summed over all CPUs. The one
 * harness of the bpf suite and of sluice-bench (tools/bench/object.c).
 */
#ifndef SLUICE_TEST_BPFRUN_H
#define SLUICE_TEST_BPFRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

#include "scenario.h"
#include "libsluice.h"

struct sluice_bpf;

struct bpfrun {
	struct sluice_bpf *skel;
	int prog_fd, config_fd, buckets_fd, logs_fd, rules_fd, stats_fd, rstats_fd, events_fd;
	int hash_fd;
	int tc_fd, shape_stats_fd; /* the shaper: sluice_tc, sluice_shape_stats */
	int penalty_fd, xstats_fd; /* sluice_penalty (the penalty box), sluice_xstats */
	int flows_fd, setsf_fd; /* the wide keys' tables: sluice_flows, sluice_setsf */
	int also_fd; /* sluice_also: policies' second keys (--also-rate) */
	/* config.hash_lens that bpfrun_configure() writes (0: none) */
	__u8 hash_lens[2][2][SLUICE_HASH_LENS];
	/* config.kind and shape_horizon_us that bpfrun_configure() writes */
	__u32 kind, horizon_us;
	/* the key table: sluice_buckets, or (table_sets) sluice_sets4/6 */
	bool table_sets;
	__u64 seed; /* config.set_seed */
	int sets_fd[2];
	struct sluice_keytab keys;
	int ncpus; /* possible CPUs: the size of a per-CPU value */
	struct ring_buffer *rb;
	struct sluice_event *events; /* drained by bpfrun_events() */
	size_t nr_events, cap_events;
};

struct bpfrun_opts {
	bool real_clock; /* bpf_ktime_get_ns() instead of test_now_ns */
	__u32 max_keys; /* sluice_buckets entries; 0: 4096 */
	__u32 max_log_keys; /* sluice_logs entries; 0: 1024 */
	/* wide keys on (rodata wide_keys): sluice_flows's entries, or the wide
	 * keys sluice_setsf holds; 0: off (and 4096 of each) */
	__u32 max_flows;
	__u32 buckets_type; /* enum bpf_map_type for sluice_buckets; 0: as built */
	__u32 buckets_flags; /* extra map_flags for sluice_buckets */
	__u32 vary_keys; /* rodata bench_vary_keys: a random source among these */
	bool parse_only; /* rodata bench_parse_only: stop after the parse */
	/*
	 * The key table: 0 as the environment says (SLUICE_TEST_TABLE=sets:
	 * the set-associative table, else the LRU hash), BPFRUN_LRU or
	 * BPFRUN_SETS. The sets table holds max_keys keys per family (0:
	 * 4096); its seed is random unless SLUICE_TEST_SEED gives one.
	 */
	int table;
	/* Keys per family (IPv4, IPv6) of the sets table; 0: as max_keys. */
	__u32 sets_keys[2];
	/* Sets per family of the sets table, exactly (0: as sets_keys, in whole
	 * groups): fewer than a group is a table that ends in part of one, as
	 * an older sluice's may (1: one set of SLUICE_SET_WAYS ways). */
	__u32 sets_n[2];
	/* Load sluice_tc too (bpfrun_run_tc()): only the shaper's tests need
	 * it, and its verification costs as much as sluice_xdp's. */
	bool tc;
};
#define BPFRUN_LRU 1
#define BPFRUN_SETS 2
/* The table bpfrun_open() picks for opts->table 0: "lru" or "sets". */
const char *bpfrun_default_table(void);

/* Where the harness's notes go: NULL (the default) TAP notes, libbpf's
 * warnings among them; else fn, one line each, and libbpf's output is left
 * as the caller set it (sluice-bench). */
void bpfrun_notes(void (*fn)(const char *line));

/* Run this process on CPU 0 only: sampled events and per-CPU free lists
 * then depend on the test's packets alone. */
void bpfrun_one_cpu(void);
/* Open and load; returns 0 or -errno, with a message noted (bpfrun_notes()). */
int bpfrun_open(struct bpfrun *r, const struct bpfrun_opts *opts);
void bpfrun_close(struct bpfrun *r);
/* bpfrun_open(), or a failed TAP check "load the sluice program ..." */
bool bpfrun_load(struct bpfrun *r, const struct bpfrun_opts *opts);

/* Write the config: layout, active 0, both halves `set`, newkey state 0. */
int bpfrun_configure(struct bpfrun *r, const struct sluice_settings *set);
/* Forget every key, log, rule, counter, box entry and pending event. */
int bpfrun_reset(struct bpfrun *r);
void bpfrun_clock(struct bpfrun *r, __u64 ns);

/* Run one frame; *action is the XDP verdict. -EINVAL is returned quietly
 * (the kernel refuses frames shorter than Ethernet); other errors are noted. */
int bpfrun_run(struct bpfrun *r, const void *frame, __u32 len, __u32 *action);
/* The same frame `repeat` times in one call (the kernel loops). */
int bpfrun_run_repeat(struct bpfrun *r, const void *frame, __u32 len, __u32 repeat, __u32 *action);

/*
 * Run one frame through the tc program (sluice_tc). ctx (may be NULL) is the
 * struct __sk_buff passed in (tstamp, gso_segs, ...: the fields
 * BPF_PROG_TEST_RUN takes) and, on success, what came out (tstamp as the
 * program left it); *retval the TC_ACT_* verdict. -errno as bpfrun_run().
 */
struct __sk_buff;
int bpfrun_run_tc(struct bpfrun *r, const void *frame, __u32 len, struct __sk_buff *ctx,
		  __u32 *retval);
/* The shaper's counters (sluice_shape_stats) summed over every CPU
 * (max_delay_ns: the largest). */
int bpfrun_shape_stats(struct bpfrun *r, struct sluice_shape_stats *out);

/* Build a frame of len bytes from src and run it: the XDP action, or -errno. */
int bpfrun_send(struct bpfrun *r, const char *src, __u32 len);
/* Send n frames; out gets one letter each (P pass, D drop, ? error) and a NUL. */
const char *bpfrun_sendn(struct bpfrun *r, const char *src, __u32 len, unsigned int n, char *out);

/* The state of key (tag, src masked to prefixlen) in sluice_buckets or, with
 * logs, sluice_logs (value of the map's size). 0, or -ENOENT. */
/* The key of src under tag, masked to prefixlen: 0, or -EINVAL. */
int bpfrun_key(__u32 tag, const char *src, __u8 prefixlen, struct sluice_key *key);
int bpfrun_lookup(struct bpfrun *r, bool logs, __u32 tag, const char *src, __u8 prefixlen,
		  void *value);

/* Counters summed over every CPU. */
int bpfrun_stats(struct bpfrun *r, struct sluice_stats *out);
int bpfrun_xstats(struct bpfrun *r, struct sluice_xstats *out);
/* The penalty box's entry of key (tag, src masked to prefixlen): 0, or -ENOENT. */
int bpfrun_box(struct bpfrun *r, __u32 tag, const char *src, __u8 prefixlen,
	       struct sluice_box *out);
int bpfrun_rstats(struct bpfrun *r, __u32 slot, struct sluice_rstats *out);
/* Count of entries in sluice_buckets / sluice_logs (sluice_count_keys()), or -errno. */
int bpfrun_count_keys(struct bpfrun *r, bool logs);

/* Drain the ring buffer into r->events (appending). Returns how many came. */
int bpfrun_events(struct bpfrun *r);

/* One TAP line: every field of got equals want; the differing ones are named. */
bool bpfrun_stats_eq(const struct sluice_stats *got, const struct sluice_stats *want,
		     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* p, whose tag names its slot, as that slot's policy under both halves of
 * the settings (sluice_policies, which the datapath applies): the helpers
 * below call it for the default and each rule they put; a test that writes
 * a rule's policy itself calls it too. */
int bpfrun_put_policy(struct bpfrun *r, const struct sluice_policy *p);
/* Put rule `cidr` with policy p (its tag set here: SLUICE_TAG(slot, algo, 1))
 * into generation gen of sluice_rules. */
int bpfrun_rule(struct bpfrun *r, __u8 gen, const char *cidr, const struct sluice_policy *p,
		__u32 slot);
/* The same into sluice_rulehash (a rule of a length in hash_lens, under
 * SLUICE_RULES_HASHED). */
int bpfrun_hash_rule(struct bpfrun *r, __u8 gen, const char *cidr, const struct sluice_policy *p,
		     __u32 slot);

/* ---- the common setups of the bpf suite ---- */

#define BPFRUN_HOUR (3600ULL * SLUICE_NS_PER_SEC)

/* Forget everything, then configure sluice_settings_init()'s settings with
 * the default policy at 1/h burst `burst` (past its burst a source drops for
 * an hour), the clock at SCN_T0. The caller may edit *set and configure it
 * again. */
bool bpfrun_setup(struct bpfrun *r, struct sluice_settings *set, __u64 burst);
/* A policy of `action` for a rule, keyed by /32 and /64; a limit is a token
 * bucket of 1/h burst `burst`. */
void bpfrun_policy(struct sluice_policy *p, __u8 action, __u64 burst);
/* Send strlen(want) frames of len bytes from src: one TAP line, named by
 * fmt, that the verdicts are `want` (P pass, D drop); a note of them if not. */
bool bpfrun_expect(struct bpfrun *r, const char *src, __u32 len, const char *want, const char *fmt,
		   ...) __attribute__((format(printf, 5, 6)));

/* Run a scenario's packets from `src` under policy p, from a fresh state, the
 * test clock set to each packet's time; verdicts as SLUICE_PASS/SLUICE_DROP.
 * p is the default policy, or with rule_cidr the policy of that rule in slot
 * BPFRUN_RULE_SLOT (the default then stays sluice_settings_init()'s). */
#define BPFRUN_RULE_SLOT 5
int bpfrun_scenario(struct bpfrun *r, const struct sluice_policy *p, const char *rule_cidr,
		    const char *src, const struct scn_pkt *pkts, size_t nr, int *verdicts);

/* ---- frames ---- */

#define FRAME_MAX 2048

/* sluice_frame_build() (user/lib/frame.h) from src to 198.19.255.254 or
 * 2001:2::fe: Ethernet (+ VLAN tags 100, 101, 102, outer first) + IPv4 or
 * IPv6 (by the form of src) + UDP, padded to `len` bytes; valid lengths and
 * checksums, cut where len ends. Returns the length, or 0 when len is too
 * short for the Ethernet, VLAN and fixed IP headers. */
struct frame_opts {
	int vlans; /* 0, 1 (802.1Q) or 2 (802.1ad + 802.1Q); 3 for a third 802.1Q */
	__u8 ihl; /* IPv4 header length in words; 0: 5 (options are zeroed) */
};
size_t frame_ip(__u8 *buf, const char *src, __u32 len, const struct frame_opts *o);
/* An ARP request from 198.18.0.1. */
size_t frame_arp(__u8 *buf);

/* ---- a twin: a second instance of the program on r's maps (tests/bpf/flood.c) ---- */

/*
 * Another sluice program loaded with r's read-only settings (the table, its
 * sets, the clock) but bench_vary_keys = vary_keys, on every map of r but
 * its own .rodata and .bss: the same key table, config, rules and counters.
 * So a flood of varied keys runs `repeat` packets a syscall while r's own
 * program sends the real sources. Its test clock is its own .bss: set it
 * with bpfrun_twin_clock(). 0 or -errno (noted).
 */
struct bpfrun_twin {
	struct sluice_bpf *skel;
	int prog_fd;
};
int bpfrun_twin_open(struct bpfrun_twin *t, const struct bpfrun *r, __u32 vary_keys);
void bpfrun_twin_close(struct bpfrun_twin *t);
void bpfrun_twin_clock(struct bpfrun_twin *t, __u64 ns);
/* As bpfrun_run_repeat(), through the twin. */
int bpfrun_twin_run(struct bpfrun_twin *t, const void *frame, __u32 len, __u32 repeat,
		    __u32 *action);

#endif /* SLUICE_TEST_BPFRUN_H */
