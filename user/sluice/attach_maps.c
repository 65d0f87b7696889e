// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice attach, the pinned maps: what is pinned for the interface and
 * whether this sluice can reuse it (step 1), creating or reusing them with
 * the maps a newer sluice added (step 2), and removing what this call pinned
 * when it fails. The order of an attach is attach.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <sluice/sets.h>

#include "attach.h"

/* The wide keys' tables (--max-flows N; without it off): the one of the
 * key table `sets` names holds them, the other is as small as it may be. */
static void size_flows(struct attach_ctx *c, bool sets)
{
	__u32 f = (__u32)c->o->max_flows;

	c->wide = f > 0;
	c->sets_n[2] = sets && f ? sluice_sets_for(f) : SLUICE_FLOWS_OFF;
	c->max_flows = !sets && f ? f : SLUICE_FLOWS_OFF;
}

/* Does a pinned set table of `have` sets hold `want` keys a family? As
 * this layout sizes it (whole groups), or as layouts 4 to 6 did (whole
 * sets): the upgrade of such a state then checks where its keys are. */
static bool sets_fit(const struct attach_ctx *c, __u64 want, __u32 have)
{
	__u64 sets = want / SLUICE_SET_WAYS + (want % SLUICE_SET_WAYS != 0);

	return sluice_sets_for((__u32)want) == have ||
	       (c->have_old_cfg && c->old_cfg.layout < SLUICE_LAYOUT_VERSION && sets == have);
}

/* SLUICE_KIND_TABLE_ASKED of a new state: --table named its table, or
 * --fresh without --table kept the table of the state it dropped, and so
 * why that one had it. */
static __u32 table_asked(const struct attach_ctx *c)
{
	if (c->o->table)
		return SLUICE_KIND_TABLE_ASKED;
	return c->have_old_cfg ? c->old_cfg.kind & SLUICE_KIND_TABLE_ASKED : 0;
}

/* Compare one pinned map with what this sluice would create. */
static int check_pinned_map(struct attach_ctx *c, struct sluice_bpf *skel, const char *name, int fd)
{
	struct bpf_map *m = bpf_object__find_map_by_name(skel->obj, name);
	const char *ifn = c->o->ifname;
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (!m) /* an added_later map this build's object lacks: not its business */
		return 0;
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
	if (!strcmp(name, SLUICE_MAP_SETSF) || !strcmp(name, SLUICE_MAP_FLOWS)) {
		/* The wide keys' table of the state's kind holds --max-flows;
		 * the other one is kept at its few entries. */
		int sets = !strcmp(name, SLUICE_MAP_SETSF);
		__u64 want = c->o->max_flows, have = info.max_entries;

		if (sets != !!c->pinned_sets || c->table_change)
			return 0; /* not the state's: as small as it is */
		if (info.max_entries == SLUICE_FLOWS_OFF) {
			/* Off until now: --max-flows makes the table anew (it
			 * holds no key), else it stays off. */
			c->wide_remake = want > 0;
			return 0;
		}
		c->wide = true;
		if (sets)
			c->sets_n[2] = info.max_entries;
		else
			c->max_flows = info.max_entries;
		if (!want)
			return 0;
		if (sets)
			have *= SLUICE_SET_WAYS;
		if ((sets && !sets_fit(c, want, info.max_entries)) || (!sets && want != have))
			return refuse(c, -EEXIST,
				      "the pinned wide-key table of %s holds %llu keys, not %llu: "
				      "detach first to resize ('sluice %sdetach %s' drops its "
				      "state), then attach with --max-flows %llu",
				      ifn, (unsigned long long)have, (unsigned long long)want,
				      c->t->verb, ifn, (unsigned long long)want);
		return 0;
	}
	if (!strcmp(name, SLUICE_MAP_SETS4) || !strcmp(name, SLUICE_MAP_SETS6)) {
		int v6 = !strcmp(name, SLUICE_MAP_SETS6);
		__u64 want = c->o->max_keys;

		/* A state of the LRU table has one set each: kept as pinned. */
		c->sets_n[v6] = info.max_entries;
		if (c->pinned_sets && !c->table_change && want &&
		    !sets_fit(c, want, info.max_entries))
			return refuse(
				c, -EEXIST,
				"the pinned key table of %s (--table sets) holds %llu keys "
				"per family, not %llu: detach first to resize ('sluice %sdetach "
				"%s' drops its state), then attach with --max-keys %llu",
				ifn, (unsigned long long)info.max_entries * SLUICE_SET_WAYS,
				(unsigned long long)want, c->t->verb, ifn,
				(unsigned long long)want);
		return 0;
	}
	if (!strcmp(name, SLUICE_MAP_BUCKETS) && (c->pinned_sets || c->table_change)) {
		/* --max-keys sizes the sets (above), or the table that replaces
		 * this one (attach_check_table()). */
		c->max_keys = info.max_entries;
		return 0;
	}
	if (!strcmp(name, SLUICE_MAP_BUCKETS) || !strcmp(name, SLUICE_MAP_LOGS) ||
	    !strcmp(name, SLUICE_MAP_FLEET_USE)) {
		int k = !strcmp(name, SLUICE_MAP_BUCKETS) ? 0 :
			!strcmp(name, SLUICE_MAP_LOGS)    ? 1 :
							    2;
		static const char *const what[] = { "key", "sliding-log key", "fleet key" };
		static const char *const opt[] = { "--max-keys", "--max-log-keys", "--fleet-keys" };
		__u32 *have[] = { &c->max_keys, &c->max_log_keys, &c->fleet_keys };
		__u64 want = k == 0 ? c->o->max_keys :
			     k == 1 ? c->o->max_log_keys :
				      c->o->fleet_keys;

		if (want && want != info.max_entries)
			return refuse(c, -EEXIST,
				      "the pinned %s table of %s holds %u keys, not %llu: detach "
				      "first to resize ('sluice detach %s' drops its state), then "
				      "attach with %s %llu",
				      what[k], ifn, info.max_entries, (unsigned long long)want, ifn,
				      opt[k], (unsigned long long)want);
		*have[k] = info.max_entries;
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

/*
 * A set table pinned by layouts 4 to 6 (a key in one set, then in one of
 * two) is upgraded in place when every key is in one of the two groups
 * where this layout looks for it: with one set a key, always (a key's own
 * group is its own set's); with two, when no key went to an other set
 * outside them. Else its keys would be lost to lookups (and claimed again,
 * with full buckets): refused before anything changes.
 */
static int check_placement(struct attach_ctx *c, const struct sluice_config *cfg, const int *fds)
{
	int s4 = -1, s6 = -1, sf = -1, ret;
	struct sluice_keytab t;
	size_t i;
	long n;

	if (!(cfg->kind & SLUICE_KIND_SETS) || cfg->layout >= SLUICE_LAYOUT_VERSION)
		return 0;
	for (i = 0; i < sluice_nr_maps; i++) {
		if (!strcmp(sluice_maps[i].name, SLUICE_MAP_SETS4))
			s4 = fds[i];
		else if (!strcmp(sluice_maps[i].name, SLUICE_MAP_SETS6))
			s6 = fds[i];
		else if (!strcmp(sluice_maps[i].name, SLUICE_MAP_SETSF))
			sf = fds[i];
	}
	ret = sluice_keytab_open(&t, true, cfg->set_seed, -1, s4, s6);
	if (!ret)
		ret = sluice_keytab_open_wide(&t, -1, sf);
	if (ret) {
		sluice_keytab_close(&t);
		return refuse(c, ret, "Couldn't map the set table of %s to check it: %s",
			      c->o->ifname, strerror(-ret));
	}
	n = sluice_keytab_misplaced(&t);
	sluice_keytab_close(&t);
	if (n)
		return refuse(c, -EPROTO,
			      "the set table of %s (layout %u) has %ld key%s in sets where this "
			      "sluice does not look for them (a key's two groups of %d sets, "
			      "layout %u): detach with the sluice that attached it, or attach "
			      "with --fresh to drop the state (keys, rules and counters)",
			      c->o->ifname, cfg->layout, n, n == 1 ? "" : "s", SLUICE_SET_GROUP,
			      SLUICE_LAYOUT_VERSION);
	return 0;
}

/* What is pinned for this interface, and is it something we can reuse? */
int attach_inspect_pins(struct attach_ctx *c, struct sluice_bpf *skel)
{
	int fds[SLUICE_MAX_MAPS], nr_found = 0, ret = 0, cfd = -1, bfd = -1, s4fd = -1;
	bool absent[SLUICE_MAX_MAPS] = { false };
	const char *missing = NULL;
	char path[512];
	struct stat st;
	size_t i;

	for (i = 0; i < sluice_nr_maps; i++)
		fds[i] = -1;
	/* A state belongs to its ifindex (rename.c): attach B finds what was
	 * pinned under A before the rename; a new A does not meet the state of
	 * the interface now called B. */
	ret = sluice_follow_rename(c->o->name, path, sizeof(path), c->err, sizeof(c->err));
	if (ret < 0)
		return ret;
	ret = 0;
	c->dir_existed = stat(c->dir, &st) == 0;
	for (i = 0; i < sluice_nr_maps; i++) {
		snprintf(path, sizeof(path), "%s/%s", c->dir, sluice_maps[i].name);
		fds[i] = bpf_obj_get(path);
		if (fds[i] >= 0) {
			nr_found++;
			if (!strcmp(sluice_maps[i].name, SLUICE_MAP_CONFIG))
				cfd = fds[i];
		} else if (errno == ENOENT && sluice_maps[i].added_later &&
			   !bpf_object__find_map_by_name(skel->obj, sluice_maps[i].name)) {
			/* Not in this build's object either: nothing to add. */
		} else if (errno == ENOENT && sluice_maps[i].added_later) {
			/* A state pinned by a sluice before this map: made
			 * below, if the rest of the state is complete. */
			absent[i] = true;
		} else if (errno == ENOENT) {
			missing = sluice_maps[i].name;
		} else {
			ret = sluice_sys_err(c->err, sizeof(c->err), -errno, "Couldn't open %s",
					     path);
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
		if (!strcmp(sluice_maps[i].name, SLUICE_MAP_BUCKETS))
			bfd = fds[i];
		else if (!strcmp(sluice_maps[i].name, SLUICE_MAP_SETS4))
			s4fd = fds[i];
	}
	/* The config first: its layout says how to read it, its kind which
	 * key table the other maps are checked as. */
	ret = check_pinned_map(c, skel, SLUICE_MAP_CONFIG, cfd);
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
			 * 5 with the rules all in the trie, 5 and 6 are this
			 * one with a key in single sets: upgraded in place once
			 * attach knows whose it is. */
			c->old_cfg = cfg;
			c->have_old_cfg = true;
			if (!c->o->fresh)
				ret = check_placement(c, &cfg, fds);
		} else {
			ret = sluice_check_layout(&cfg, c->o->ifname, c->err, sizeof(c->err));
		}
	}
	if (!ret) {
		if (!c->fresh_config)
			c->pinned_sets = c->old_cfg.kind & SLUICE_KIND_SETS;
		else
			/* An attach that died before it wrote the config: the
			 * table its maps were sized for (an LRU table's sets
			 * have one entry, its buckets more). */
			c->pinned_sets = s4fd >= 0 && !(sluice_map_max_entries(s4fd) == 1 &&
							sluice_map_max_entries(bfd) > 1);
		c->table_change = c->o->table &&
				  (c->o->table == ATTACH_TABLE_SETS) != c->pinned_sets;
		/* The state's table, whatever the default: a state pinned
		 * before wide keys, or an LRU state pinned before the set
		 * table, gets the tables it lacks (created at load) sized for
		 * its key table, the other table's at one set; pinned ones say
		 * their size. */
		attach_size_keys(c, c->pinned_sets);
		if (c->pinned_sets && s4fd < 0)
			ret = refuse(c, -EPROTO,
				     "the pinned state of %s is of the sets table but %s/%s is "
				     "missing: run 'sluice %sdetach %s' to remove it, then attach "
				     "again",
				     c->o->ifname, c->dir, SLUICE_MAP_SETS4, c->t->verb,
				     c->o->ifname);
	}
	for (i = 0; i < sluice_nr_maps && !ret; i++)
		if (fds[i] >= 0 && fds[i] != cfd)
			ret = check_pinned_map(c, skel, sluice_maps[i].name, fds[i]);
out:
	for (i = 0; i < sluice_nr_maps; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ret;
}

/* Remove what this call pinned (never what was there before it). */
void attach_undo_pins(struct attach_ctx *c)
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

/* A new config gets the defaults now, before any program can read it; an
 * older layout is brought to this one. fd: the config map. */
static int init_config(struct attach_ctx *c, int fd)
{
	struct sluice_config cfg;
	__u32 zero = 0;
	int ret = 0;

	if (bpf_map_lookup_elem(fd, &zero, &cfg))
		return refuse(c, -errno, "Couldn't read the config of %s: %s", c->o->ifname,
			      strerror(errno));
	if (cfg.layout == 0) {
		memset(&cfg, 0, sizeof(cfg));
		/* The sets table's hash key: random, so that no sender can aim
		 * its sources at one set; kept for the state's life. */
		if (c->sets && getrandom(&cfg.set_seed, sizeof(cfg.set_seed), 0) !=
				       (ssize_t)sizeof(cfg.set_seed))
			return refuse(c, -errno,
				      "Couldn't draw the hash key of the sets table "
				      "of %s (getrandom): %s",
				      c->o->ifname, strerror(errno));
		sluice_settings_init(&cfg.settings[0]);
		cfg.settings[1] = cfg.settings[0];
		cfg.layout = SLUICE_LAYOUT_VERSION;
		cfg.kind = (c->t->new_kind ? c->t->new_kind(c) : 0) |
			   (c->sets ? SLUICE_KIND_SETS : 0) | table_asked(c);
		/* Whose it is from the start; "attaching" until the program
		 * runs, so that a state this call leaves behind when it is
		 * killed is never taken for a finished one. */
		owner_set(&cfg, c->o->ifindex, SLUICE_LIFE_ATTACHING);
		if (bpf_map_update_elem(fd, &zero, &cfg, 0))
			ret = refuse(c, -errno, "Couldn't write the config of %s: %s", c->o->ifname,
				     strerror(errno));
	} else if (cfg.layout == 3) {
		/* Layout 3 is this layout with the owner left zero; the plan
		 * let us take it (an upgrade, or --resume), so it is ours. */
		cfg.layout = SLUICE_LAYOUT_VERSION;
		owner_set(&cfg, c->o->ifindex,
			  c->prog_id ? SLUICE_LIFE_ATTACHED : SLUICE_LIFE_KEPT);
		if (bpf_map_update_elem(fd, &zero, &cfg, 0))
			ret = refuse(c, -errno, "Couldn't upgrade the config of %s: %s",
				     c->o->ifname, strerror(errno));
	} else if (cfg.layout == 4 || cfg.layout == SLUICE_LAYOUT_ONE_SET ||
		   cfg.layout == SLUICE_LAYOUT_TWO_SETS) {
		/* Layout 4: its rule_maps and ruletab fields are 0: every rule
		 * in the trie, no rule table yet, as this layout reads them.
		 * The program is replaced before anything writes the new
		 * fields. Layouts 4 to 6: each set-table key in one of its
		 * groups (attach_inspect_pins() checked it). Only the layout
		 * word is written: the rest may be changing. */
		struct sluice_config *m =
			mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (m == MAP_FAILED) {
			ret = refuse(c, -errno, "Couldn't upgrade the config of %s: %s",
				     c->o->ifname, strerror(errno));
		} else {
			__atomic_store_n(&m->layout, SLUICE_LAYOUT_VERSION, __ATOMIC_RELEASE);
			munmap(m, sizeof(*m));
		}
	}
	return ret;
}

/* Step 2: create or reuse the pinned maps; a new config gets the defaults
 * now, before any program can read it. */
int attach_create_maps(struct attach_ctx *c)
{
	struct sluice_bpf *skel;
	struct bpf_program *p;
	int ret;

	skel = attach_open_skel(c);
	if (!skel)
		return -errno;
	/* Only the maps: the program is loaded for the interface later.
	 * (.rodata and .bss are created too, and freed at destroy: the
	 * skeleton mmaps them and libbpf 1.1 fails the load without them.) */
	bpf_object__for_each_program(p, skel->obj) {
		ret = bpf_program__set_autoload(p, false);
		if (ret) {
			refuse(c, ret, "Couldn't prepare the BPF object: %s", strerror(-ret));
			goto out;
		}
	}
	ret = sluice_bpf__load(skel);
	if (ret) {
		ret = -errno;
		if ((ret == -ENOMEM || ret == -E2BIG) && c->sets)
			refuse(c, ret,
			       "Couldn't create the maps of %s: %s (the sets table of %llu IPv4 "
			       "and %llu IPv6 keys, the sliding-log table of %u keys and the rule "
			       "table of %u rules must fit in kernel memory: lower --max-keys, "
			       "--max-log-keys or --max-rules)",
			       c->o->ifname, strerror(-ret),
			       (unsigned long long)c->sets_n[0] * SLUICE_SET_WAYS,
			       (unsigned long long)c->sets_n[1] * SLUICE_SET_WAYS, c->max_log_keys,
			       c->max_rules);
		else if (ret == -ENOMEM || ret == -E2BIG)
			refuse(c, ret,
			       "Couldn't create the maps of %s: %s (the key table of %u keys, "
			       "the sliding-log table of %u keys and the rule table of %u rules "
			       "must fit in kernel memory: lower --max-keys, --max-log-keys or "
			       "--max-rules)",
			       c->o->ifname, strerror(-ret), c->max_keys, c->max_log_keys,
			       c->max_rules);
		else
			refuse(c, ret,
			       "Couldn't create the maps of %s in %s: %s (run with -v to "
			       "see libbpf's reason)",
			       c->o->ifname, c->dir, strerror(-ret));
		goto out;
	}
	ret = init_config(c, bpf_map__fd(skel->maps.sluice_config));
out:
	sluice_bpf__destroy(skel);
	return ret;
}

void attach_size_keys(struct attach_ctx *c, bool sets)
{
	__u32 n = c->o->max_keys ? (__u32)c->o->max_keys : SLUICE_DEFAULT_MAX_KEYS;

	c->sets = sets;
	if (sets) {
		/* N keys per family; the LRU table is not read, but the
		 * program's object has it: its smallest size. */
		c->sets_n[0] = c->sets_n[1] = sluice_sets_for(n);
		c->max_keys = SETS_BUCKETS;
	} else {
		c->sets_n[0] = c->sets_n[1] = 1;
		c->max_keys = n;
	}
	size_flows(c, sets);
}

int attach_check_table(struct attach_ctx *c)
{
	const struct attach_opts *o = c->o;
	const char *verb = c->t->verb;
	const char *have = c->pinned_sets ? "sets" : "lru";
	const char *want = o->table == ATTACH_TABLE_SETS ? "sets" : "lru";

	if (!c->pins_existed || !c->table_change)
		return 0;
	if (c->plan.kind == RESUME_DROP) {
		/* --fresh: a new state of the table asked for. */
		attach_size_keys(c, o->table != ATTACH_TABLE_LRU);
		return 0;
	}
	if (c->prog_id)
		return refuse(c, -EEXIST,
			      "sluice runs on %s with the %s key table: --table %s is a fresh "
			      "attach, not an upgrade; detach first ('sluice %sdetach %s' drops "
			      "its state; after 'sluice %sdetach %s --keep-state' attach with "
			      "--fresh), then 'sluice %sattach %s --table %s'",
			      o->ifname, have, want, verb, o->ifname, verb, o->ifname, verb,
			      o->ifname, want);
	return refuse(c, -EEXIST,
		      "the pinned state of %s has the %s key table: --table %s needs a fresh "
		      "state; attach with --table %s --fresh to drop it (keys, rules and "
		      "counters), or without --table to resume it as it is",
		      o->ifname, have, want, want);
}
