// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The pinned state of one interface: finding it, opening it, its standing. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

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
	h->keys.flows_fd = h->keys.setsf_fd = -1;
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
	h->ruletab = mmap(NULL, ruletab_bytes(h->ruletab_max), PROT_READ | PROT_WRITE, MAP_SHARED,
			  h->ruletab_fd, 0);
	if (h->ruletab == MAP_FAILED) {
		h->ruletab = NULL;
		return sluice_err(err, errlen, -errno, "Couldn't map %s/%s: %s", h->dir,
				  SLUICE_MAP_RULETAB, strerror(errno));
	}
	return 0;
}

/* The L4 rule maps of a state (each map's size, page-rounded). */
static size_t l4_bytes(int which)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = which == 0 ? 2 * SLUICE_L4BM_WORDS * sizeof(__u64) :
		   which == 1 ? 2 * SLUICE_L4_RULES_MAX * sizeof(struct sluice_l4rule) :
				2 * SLUICE_L4_RULES_MAX * sizeof(struct sluice_policy);

	return (n + page - 1) / page * page;
}

/* Map the L4 rule maps, when the state has all three. */
static int map_l4(struct sluice_handle *h, char *err, size_t errlen)
{
	const int fds[3] = { h->l4bm_fd, h->l4rules_fd, h->l4pol_fd };
	static const char *const names[3] = { SLUICE_MAP_L4BM, SLUICE_MAP_L4RULES,
					      SLUICE_MAP_L4POL };
	void *m[3];
	int i, ret;

	if (fds[0] < 0 || fds[1] < 0 || fds[2] < 0)
		return 0;
	for (i = 0; i < 3; i++) {
		m[i] = mmap(NULL, l4_bytes(i), PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);
		if (m[i] == MAP_FAILED) {
			ret = sluice_err(err, errlen, -errno, "Couldn't map %s/%s: %s", h->dir,
					 names[i], strerror(errno));
			while (i--)
				munmap(m[i], l4_bytes(i));
			return ret;
		}
	}
	h->l4.bm = m[0];
	h->l4.rules = m[1];
	h->l4.pol = m[2];
	return 0;
}

static size_t policies_bytes(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (SLUICE_POLICIES_ENTRIES * sizeof(struct sluice_policy) + page - 1) / page * page;
}

/* Map sluice_policies, when the state has it. */
static int map_policies(struct sluice_handle *h, char *err, size_t errlen)
{
	void *m;

	if (h->policies_fd < 0)
		return 0;
	m = mmap(NULL, policies_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, h->policies_fd, 0);
	if (m == MAP_FAILED)
		return sluice_err(err, errlen, -errno, "Couldn't map %s/%s: %s", h->dir,
				  SLUICE_MAP_POLICIES, strerror(errno));
	h->policies = m;
	return 0;
}

void sluice_close(struct sluice_handle *h)
{
/* clang-format off */
#define FD_OF(name, layout, fd) &h->fd,
	int *fds[] = { SLUICE_MAPS(FD_OF) &h->lock_fd };
#undef FD_OF
	/* clang-format on */
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
	if (h->l4.bm) {
		munmap(h->l4.bm, l4_bytes(0));
		munmap(h->l4.rules, l4_bytes(1));
		munmap(h->l4.pol, l4_bytes(2));
	}
	memset(&h->l4, 0, sizeof(h->l4));
	if (h->policies)
		munmap(h->policies, policies_bytes());
	h->policies = NULL;
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int sluice_check_layout(const struct sluice_config *cfg, const char *ifname, char *err,
			size_t errlen)
{
	if (cfg->layout == SLUICE_LAYOUT_VERSION || cfg->layout == SLUICE_LAYOUT_ONE_SET ||
	    cfg->layout == SLUICE_LAYOUT_TWO_SETS)
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
static int renamed_to(const char *name, const char *other, __u32 ifindex, char *err, size_t errlen)
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

int sluice_check_standing(const struct sluice_handle *h, bool for_write, char *err, size_t errlen)
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

static const struct map_slot *map_slot_of(const struct map_slot *maps, size_t nr, const char *name)
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
/* clang-format off */
#define OPEN_SLOT(n, layout, f)                                                                \
	{ .name = n, .fd = offsetof(struct sluice_handle, f),                                  \
	  .added_later = SLUICE_MAP_ADDED_LATER(layout) },
	static const struct map_slot maps[] = { SLUICE_MAPS(OPEN_SLOT) };
#undef OPEN_SLOT
	/* clang-format on */
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
	if (!ret)
		ret = map_l4(h, err, errlen);
	if (!ret)
		ret = map_policies(h, err, errlen);
	if (!ret) {
		bool sets = h->cfg->kind & SLUICE_KIND_SETS;

		ret = sluice_keytab_open(&h->keys, sets, h->cfg->set_seed, h->buckets_fd,
					 h->sets4_fd, h->sets6_fd);
		h->keys.layout = &h->cfg->layout;
		/* the wide keys' table (--key src,dport|flow) of the same kind */
		if (!ret)
			ret = sluice_keytab_open_wide(&h->keys, h->flows_fd, h->setsf_fd);
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
