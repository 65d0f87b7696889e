/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What attach.c (the order of an attach: look, pin, settings, program),
 * attach_maps.c (the pinned maps), attach_skel.c (the embedded object and
 * the program's pin) and the targets' attach steps (xdp.c, shape.c)
 * share. Private to them.
 */
#ifndef SLUICE_ATTACH_H
#define SLUICE_ATTACH_H

#include "cmd.h"
#include "loader.h"
#include "sluice.skel.h"

enum attach_kind {
	ATTACH_FRESH, /* no sluice program on the interface */
	ATTACH_UPGRADE_LEGACY, /* ours is the interface's only program (or tc's filter) */
	ATTACH_UPGRADE_DISPATCHER, /* ours is a component of libxdp's dispatcher */
};

struct attach_ctx {
	struct attach_opts *o;
	const struct attach_target *t;
	void *priv; /* the target's own (t->priv_size bytes, zeroed) */
	char dir[256];
	bool dir_existed;
	bool pins_existed; /* every map was pinned before this call */
	/* pins_existed, but sluice_maps[i] (added_later) was not: this call
	 * pins it (create_maps()), and removes it again on failure */
	bool adds_map[SLUICE_MAX_MAPS];
	size_t nr_adds;
	bool fresh_config; /* the config has layout 0: give it the defaults */
	/* max_keys: sluice_buckets' entries (1 in a state of the sets table) */
	__u32 max_keys, max_log_keys, max_rules, fleet_keys;
	__u32 max_flows; /* sluice_flows's entries (the LRU table's wide keys) */
	bool wide; /* wide keys are on (--max-flows): the program has their code */
	bool wide_remake; /* ... and their pinned table, off until now, is made anew */
	/* The key table this call attaches with (--table sets: SLUICE_KIND_SETS)
	 * and the sets in sluice_sets4, sluice_sets6: the pinned state's when
	 * there is one, else from the options. */
	bool sets;
	__u32 sets_n[3]; /* sets of sluice_sets4, sluice_sets6, sluice_setsf */
	bool pinned_sets; /* pins_existed: the pinned state's table */
	bool table_change; /* pins_existed, and --table names the other table */
	/* what the target's inspect found: the program of ours that runs (0:
	 * none), and so a fresh attach or an upgrade */
	__u32 prog_id;
	enum attach_kind kind;
	/* the pinned config as it was before this call */
	bool have_old_cfg;
	struct sluice_config old_cfg;
	struct resume_plan plan;
	struct sluice_cmd_file *file; /* --config, read once */
	struct sluice_cmd_diff diff;
	char err[2 * SLUICE_ERR_LEN]; /* room for a libsluice message and context */
};

/* sluice_buckets' size in a state of the sets table, which does not use it
 * (the kernel takes an LRU hash of one entry). */
#define SETS_BUCKETS 1

/* attach_skel.c: put a message in c->err and return ret. */
int refuse(struct attach_ctx *c, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The embedded object with the pin paths and table sizes of c; NULL with
 * errno and c->err set. The only user of the object's bytes. */
struct sluice_bpf *attach_open_skel(struct attach_ctx *c);
/* Attach (or upgrade) the target's program; its id in *new_id. */
int attach_program(struct attach_ctx *c, __u32 *new_id);
/* Pin the attached program at SLUICE_PROG_PIN (a new pin renamed over). */
int attach_pin_prog(struct attach_ctx *c, int prog_fd);

/* attach_maps.c: what is pinned and whether it can be reused (step 1), the
 * maps created or reused (step 2), and undoing what this call pinned. */
int attach_inspect_pins(struct attach_ctx *c, struct sluice_bpf *skel);
int attach_create_maps(struct attach_ctx *c);
/* The key table's sizes of a new state, from --table and --max-keys. */
void attach_size_keys(struct attach_ctx *c, bool sets);
/* After the plan: a --table that is not the pinned state's is refused
 * unless the state is dropped (--fresh). */
int attach_check_table(struct attach_ctx *c);
void attach_undo_pins(struct attach_ctx *c);

#endif /* SLUICE_ATTACH_H */
