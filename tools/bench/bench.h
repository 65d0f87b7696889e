/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* sluice-bench: what its files share. */
#ifndef SLUICE_BENCH_H
#define SLUICE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "libsluice.h"
#include "bpfrun.h"

/* ---- frames (frame.c) ---- */

/* Largest frame the bench builds: Ethernet + IPv6 + UDP + a little payload. */
#define BENCH_FRAME_MAX 128

struct bench_frame {
	__u8 data[BENCH_FRAME_MAX];
	__u32 len;
};

/* A valid Ethernet/IP/UDP frame (checksums included) from src to dst, both
 * textual addresses of the same family inside the benchmarking ranges. */
int bench_frame_build(struct bench_frame *f, const char *src, const char *dst);

/* ---- one loaded sluice object (object.c), on the bpf suite's harness ---- */

/*
 * bpfrun_open() (tests/lib/bpfrun.h) as the bench loads the datapath: the
 * real clock, the table opts names (the LRU one unless BPFRUN_SETS), sluice_tc
 * loaded too; max_keys and max_log_keys 0 are the object's own sizes. Then
 * configured as the loader does: layout version, both halves from
 * sluice_settings_init(). 0 or -errno (noted on stderr).
 */
int bench_open(struct bpfrun *r, const struct bpfrun_opts *opts);
/* Bytes of kernel memory a map holds (sluice_map_bytes()), and its max_entries. */
int bench_map_memory(int map_fd, __u64 *bytes, __u32 *max_entries);

/* A policy of algorithm algo admitting `count` packets per `period_ns`
 * (burst: bucket algorithms; 0 picks the loader's default). Window algorithms
 * take window_ns (0: the default for the rate). */
int bench_policy(struct sluice_policy *p, unsigned int algo, __u64 count, __u64 period_ns,
		 __u64 burst, __u64 window_ns, char *err, size_t errlen);

/* Fill map (sluice_buckets or sluice_logs) with n keys, those a packet of
 * `family` from `src` (16 bytes, as parsed) gets under bench_vary_keys for
 * r = first .. first + n - 1, under policy tag `tag`. */
int bench_prefill(int map_fd, size_t value_size, __u32 tag, __u8 family, __u8 prefixlen,
		  const __u8 *src, __u32 first, __u32 n);

/* Write n keys of family `family` straight into a sets object's mmapped
 * table (o->keys), the keys a packet from `src` gets under bench_vary_keys for
 * r = first .. first + n - 1 under tag `tag`: each in the first empty way of
 * its set (a key whose set is full is left out), with s0 = s0_base + r *
 * s0_step (ticks) and aux meta `meta`. *placed: the keys written. */
int bench_sets_prefill(struct bpfrun *o, __u32 tag, __u8 family, __u8 prefixlen, const __u8 *src,
		       __u32 first, __u32 n, __u64 s0_base, __u64 s0_step, __u32 meta,
		       __u32 *placed);

/* Ways of family's sets table holding a key (*live), and of those the ways
 * not free at now_ticks (*held: a debt, a window not ended). */
int bench_sets_count(const struct bpfrun *o, __u8 family, __u64 now_ticks, __u32 *live,
		     __u32 *held);

/* ---- timing ---- */

__u64 bench_now_ns(void); /* CLOCK_MONOTONIC, as bpf_ktime_get_ns() */
/* Run the frame `repeat` times through prog_fd; wall-clock ns per packet in
 * *ns, the kernel's own average in *kns (whole ns), the verdict in *retval. */
int bench_test_run(int prog_fd, const struct bench_frame *f, __u32 repeat, double *ns, __u32 *kns,
		   __u32 *retval);
/* run_time_ns and run_cnt of a program (kernel.bpf_stats_enabled). */
int bench_prog_runtime(int prog_fd, __u64 *run_time_ns, __u64 *run_cnt);
int bench_pin_cpu(int cpu);

/*
 * A BPF_PROG_TEST_RUN of an XDP program with repeat > 1 adds the program to
 * the kernel's XDP dispatcher and removes it afterwards, and each change waits
 * an RCU grace period: about 15 ms per call on this 2-CPU VM, longer than a
 * million packets. A program already attached somewhere in native mode is
 * already in the dispatcher, and the call then costs nothing extra. So the
 * bench attaches every program it times to a spare veth device of its own
 * (run.sh makes them in a private namespace and passes them with -H).
 */
int bench_hold_devices(const char *list); /* "dev,dev,..." in this namespace */
/* Attach prog_fd to the next spare device; 0, or -ENOSPC when none is left
 * (the program then runs, slower per call, without). */
int bench_hold(int prog_fd);
bool bench_held(void); /* were devices given? */
void bench_hold_release(void);
int bench_ncpus_online(void);

/* ---- statistics ---- */

double bench_median(double *v, int n); /* sorts v */
double bench_min(const double *v, int n);
double bench_max(const double *v, int n);

/* ---- subcommands ---- */

int cmd_cost(int argc, char **argv);
int cmd_tccost(int argc, char **argv);
int cmd_accuracy(int argc, char **argv);
int cmd_xdp(int argc, char **argv);
int cmd_sizing(int argc, char **argv);

#endif /* SLUICE_BENCH_H */
