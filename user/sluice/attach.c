// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice attach IFACE: pin the maps, set the policy, attach the program; or,
 * when sluice is already attached, upgrade the program in place.
 *
 * Order matters, so that no packet ever meets a half-made sluice:
 *  1. check every option, the config file (read once), the pinned maps,
 *     whose they are (owner.c) and what runs on the interface, touching
 *     nothing (bad input: exit 2; a state not plainly this interface's:
 *     exit 1, naming --resume and --fresh);
 *  2. create (or reuse) the pinned maps; a new config gets the defaults
 *     and is marked "attaching" until the program runs;
 *  3. a new state gets --config and the options in one transaction, then
 *     the program; a state that exists gets the program first (a fresh
 *     attach through libxdp, or an upgrade that replaces the old program in
 *     one step, or inside the dispatcher adds the new before removing the
 *     old), then the settings.
 * So a failure never has settings to put back: a new state is removed
 * whole, and on an existing state the settings change only after the
 * program is in place, in one commit that is all or nothing. Edits that
 * sluicectl commits meanwhile are never overwritten by a snapshot.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach.h"
#include "cmd.h"

int refuse(struct attach_ctx *c, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return ret;
}

void attach_usage(FILE *f)
{
	fprintf(f,
		"  sluice attach IFACE [--mode native|skb] [--rate RATE] [--burst N]\n"
		"                [--algo ALGO] [--window DUR] [--prefix4 LEN] [--prefix6 LEN]\n"
		"                [--max-keys N] [--max-log-keys N] [--new-keys RATE|off]\n"
		"                [--fail-closed|--fail-open] [--config FILE] [--resume|--fresh]\n"
		"      attach sluice to IFACE, or upgrade it in place when it is attached\n");
}

static void attach_help(void)
{
	printf("Usage:\n");
	attach_usage(stdout);
	printf("\n"
	       "  --mode native|skb   XDP in the driver (default) or generic XDP\n"
	       "  --rate RATE         default limit per source: 100/s 6000/m 1/h 100pps,\n"
	       "                      or bytes: 10mbit 1gbit 500kbps (give both to limit both)\n"
	       "  --burst N           packets (or bytes) a quiet source may send at once\n"
	       "  --algo ALGO         token-bucket (default), leaky-bucket, sliding-window,\n"
	       "                      fixed-window, sliding-log\n"
	       "  --window DUR        window of the window algorithms: 100ms to 1h\n"
	       "  --prefix4 LEN       IPv4 sources share a bucket per /LEN (default 32)\n"
	       "  --prefix6 LEN       IPv6 sources share a bucket per /LEN (default 64)\n"
	       "  --max-keys N        size of the key table (default %u); fixed once pinned\n"
	       "  --max-log-keys N    size of the sliding-log table (default %u)\n"
	       "  --max-rules N       most rules (default %u, 136 bytes each); fixed once pinned\n"
	       "  --new-keys RATE     admit at most RATE new sources; past it, new sources\n"
	       "                      share their /24 (/48) bucket; 'off' to stop\n"
	       "  --fail-closed       drop packets whose key the table refuses (rare: a full\n"
	       "                      LRU table evicts instead; see sluice(8))\n"
	       "  --fail-open         pass them (default)\n"
	       "  --config FILE       the whole desired state: sluicectl editing commands\n"
	       "                      (set, rule add), one per line; settings and rules become\n"
	       "                      exactly what it says, then the options apply on top\n"
	       "  --resume            adopt a pinned state that is not plainly this\n"
	       "                      interface's (an earlier interface of this name, an\n"
	       "                      attach that died, a program removed by another tool)\n"
	       "  --fresh             drop such a state and start empty\n"
	       "\n"
	       "Without --config, options given change the policy and those not given keep\n"
	       "the current one. A state kept by 'sluice detach --keep-state', or one that\n"
	       "sluice runs with (an upgrade), is resumed and the summary says so.\n"
	       "Pins live in %s/IFACE/ (initial network namespace) or\n"
	       "%s/netns:INODE/IFACE/ (any other). See sluice(8).\n",
	       SLUICE_DEFAULT_MAX_KEYS, SLUICE_DEFAULT_MAX_LOG_KEYS, SLUICE_DEFAULT_MAX_RULES,
	       SLUICE_PIN_ROOT, SLUICE_PIN_ROOT);
}

/* Compare one pinned map with what this sluice would create. */
static int check_pinned_map(struct attach_ctx *c, struct sluice_bpf *skel, const char *name,
			    int fd)
{
	struct bpf_map *m = bpf_object__find_map_by_name(skel->obj, name);
	const char *ifn = c->o->ifname;
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return refuse(c, -errno, "Couldn't read %s/%s: %s", c->dir, name, strerror(errno));
	if (!strcmp(name, SLUICE_MAP_CONFIG) && info.value_size != sizeof(struct sluice_config))
		return refuse(c, -EPROTO,
			      "the pinned config of %s has another layout (value size %u, this "
			      "sluice uses %zu): detach with the sluice that attached it, then "
			      "attach again",
			      ifn, info.value_size, sizeof(struct sluice_config));
	if (info.type != bpf_map__type(m) || info.key_size != bpf_map__key_size(m) ||
	    info.value_size != bpf_map__value_size(m) || info.map_flags != bpf_map__map_flags(m))
		return refuse(c, -EPROTO,
			      "the pinned map %s/%s does not match this sluice (key/value size "
			      "%u/%u, expected %u/%u): detach with the sluice that attached it "
			      "('sluice detach %s'), then attach again",
			      c->dir, name, info.key_size, info.value_size, bpf_map__key_size(m),
			      bpf_map__value_size(m), ifn);
	if (!strcmp(name, SLUICE_MAP_BUCKETS) || !strcmp(name, SLUICE_MAP_LOGS)) {
		bool buckets = !strcmp(name, SLUICE_MAP_BUCKETS);
		__u64 want = buckets ? c->o->max_keys : c->o->max_log_keys;

		if (want && want != info.max_entries)
			return refuse(c, -EEXIST,
				      "the pinned %s table of %s holds %u keys, not %llu: detach "
				      "first to resize ('sluice detach %s' drops its state), then "
				      "attach with %s %llu",
				      buckets ? "key" : "sliding-log key", ifn, info.max_entries,
				      (unsigned long long)want, ifn,
				      buckets ? "--max-keys" : "--max-log-keys",
				      (unsigned long long)want);
		if (buckets)
			c->max_keys = info.max_entries;
		else
			c->max_log_keys = info.max_entries;
		return 0;
	}
	if (!strcmp(name, SLUICE_MAP_RULES)) {
		/* A state of an older sluice has room for 4,096 rules. */
		if (c->o->max_rules && 2 * c->o->max_rules != info.max_entries)
			return refuse(c, -EEXIST,
				      "the pinned rules of %s hold %u rules, not %llu: detach "
				      "first to resize ('sluice detach %s' drops its state), then "
				      "attach with --max-rules %llu",
				      ifn, info.max_entries / 2,
				      (unsigned long long)c->o->max_rules, ifn,
				      (unsigned long long)c->o->max_rules);
		c->max_rules = info.max_entries / 2;
		return 0;
	}
	if (!strcmp(name, SLUICE_MAP_RULETAB) || !strcmp(name, SLUICE_MAP_RULEHASH)) {
		__u32 want = strcmp(name, SLUICE_MAP_RULEHASH) ? c->max_rules : 2 * c->max_rules;

		if (info.max_entries != want)
			return refuse(c, -EPROTO,
				      "the pinned map %s/%s has %u entries for %u rules: detach "
				      "with the sluice that attached it, then attach again",
				      c->dir, name, info.max_entries, c->max_rules);
		return 0;
	}
	if (info.max_entries != bpf_map__max_entries(m))
		return refuse(c, -EPROTO,
			      "the pinned map %s/%s has %u entries, this sluice expects %u: "
			      "detach with the sluice that attached it, then attach again",
			      c->dir, name, info.max_entries, bpf_map__max_entries(m));
	return 0;
}

/* What is pinned for this interface, and is it something we can reuse? */
static int inspect_pins(struct attach_ctx *c, struct sluice_bpf *skel)
{
	int fds[SLUICE_MAX_MAPS], nr_found = 0, ret = 0, cfd = -1;
	bool absent[SLUICE_MAX_MAPS] = { false };
	const char *missing = NULL;
	char path[512];
	struct stat st;
	size_t i;

	for (i = 0; i < sluice_nr_maps; i++)
		fds[i] = -1;
	c->dir_existed = stat(c->dir, &st) == 0;
	for (i = 0; i < sluice_nr_maps; i++) {
		snprintf(path, sizeof(path), "%s/%s", c->dir, sluice_maps[i].name);
		fds[i] = bpf_obj_get(path);
		if (fds[i] >= 0) {
			nr_found++;
			if (!strcmp(sluice_maps[i].name, SLUICE_MAP_CONFIG))
				cfd = fds[i];
		} else if (errno == ENOENT && sluice_maps[i].added_later) {
			/* A state pinned by a sluice before this map: made
			 * below, if the rest of the state is complete. */
			absent[i] = true;
		} else if (errno == ENOENT) {
			missing = sluice_maps[i].name;
		} else {
			ret = refuse(c, -errno, "Couldn't open %s: %s", path, strerror(errno));
			goto out;
		}
	}
	if (!nr_found)
		goto out;
	if (missing) {
		ret = refuse(c, -EPROTO,
			     "the pinned state of %s is incomplete (%s/%s is missing): run "
			     "'sluice detach %s' to remove it, then attach again",
			     c->o->ifname, c->dir, missing, c->o->ifname);
		goto out;
	}
	c->pins_existed = true;
	for (i = 0; i < sluice_nr_maps; i++) {
		c->adds_map[i] = absent[i];
		c->nr_adds += absent[i];
	}
	for (i = 0; i < sluice_nr_maps && !ret; i++)
		if (fds[i] >= 0)
			ret = check_pinned_map(c, skel, sluice_maps[i].name, fds[i]);
	if (!ret) {
		struct sluice_config cfg;
		__u32 zero = 0;

		if (bpf_map_lookup_elem(cfd, &zero, &cfg)) {
			ret = refuse(c, -errno, "Couldn't read %s/%s: %s", c->dir,
				     SLUICE_MAP_CONFIG, strerror(errno));
		} else if (cfg.layout == 0) {
			/* An attach died before it wrote the config: what
			 * attach now makes of it is the plan's business. */
			c->fresh_config = true;
			cfg.owner.life = SLUICE_LIFE_ATTACHING;
			cfg.layout = SLUICE_LAYOUT_VERSION;
			c->old_cfg = cfg;
			c->have_old_cfg = true;
		} else if (cfg.layout >= 3 && cfg.layout <= SLUICE_LAYOUT_VERSION) {
			/* Layout 3 is layout 4 without the owner, layout 4 is
			 * this one with the rules all in the trie: upgraded in
			 * place once attach knows whose it is. */
			c->old_cfg = cfg;
			c->have_old_cfg = true;
		} else {
			ret = sluice_check_layout(&cfg, c->o->ifname, c->err, sizeof(c->err));
		}
	}
out:
	for (i = 0; i < sluice_nr_maps; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ret;
}

/* What runs on the interface decides between a fresh attach and an upgrade. */
static int inspect_iface(struct attach_ctx *c)
{
	struct attach_opts *o = c->o;
	int ret;

	ret = find_attachment(o->ifindex, &c->a);
	if (ret)
		return refuse(c, ret, "Couldn't query the XDP programs of %s: %s", o->ifname,
			      strerror(-ret));
	if (c->a.other_id)
		return refuse(c, -EBUSY,
			      "the XDP program '%s' (id %u) is attached to %s, not through "
			      "libxdp's dispatcher, so sluice cannot run next to it: detach it "
			      "first (e.g. 'ip link set dev %s %s off' if nothing else needs it)",
			      c->a.other_name, c->a.other_id, o->ifname, o->ifname,
			      c->a.mode == XDP_MODE_SKB ? "xdpgeneric" : "xdpdrv");
	if (!c->a.prog_id) {
		c->kind = ATTACH_FRESH;
		if (c->a.dispatcher && c->a.nr_progs) {
			/* Join the dispatcher in the mode it runs in. */
			if (o->mode_given && o->mode != c->a.mode)
				return refuse(c, -EBUSY,
					      "the XDP programs on %s run in %s mode: sluice can "
					      "only join them in that mode (--mode %s)", o->ifname,
					      mode_name(c->a.mode), mode_name(c->a.mode));
			o->mode = c->a.mode;
		}
		return 0;
	}
	c->kind = c->a.dispatcher ? ATTACH_UPGRADE_DISPATCHER : ATTACH_UPGRADE_LEGACY;
	if (o->mode_given && o->mode != c->a.mode)
		return refuse(c, -EBUSY,
			      "sluice is attached to %s in %s mode: to change the mode, run "
			      "'sluice detach %s --keep-state', then attach with --mode %s (%s is "
			      "not limited in between)",
			      o->ifname, mode_name(c->a.mode), o->ifname, mode_name(o->mode),
			      o->ifname);
	o->mode = c->a.mode;
	if (!c->pins_existed)
		pr_warn("warning: sluice runs on %s but its pinned state is gone: the upgrade "
			"starts with empty key tables and the default policy\n", o->ifname);
	return 0;
}

static bool has_edits(const struct attach_opts *o)
{
	return o->config || o->set_argc > 1;
}

/* Apply --config (the whole desired state) and then the options to a
 * transaction's copy. */
static int edit_txn(struct sluice_txn *t, struct attach_ctx *c, char *err, size_t errlen)
{
	struct attach_opts *o = c->o;
	char inner[SLUICE_ERR_LEN];
	int ret;

	if (c->file) {
		ret = sluice_cmd_file_replace(t, c->file, &c->diff, err, errlen);
		if (ret)
			return ret;
	}
	if (o->set_argc > 1) {
		ret = sluice_cmd_edit(t, o->set_argc, o->set_argv, inner, sizeof(inner));
		if (ret) {
			snprintf(err, errlen, "%s", inner);
			return ret;
		}
	}
	if (sluice_policy_check(&t->set.def, inner, sizeof(inner))) {
		snprintf(err, errlen, "%s", inner);
		return -EINVAL;
	}
	return 0;
}

/* A handle on a config in memory (the defaults, or a copy of the pinned
 * one): edits of a transaction on it touch only its copy. */
static void scratch_handle(struct sluice_handle *h, struct sluice_config *cfg, const char *ifname)
{
	sluice_handle_init(h);
	snprintf(h->ifname, sizeof(h->ifname), "%s", ifname);
	h->cfg = cfg;
}

/*
 * Step 1 for the policy: run every edit on a copy that is thrown away,
 * against the live settings and rules when there are some, the defaults
 * otherwise. The pinned rules are read without the lock (a writer may
 * commit meanwhile; step 3 runs the edits again on what is live then).
 */
static int validate_edits(struct attach_ctx *c)
{
	struct attach_opts *o = c->o;
	struct sluice_policies pol = {};
	struct sluice_handle h, live;
	struct sluice_config cfg = {};
	struct sluice_txn t;
	char path[512];
	int ret;

	if (o->config) {
		ret = sluice_cmd_file_read(o->config, &c->file, c->err, sizeof(c->err));
		if (ret)
			return sluice_cmd_file_err_is_usage(ret) ? -EINVAL : ret;
	}
	if (o->set_argc > 1) {
		ret = sluice_cmd_check(o->set_argc, o->set_argv, c->err, sizeof(c->err));
		if (ret)
			return ret;
	}
	cfg.layout = SLUICE_LAYOUT_VERSION;
	sluice_settings_init(&cfg.settings[0]);
	if (c->pins_existed && !c->fresh_config && c->plan.kind != RESUME_DROP) {
		if (c->old_cfg.layout == SLUICE_LAYOUT_VERSION) {
			ret = sluice_open(o->ifname, &live, c->err, sizeof(c->err));
			if (!ret)
				ret = sluice_read_policies(&live, &pol, false, c->err,
							   sizeof(c->err));
			if (!ret)
				cfg.tag_seq = live.cfg->tag_seq;
			sluice_close(&live);
		} else {
			/* Layout 3 (sluice_open() refuses it): its rules, read
			 * through a handle on a copy of its config. */
			cfg = c->old_cfg;
			cfg.layout = SLUICE_LAYOUT_VERSION;
			scratch_handle(&live, &cfg, o->ifname);
			snprintf(path, sizeof(path), "%s/%s", c->dir, SLUICE_MAP_RULES);
			live.rules_fd = bpf_obj_get(path);
			ret = live.rules_fd < 0 ?
				      refuse(c, -errno, "Couldn't open the rules of %s: %s",
					     o->ifname, strerror(errno)) :
				      sluice_read_policies(&live, &pol, false, c->err,
							   sizeof(c->err));
			if (live.rules_fd >= 0)
				close(live.rules_fd);
		}
		if (ret)
			return ret;
		cfg.settings[0] = pol.set;
	}
	cfg.settings[1] = cfg.settings[0];
	scratch_handle(&h, &cfg, o->ifname);
	memset(&t, 0, sizeof(t));
	t.h = &h;
	t.set = cfg.settings[0];
	t.rules = pol.rules;
	t.nr_rules = pol.nr_rules;
	pol.rules = NULL;
	ret = edit_txn(&t, c, c->err, sizeof(c->err));
	sluice_txn_end(&t);
	sluice_free_policies(&pol);
	return ret;
}

/* Remove what this call pinned (never what was there before it). */
static void undo_pins(struct attach_ctx *c)
{
	char path[512];
	size_t i;

	for (i = 0; i < sluice_nr_maps; i++) {
		/* Of a state that was there, only the maps this call added. */
		if (c->pins_existed && !c->adds_map[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", c->dir, sluice_maps[i].name);
		unlink(path);
	}
	if (c->pins_existed)
		return;
	snprintf(path, sizeof(path), "%s/%s", c->dir, PROG_PIN_NEW);
	unlink(path);
	if (!c->dir_existed)
		rmdir(c->dir);
}

/* Step 2: create or reuse the pinned maps; a new config gets the defaults
 * now, before any program can read it. */
static int create_maps(struct attach_ctx *c)
{
	struct sluice_bpf *skel;
	struct sluice_config cfg;
	__u32 zero = 0;
	int ret;

	skel = attach_open_skel(c);
	if (!skel)
		return -errno;
	/* Only the maps: the program is loaded for the interface later.
	 * (.rodata and .bss are created too, and freed at destroy: the
	 * skeleton mmaps them and libbpf 1.1 fails the load without them.) */
	ret = bpf_program__set_autoload(skel->progs.sluice_xdp, false);
	if (ret) {
		refuse(c, ret, "Couldn't prepare the BPF object: %s", strerror(-ret));
		goto out;
	}
	ret = sluice_bpf__load(skel);
	if (ret) {
		ret = -errno;
		if (ret == -ENOMEM || ret == -E2BIG)
			refuse(c, ret,
			       "Couldn't create the maps of %s: %s (the key table of %u keys, "
			       "the sliding-log table of %u keys and the rule table of %u rules "
			       "must fit in kernel memory: lower --max-keys, --max-log-keys or "
			       "--max-rules)",
			       c->o->ifname, strerror(-ret), c->max_keys, c->max_log_keys,
			       c->max_rules);
		else
			refuse(c, ret, "Couldn't create the maps of %s in %s: %s (run with -v to "
			       "see libbpf's reason)", c->o->ifname, c->dir, strerror(-ret));
		goto out;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.sluice_config), &zero, &cfg)) {
		ret = refuse(c, -errno, "Couldn't read the config of %s: %s", c->o->ifname,
			     strerror(errno));
		goto out;
	}
	if (cfg.layout == 0) {
		memset(&cfg, 0, sizeof(cfg));
		sluice_settings_init(&cfg.settings[0]);
		cfg.settings[1] = cfg.settings[0];
		cfg.layout = SLUICE_LAYOUT_VERSION;
		/* Whose it is from the start; "attaching" until the program
		 * runs, so that a state this call leaves behind when it is
		 * killed is never taken for a finished one. */
		owner_set(&cfg, c->o->ifindex, SLUICE_LIFE_ATTACHING);
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.sluice_config), &zero, &cfg, 0))
			ret = refuse(c, -errno, "Couldn't write the config of %s: %s",
				     c->o->ifname, strerror(errno));
	} else if (cfg.layout == 3) {
		/* Layout 3 is this layout with the owner left zero; the plan
		 * let us take it (an upgrade, or --resume), so it is ours. */
		cfg.layout = SLUICE_LAYOUT_VERSION;
		owner_set(&cfg, c->o->ifindex,
			  c->a.prog_id ? SLUICE_LIFE_ATTACHED : SLUICE_LIFE_KEPT);
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.sluice_config), &zero, &cfg, 0))
			ret = refuse(c, -errno, "Couldn't upgrade the config of %s: %s",
				     c->o->ifname, strerror(errno));
	} else if (cfg.layout == 4) {
		/* Its rule_maps and ruletab fields are 0: every rule in the
		 * trie, no rule table yet, as this layout reads them. The
		 * program is replaced before anything writes the new fields.
		 * Only the layout word is written: the rest may be changing. */
		struct sluice_config *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE,
					       MAP_SHARED, bpf_map__fd(skel->maps.sluice_config), 0);

		if (m == MAP_FAILED) {
			ret = refuse(c, -errno, "Couldn't upgrade the config of %s: %s",
				     c->o->ifname, strerror(errno));
		} else {
			__atomic_store_n(&m->layout, SLUICE_LAYOUT_VERSION, __ATOMIC_RELEASE);
			munmap(m, sizeof(*m));
		}
	}
out:
	sluice_bpf__destroy(skel);
	return ret;
}

/* --config and the options, made live in one commit. */
static int apply_settings(struct attach_ctx *c, struct sluice_handle *h)
{
	struct sluice_txn t;
	int ret;

	if (!has_edits(c->o))
		return 0;
	ret = sluice_txn_begin(h, &t, c->err, sizeof(c->err));
	if (ret)
		return ret;
	ret = edit_txn(&t, c, c->err, sizeof(c->err));
	if (!ret)
		ret = sluice_txn_commit(&t, c->err, sizeof(c->err));
	sluice_txn_end(&t);
	return ret;
}

static void print_summary(struct attach_ctx *c, struct sluice_handle *h, __u32 new_id,
			  const char *state)
{
	struct sluice_settings s;
	struct attachment now;
	char rate[128], kept[96];
	long keys = sluice_count_keys(h->buckets_fd);
	size_t i;

	sluice_read_settings(h, &s, NULL);
	format_policy_rate(&s.def, rate, sizeof(rate));
	if (find_attachment(c->o->ifindex, &now))
		memset(&now, 0, sizeof(now));
	if (c->kind == ATTACH_FRESH)
		printf("sluice attached to %s in %s mode: program %u, %s\n", c->o->ifname,
		       mode_name(now.prog_id ? now.mode : c->o->mode), new_id,
		       now.dispatcher ? "in libxdp's dispatcher" :
					"alone (not in libxdp's dispatcher)");
	else
		printf("sluice upgraded on %s in %s mode: program %u replaced by %u %s\n",
		       c->o->ifname, mode_name(c->o->mode), c->a.prog_id, new_id,
		       c->kind == ATTACH_UPGRADE_LEGACY ? "in one step" :
							  "in libxdp's dispatcher");
	switch (c->plan.kind) {
	case RESUME_UPGRADE:
		printf("  resumed: %s (the running program's)\n", state);
		break;
	case RESUME_KEPT:
		describe_kept(&c->old_cfg, kept, sizeof(kept));
		printf("  resumed: %s, %s\n", state, kept);
		break;
	case RESUME_ADOPT:
		printf("  resumed (--resume): %s; %s\n", state, c->plan.why);
		break;
	case RESUME_DROP:
		printf("  fresh (--fresh): dropped the pinned state, %s\n", c->plan.why);
		break;
	case RESUME_NONE:
		break;
	}
	if (c->o->config)
		printf("  config: %s, %u rule%s added, %u removed, %u changed, %u unchanged\n",
		       c->o->config, c->diff.added, c->diff.added == 1 ? "" : "s",
		       c->diff.removed, c->diff.changed, c->diff.unchanged);
	printf("  policy: %s %s, per /%u (IPv4) and /%u (IPv6) source%s%s\n",
	       sluice_algo_name(s.def.algo), rate, s.def.prefix4, s.def.prefix6,
	       (s.flags & SLUICE_DRY_RUN) ? ", dry run" : "",
	       (s.flags & SLUICE_FAIL_CLOSED) ? ", fail-closed" : "");
	printf("  state: %ld of %u keys, %u rule%s, pinned in %s\n", keys < 0 ? 0 : keys,
	       sluice_map_max_entries(h->buckets_fd), s.nr_rules, s.nr_rules == 1 ? "" : "s",
	       c->dir);
	for (i = 0; i < sluice_nr_maps; i++)
		if (c->pins_existed && c->adds_map[i])
			printf("  added: %s/%s, which the sluice that pinned this state did not "
			       "have\n", c->dir, sluice_maps[i].name);
}

/* A sluice run owned the attachment: it is attach's now; msg says so. */
static void hand_over_run(struct attach_ctx *c, struct sluice_config *cfg, char *msg,
			  size_t len)
{
	__u32 pid = cfg->run_pid;
	int holder;

	msg[0] = '\0';
	if (!pid || c->o->run_owned)
		return;
	holder = run_holder(c->o->ifindex);
	if (holder)
		snprintf(msg, len, "  sluice run (pid %u) reports on %s: it now leaves it "
			 "attached when it exits\n", pid, c->o->ifname);
	else
		snprintf(msg, len, "  adopted the limiter that sluice run (pid %u) attached and "
			 "left behind when it was killed: it stays attached until 'sluice detach "
			 "%s'\n", pid, c->o->ifname);
	__atomic_store_n(&cfg->run_pid, 0, __ATOMIC_RELEASE);
}

/* Test hooks: die (SIGKILL) or fail at a named step, so that tests can make
 * the states that a killed or failing attach leaves. Unset in production. */
static bool test_hook(const char *env, const char *step)
{
	const char *v = getenv(env);

	return v && !strcmp(v, step);
}

int sluice_attach(struct attach_opts *o)
{
	struct attach_ctx c = { .o = o };
	struct sluice_handle h = { .cfg = NULL };
	struct sluice_bpf *probe = NULL;
	bool maps_made = false, prog_tried = false, existing;
	char resumed[160] = "", run_msg[256] = "";
	__u32 new_id = 0;
	int lock_fd = -1, ret, status = SLUICE_EXIT_RUNTIME;

	sluice_handle_init(&h);
	c.max_keys = o->max_keys ? (__u32)o->max_keys : SLUICE_DEFAULT_MAX_KEYS;
	c.max_log_keys = o->max_log_keys ? (__u32)o->max_log_keys : SLUICE_DEFAULT_MAX_LOG_KEYS;
	c.max_rules = o->max_rules ? (__u32)o->max_rules : SLUICE_DEFAULT_MAX_RULES;

	ret = sluice_ensure_bpffs(c.err, sizeof(c.err));
	if (!ret)
		ret = sluice_pin_dir(o->ifname, c.dir, sizeof(c.dir), c.err, sizeof(c.err));
	if (ret)
		goto out;
	o->ifindex = if_nametoindex(o->ifname);
	if (!o->ifindex) {
		char where[600];

		if (sluice_netns_elsewhere(o->ifname, sluice_cmdline(), where, sizeof(where)))
			refuse(&c, -ENODEV, "there is no interface '%s' in this network namespace; "
			       "the sluice limiter of a %s lives in %s", o->ifname, o->ifname,
			       where);
		else
			refuse(&c, -ENODEV, "there is no interface '%s' (see 'ip link')",
			       o->ifname);
		status = SLUICE_EXIT_USAGE;
		goto out;
	}
	lock_fd = lock_pin_root(c.err, sizeof(c.err));
	if (lock_fd < 0)
		goto out;

	/* Step 1: look, touch nothing. */
	probe = attach_open_skel(&c);
	if (!probe)
		goto out;
	ret = inspect_pins(&c, probe);
	if (!ret)
		ret = inspect_iface(&c);
	if (!ret)
		ret = plan_resume(o->ifname, o->ifindex, c.have_old_cfg ? &c.old_cfg : NULL,
				  c.a.prog_id != 0, o->resume, o->fresh, &c.plan, c.err,
				  sizeof(c.err));
	if (ret)
		goto out;
	ret = validate_edits(&c);
	if (ret) {
		if (ret == -EINVAL || ret == -ERANGE || ret == -ENOENT)
			status = SLUICE_EXIT_USAGE;
		goto out;
	}

	/* Step 2. */
	if (c.plan.kind == RESUME_DROP) {
		ret = remove_pins(c.dir, c.err, sizeof(c.err));
		if (ret)
			goto out;
		c.pins_existed = c.dir_existed = c.fresh_config = false;
	}
	existing = c.pins_existed && !c.fresh_config;
	ret = create_maps(&c);
	maps_made = true;
	if (ret)
		goto undo;
	ret = sluice_open(o->ifname, &h, c.err, sizeof(c.err));
	if (ret)
		goto undo;
	if (test_hook("SLUICE_TEST_KILL_AT", "maps"))
		raise(SIGKILL);

	/* Step 3. */
	if (!existing) {
		ret = apply_settings(&c, &h);
		if (ret) {
			if (ret == -EINVAL || ret == -ERANGE || ret == -ENOENT)
				status = SLUICE_EXIT_USAGE;
			goto undo;
		}
	}
	/* From here a new program may run with the maps: an existing state
	 * keeps even the ones this call added. */
	prog_tried = true;
	ret = test_hook("SLUICE_TEST_FAIL_AT", "program") ?
		      refuse(&c, -EIO, "Couldn't attach sluice to %s: failure injected by "
			     "SLUICE_TEST_FAIL_AT=program", o->ifname) :
		      attach_program(&c, &new_id);
	if (ret)
		goto undo;
	/* The program runs with this state: it is the interface's now. */
	h.cfg->layout = SLUICE_LAYOUT_VERSION;
	owner_set(h.cfg, o->ifindex, SLUICE_LIFE_ATTACHED);
	hand_over_run(&c, h.cfg, run_msg, sizeof(run_msg));
	if (o->run_owned)
		__atomic_store_n(&h.cfg->run_pid, (__u32)getpid(), __ATOMIC_RELEASE);
	/* What was resumed, before the settings change it. */
	describe_state(&h, c.have_old_cfg ? &c.old_cfg : NULL, resumed, sizeof(resumed));
	if (existing) {
		ret = apply_settings(&c, &h);
		if (ret) {
			p_err("sluice runs on %s, but its settings were not changed: %s", o->ifname,
			      c.err);
			c.err[0] = '\0';
			status = ret == -EINVAL || ret == -ERANGE || ret == -ENOENT ?
					 SLUICE_EXIT_USAGE :
					 SLUICE_EXIT_RUNTIME;
			goto out_quiet;
		}
	}
	print_summary(&c, &h, new_id, resumed);
	fputs(run_msg, stdout);
	o->resumed_kept = c.plan.kind == RESUME_KEPT;
	status = SLUICE_EXIT_OK;
	goto out;

undo:
	if (maps_made && (!existing || !prog_tried))
		undo_pins(&c);
out:
	if (status != SLUICE_EXIT_OK)
		p_err("%s", c.err[0] ? c.err : "attach failed");
out_quiet:
	sluice_cmd_file_free(c.file);
	sluice_close(&h);
	if (probe)
		sluice_bpf__destroy(probe);
	unlock_pin_root(lock_fd);
	return status;
}

int do_attach(int argc, char **argv)
{
	struct attach_opts o;
	int ret;

	ret = parse_attach_opts("attach", argc, argv, &o);
	if (ret < 0) {
		attach_help();
		return SLUICE_EXIT_OK;
	}
	if (ret)
		return ret;
	return sluice_attach(&o);
}
