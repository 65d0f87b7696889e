/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The shaper's files (shape.c: the tc target; shape_status.c: its lines of
 * sluice status; shape_cmd.c: sluice shape): what they share.
 */
#ifndef SLUICE_SHAPE_H
#define SLUICE_SHAPE_H

#include <stddef.h>
#include <linux/bpf.h>
#include <linux/types.h>

#include "libsluice.h"

/* Its cls_bpf filter on clsact's egress hook: always this handle and priority
 * (a priority after an operator's usual ones: their filters run first). */
#define SHAPE_TC_HANDLE 0x51ce
#define SHAPE_TC_PRIO 0x51ce
#define SHAPE_PROG_NAME "sluice_tc"

/* What sluice's filter on IFACE's egress runs: prog_id 0 when none; other_id
 * a program at sluice's handle and priority that is not sluice's. */
struct shape_hook {
	__u32 prog_id;
	__u32 other_id;
	char other_name[BPF_OBJ_NAME_LEN];
};
int shape_find(unsigned int ifindex, struct shape_hook *sh);

/* "850 ns", "12.5 us", "3.2 ms", "2.50 s" */
void shape_fmt_ns(__u64 ns, char *buf, size_t len);
/* The shaper's lines of sluice status: the qdisc and the delay counters. */
void shape_status_text(unsigned int ifindex, const struct sluice_handle *h);
void shape_status_json(struct sluice_json *j, unsigned int ifindex, const struct sluice_handle *h);

#endif /* SLUICE_SHAPE_H */
