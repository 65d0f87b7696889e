/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Whose state it is (owner.c): the resume plan of an attach, the owner a
 * config records, and the one sluice run per interface. */
#ifndef SLUICE_OWNER_H
#define SLUICE_OWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "libsluice.h"

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

#endif /* SLUICE_OWNER_H */
