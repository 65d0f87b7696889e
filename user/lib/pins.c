// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Where pins live: the bpffs (mounted, and the one of the caller's mount
 * namespace's parent) and the pin directories of this network namespace. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include <bpf/bpf.h>

#include "libsluice.h"

static bool is_bpffs(const char *path, struct stat *st)
{
	struct statfs fs;

	return statfs(path, &fs) == 0 && fs.f_type == BPF_FS_MAGIC && stat(path, st) == 0;
}

/* The fixed nsfs inode of the initial mount namespace (PROC_MNT_INIT_INO),
 * on kernels that have one. */
#define MNT_INIT_INO 0xEFFFFFF8ULL

static bool mnt_ns(pid_t pid, struct stat *st)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/mnt");
	return stat(path, st) == 0;
}

static pid_t parent_of(pid_t pid)
{
	char path[64], line[128];
	int ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "PPid: %d", &ppid) == 1)
			break;
	if (f)
		fclose(f);
	return (pid_t)ppid;
}

/*
 * The process whose mount namespace is the older one this command came
 * from: PID 1 when its namespace can be read, else the nearest ancestor in
 * another one. 0 when there is none (this is the oldest namespace seen).
 */
static pid_t older_mnt_ns(const struct stat *self)
{
	struct stat st;
	pid_t p;
	int depth;

	if (mnt_ns(1, &st))
		return st.st_ino == self->st_ino && st.st_dev == self->st_dev ? 0 : 1;
	for (p = getppid(), depth = 0; p > 1 && depth < 64; p = parent_of(p), depth++) {
		if (!mnt_ns(p, &st))
			return 0;
		if (st.st_ino != self->st_ino || st.st_dev != self->st_dev)
			return p;
	}
	return 0;
}

/*
 * Pins live as long as the bpffs they are in: the one of the initial mount
 * namespace lives as long as the machine, one mounted in a mount namespace
 * of its own only as long as that namespace. `ip netns exec` gives its
 * command such a namespace with a /sys of its own, where no bpffs is
 * mounted: a sluice that mounted one there would attach a program whose
 * pins vanish with the command, leaving it limiting with nothing to manage
 * it. So in a mount namespace that is not the initial one, /sys/fs/bpf must
 * be the very bpffs (the same device) of the namespace it came from (PID
 * 1's, or an ancestor's): else refuse, naming the command that works
 * (nsenter enters the network namespace only). A container's own PID 1
 * shares its namespace: nothing changes there.
 */
static int check_bpffs_shared(bool mounted, const struct stat *ours, char *err, size_t errlen)
{
	struct stat self, theirs;
	struct sluice_netns ns;
	char where[700], path[64];
	pid_t ref;

	if (!mnt_ns(0, &self) || (__u64)self.st_ino == MNT_INIT_INO)
		return 0;
	ref = older_mnt_ns(&self);
	if (!ref)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/root/sys/fs/bpf", (int)ref);
	if (mounted && is_bpffs(path, &theirs) && theirs.st_dev == ours->st_dev)
		return 0;
	if (sluice_netns_self(&ns, NULL, 0) == 0 && !ns.initial)
		sluice_netns_where(ns.ino, false, sluice_cmdline(), where, sizeof(where));
	else
		snprintf(where, sizeof(where),
			 "the initial network namespace: run 'nsenter "
			 "--mount=/proc/1/ns/mnt %s'",
			 sluice_cmdline());
	return sluice_err(
		err, errlen, -EXDEV,
		"/sys/fs/bpf here is %s, not the bpffs of the mount namespace this command "
		"came from: it runs in a mount namespace of its own ('ip netns exec' makes "
		"one, with a /sys of its own), where sluice's pins would vanish with the "
		"command and a limiter would run with nothing to manage it; nothing was done. "
		"This is %s",
		mounted ? "a bpffs mounted only in this mount namespace" : "not mounted", where);
}

int sluice_ensure_bpffs(char *err, size_t errlen)
{
	struct stat st;
	bool mounted = is_bpffs("/sys/fs/bpf", &st);
	int ret;

	ret = check_bpffs_shared(mounted, &st, err, errlen);
	if (ret || mounted)
		return ret;
	if (mkdir("/sys/fs/bpf", 0755) && errno != EEXIST)
		return sluice_sys_err(err, errlen, -errno, "Couldn't create /sys/fs/bpf");
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		return sluice_sys_err(err, errlen, -errno, "Couldn't mount bpffs at /sys/fs/bpf");
	pr_debug("mounted bpffs at /sys/fs/bpf\n");
	return 0;
}

int sluice_pin_root(char *buf, size_t len, bool create, char *err, size_t errlen)
{
	struct sluice_netns ns;
	int ret;

	ret = sluice_netns_self(&ns, err, errlen);
	if (ret)
		return ret;
	snprintf(buf, len, "%s", ns.root);
	if (!create)
		return 0;
	if (mkdir(SLUICE_PIN_ROOT, 0700) && errno != EEXIST)
		return sluice_sys_err(err, errlen, -errno, "Couldn't create or enter %s",
				      SLUICE_PIN_ROOT);
	if (!ns.initial && mkdir(ns.root, 0700) && errno != EEXIST)
		return sluice_sys_err(err, errlen, -errno, "Couldn't create or enter %s", ns.root);
	return 0;
}

int sluice_pin_dir(const char *ifname, char *buf, size_t len, char *err, size_t errlen)
{
	char root[128];
	int ret;

	ret = sluice_pin_root(root, sizeof(root), false, err, errlen);
	if (ret)
		return ret;
	snprintf(buf, len, "%s/%s", root, ifname);
	return 0;
}

bool sluice_pinned_config(const char *dir, struct sluice_config *cfg)
{
	char path[512];
	__u32 zero = 0;
	int fd;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_MAP_CONFIG);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	ok = bpf_map_lookup_elem(fd, &zero, cfg) == 0;
	close(fd);
	return ok;
}
