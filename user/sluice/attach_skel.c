// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The embedded object of sluice attach: opened with the state's pin paths
 * and table sizes and the target's program, the target's program attached
 * from it, and the program's pin; and refuse(), how an attach step fails.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach.h"

int refuse(struct attach_ctx *c, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return ret;
}

/* Pin paths and table sizes: the same for the maps-only object and the
 * program's object, so that the second reuses what the first pinned. */
static int setup_skel(struct attach_ctx *c, struct sluice_bpf *skel)
{
	struct bpf_program *p;
	char path[512];
	size_t i;
	int ret;

	for (i = 0; i < sluice_nr_maps; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(skel->obj, sluice_maps[i].name);

		/* An added_later map that this build's object does not have
		 * (the shaper's counters before its program) is not pinned. */
		if (!m && sluice_maps[i].added_later)
			continue;
		if (!m)
			return -ENOENT;
		/* A map missing from an existing state (added_later, see
		 * inspect_pins()) is created and pinned by libbpf at load. */
		snprintf(path, sizeof(path), "%s/%s", c->dir, sluice_maps[i].name);
		ret = bpf_map__set_pin_path(m, path);
		if (ret)
			return ret;
	}
	/* The key table: the program reads the one the state has (its
	 * rodata), the maps are as big as pinned (libbpf reuses a pin only
	 * when they match). */
	skel->rodata->table_sets = c->sets;
	skel->rodata->sets_n[0] = c->sets_n[0];
	skel->rodata->sets_n[1] = c->sets_n[1];
	skel->rodata->sets_n[2] = c->sets_n[2];
	skel->rodata->wide_keys = c->wide;
	/* Wide keys turned on in a state that had them off: their empty
	 * table of one entry gives way to one of --max-flows. */
	if (c->wide_remake) {
		snprintf(path, sizeof(path), "%s/%s", c->dir,
			 c->sets ? SLUICE_MAP_SETSF : SLUICE_MAP_FLOWS);
		if (unlink(path) && errno != ENOENT)
			return -errno;
	}
	ret = bpf_map__set_max_entries(skel->maps.sluice_sets4, c->sets_n[0]);
	if (!ret)
		ret = bpf_map__set_max_entries(skel->maps.sluice_sets6, c->sets_n[1]);
	if (!ret)
		ret = bpf_map__set_max_entries(skel->maps.sluice_setsf, c->sets_n[2]);
	if (!ret)
		ret = bpf_map__set_max_entries(skel->maps.sluice_flows, c->max_flows);
	if (!ret)
		ret = bpf_map__set_max_entries(skel->maps.sluice_buckets, c->max_keys);
	if (!ret)
		ret = bpf_map__set_max_entries(skel->maps.sluice_logs, c->max_log_keys);
	/* Two generations of rules in the trie; the table holds the live one. */
	if (!ret)
		ret = bpf_map__set_max_entries(skel->maps.sluice_rules, 2 * c->max_rules);
	if (!ret)
		ret = bpf_map__set_max_entries(skel->maps.sluice_rulehash, 2 * c->max_rules);
	if (!ret)
		ret = bpf_map__set_max_entries(skel->maps.sluice_ruletab, c->max_rules);
	if (!ret)
		ret = bpf_map__set_max_entries(skel->maps.sluice_fleet_use, c->fleet_keys);
	if (ret)
		return ret;
	/* One program per kind: a limiter's attach does not verify the
	 * shaper's program, nor the reverse. */
	bpf_object__for_each_program(p, skel->obj) {
		bool want = !strcmp(bpf_program__name(p), c->t->prog_name);

		ret = bpf_program__set_autoload(p, want);
		if (ret)
			return ret;
	}
	if (!bpf_object__find_program_by_name(skel->obj, c->t->prog_name))
		return -ENOENT;
	return 0;
}

/* Pin the program where status and detach look: a new pin, then a rename
 * over the old one, so the path always names a program. */
int attach_pin_prog(struct attach_ctx *c, int prog_fd)
{
	char tmp[512], path[512];

	snprintf(tmp, sizeof(tmp), "%s/%s", c->dir, PROG_PIN_NEW);
	snprintf(path, sizeof(path), "%s/%s", c->dir, SLUICE_PROG_PIN);
	unlink(tmp);
	if (bpf_obj_pin(prog_fd, tmp))
		return refuse(c, -errno, "Couldn't pin the program at %s: %s", tmp,
			      strerror(errno));
	if (rename(tmp, path)) {
		int ret = refuse(c, -errno, "Couldn't rename %s to %s: %s", tmp, path,
				 strerror(errno));

		unlink(tmp);
		return ret;
	}
	return 0;
}

struct sluice_bpf *attach_open_skel(struct attach_ctx *c)
{
	struct sluice_bpf *skel = sluice_bpf__open();
	int ret;

	if (!skel) {
		refuse(c, -errno, "Couldn't open the embedded BPF object: %s", strerror(errno));
		return NULL;
	}
	ret = setup_skel(c, skel);
	if (ret == -ENOENT && c->t->no_prog) {
		refuse(c, -ENOPROTOOPT, "%s", c->t->no_prog);
		ret = -ENOPROTOOPT;
	}
	if (ret) {
		if (ret != -ENOPROTOOPT)
			refuse(c, ret, "Couldn't prepare the BPF object: %s", strerror(-ret));
		sluice_bpf__destroy(skel);
		errno = -ret;
		return NULL;
	}
	return skel;
}

int attach_program(struct attach_ctx *c, __u32 *new_id)
{
	struct sluice_bpf *skel;
	int ret;

	skel = attach_open_skel(c);
	if (!skel)
		return -errno;
	ret = c->t->attach_prog(c, &skel, new_id);
	if (skel)
		sluice_bpf__destroy(skel);
	return ret;
}
