/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sluicectl top: what its view (top.c) and its live view, --watch
 * (top_watch.c), share.
 */
#ifndef SLUICECTL_TOP_H
#define SLUICECTL_TOP_H

#include <stdio.h>

#include "sluicectl.h"

struct entry {
	struct sluice_fkey key; /* a plain key: mode src, the rest 0 */
	bool wide; /* of the wide keys' table (--key src,dport|flow) */
	bool is_log;
	__u64 dropped;
	union {
		struct sluice_bucket b;
		struct sluice_log log;
	} val;
};

/* A min-heap of the N entries with most drops seen so far. */
struct top {
	struct entry *heap;
	size_t n, max;
	bool is_log;
	__u64 keys, with_drops;
};

/* What --watch adds to each refresh: where, when, and the totals. */
struct top_frame {
	const char *ifname;
	char when[32];
	__u64 every_ns;
	struct sluice_stats cur, prev;
	bool has_prev; /* prev is of this state: rates can be given */
	double dt; /* seconds from prev to cur */
};

/* One view: the policies now, every key walked, the N with most drops
 * printed to f (after fr's header under --watch; fr NULL: none). Returns
 * the exit status. */
int top_view(struct sluice_handle *h, struct top *t, FILE *f, const struct top_frame *fr);

/* ---- top_watch.c ---- */

/* The view again every every_ns until SIGINT or SIGTERM (exit status 0),
 * or count views (0: no end); returns the exit status. */
int top_watch(struct sluice_handle *h, struct top *t, __u64 every_ns, __u64 count);
/* A refresh's header, as text lines and as fields of the open object j. */
void top_frame_text(FILE *f, const struct top_frame *fr);
void top_frame_json(struct sluice_json *j, const struct top_frame *fr);

#endif /* SLUICECTL_TOP_H */
