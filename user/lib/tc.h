/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Qdiscs and tc filters over rtnetlink, for the shaper (tc.c).
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_TC_H
#define SLUICE_TC_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/pkt_sched.h>
#include <linux/types.h>

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

#endif /* SLUICE_TC_H */
