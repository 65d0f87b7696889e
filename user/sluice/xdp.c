// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The XDP target (target.h): the limiter's program at XDP. A fresh attach
 * goes through libxdp (in its dispatcher where the kernel allows one, alone
 * where not); an upgrade swaps the old program for the new in one step;
 * detach removes only programs of ours; status says how it is attached.
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

/* ---- attach ---- */

/* What runs on the interface decides between a fresh attach and an upgrade. */
static int xdp_inspect(struct attach_ctx *c)
{
	struct attach_opts *o = c->o;
	struct xdp_opts *x = &o->xdp;
	struct attachment *a = c->priv;
	int ret;

	ret = find_attachment(o->ifindex, a);
	if (ret)
		return refuse(c, ret, "Couldn't query the XDP programs of %s: %s", o->ifname,
			      strerror(-ret));
	if (a->other_id)
		return refuse(c, -EBUSY,
			      "the XDP program '%s' (id %u) is attached to %s, not through "
			      "libxdp's dispatcher, so sluice cannot run next to it: detach it "
			      "first (e.g. 'ip link set dev %s %s off' if nothing else needs it)",
			      a->other_name, a->other_id, o->ifname, o->ifname,
			      a->mode == XDP_MODE_SKB ? "xdpgeneric" : "xdpdrv");
	if (!a->prog_id) {
		c->kind = ATTACH_FRESH;
		if (a->dispatcher && a->nr_progs) {
			/* Join the dispatcher in the mode it runs in. */
			if (x->mode_given && x->mode != a->mode)
				return refuse(c, -EBUSY,
					      "the XDP programs on %s run in %s mode: sluice can "
					      "only join them in that mode (--mode %s)",
					      o->ifname, mode_name(a->mode), mode_name(a->mode));
			x->mode = a->mode;
		}
		return 0;
	}
	c->prog_id = a->prog_id;
	c->kind = a->dispatcher ? ATTACH_UPGRADE_DISPATCHER : ATTACH_UPGRADE_LEGACY;
	if (x->mode_given && x->mode != a->mode)
		return refuse(c, -EBUSY,
			      "sluice is attached to %s in %s mode: to change the mode, run "
			      "'sluice detach %s --keep-state', then attach with --mode %s (%s is "
			      "not limited in between)",
			      o->ifname, mode_name(a->mode), o->ifname, mode_name(x->mode),
			      o->ifname);
	x->mode = a->mode;
	if (!c->pins_existed)
		pr_warn("warning: sluice runs on %s but its pinned state is gone: the upgrade "
			"starts with empty key tables and the default policy\n",
			o->ifname);
	return 0;
}

static int attach_err(struct attach_ctx *c, int ret)
{
	const struct attach_opts *o = c->o;

	switch (ret) {
	case -EOPNOTSUPP:
		if (o->xdp.mode == XDP_MODE_NATIVE)
			return refuse(c, ret,
				      "%s does not support native XDP: attach with --mode skb "
				      "(generic XDP: same limits, more CPU per packet)",
				      o->ifname);
		return refuse(c, ret, "%s does not support XDP in %s mode", o->ifname,
			      mode_name(o->xdp.mode));
	case -EBUSY:
	case -EEXIST:
		return refuse(c, ret,
			      "another XDP program is attached to %s and libxdp could not add "
			      "sluice next to it: see 'xdp-loader status %s', detach it, then "
			      "attach again",
			      o->ifname, o->ifname);
	case -EPERM:
	case -EACCES:
		return refuse(c, ret,
			      "Couldn't attach sluice to %s: %s: attaching needs root, or "
			      "CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN (with -v libbpf shows what "
			      "was refused)",
			      o->ifname, strerror(-ret));
	default:
		return refuse(c, ret, "Couldn't attach sluice to %s: %s (run with -v to see why)",
			      o->ifname, strerror(-ret));
	}
}

/* A fresh attach, or an upgrade inside libxdp's dispatcher. */
static int attach_libxdp(struct attach_ctx *c, struct sluice_bpf *skel, __u32 *new_id)
{
	const struct attachment *a = c->priv;
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
	ret = xdp_program__attach(xp, (int)c->o->ifindex, c->o->xdp.mode, 0);
	if (ret) {
		attach_err(c, ret);
		goto out;
	}
	if (bpf_obj_get_info_by_fd(xdp_program__fd(xp), &info, &len) == 0)
		*new_id = info.id;
	ret = attach_pin_prog(c, xdp_program__fd(xp));
	if (ret && c->kind == ATTACH_FRESH) {
		xdp_program__detach(xp, (int)c->o->ifindex, c->o->xdp.mode, 0);
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
		int old_fd = bpf_prog_get_fd_by_id(a->prog_id);

		/* From our fd, closed here: libxdp 1.3.1's xdp_program__from_id()
		 * keeps one. */
		old = old_fd < 0 ? NULL : xdp_program__from_fd(old_fd);
		ret = old_fd < 0 ? -errno : (int)libxdp_get_error(old);
		if (old_fd >= 0)
			close(old_fd);
		if (ret)
			old = NULL; /* nothing to close */
		else
			ret = xdp_program__detach(old, (int)c->o->ifindex, c->o->xdp.mode, 0);
		if (ret) {
			refuse(c, ret,
			       "the new program runs on %s, but Couldn't detach the old one (id "
			       "%u): %s; both limit every packet until 'xdp-loader unload %s -i "
			       "%u' removes it",
			       c->o->ifname, a->prog_id, strerror(-ret), c->o->ifname, a->prog_id);
		}
	}
out:
	if (old)
		xdp_program__close(old);
	xdp_program__close(xp);
	return ret;
}

/* Load the program (verify it) for an attach without libxdp: its fd, its id
 * in *new_id; else what refuse() or attach_err() return. */
static int load_xdp(struct attach_ctx *c, struct sluice_bpf *skel, __u32 *new_id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int ret, fd;

	ret = sluice_bpf__load(skel);
	if (ret) {
		ret = -errno;
		if (ret == -EPERM || ret == -EACCES)
			return attach_err(c, ret);
		return refuse(c, ret,
			      "Couldn't load the sluice program: %s (run with -v to see "
			      "the verifier's log)",
			      strerror(-ret));
	}
	fd = bpf_program__fd(skel->progs.sluice_xdp);
	if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
		*new_id = info.id;
	return fd;
}

/*
 * Upgrade of a program attached alone: one netlink request swaps the old
 * program for the new one (XDP_FLAGS_REPLACE, checked against the old fd),
 * so every packet meets one of the two and none goes unlimited.
 */
static int upgrade_legacy(struct attach_ctx *c, struct sluice_bpf *skel, __u32 *new_id)
{
	const struct attachment *a = c->priv;
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	__u32 flags;
	int ret, new_fd, old_fd;

	new_fd = load_xdp(c, skel, new_id);
	if (new_fd < 0)
		return new_fd;
	/* Pinned first, so that a failed swap leaves the pin of the old. */
	old_fd = bpf_prog_get_fd_by_id(a->prog_id);
	if (old_fd < 0)
		return refuse(c, -errno,
			      "the program on %s (id %u) went away during the upgrade: run "
			      "'sluice attach %s' again",
			      c->o->ifname, a->prog_id, c->o->ifname);
	opts.old_prog_fd = old_fd;
	flags = XDP_FLAGS_REPLACE |
		(a->mode == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
	ret = bpf_xdp_attach((int)c->o->ifindex, new_fd, flags, &opts);
	close(old_fd);
	if (ret == -EEXIST || ret == -ENOENT)
		return refuse(c, ret,
			      "the program on %s changed during the upgrade: nothing was replaced; "
			      "run 'sluice attach %s' again",
			      c->o->ifname, c->o->ifname);
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
	__u32 mode;
	int ret, fd;

	fd = load_xdp(c, skel, new_id);
	if (fd < 0)
		return fd;
	mode = c->o->xdp.mode == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
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

static int xdp_attach_prog(struct attach_ctx *c, struct sluice_bpf **skel, __u32 *new_id)
{
	const struct attachment *a = c->priv;
	int ret;

	if (c->kind == ATTACH_UPGRADE_LEGACY)
		return upgrade_legacy(c, *skel, new_id);
	ret = attach_libxdp(c, *skel, new_id);
	/*
	 * When the dispatcher passes libxdp's compatibility check but then
	 * cannot take the program, libxdp falls back to attaching alone the
	 * program it has just loaded as an extension of the dispatcher, which
	 * the kernel refuses. On an interface with no program that is worth a
	 * second try, alone and loaded as XDP.
	 */
	if (ret && c->kind == ATTACH_FRESH && !a->nr_progs && ret != -EOPNOTSUPP && ret != -EBUSY &&
	    ret != -EEXIST && bpf_program__type((*skel)->progs.sluice_xdp) == BPF_PROG_TYPE_EXT) {
		pr_debug("libxdp could not attach sluice (%s): attaching it alone\n",
			 strerror(-ret));
		sluice_bpf__destroy(*skel);
		*skel = attach_open_skel(c);
		if (!*skel)
			return -errno;
		ret = attach_direct(c, *skel, new_id);
	}
	return ret;
}

static void xdp_summary(struct attach_ctx *c, __u32 new_id)
{
	const struct attachment *a = c->priv;
	struct attachment now;

	if (find_attachment(c->o->ifindex, &now))
		memset(&now, 0, sizeof(now));
	if (c->kind == ATTACH_FRESH)
		printf("sluice attached to %s in %s mode: program %u, %s\n", c->o->ifname,
		       mode_name(now.prog_id ? now.mode : c->o->xdp.mode), new_id,
		       now.dispatcher ? "in libxdp's dispatcher" :
					"alone (not in libxdp's dispatcher)");
	else
		printf("sluice upgraded on %s in %s mode: program %u replaced by %u %s\n",
		       c->o->ifname, mode_name(c->o->xdp.mode), a->prog_id, new_id,
		       c->kind == ATTACH_UPGRADE_LEGACY ? "in one step" : "in libxdp's dispatcher");
}

/* ---- detach ---- */

/*
 * A program attached alone is removed with XDP_FLAGS_REPLACE against its own
 * fd, so that a program someone else attached meanwhile is never removed.
 */
static int detach_legacy(unsigned int ifindex, const struct attachment *a)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	int fd, ret;

	fd = bpf_prog_get_fd_by_id(a->prog_id);
	if (fd < 0)
		return -errno;
	opts.old_prog_fd = fd;
	ret = bpf_xdp_detach((int)ifindex,
			     XDP_FLAGS_REPLACE | (a->mode == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE :
									    XDP_FLAGS_DRV_MODE),
			     &opts);
	close(fd);
	return ret;
}

static int detach_component(unsigned int ifindex, const struct attachment *a)
{
	struct xdp_program *p;
	int fd, ret;

	/* Not xdp_program__from_id(): libxdp 1.3.1 keeps the fd it opens
	 * there. xdp_program__from_fd() works on a duplicate of ours. */
	fd = bpf_prog_get_fd_by_id(a->prog_id);
	if (fd < 0)
		return -errno;
	p = xdp_program__from_fd(fd);
	close(fd);
	ret = (int)libxdp_get_error(p);
	if (ret)
		return ret;
	ret = xdp_program__detach(p, (int)ifindex, a->mode, 0);
	xdp_program__close(p);
	return ret;
}

/* Detach every sluice program from ifindex (one, unless someone attached
 * more through the dispatcher). Returns how many, or -errno. */
static int xdp_detach(const char *ifname, unsigned int ifindex, const char *dir, char *err,
		      size_t errlen)
{
	struct attachment a;
	int n, ret;

	(void)dir;
	for (n = 0; n < 16; n++) {
		ret = find_attachment(ifindex, &a);
		if (ret) {
			snprintf(err, errlen, "Couldn't query the XDP programs of %s: %s", ifname,
				 strerror(-ret));
			return ret;
		}
		if (!a.prog_id)
			return n;
		ret = a.dispatcher ? detach_component(ifindex, &a) : detach_legacy(ifindex, &a);
		/* Gone meanwhile (ENOENT, EEXIST): look again. */
		if (ret && ret != -ENOENT && ret != -EEXIST) {
			snprintf(err, errlen, "Couldn't detach program %u from %s: %s", a.prog_id,
				 ifname, strerror(-ret));
			return ret;
		}
		pr_debug("detached program %u from %s\n", a.prog_id, ifname);
	}
	snprintf(err, errlen, "Couldn't detach sluice from %s: programs keep appearing", ifname);
	return -EAGAIN;
}

/* ---- status ---- */

static const char *xdp_mode(const struct attachment *a)
{
	return mode_name(a->mode);
}

static void xdp_status_line(const char *name, unsigned int ifindex, const struct attachment *a,
			    const char *run)
{
	printf("%s (ifindex %u): attached in %s mode, program %u%s%s\n", name, ifindex,
	       mode_name(a->mode), a->prog_id, a->dispatcher ? ", in libxdp's dispatcher" : "",
	       run);
}

const struct attach_target xdp_target = {
	.kind = "limiter",
	.verb = "",
	.prefix = "",
	.prog_name = SLUICE_PROG_NAME,
	.priv_size = sizeof(struct attachment),
	.inspect = xdp_inspect,
	.attach_prog = xdp_attach_prog,
	.summary = xdp_summary,
	.detach = xdp_detach,
	.none = "sluice is not attached to %s",
	.run_claims = true,
	.find = find_attachment,
	.mode = xdp_mode,
	.status_line = xdp_status_line,
};
