/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * An attach target: where a state's program runs, behind one table of
 * operations that attach.c, detach.c and status.c call in their order. Two
 * targets: the XDP limiter (xdp.c) and the shaper at tc egress (shape.c).
 * An operation a target does not need is NULL.
 */
#ifndef SLUICE_TARGET_H
#define SLUICE_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "libsluice.h"

struct attach_ctx; /* attach.h */
struct attachment; /* xdp.h */
struct sluice_bpf;

struct attach_target {
	const char *kind; /* "limiter", "shaper" (status -j, messages) */
	const char *verb; /* "" or "shape ": 'sluice %sattach' */
	const char *prefix; /* of the state's name: "" or SLUICE_SHAPE_PREFIX */
	bool shape; /* a shaper's state: its edits are checked as a shaper's */
	const char *prog_name; /* the object's program this target attaches */
	/* why attach cannot run when the object lacks prog_name (NULL: it
	 * always has it) */
	const char *no_prog;
	size_t priv_size; /* of the target's part of an attach (c->priv) */

	/* sluice attach, in its order (attach.c). Step 1: what runs on the
	 * interface (a fresh attach, or an upgrade: c->kind, c->prog_id). */
	int (*inspect)(struct attach_ctx *c);
	/* A config in memory that the edits are checked against. */
	void (*scratch)(struct attach_ctx *c, struct sluice_config *cfg);
	/* What the policies after the edits (t's) ask of the target. */
	int (*size)(struct attach_ctx *c, struct sluice_txn *t);
	/* The kind bits of a new state's config (SLUICE_KIND_*). */
	__u32 (*new_kind)(const struct attach_ctx *c);
	/* Step 2, the maps made: before any program reads the state. */
	void (*prepare)(struct attach_ctx *c, struct sluice_handle *h);
	/* Step 3: attach (or upgrade) the program of *skel, which it may
	 * replace; its id in *new_id. */
	int (*attach_prog)(struct attach_ctx *c, struct sluice_bpf **skel, __u32 *new_id);
	/* The program runs: what the config records of the target. */
	void (*record)(struct attach_ctx *c, struct sluice_config *cfg);
	/* The summary's first lines. */
	void (*summary)(struct attach_ctx *c, __u32 new_id);

	/* sluice detach (detach.c): remove the program(s) of ours (how many,
	 * or -errno with err), then undo what attach made around it (cfg: the
	 * pinned config, has_cfg when it is this interface's). */
	int (*detach)(const char *ifname, unsigned int ifindex, const char *dir, char *err,
		      size_t errlen);
	int (*restore)(const char *ifname, unsigned int ifindex, struct sluice_config *cfg,
		       bool has_cfg, char *err, size_t errlen);
	/* --keep-state: what the live config keeps of cfg (restore's record). */
	void (*keep)(struct sluice_config *live, const struct sluice_config *cfg);
	const char *none; /* "sluice is not attached to %s" */
	const char *detached; /* a line after detach's, "%s" the interface; NULL: none */
	bool run_claims; /* sluice run claims its interface (owner.c) */

	/* sluice status (status.c): the program of ours on ifindex (a zeroed
	 * before), how it is attached, the first line, and the target's own
	 * lines. */
	int (*find)(unsigned int ifindex, struct attachment *a);
	const char *(*mode)(const struct attachment *a);
	void (*status_line)(const char *name, unsigned int ifindex, const struct attachment *a,
			    const char *run);
	void (*status_text)(unsigned int ifindex, const struct sluice_handle *h);
	void (*status_json)(struct sluice_json *j, unsigned int ifindex,
			    const struct sluice_handle *h);
};

extern const struct attach_target xdp_target; /* xdp.c */
extern const struct attach_target shape_target; /* shape.c */

/* The target of a state: shape:IFACE is a shaper's. */
static inline const struct attach_target *target_of(bool shape)
{
	return shape ? &shape_target : &xdp_target;
}

#endif /* SLUICE_TARGET_H */
