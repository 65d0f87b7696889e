// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A renamed interface (`ip link set A name B`) keeps its ifindex, and so its
 * program and its limiter: a state belongs to an ifindex (owner.ifindex),
 * and its pin directory follows the interface's name. The directory is
 * renamed, under the pin root's lock, by the first command that meets the
 * rename: by B (its state is still under A: moved to B), by A (its state's
 * interface is called B now: moved, and A is told so), by a listing
 * (status, sluicectl without -i) and by a `sluice run` that reports on it.
 *
 * Why move the directory rather than look a state up by ifindex: the pin
 * path is what operators and tools use (bpftool, the docs' commands,
 * PINROOT/IFACE), each lookup stays one path, and the old name is left free
 * for a new interface that takes it, which must not find the state of the
 * interface now called B (its --fresh would drop a limiter that runs).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "libsluice.h"

/*
 * What a command by the old name should say once the state has moved: a
 * note in the pin root, WAS_PREFIX A holding one empty directory named B
 * ("A was renamed to B"), kept until B's state is detached. A ':' is never
 * in an interface's name: listings skip it.
 */
#define WAS_PREFIX "was:"
#define MAX_CHAIN 8 /* A to B to C ...: the notes followed at most */

static void crumb_path(const char *root, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s%s", root, WAS_PREFIX, name);
}

/* The name a note says name went to; false when there is none. */
static bool crumb_read(const char *root, const char *name, char *to, size_t len)
{
	char path[512];
	struct dirent *de;
	bool found = false;
	DIR *d;

	crumb_path(root, name, path, sizeof(path));
	d = opendir(path);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(to, len, "%s", de->d_name);
		found = true;
		break;
	}
	if (d)
		closedir(d);
	return found;
}

static void crumb_drop(const char *root, const char *name)
{
	char path[512], to[SLUICE_STATE_NAME_MAX], sub[768];

	crumb_path(root, name, path, sizeof(path));
	while (crumb_read(root, name, to, sizeof(to))) {
		snprintf(sub, sizeof(sub), "%s/%s", path, to);
		if (rmdir(sub))
			break;
	}
	rmdir(path);
}

static void crumb_make(const char *root, const char *from, const char *to)
{
	char path[512], sub[768];

	crumb_drop(root, from);
	crumb_drop(root, to); /* to is a state's name now */
	crumb_path(root, from, path, sizeof(path));
	snprintf(sub, sizeof(sub), "%s/%s", path, to);
	if (mkdir(path, 0700) || mkdir(sub, 0700))
		pr_debug("Couldn't note that %s was renamed to %s in %s: %s\n", from, to, root,
			 strerror(errno));
}

/* Where the notes from name lead: the state's name now (to), and its dir
 * has a config; false when they lead nowhere. */
static bool crumb_resolve(const char *root, const char *name, char *to, size_t len)
{
	char cur[SLUICE_STATE_NAME_MAX], path[512];
	struct stat st;
	int i;

	snprintf(cur, sizeof(cur), "%s", name);
	for (i = 0; i < MAX_CHAIN; i++) {
		if (!crumb_read(root, cur, to, len))
			return false;
		snprintf(path, sizeof(path), "%s/%s/%s", root, to, SLUICE_MAP_CONFIG);
		if (stat(path, &st) == 0)
			return true;
		snprintf(cur, sizeof(cur), "%s", to);
	}
	return false;
}

/* Is cfg the state of an interface of this namespace, by its ifindex? */
static bool owned_here(const struct sluice_config *cfg)
{
	struct sluice_netns ns;

	return cfg->layout >= SLUICE_LAYOUT_OWNER && cfg->owner.life && cfg->owner.ifindex &&
	       sluice_netns_self(&ns, NULL, 0) == 0 && sluice_netns_same(&ns, &cfg->owner);
}

/* Move root/from to root/to (never over anything), under the pin root's
 * lock (taken here unless this process holds it). */
static int move_state(const char *root, const char *from, const char *to, __u32 ifindex, char *err,
		      size_t errlen)
{
	char src[512], dst[512];
	struct sluice_config cfg;
	int lock_fd = -1, ret = 0;

	snprintf(src, sizeof(src), "%s/%s", root, from);
	snprintf(dst, sizeof(dst), "%s/%s", root, to);
	if (!sluice_pin_root_locked()) {
		lock_fd = sluice_lock_pin_root(err, errlen);
		if (lock_fd < 0)
			return lock_fd;
	}
	/* Again under the lock: another command may have moved it. */
	if (!sluice_pinned_config(src, &cfg) || cfg.owner.ifindex != ifindex) {
		ret = -EAGAIN;
		goto out;
	}
	if (renameat2(AT_FDCWD, src, AT_FDCWD, dst, RENAME_NOREPLACE)) {
		ret = sluice_err(err, errlen, -errno, "Couldn't move %s to %s: %s%s", src, dst,
				 strerror(errno),
				 errno == EEXIST || errno == ENOTEMPTY ?
					 " (it holds another state: look at it with 'sluice "
					 "status', and remove it by hand if it is left over)" :
					 "");
		goto out;
	}
	crumb_make(root, from, to);
	pr_warn("%s: note: interface %s was renamed to %s (ifindex %u): moved its state from %s "
		"to %s\n",
		program_invocation_short_name, from, to, ifindex, src, dst);
out:
	if (lock_fd >= 0)
		sluice_unlock_pin_root(lock_fd);
	return ret;
}

/* "shape:" or "", the prefix of a state's name. */
static const char *prefix_of(bool shape)
{
	return shape ? SLUICE_SHAPE_PREFIX : "";
}

/* name has no state, and its interface (ifindex) is pinned under the name
 * it had before: move that state to name. */
static int follow_from(const char *root, const char *name, bool shape, unsigned int ifindex,
		       char *other, size_t olen, char *err, size_t errlen)
{
	char found[SLUICE_STATE_NAME_MAX] = "", dir[512], ifn[IF_NAMESIZE];
	struct sluice_config cfg;
	struct dirent *de;
	bool is_shape;
	DIR *d;
	int ret;

	d = opendir(root);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, name) ||
		    strlen(de->d_name) >= SLUICE_STATE_NAME_MAX ||
		    sluice_state_name(de->d_name, ifn, &is_shape, NULL, 0) || is_shape != shape)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name);
		/* Its own name still names its interface: not renamed. */
		if (!sluice_pinned_config(dir, &cfg) || !owned_here(&cfg) ||
		    cfg.owner.ifindex != ifindex || if_nametoindex(ifn) == ifindex)
			continue;
		snprintf(found, sizeof(found), "%s", de->d_name);
		break;
	}
	closedir(d);
	if (!found[0])
		return 0;
	ret = move_state(root, found, name, ifindex, err, errlen);
	if (ret == -EAGAIN)
		return 0;
	if (ret)
		return ret;
	snprintf(other, olen, "%s", found);
	return SLUICE_RENAMED_FROM;
}

int sluice_follow_rename(const char *name, char *other, size_t olen, char *err, size_t errlen)
{
	char root[128], dir[512], ifn[IF_NAMESIZE], now[IF_NAMESIZE], to[SLUICE_STATE_NAME_MAX];
	struct sluice_config cfg;
	unsigned int ifindex;
	bool shape;
	int ret;

	other[0] = '\0';
	if (sluice_state_name(name, ifn, &shape, NULL, 0) ||
	    sluice_pin_root(root, sizeof(root), false, NULL, 0))
		return 0;
	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	ifindex = if_nametoindex(ifn);
	if (!sluice_pinned_config(dir, &cfg))
		return ifindex ? follow_from(root, name, shape, ifindex, other, olen, err, errlen) :
				 0;
	/* name's state: is its interface called otherwise now? */
	if (!owned_here(&cfg) || cfg.owner.ifindex == ifindex ||
	    !if_indextoname(cfg.owner.ifindex, now) || !strcmp(now, ifn))
		return 0;
	snprintf(to, sizeof(to), "%s%s", prefix_of(shape), now);
	ret = move_state(root, name, to, cfg.owner.ifindex, err, errlen);
	if (ret == -EAGAIN)
		return 0;
	if (ret)
		return ret;
	snprintf(other, olen, "%s", to);
	return SLUICE_RENAMED_TO;
}

int sluice_renamed_to(const char *name, char *to, size_t len)
{
	char root[128], ifn[IF_NAMESIZE];
	bool shape;

	if (sluice_state_name(name, ifn, &shape, NULL, 0) ||
	    sluice_pin_root(root, sizeof(root), false, NULL, 0))
		return 0;
	return crumb_resolve(root, name, to, len);
}

void sluice_rename_forget(const char *name)
{
	char root[128], to[SLUICE_STATE_NAME_MAX], names[64][SLUICE_STATE_NAME_MAX];
	struct dirent *de;
	DIR *d;
	int n = 0, i;

	if (sluice_pin_root(root, sizeof(root), false, NULL, 0))
		return;
	d = opendir(root);
	while (d && (de = readdir(d)) && n < 64) {
		size_t plen = strlen(WAS_PREFIX);

		if (!strncmp(de->d_name, WAS_PREFIX, plen) &&
		    strlen(de->d_name + plen) < SLUICE_STATE_NAME_MAX)
			snprintf(names[n++], SLUICE_STATE_NAME_MAX, "%s", de->d_name + plen);
	}
	if (d)
		closedir(d);
	/* Notes that lead to name (or nowhere) say nothing true any more. */
	for (i = 0; i < n; i++)
		if (!crumb_resolve(root, names[i], to, sizeof(to)) || !strcmp(to, name))
			crumb_drop(root, names[i]);
	crumb_drop(root, name);
}
