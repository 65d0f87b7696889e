// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Finding sluice's XDP program on an interface: alone, or in libxdp's
 * dispatcher, opening nothing that outlives the call. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libsluice.h"
#include "xdp.h"

const char *mode_name(enum xdp_attach_mode mode)
{
	switch (mode) {
	case XDP_MODE_NATIVE:
		return "native";
	case XDP_MODE_SKB:
		return "skb";
	case XDP_MODE_HW:
		return "hw";
	default:
		return "none";
	}
}

/*
 * Finding sluice on an interface opens nothing that it does not close: run
 * asks on every report, status and detach on every call. libxdp's
 * xdp_multiprog__get_from_ifindex() is not used for it: the libxdp of
 * Debian 12 (1.3.1; fixed in 1.4.1) keeps one duplicate of every program fd
 * it opens there (the attached program's, and each dispatcher component's),
 * which made a long `sluice run` die of EMFILE. Instead: the program ids from
 * netlink (bpf_xdp_query()), then each program's name through an fd that is
 * closed at once, and a dispatcher's components from libxdp's pins
 * (LIBXDP_BPFFS or /sys/fs/bpf, then xdp/dispatch-IFINDEX-ID/progN-prog),
 * read under libxdp's lock as libxdp itself reads them.
 */
#define XDP_DISPATCHER_NAME "xdp_dispatcher"
#define XDP_MAX_COMPONENTS 10 /* MAX_DISPATCHER_ACTIONS of libxdp */

/* The program attached to ifindex at the interface (the dispatcher, or a
 * program alone) and its mode: netlink only, no fd. 0 or -errno. */
static int xdp_top(unsigned int ifindex, __u32 *id, enum xdp_attach_mode *mode)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int ret;

	*id = 0;
	*mode = XDP_MODE_UNSPEC;
	ret = bpf_xdp_query((int)ifindex, 0, &q);
	if (ret)
		return ret;
	/* As libxdp: the driver's program first, then generic XDP; a
	 * program offloaded to the NIC is not sluice's. */
	if (q.attach_mode == XDP_ATTACHED_DRV ||
	    (q.attach_mode == XDP_ATTACHED_MULTI && q.drv_prog_id)) {
		*id = q.drv_prog_id;
		*mode = XDP_MODE_NATIVE;
	} else if (q.attach_mode == XDP_ATTACHED_SKB ||
		   (q.attach_mode == XDP_ATTACHED_MULTI && q.skb_prog_id)) {
		*id = q.skb_prog_id;
		*mode = XDP_MODE_SKB;
	}
	return 0;
}

/* The name and id of a program, by id or by pin (path non-NULL); the fd is
 * closed before returning. 0, or -ENOENT when it is gone. */
static int prog_name(__u32 id, const char *path, char *name, __u32 *out_id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd, ret = 0;

	fd = path ? bpf_obj_get(path) : bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		ret = -errno;
	close(fd);
	if (ret)
		return ret;
	memcpy(name, info.name, BPF_OBJ_NAME_LEN);
	name[BPF_OBJ_NAME_LEN - 1] = '\0';
	*out_id = info.id;
	return 0;
}

/* libxdp's pin directory of the dispatcher top_id on ifindex. */
static void dispatcher_dir(unsigned int ifindex, __u32 top_id, char *buf, size_t len)
{
	const char *root = secure_getenv(XDP_BPFFS_ENVVAR); /* as libxdp */

	snprintf(buf, len, "%s/xdp/dispatch-%u-%u", root && *root ? root : "/sys/fs/bpf", ifindex,
		 top_id);
}

/* The components of the dispatcher in dir, in their order. */
static int read_components(const char *dir, struct attachment *a)
{
	char lockdir[512], path[600], name[BPF_OBJ_NAME_LEN];
	const char *slash;
	__u32 id;
	int lock_fd, i, ret = 0;

	/* libxdp locks its directory (the parent of dir) while it changes a
	 * dispatcher: read whole sets of pins only. */
	slash = strrchr(dir, '/');
	snprintf(lockdir, sizeof(lockdir), "%.*s", (int)(slash - dir), dir);
	lock_fd = open(lockdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock_fd >= 0 && sluice_lock_fd(lock_fd, lockdir, NULL, 0)) {
		close(lock_fd);
		lock_fd = -1;
	}
	for (i = 0; i < XDP_MAX_COMPONENTS; i++) {
		snprintf(path, sizeof(path), "%s/prog%d-prog", dir, i);
		ret = prog_name(0, path, name, &id);
		if (ret == -ENOENT) {
			ret = 0;
			break;
		}
		if (ret)
			break;
		a->nr_progs++;
		if (!a->prog_id && !strcmp(name, SLUICE_PROG_NAME)) {
			a->prog_id = id;
			a->slot = i;
		}
	}
	if (lock_fd >= 0)
		close(lock_fd); /* releases the flock */
	return ret;
}

int find_attachment(unsigned int ifindex, struct attachment *a)
{
	char name[BPF_OBJ_NAME_LEN], dir[512];
	struct stat st;
	__u32 id;
	int ret, tries;

	for (tries = 0;; tries++) {
		memset(a, 0, sizeof(*a));
		a->slot = -1;
		ret = xdp_top(ifindex, &a->top_id, &a->mode);
		if (ret || !a->top_id)
			return ret == -ENODEV ? -ENODEV : ret;
		ret = prog_name(a->top_id, NULL, name, &id);
		/* Replaced between the two questions: ask again. */
		if (ret == -ENOENT && tries < 5)
			continue;
		if (ret)
			return ret;
		break;
	}
	dispatcher_dir(ifindex, a->top_id, dir, sizeof(dir));
	if (!strcmp(name, XDP_DISPATCHER_NAME) && stat(dir, &st) == 0) {
		a->dispatcher = true;
		return read_components(dir, a);
	}
	/* A program alone (or a dispatcher libxdp does not know: not ours). */
	a->nr_progs = 1;
	if (!strcmp(name, SLUICE_PROG_NAME)) {
		a->prog_id = a->top_id;
	} else {
		a->other_id = a->top_id;
		snprintf(a->other_name, sizeof(a->other_name), "%s", name);
	}
	return 0;
}

int attachment_check(unsigned int ifindex, struct attachment *a)
{
	char dir[512], path[600];
	enum xdp_attach_mode mode;
	struct stat st;
	__u32 top;
	int ret;

	ret = xdp_top(ifindex, &top, &mode);
	if (ret)
		return ret;
	if (top && top == a->top_id && mode == a->mode) {
		if (!a->dispatcher)
			return a->prog_id ? 1 : 0;
		/* The same dispatcher: its components are fixed (libxdp makes
		 * a new one for any change), unless the link's pin was removed
		 * by hand. stat() opens nothing. */
		if (a->slot < 0)
			return 0;
		dispatcher_dir(ifindex, top, dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/prog%d-prog", dir, a->slot);
		if (stat(path, &st) == 0)
			return 1;
	}
	/* Something changed (an upgrade, a program added or removed): look
	 * again, once. */
	ret = find_attachment(ifindex, a);
	if (ret)
		return ret;
	return a->prog_id ? 1 : 0;
}
