// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The pinned state of one interface: finding it, opening it, reading counters. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libsluice.h"

bool sluice_is_perm_err(int ret)
{
	return ret == -EACCES || ret == -EPERM;
}

int sluice_sys_err(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	char what[SLUICE_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!sluice_is_perm_err(ret))
		return sluice_err(err, errlen, ret, "%s: %s", what, strerror(-ret));
	/* The loader attaches (netlink: CAP_NET_ADMIN); sluicectl only reads
	 * and writes the maps. */
	return sluice_err(err, errlen, ret,
			  "%s: %s: %s needs root, or CAP_BPF with read access to /sys/fs/bpf "
			  "(CAP_DAC_OVERRIDE)%s: run it as root (e.g. with sudo)",
			  what, strerror(-ret), program_invocation_short_name,
			  strcmp(program_invocation_short_name, "sluice") ?
				  "" :
				  ", and CAP_NET_ADMIN for attach, detach, run and shape");
}

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
		snprintf(where, sizeof(where), "the initial network namespace: run 'nsenter "
			 "--mount=/proc/1/ns/mnt %s'", sluice_cmdline());
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

static int open_pin(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bpf_obj_get(path);
}

static __u32 map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

int sluice_still_pinned(const struct sluice_handle *h)
{
	__u32 id;
	int fd;

	fd = open_pin(h->dir, SLUICE_MAP_CONFIG);
	if (fd < 0)
		return -ENOENT;
	id = map_id(fd);
	close(fd);
	return id && id == map_id(h->config_fd) ? 0 : -ESTALE;
}

/*
 * Readers copy the live half without the writers' lock. A writer bumps seq
 * (release) before it flips `active`, and again before it overwrites the
 * half that was live (txn.c); a copy taken between two equal readings of
 * seq is therefore one whole version.
 */
void sluice_read_settings(const struct sluice_handle *h, struct sluice_settings *out, __u64 *seq)
{
	const struct sluice_config *cfg = h->cfg;
	__u64 s1, s2;

	do {
		s1 = __atomic_load_n(&cfg->seq, __ATOMIC_ACQUIRE);
		*out = cfg->settings[__atomic_load_n(&cfg->active, __ATOMIC_ACQUIRE) & 1];
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&cfg->seq, __ATOMIC_RELAXED);
	} while (s1 != s2);
	if (seq)
		*seq = s1;
}

bool sluice_settings_changed(const struct sluice_handle *h, __u64 seq)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&h->cfg->seq, __ATOMIC_RELAXED) != seq;
}


void sluice_handle_init(struct sluice_handle *h)
{
	memset(h, 0, sizeof(*h));
#define INIT_FD(name, layout, fd) h->fd = -1;
	SLUICE_MAPS(INIT_FD)
#undef INIT_FD
	h->lock_fd = -1;
	h->keys.buckets_fd = h->keys.fd[0] = h->keys.fd[1] = -1;
}

int sluice_state_name(const char *name, char *ifname, bool *shape, char *err, size_t errlen)
{
	size_t plen = strlen(SLUICE_SHAPE_PREFIX);
	const char *ifn = name;

	*shape = !strncmp(name, SLUICE_SHAPE_PREFIX, plen);
	if (*shape)
		ifn = name + plen;
	if (!*ifn)
		return sluice_err(err, errlen, -EINVAL, "'%s' names no interface: give %sIFACE",
				  name, *shape ? SLUICE_SHAPE_PREFIX : "");
	if (strlen(ifn) >= IF_NAMESIZE)
		return sluice_err(err, errlen, -EINVAL,
				  "interface name '%s' is too long (at most %d "
				  "characters)",
				  ifn, IF_NAMESIZE - 1);
	if (strchr(ifn, ':') || strchr(ifn, '/'))
		return sluice_err(err, errlen, -EINVAL,
				  "'%s' is no interface name: give IFACE (the "
				  "limiter on IFACE) or %sIFACE (its shaper)",
				  name, SLUICE_SHAPE_PREFIX);
	strcpy(ifname, ifn);
	return 0;
}

const char *sluice_state_verb(const struct sluice_handle *h)
{
	return h->shape ? "shape " : "";
}

static size_t ruletab_bytes(__u32 max)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return ((size_t)max * sizeof(struct sluice_rule_entry) + page - 1) / page * page;
}

/* sluice_ruletab and sluice_rulehash, when the state has them (one made by
 * the sluice before, layout 4, has not: attach adds them). */
static int open_ruletab(struct sluice_handle *h, char *err, size_t errlen)
{
	h->hash_fd = open_pin(h->dir, SLUICE_MAP_RULEHASH);
	if (h->hash_fd < 0 && errno != ENOENT)
		return sluice_err(err, errlen, -errno, "Couldn't open %s/%s: %s", h->dir,
				  SLUICE_MAP_RULEHASH, strerror(errno));
	h->ruletab_fd = open_pin(h->dir, SLUICE_MAP_RULETAB);
	if (h->ruletab_fd < 0)
		return errno == ENOENT ? 0 :
					 sluice_err(err, errlen, -errno, "Couldn't open %s/%s: %s",
						    h->dir, SLUICE_MAP_RULETAB, strerror(errno));
	h->ruletab_max = sluice_map_max_entries(h->ruletab_fd);
	if (!h->ruletab_max)
		return sluice_err(err, errlen, -EPROTO, "Couldn't read %s/%s", h->dir,
				  SLUICE_MAP_RULETAB);
	h->ruletab = mmap(NULL, ruletab_bytes(h->ruletab_max), PROT_READ | PROT_WRITE,
			  MAP_SHARED, h->ruletab_fd, 0);
	if (h->ruletab == MAP_FAILED) {
		h->ruletab = NULL;
		return sluice_err(err, errlen, -errno, "Couldn't map %s/%s: %s", h->dir,
				  SLUICE_MAP_RULETAB, strerror(errno));
	}
	return 0;
}

void sluice_close(struct sluice_handle *h)
{
#define FD_OF(name, layout, fd) &h->fd,
	int *fds[] = { SLUICE_MAPS(FD_OF) &h->lock_fd };
#undef FD_OF
	size_t i;

	sluice_keytab_close(&h->keys);
	if (h->cfg && h->cfg != MAP_FAILED)
		munmap(h->cfg, sizeof(*h->cfg));
	h->cfg = NULL;
	if (h->ruletab)
		munmap(h->ruletab, ruletab_bytes(h->ruletab_max));
	h->ruletab = NULL;
	if (h->fleet)
		munmap(h->fleet, sizeof(*h->fleet));
	h->fleet = NULL;
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int sluice_check_layout(const struct sluice_config *cfg, const char *ifname, char *err,
			size_t errlen)
{
	if (cfg->layout == SLUICE_LAYOUT_VERSION)
		return 0;
	if (cfg->layout == 3 || cfg->layout == 4)
		return sluice_err(
			err, errlen, -EPROTO,
			"the pinned maps of %s have layout version %u, from an older sluice: "
			"'sluice attach %s' upgrades them to layout %u in place, keeping every "
			"bucket and rule (with --resume when sluice is not attached to it now)",
			ifname, cfg->layout, ifname, SLUICE_LAYOUT_VERSION);
	return sluice_err(
		err, errlen, -EPROTO,
		"the pinned maps of %s have layout version %u, this sluice uses %u: detach with "
		"the sluice that attached them ('sluice detach %s'), then attach again",
		ifname, cfg->layout, SLUICE_LAYOUT_VERSION, ifname);
}

/* name's state went with its interface, now called other. */
static int renamed_to(const char *name, const char *other, __u32 ifindex, char *err,
		      size_t errlen)
{
	char dir[256] = "?", ifn[IF_NAMESIZE], oifn[IF_NAMESIZE];
	bool shape;

	sluice_pin_dir(other, dir, sizeof(dir), NULL, 0);
	if (sluice_state_name(name, ifn, &shape, NULL, 0) ||
	    sluice_state_name(other, oifn, &shape, NULL, 0))
		return sluice_err(err, errlen, -ENODEV, "%s was renamed to %s", name, other);
	return sluice_err(
		err, errlen, -ENODEV,
		"interface %s was renamed to %s (ifindex %u): its %s is %s's now, and its "
		"state moved with it to %s: give %s (e.g. 'sluice %sstatus %s')",
		ifn, oifn, ifindex, shape ? "shaper" : "limiter", oifn, dir, oifn,
		shape ? "shape " : "", oifn);
}

/* Why there is no shaper of ifname here, in words. */
static int no_shaper(const char *name, const char *ifname, unsigned int ifindex, char *err,
		     size_t errlen)
{
	char to[SLUICE_STATE_NAME_MAX];

	if (!ifindex && sluice_renamed_to(name, to, sizeof(to)))
		return renamed_to(name, to, if_nametoindex(to + strlen(SLUICE_SHAPE_PREFIX)), err,
				  errlen);
	if (!ifindex)
		return sluice_err(err, errlen, -ENODEV,
				  "there is no interface '%s' (see 'ip link')", ifname);
	return sluice_err(err, errlen, -ENOENT,
			  "no sluice shaper is attached to %s: run 'sluice shape "
			  "attach %s'",
			  ifname, ifname);
}

/* Why there is nothing pinned for ifname here, in words. */
static int not_here(const char *ifname, unsigned int ifindex, char *err, size_t errlen)
{
	char where[600], to[SLUICE_STATE_NAME_MAX];
	int n;

	if (!ifindex && sluice_renamed_to(ifname, to, sizeof(to))) {
		const char *oifn = to;
		struct sluice_handle h;

		/* The rename is already followed: what moved is to's. */
		if (sluice_state_name(to, h.ifname, &h.shape, NULL, 0) == 0)
			oifn = h.ifname;
		return renamed_to(ifname, to, if_nametoindex(oifn), err, errlen);
	}
	n = sluice_netns_elsewhere(ifname, sluice_cmdline(), where, sizeof(where));

	if (!ifindex && n)
		return sluice_err(
			err, errlen, -ENODEV,
			"there is no interface '%s' in this network namespace; the sluice "
			"limiter of a %s lives in %s",
			ifname, ifname, where);
	if (!ifindex)
		return sluice_err(err, errlen, -ENODEV,
				  "there is no interface '%s' (see 'ip link')", ifname);
	if (n)
		return sluice_err(
			err, errlen, -ENOENT,
			"sluice is not attached to %s in this network namespace (run 'sluice "
			"attach %s'); the limiter of another %s lives in %s",
			ifname, ifname, ifname, where);
	return sluice_err(err, errlen, -ENOENT,
			  "sluice is not attached to %s: run 'sluice attach %s'", ifname, ifname);
}

static enum sluice_standing standing_of(const struct sluice_config *cfg, unsigned int ifindex)
{
	struct sluice_netns ns;

	if (sluice_netns_self(&ns, NULL, 0) == 0 && !sluice_netns_same(&ns, &cfg->owner))
		return SLUICE_STANDING_ORPHAN;
	if (cfg->owner.life == SLUICE_LIFE_ATTACHING)
		return SLUICE_STANDING_UNFINISHED;
	if (!ifindex || ifindex != cfg->owner.ifindex)
		return SLUICE_STANDING_GONE;
	return SLUICE_STANDING_OWNED;
}

int sluice_check_standing(const struct sluice_handle *h, bool for_write, char *err,
			  size_t errlen)
{
	/* "sluice detach eth1" or "sluice shape detach eth1": n is the
	 * interface after the verb (a state's commands take its interface). */
	const char *n = h->ifname, *v = sluice_state_verb(h);
	const char *what = h->shape ? "shaper" : "limiter";
	const struct sluice_owner *o = &h->cfg->owner;

	switch (h->standing) {
	case SLUICE_STANDING_OWNED:
		return 0;
	case SLUICE_STANDING_GONE:
		if (!h->ifindex)
			return sluice_err(
				err, errlen, -ESTALE,
				"%s is gone: its %s (ifindex %u) was left pinned in %s when "
				"the interface went away%s; 'sluice %sdetach %s' removes it",
				n, what, o->ifindex, h->dir,
				for_write ? ", so nothing was changed" : "", v, n);
		return sluice_err(
			err, errlen, -ESTALE,
			"the state pinned for %s belongs to an earlier %s (ifindex %u; this one "
			"is %u)%s: 'sluice %sattach %s --resume' applies it to this %s, 'sluice "
			"%sattach %s --fresh' starts this one empty, 'sluice %sdetach %s' removes "
			"it",
			h->name, n, o->ifindex, h->ifindex,
			for_write ? ", so nothing was changed" : "", v, n, n, v, n, v, n);
	case SLUICE_STANDING_ORPHAN:
		return sluice_err(
			err, errlen, -ESTALE,
			"the state pinned in %s was made in a network namespace that is gone "
			"(net:[%llu])%s: 'sluice %sdetach %s' removes it",
			h->dir, (unsigned long long)o->netns_ino,
			for_write ? ", so nothing was changed" : "", v, n);
	case SLUICE_STANDING_UNFINISHED:
		if (!for_write)
			return sluice_err(err, errlen, -EBUSY,
					  "sluice is being attached to %s, or an attach of it died "
					  "half way",
					  h->name);
		return sluice_err(
			err, errlen, -EBUSY,
			"sluice is being attached to %s, or an attach of it died half way: "
			"nothing was changed; see 'sluice %sstatus %s', then 'sluice %sattach %s "
			"--resume' or '--fresh'",
			h->name, v, n, v, n);
	}
	return 0;
}

/* A pinned map as sluice_open() opens it: fd is the offset of its field in
 * struct sluice_handle. */
struct map_slot {
	const char *name;
	size_t fd;
	bool added_later;
};

static int *slot_fd(struct sluice_handle *h, const struct map_slot *m)
{
	return (int *)((char *)h + m->fd);
}

static const struct map_slot *map_slot_of(const struct map_slot *maps, size_t nr,
					  const char *name)
{
	size_t i;

	for (i = 0; i < nr && strcmp(maps[i].name, name); i++)
		;
	return &maps[i];
}

/* Open the pinned maps of h->dir into h. 0; SLUICE_RENAMED_FROM when there
 * is none and the interface's state moved in from another name (unless
 * followed: once is enough), to open again; or -errno with err. */
static int open_maps(struct sluice_handle *h, const char *ifname, bool followed, char *err,
		     size_t errlen)
{
	/* The config first (its absence means nothing is pinned), then the
	 * others in the registry's order (<sluice/maps.h>); the rule table and
	 * the rule hash are open_ruletab()'s. A map added in a later layout
	 * may be missing from a state that an older sluice pinned: its fd
	 * stays -1 and what it counts is unknown until the next attach
	 * creates it. */
#define OPEN_SLOT(n, layout, f)                                                                \
	{ .name = n, .fd = offsetof(struct sluice_handle, f),                                  \
	  .added_later = SLUICE_MAP_ADDED_LATER(layout) },
	static const struct map_slot maps[] = { SLUICE_MAPS(OPEN_SLOT) };
#undef OPEN_SLOT
	const size_t nr = sizeof(maps) / sizeof(maps[0]);
	char other[SLUICE_STATE_NAME_MAX];
	const struct map_slot *m;
	size_t i;
	int ret;

	/* i 0: the config; i > 0: maps[i - 1] */
	for (i = 0; i <= nr; i++) {
		m = i ? &maps[i - 1] : map_slot_of(maps, nr, SLUICE_MAP_CONFIG);
		if (i && (m->fd == offsetof(struct sluice_handle, config_fd) ||
			  m->fd == offsetof(struct sluice_handle, ruletab_fd) ||
			  m->fd == offsetof(struct sluice_handle, hash_fd)))
			continue;
		*slot_fd(h, m) = open_pin(h->dir, m->name);
		if (*slot_fd(h, m) >= 0)
			continue;
		ret = -errno;
		if (ret == -ENOENT && m->added_later)
			continue;
		/* Nothing pinned for this name: is its interface's state under
		 * the name it had before a rename? (rename.c) */
		if (ret == -ENOENT && i == 0 && h->ifindex && !followed &&
		    sluice_follow_rename(ifname, other, sizeof(other), NULL, 0) ==
			    SLUICE_RENAMED_FROM)
			return SLUICE_RENAMED_FROM;
		if (ret == -ENOENT && i == 0 && h->shape)
			no_shaper(h->name, h->ifname, h->ifindex, err, errlen);
		else if (ret == -ENOENT && i == 0)
			not_here(ifname, h->ifindex, err, errlen);
		else if (sluice_is_perm_err(ret))
			sluice_sys_err(err, errlen, ret, "Couldn't open %s/%s", h->dir, m->name);
		else
			sluice_err(
				err, errlen, ret,
				"Couldn't open %s/%s: %s (a damaged attachment: run 'sluice %sdetach %s' "
				"and attach again)",
				h->dir, m->name, strerror(-ret), sluice_state_verb(h), h->ifname);
		if (ret == -ENOENT && i == 0 && !h->ifindex)
			ret = -ENODEV;
		return ret;
	}
	return 0;
}

/* Map and check what open_maps() opened: the config, the fleet's state, the
 * layout and kind, the rule table, the key table. 0 or -errno with err. */
static int map_state(struct sluice_handle *h, const char *ifname, char *err, size_t errlen)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	int ret;

	if (bpf_obj_get_info_by_fd(h->config_fd, &info, &info_len) ||
	    info.value_size != sizeof(struct sluice_config))
		return sluice_err(
			err, errlen, -EPROTO,
			"the pinned config of %s has another layout (value size %u, expected %zu): "
			"detach with the sluice that attached it, then attach again",
			ifname, info.value_size, sizeof(struct sluice_config));
	h->cfg = mmap(NULL, sizeof(*h->cfg), PROT_READ | PROT_WRITE, MAP_SHARED, h->config_fd, 0);
	if (h->cfg == MAP_FAILED) {
		ret = sluice_err(err, errlen, -errno, "Couldn't map the config of %s: %s", ifname,
				 strerror(errno));
		h->cfg = NULL;
		return ret;
	}
	if (h->fleet_fd >= 0) {
		h->fleet = mmap(NULL, sizeof(*h->fleet), PROT_READ | PROT_WRITE, MAP_SHARED,
				h->fleet_fd, 0);
		if (h->fleet == MAP_FAILED) {
			ret = sluice_err(err, errlen, -errno, "Couldn't map %s/%s: %s", h->dir,
					 SLUICE_MAP_FLEET, strerror(errno));
			h->fleet = NULL;
			return ret;
		}
	}
	ret = sluice_check_layout(h->cfg, ifname, err, errlen);
	if (!ret && h->cfg->layout >= SLUICE_LAYOUT_OWNER && h->cfg->owner.life &&
	    !(h->cfg->kind & SLUICE_KIND_SHAPE) != !h->shape)
		ret = sluice_err(
			err, errlen, -EPROTO,
			"the state pinned in %s is a %s's, not a %s's (a damaged attachment: "
			"remove %s and attach again)",
			h->dir, h->shape ? "limiter" : "shaper", h->shape ? "shaper" : "limiter",
			h->dir);
	if (!ret)
		ret = open_ruletab(h, err, errlen);
	if (!ret) {
		bool sets = h->cfg->kind & SLUICE_KIND_SETS;

		ret = sluice_keytab_open(&h->keys, sets, h->cfg->set_seed, h->buckets_fd,
					 h->sets4_fd, h->sets6_fd);
		if (ret)
			sluice_err(err, errlen, ret,
				   "Couldn't map the key table of %s (%s/%s, %s): %s (a damaged "
				   "attachment: run 'sluice %sdetach %s' and attach again)",
				   ifname, h->dir, SLUICE_MAP_SETS4, SLUICE_MAP_SETS6,
				   strerror(-ret), sluice_state_verb(h), h->ifname);
	}
	return ret;
}

int sluice_open(const char *ifname, struct sluice_handle *h, char *err, size_t errlen)
{
	char other[SLUICE_STATE_NAME_MAX];
	bool followed = false;
	int ret;

again:
	sluice_handle_init(h);
	ret = sluice_state_name(ifname, h->ifname, &h->shape, err, errlen);
	if (ret)
		return ret;
	strcpy(h->name, ifname); /* fits: sluice_state_name() checked it */
	h->ifindex = if_nametoindex(h->ifname);

	ret = sluice_ensure_bpffs(err, errlen);
	if (!ret)
		ret = sluice_pin_dir(h->name, h->dir, sizeof(h->dir), err, errlen);
	if (ret)
		return ret;
	ret = open_maps(h, ifname, followed, err, errlen);
	/* nothing was open yet: the config is the first map */
	if (ret == SLUICE_RENAMED_FROM) {
		followed = true;
		goto again;
	}
	if (!ret)
		ret = map_state(h, ifname, err, errlen);
	if (ret)
		goto out_err;
	h->standing = standing_of(h->cfg, h->ifindex);
	/* Its interface is called otherwise now: the state went with it. */
	if (h->standing == SLUICE_STANDING_GONE && !followed) {
		__u32 was = h->cfg->owner.ifindex;
		char moved[SLUICE_ERR_LEN] = "";

		ret = sluice_follow_rename(ifname, other, sizeof(other), moved, sizeof(moved));
		if (ret == SLUICE_RENAMED_TO) {
			sluice_close(h);
			return renamed_to(ifname, other, was, err, errlen);
		}
		if (ret < 0)
			pr_warn("%s: warning: %s\n", program_invocation_short_name, moved);
	}
	return 0;

out_err:
	sluice_close(h);
	return ret;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(a, b);
}

int sluice_list_attached(char names[][SLUICE_STATE_NAME_MAX], int max)
{
	char root[128];
	struct dirent *de;
	DIR *d;
	int n = 0, i;

	if (sluice_pin_root(root, sizeof(root), false, NULL, 0))
		return -EINVAL;
	d = opendir(root);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		char path[512];
		struct stat st;

		char ifn[IF_NAMESIZE];
		bool shape;

		/* netns:INODE directories are other namespaces' */
		if (de->d_name[0] == '.' || strlen(de->d_name) >= SLUICE_STATE_NAME_MAX ||
		    sluice_state_name(de->d_name, ifn, &shape, NULL, 0))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", root, de->d_name, SLUICE_MAP_CONFIG);
		if (stat(path, &st))
			continue;
		if (n < max)
			strcpy(names[n], de->d_name);
		n++;
	}
	closedir(d);
	if (n > max)
		n = max;
	/* Listed by the name of their interface now (rename.c), once the
	 * directory is read: a move changes it. */
	for (i = 0; i < n; i++) {
		char other[SLUICE_STATE_NAME_MAX];

		if (sluice_follow_rename(names[i], other, sizeof(other), NULL, 0) ==
		    SLUICE_RENAMED_TO)
			strcpy(names[i], other);
	}
	qsort(names, n, SLUICE_STATE_NAME_MAX, cmp_names);
	return n;
}

int sluice_pick_iface(const char *given, char *out, char *err, size_t errlen)
{
	char names[64][SLUICE_STATE_NAME_MAX], ifn[IF_NAMESIZE];
	bool shape;
	int n;

	if (given) {
		n = sluice_state_name(given, ifn, &shape, err, errlen);
		if (n)
			return n;
		strcpy(out, given);
		return 0;
	}
	n = sluice_ensure_bpffs(err, errlen);
	if (n)
		return n;
	n = sluice_list_attached(names, 64);
	if (n < 0)
		return sluice_sys_err(err, errlen, n, "Couldn't list the pinned limiters");
	if (n == 0)
		return sluice_err(
			err, errlen, -ENOENT,
			"sluice is not attached to any interface in this network namespace: "
			"run 'sluice attach IFACE' (or give -i IFACE)");
	if (n > 1)
		return sluice_err(
			err, errlen, -EINVAL,
			"sluice has %d states here (%s, %s%s): say which with -i IFACE (a "
			"limiter) or -i shape:IFACE (a shaper)",
			n, names[0], names[1], n > 2 ? ", ..." : "");
	strcpy(out, names[0]);
	return 0;
}

const struct sluice_field sluice_stats_fields[] = {
#define F(x, help) { #x, offsetof(struct sluice_counters, stats.x), help }
	F(rx, "Packets the XDP program saw."),
	F(rx_bytes, "Bytes of the packets the XDP program saw."),
	F(passed, "Packets passed (XDP_PASS), for any reason."),
	F(dropped, "Packets dropped (XDP_DROP), for any reason."),
	F(dropped_bytes, "Bytes of the packets dropped."),
	F(non_ip, "Packets passed because they are neither IPv4 nor IPv6."),
	F(malformed, "Packets passed because their headers are too short or bad."),
	F(limited, "Packets dropped because their source was over its limit."),
	F(would_drop, "Packets passed under dry-run that the limit would have dropped."),
	F(exempt, "Packets passed by an --exempt rule."),
	F(denied, "Packets dropped by a --deny rule."),
	F(new_keys, "Keys (buckets and sliding logs) created for sources seen for the first "
		    "time."),
	F(aggregated, "New sources charged to their prefix's aggregate bucket."),
	F(update_failed, "Packets whose source the key table refused (passed, fail-open)."),
	F(contended, "Packets dropped because other CPUs kept updating their bucket."),
	F(events_lost, "Drop events the ring buffer had no room for."),
#undef F
#define F(x, help) { #x, offsetof(struct sluice_counters, x), help }
	F(keys, "Keys in the tables now (the key table, lru or sets, and sluice_logs)."),
	F(evicted_estimate, "Keys created but no longer in the tables: new_keys - keys, an "
			    "estimate of the evictions of either table (a flush lowers keys too)."),
#undef F
};
const size_t sluice_stats_nfields = sizeof(struct sluice_stats) / sizeof(__u64);
const size_t sluice_counters_nfields = sizeof(sluice_stats_fields) / sizeof(sluice_stats_fields[0]);
_Static_assert(sizeof(sluice_stats_fields) / sizeof(sluice_stats_fields[0]) ==
		       sizeof(struct sluice_stats) / sizeof(__u64) + 2,
	       "every field of sluice_stats is named, then keys and evicted_estimate");

__u64 sluice_field_get(const void *base, const struct sluice_field *f)
{
	return *(const __u64 *)((const char *)base + f->offset);
}

int sluice_percpu_sum(int fd, __u32 key, __u64 *out, size_t nr)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;
	int i, ret = 0;
	size_t f;

	if (ncpu <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpu, nr * sizeof(__u64));
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, vals)) {
		ret = -errno;
		goto out;
	}
	memset(out, 0, nr * sizeof(__u64));
	for (i = 0; i < ncpu; i++)
		for (f = 0; f < nr; f++)
			out[f] += vals[(size_t)i * nr + f];
out:
	free(vals);
	return ret;
}

int sluice_read_stats(const struct sluice_handle *h, struct sluice_stats *out)
{
	return sluice_percpu_sum(h->stats_fd, 0, (__u64 *)out, sizeof(*out) / sizeof(__u64));
}

int sluice_read_rstats(const struct sluice_handle *h, __u32 slot, struct sluice_rstats *out)
{
	return sluice_percpu_sum(h->rstats_fd, slot, (__u64 *)out, sizeof(*out) / sizeof(__u64));
}

int sluice_read_counters(const struct sluice_handle *h, struct sluice_counters *c)
{
	long keys, log_keys;
	int ret;

	memset(c, 0, sizeof(*c));
	ret = sluice_read_stats(h, &c->stats);
	if (ret)
		return ret;
	keys = sluice_keytab_count_families(&h->keys, c->table_keys);
	log_keys = keys < 0 ? keys : sluice_count_keys(h->logs_fd);
	if (keys < 0 || log_keys < 0)
		return keys < 0 ? (int)keys : (int)log_keys;
	c->log_keys = (__u64)log_keys;
	c->keys = (__u64)keys + c->log_keys;
	c->evicted_estimate = c->stats.new_keys > c->keys ? c->stats.new_keys - c->keys : 0;
	return 0;
}

int sluice_read_rwould(const struct sluice_handle *h, __u32 slot, struct sluice_rwould *out)
{
	memset(out, 0, sizeof(*out));
	if (h->rwould_fd < 0)
		return -ENOENT;
	return sluice_percpu_sum(h->rwould_fd, slot, (__u64 *)out, sizeof(*out) / sizeof(__u64));
}


int sluice_clear_rstats(const struct sluice_handle *h, __u32 slot)
{
	int ncpu = libbpf_num_possible_cpus();
	void *zero;
	int ret = 0;

	if (ncpu <= 0)
		return -EINVAL;
	/* Room for the larger value: zeroes for either map. */
	zero = calloc((size_t)ncpu, sizeof(struct sluice_rstats) > sizeof(struct sluice_rwould) ?
					    sizeof(struct sluice_rstats) :
					    sizeof(struct sluice_rwould));
	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(h->rstats_fd, &slot, zero, BPF_ANY))
		ret = -errno;
	/* A state without sluice_rwould has no would-drops to clear. */
	if (!ret && h->rwould_fd >= 0 && bpf_map_update_elem(h->rwould_fd, &slot, zero, BPF_ANY))
		ret = -errno;
	free(zero);
	return ret;
}

__u64 sluice_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * SLUICE_NS_PER_SEC + (__u64)ts.tv_nsec;
}

__u64 sluice_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * SLUICE_NS_PER_SEC + (__u64)ts.tv_nsec;
}

__u64 sluice_now_ticks(void)
{
	return sluice_now_ns() << SLUICE_TICK_SHIFT;
}
