/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Finding sluice's XDP program on an interface (xdp_find.c): alone, or one
 * component of libxdp's dispatcher. The XDP target itself is xdp.c's
 * (target.h).
 */
#ifndef SLUICE_XDP_H
#define SLUICE_XDP_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/types.h>
#include <xdp/libxdp.h>

#define SLUICE_PROG_NAME "sluice_xdp"
/* Where a new program is pinned before it is renamed over SLUICE_PROG_PIN
 * (bpffs refuses names with a dot). */
#define PROG_PIN_NEW SLUICE_PROG_PIN "_new"

struct attachment {
	__u32 prog_id; /* the attached sluice program; 0: none */
	__u32 top_id; /* the program attached at the interface: ours, or the dispatcher */
	int slot; /* ours in the dispatcher: component N (its pin progN-prog); -1: none */
	enum xdp_attach_mode mode; /* how the interface's program is attached */
	bool dispatcher; /* ours is one component of libxdp's dispatcher */
	__u32 nr_progs; /* programs on the interface (dispatcher components, or 1) */
	__u32 other_id; /* a program that is not sluice's, attached directly */
	char other_name[BPF_OBJ_NAME_LEN];
};

/* What is attached to ifindex; 0 or -errno. Leaves no fd open (see
 * xdp_find.c on libxdp). */
int find_attachment(unsigned int ifindex, struct attachment *a);
/* Is a sluice program still attached to ifindex, as a (from
 * find_attachment()) says? 1 or 0, and a brought up to date, or -errno.
 * While nothing changed on the interface, one netlink question and at most
 * one stat(): for a loop that asks every interval. */
int attachment_check(unsigned int ifindex, struct attachment *a);
const char *mode_name(enum xdp_attach_mode mode);

#endif /* SLUICE_XDP_H */
