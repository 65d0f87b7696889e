// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The program side of sluice attach: a fresh attach through libxdp (in its
 * dispatcher where the kernel allows one, alone where not), an upgrade that
 * swaps the old program for the new in one step, and the program's pin.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach.h"

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
	ret = bpf_map__set_max_entries(skel->maps.sluice_sets4, c->sets_n[0]);
	if (!ret)
		ret = bpf_map__set_max_entries(skel->maps.sluice_sets6, c->sets_n[1]);
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
		bool want = !strcmp(bpf_program__name(p),
				    c->o->shape ? SHAPE_PROG_NAME : SLUICE_PROG_NAME);

		ret = bpf_program__set_autoload(p, want);
		if (ret)
			return ret;
	}
	if (c->o->shape && !bpf_object__find_program_by_name(skel->obj, SHAPE_PROG_NAME))
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

static int attach_err(struct attach_ctx *c, int ret)
{
	const struct attach_opts *o = c->o;

	switch (ret) {
	case -EOPNOTSUPP:
		if (o->mode == XDP_MODE_NATIVE)
			return refuse(c, ret,
				      "%s does not support native XDP: attach with --mode skb "
				      "(generic XDP: same limits, more CPU per packet)", o->ifname);
		return refuse(c, ret, "%s does not support XDP in %s mode", o->ifname,
			      mode_name(o->mode));
	case -EBUSY:
	case -EEXIST:
		return refuse(c, ret,
			      "another XDP program is attached to %s and libxdp could not add "
			      "sluice next to it: see 'xdp-loader status %s', detach it, then "
			      "attach again", o->ifname, o->ifname);
	case -EPERM:
	case -EACCES:
		return refuse(c, ret,
			      "Couldn't attach sluice to %s: %s: attaching needs root, or "
			      "CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN (with -v libbpf shows what "
			      "was refused)", o->ifname, strerror(-ret));
	default:
		return refuse(c, ret, "Couldn't attach sluice to %s: %s (run with -v to see why)",
			      o->ifname, strerror(-ret));
	}
}

/* A fresh attach, or an upgrade inside libxdp's dispatcher. */
static int attach_libxdp(struct attach_ctx *c, struct sluice_bpf *skel, __u32 *new_id)
{
	struct xdp_program *xp, *old = NULL;
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int ret;

	xp = xdp_program__from_bpf_obj(skel->obj, NULL);
	ret = (int)libxdp_get_error(xp);
	if (ret)
		return refuse(c, ret, "Couldn't prepare the program for libxdp: %s",
			      strerror(-ret));
	/* The dispatcher, when the kernel allows it, loads the program as an
	 * extension of itself; otherwise libxdp loads it as a plain XDP
	 * program and attaches it alone. */
	ret = xdp_program__attach(xp, (int)c->o->ifindex, c->o->mode, 0);
	if (ret) {
		attach_err(c, ret);
		goto out;
	}
	if (bpf_obj_get_info_by_fd(xdp_program__fd(xp), &info, &len) == 0)
		*new_id = info.id;
	ret = attach_pin_prog(c, xdp_program__fd(xp));
	if (ret && c->kind == ATTACH_FRESH) {
		xdp_program__detach(xp, (int)c->o->ifindex, c->o->mode, 0);
		goto out;
	}
	if (ret) {
		/* An upgrade: the new program runs; only its pin is missing. */
		pr_warn("warning: %s\n", c->err);
		ret = 0;
	}
	if (c->kind == ATTACH_UPGRADE_DISPATCHER) {
		/* The new program runs after the old one from here on: a
		 * packet the old one passes is charged again by the new one,
		 * so the interface is limited twice over, never unlimited,
		 * until the old one is gone. */
		int old_fd = bpf_prog_get_fd_by_id(c->a.prog_id);

		/* From our fd, closed here: libxdp 1.3.1's xdp_program__from_id()
		 * keeps one. */
		old = old_fd < 0 ? NULL : xdp_program__from_fd(old_fd);
		ret = old_fd < 0 ? -errno : (int)libxdp_get_error(old);
		if (old_fd >= 0)
			close(old_fd);
		if (ret)
			old = NULL; /* nothing to close */
		else
			ret = xdp_program__detach(old, (int)c->o->ifindex, c->o->mode, 0);
		if (ret) {
			refuse(c, ret,
			       "the new program runs on %s, but Couldn't detach the old one (id "
			       "%u): %s; both limit every packet until 'xdp-loader unload %s -i "
			       "%u' removes it",
			       c->o->ifname, c->a.prog_id, strerror(-ret), c->o->ifname,
			       c->a.prog_id);
		}
	}
out:
	if (old)
		xdp_program__close(old);
	xdp_program__close(xp);
	return ret;
}

/*
 * Upgrade of a program attached alone: one netlink request swaps the old
 * program for the new one (XDP_FLAGS_REPLACE, checked against the old fd),
 * so every packet meets one of the two and none goes unlimited.
 */
static int upgrade_legacy(struct attach_ctx *c, struct sluice_bpf *skel, __u32 *new_id)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), flags;
	int ret, new_fd, old_fd;

	ret = sluice_bpf__load(skel);
	if (ret) {
		ret = -errno;
		if (ret == -EPERM || ret == -EACCES)
			return attach_err(c, ret);
		return refuse(c, ret, "Couldn't load the sluice program: %s (run with -v to see "
			      "the verifier's log)", strerror(-ret));
	}
	new_fd = bpf_program__fd(skel->progs.sluice_xdp);
	if (bpf_obj_get_info_by_fd(new_fd, &info, &len) == 0)
		*new_id = info.id;
	/* Pinned first, so that a failed swap leaves the pin of the old. */
	old_fd = bpf_prog_get_fd_by_id(c->a.prog_id);
	if (old_fd < 0)
		return refuse(c, -errno,
			      "the program on %s (id %u) went away during the upgrade: run "
			      "'sluice attach %s' again", c->o->ifname, c->a.prog_id, c->o->ifname);
	opts.old_prog_fd = old_fd;
	flags = XDP_FLAGS_REPLACE |
		(c->a.mode == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
	ret = bpf_xdp_attach((int)c->o->ifindex, new_fd, flags, &opts);
	close(old_fd);
	if (ret == -EEXIST || ret == -ENOENT)
		return refuse(c, ret,
			      "the program on %s changed during the upgrade: nothing was replaced; "
			      "run 'sluice attach %s' again", c->o->ifname, c->o->ifname);
	if (ret)
		return attach_err(c, ret);
	ret = attach_pin_prog(c, new_fd);
	if (ret) {
		/* The new program runs; only the pin is stale. */
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", c->dir, SLUICE_PROG_PIN);
		unlink(path);
		pr_warn("warning: %s\n", c->err);
		ret = 0;
	}
	return ret;
}

/* A fresh attach without libxdp: the program alone, only if the interface
 * has none (XDP_FLAGS_UPDATE_IF_NOEXIST). */
static int attach_direct(struct attach_ctx *c, struct sluice_bpf *skel, __u32 *new_id)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), mode;
	int ret, fd;

	ret = sluice_bpf__load(skel);
	if (ret) {
		ret = -errno;
		if (ret == -EPERM || ret == -EACCES)
			return attach_err(c, ret);
		return refuse(c, ret, "Couldn't load the sluice program: %s (run with -v to see "
			      "the verifier's log)", strerror(-ret));
	}
	fd = bpf_program__fd(skel->progs.sluice_xdp);
	if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
		*new_id = info.id;
	mode = c->o->mode == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
	ret = bpf_xdp_attach((int)c->o->ifindex, fd, XDP_FLAGS_UPDATE_IF_NOEXIST | mode, NULL);
	if (ret)
		return attach_err(c, ret);
	ret = attach_pin_prog(c, fd);
	if (ret) {
		opts.old_prog_fd = fd;
		bpf_xdp_detach((int)c->o->ifindex, XDP_FLAGS_REPLACE | mode, &opts);
	}
	return ret;
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
	if (ret == -ENOENT && c->o->shape)
		refuse(c, -ENOPROTOOPT, "this sluice's BPF object has no program %s: it was built "
		       "without the shaper's datapath, so 'sluice shape' cannot run; build "
		       "sluice from a tree whose bpf/sluice.bpf.c has it", SHAPE_PROG_NAME);
	if (ret == -ENOENT && c->o->shape)
		ret = -ENOPROTOOPT;
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
	if (c->o->shape) {
		ret = shape_attach_program(c, skel, new_id);
		goto out;
	}
	if (c->kind == ATTACH_UPGRADE_LEGACY) {
		ret = upgrade_legacy(c, skel, new_id);
		goto out;
	}
	ret = attach_libxdp(c, skel, new_id);
	/*
	 * When the dispatcher passes libxdp's compatibility check but then
	 * cannot take the program, libxdp falls back to attaching alone the
	 * program it has just loaded as an extension of the dispatcher, which
	 * the kernel refuses. On an interface with no program that is worth a
	 * second try, alone and loaded as XDP.
	 */
	if (ret && c->kind == ATTACH_FRESH && !c->a.nr_progs && ret != -EOPNOTSUPP &&
	    ret != -EBUSY && ret != -EEXIST &&
	    bpf_program__type(skel->progs.sluice_xdp) == BPF_PROG_TYPE_EXT) {
		pr_debug("libxdp could not attach sluice (%s): attaching it alone\n",
			 strerror(-ret));
		sluice_bpf__destroy(skel);
		skel = attach_open_skel(c);
		if (!skel)
			return -errno;
		ret = attach_direct(c, skel, new_id);
	}
out:
	sluice_bpf__destroy(skel);
	return ret;
}
