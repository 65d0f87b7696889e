/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The pinned state of one interface (state.c): its handle, opening it, its
 * standing, its settings.
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
#include <sluice/l4rules.h>

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
	/* The rules that match on the transport header, both generations,
	 * mmapped (sluice_l4bm, sluice_l4rules, sluice_l4pol): NULL in a
	 * state pinned without them, until the next attach adds them. */
	struct sluice_l4maps {
		__u64 *bm; /* 2 x SLUICE_L4BM_WORDS */
		struct sluice_l4rule *rules; /* 2 x SLUICE_L4_RULES_MAX */
		struct sluice_policy *pol; /* the same */
	} l4;
	/* The policy of each slot under each settings half (sluice_policies,
	 * SLUICE_POLICY_AT): NULL in a state pinned without it, whose program
	 * reads the policies from the settings and the rules. */
	struct sluice_policy *policies;
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
int sluice_check_standing(const struct sluice_handle *h, bool for_write, char *err, size_t errlen);
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

#endif /* SLUICE_STATE_H */
