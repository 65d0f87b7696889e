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
 * sluicectl commits meanwhile are never overwritten by a snapshot. Where
 * the XDP limiter and the shaper differ (what runs on the interface, the
 * program's attachment, the summary), the target's operations (target.h)
 * do the step.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <sluice/sets.h>

#include "attach.h"
#include "cmd.h"

void attach_usage(FILE *f)
{
	fprintf(f,
		"  sluice attach IFACE [--mode native|skb] [--rate RATE] [--burst N]\n"
		"                [--algo ALGO] [--window DUR] [--prefix4 LEN] [--prefix6 LEN]\n"
		"                [--table sets|lru] [--max-keys N] [--max-log-keys N]\n"
		"                [--max-rules N] [--max-flows N] [--fleet-keys N]\n"
		"                [--new-keys RATE|off]\n"
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
	       "  --burst N           packets (or bytes: 1514, 64k) a quiet source may send\n"
	       "                      at once; without it one second's worth of the --rate\n"
	       "                      before it (the default policy: 100/s burst 100)\n"
	       "  --algo ALGO         token-bucket (default), leaky-bucket, sliding-window,\n"
	       "                      fixed-window, sliding-log\n"
	       "  --window DUR        window of the window algorithms: 100ms to 1h\n"
	       "  --prefix4 LEN       IPv4 sources share a bucket per /LEN (default 32)\n"
	       "  --prefix6 LEN       IPv6 sources share a bucket per /LEN (default 64)\n"
	       "  --table sets|lru    the key table of a new state: sets (default), a\n"
	       "                      set-associative table (a keyed hash picks two groups\n"
	       "                      of 16 keys) that evicts the key whose state means\n"
	       "                      least, so a flood of new sources cannot push out a\n"
	       "                      held one; lru, an LRU hash that evicts the least\n"
	       "                      recently used key; fixed once pinned: an upgrade\n"
	       "                      keeps the pinned state's, a change needs --fresh\n"
	       "  --max-keys N        size of the key table (default %u); fixed once pinned;\n"
	       "                      sets: N keys per family (IPv4 and IPv6 each: 32 and\n"
	       "                      48 bytes a key); lru: N in all (112 bytes a key)\n"
	       "  --max-log-keys N    size of the sliding-log table (default %u), an LRU hash\n"
	       "                      with either --table\n"
	       "  --max-rules N       most rules (default %u, 136 bytes each); fixed once pinned\n"
	       "  --max-flows N       turn on wide keys (policies keyed by source and port,\n"
	       "                      or by flow: sluicectl's key option; off by default) in\n"
	       "                      a table of N: sets of 80 bytes a key, or with\n"
	       "                      --table lru an LRU hash; fixed once\n"
	       "                      pinned (an attach with it turns them on in place)\n"
	       "  --fleet-keys N      active keys of fleet policies a sync can push (default\n"
	       "                      %u); fixed once pinned, see sluice run --redis\n"
	       "  --new-keys RATE     admit at most RATE new sources; past it, new sources\n"
	       "                      share their /24 (/48) bucket; 'off' to stop\n"
	       "  --fail-closed       drop packets whose key the table refuses (rare: a full\n"
	       "                      table evicts instead; see sluice(8))\n"
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
	       "the current one (but a --rate without --burst gets one second's worth).\n"
	       "A state kept by 'sluice detach --keep-state', or one that sluice runs with\n"
	       "(an upgrade), is resumed and the summary says so; it prints the policy\n"
	       "with both values of every limit, and the key table per family.\n"
	       "Pins live in %s/IFACE/ (initial network namespace) or\n"
	       "%s/netns:INODE/IFACE/ (any other). See sluice(8).\n",
	       SLUICE_DEFAULT_MAX_KEYS, SLUICE_DEFAULT_MAX_LOG_KEYS, SLUICE_DEFAULT_MAX_RULES,
	       SLUICE_DEFAULT_FLEET_KEYS, SLUICE_PIN_ROOT, SLUICE_PIN_ROOT);
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
static void scratch_handle(struct attach_ctx *c, struct sluice_handle *h, struct sluice_config *cfg,
			   const char *ifname)
{
	const struct attach_opts *o = c->o;

	sluice_handle_init(h);
	snprintf(h->ifname, sizeof(h->ifname), "%s", ifname);
	snprintf(h->name, sizeof(h->name), "%s", o->name);
	h->cfg = cfg;
	h->shape = c->t->shape;
	if (c->t->scratch)
		c->t->scratch(c, cfg);
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
		ret = sluice_cmd_check_kind(o->set_argc, o->set_argv, c->t->shape, c->err,
					    sizeof(c->err));
		if (ret)
			return ret;
	}
	cfg.layout = SLUICE_LAYOUT_VERSION;
	sluice_settings_init(&cfg.settings[0]);
	if (c->pins_existed && !c->fresh_config && c->plan.kind != RESUME_DROP) {
		if (c->old_cfg.layout == SLUICE_LAYOUT_VERSION ||
		    c->old_cfg.layout == SLUICE_LAYOUT_ONE_SET ||
		    c->old_cfg.layout == SLUICE_LAYOUT_TWO_SETS) {
			ret = sluice_open(o->name, &live, c->err, sizeof(c->err));
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
			scratch_handle(c, &live, &cfg, o->ifname);
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
	scratch_handle(c, &h, &cfg, o->ifname);
	memset(&t, 0, sizeof(t));
	t.h = &h;
	t.set = cfg.settings[0];
	t.rules = pol.rules;
	t.nr_rules = pol.nr_rules;
	pol.rules = NULL;
	ret = edit_txn(&t, c, c->err, sizeof(c->err));
	if (!ret && c->t->size)
		ret = c->t->size(c, &t);
	sluice_txn_end(&t);
	sluice_free_policies(&pol);
	return ret;
}

/* The policies the datapath applies (sluice_policies) made the live
 * state's, whatever wrote it: an older sluice, whose state had no such map,
 * or a writer killed between its halves. */
static int sync_policies(struct sluice_handle *h, char *err, size_t errlen)
{
	struct sluice_txn t;
	int ret;

	if (!h->policies)
		return sluice_err(err, errlen, -EPROTO, "the state of %s has no %s", h->ifname,
				  SLUICE_MAP_POLICIES);
	ret = sluice_txn_begin(h, &t, err, errlen);
	if (ret)
		return ret;
	sluice_txn_put_policies(&t);
	sluice_txn_end(&t);
	return 0;
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

/* What --max-keys asked for, when the set table holds more: it is made of
 * whole groups of SLUICE_GROUP_WAYS keys a family. */
static void keys_rounding(const struct attach_ctx *c, const struct sluice_keys_view *v, char *buf,
			  size_t len)
{
	buf[0] = '\0';
	if (v->sets && c->o->max_keys && v->max_family[0] != c->o->max_keys)
		snprintf(buf, len,
			 "; --max-keys %llu is rounded up to %llu keys a family (whole "
			 "groups of %d)",
			 (unsigned long long)c->o->max_keys, (unsigned long long)v->max_family[0],
			 SLUICE_GROUP_WAYS);
}

static void print_summary(struct attach_ctx *c, struct sluice_handle *h, __u32 new_id,
			  const char *state)
{
	struct sluice_settings s;
	struct sluice_counters cnt;
	struct sluice_keys_view kv;
	char keys[256], round[128], kept[320];
	size_t i;

	sluice_read_settings(h, &s, NULL);
	if (sluice_read_counters(h, &cnt))
		memset(&cnt, 0, sizeof(cnt));
	sluice_keys_view(h, &cnt, &kv);
	c->t->summary(c, new_id);
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
		/* Why it was not plainly this interface's, when it was not (a
		 * kept state is plainly its own: --fresh just dropped it). */
		if (c->plan.why[0])
			snprintf(kept, sizeof(kept), "%s", c->plan.why);
		else if (c->have_old_cfg && c->old_cfg.owner.life == SLUICE_LIFE_KEPT)
			describe_kept(&c->old_cfg, kept, sizeof(kept));
		else
			snprintf(kept, sizeof(kept), "this interface's");
		printf("  fresh (--fresh): dropped the pinned state (%s); started empty\n", kept);
		break;
	case RESUME_NONE:
		break;
	}
	if (c->o->config)
		printf("  config: %s, %u rule%s added, %u removed, %u changed, %u unchanged\n",
		       c->o->config, c->diff.added, c->diff.added == 1 ? "" : "s", c->diff.removed,
		       c->diff.changed, c->diff.unchanged);
	print_policy_line(h);
	sluice_keys_text(&kv, keys, sizeof(keys));
	keys_rounding(c, &kv, round, sizeof(round));
	printf("  keys: %s%s\n", keys, round);
	printf("  pinned in %s\n", c->dir);
	for (i = 0; i < sluice_nr_maps; i++)
		if (c->pins_existed && c->adds_map[i])
			printf("  added: %s/%s, which the sluice that pinned this state did not "
			       "have\n",
			       c->dir, sluice_maps[i].name);
}

/* A sluice run owned the attachment: it is attach's now; msg says so. */
static void hand_over_run(struct attach_ctx *c, struct sluice_config *cfg, char *msg, size_t len)
{
	__u32 pid = cfg->run_pid;
	int holder;

	msg[0] = '\0';
	if (!pid || c->o->run_owned)
		return;
	holder = run_holder(c->o->ifindex);
	if (holder)
		snprintf(msg, len,
			 "  sluice run (pid %u) reports on %s: it now leaves it "
			 "attached when it exits\n",
			 pid, c->o->ifname);
	else
		snprintf(msg, len,
			 "  adopted the limiter that sluice run (pid %u) attached and "
			 "left behind when it was killed: it stays attached until 'sluice detach "
			 "%s'\n",
			 pid, c->o->ifname);
	__atomic_store_n(&cfg->run_pid, 0, __ATOMIC_RELEASE);
}

/* Test hooks: die (SIGKILL) or fail at a named step, so that tests can make
 * the states that a killed or failing attach leaves. Unset in production. */
static bool test_hook(const char *env, const char *step)
{
	const char *v = getenv(env);

	return v && !strcmp(v, step);
}

/* An edit's error is a usage error (-EINVAL, -ERANGE: a bad value), or not. */
static int edit_status(int ret)
{
	return ret == -EINVAL || ret == -ERANGE ? SLUICE_EXIT_USAGE : SLUICE_EXIT_RUNTIME;
}

/* The interface, or a usage error in c->err that says where it went. */
static int find_iface(struct attach_ctx *c)
{
	struct attach_opts *o = c->o;
	char where[600], to[SLUICE_STATE_NAME_MAX];
	/* to: a state's name, shape:IFACE for a shaper */
	const char *b = to + strlen(c->t->prefix);

	o->ifindex = if_nametoindex(o->ifname);
	if (o->ifindex)
		return 0;
	if (sluice_renamed_to(o->name, to, sizeof(to)))
		refuse(c, -ENODEV,
		       "there is no interface '%s': it was renamed to %s, and its "
		       "state moved with it ('sluice %sstatus %s')",
		       o->ifname, b, c->t->verb, b);
	else if (sluice_netns_elsewhere(o->ifname, sluice_cmdline(), where, sizeof(where)))
		refuse(c, -ENODEV,
		       "there is no interface '%s' in this network namespace; the "
		       "sluice limiter of a %s lives in %s",
		       o->ifname, o->ifname, where);
	else
		refuse(c, -ENODEV, "there is no interface '%s' (see 'ip link')", o->ifname);
	return -ENODEV;
}

/* Step 1: look, touch nothing (probe: the object, kept for the caller to
 * destroy). Returns an exit status. */
static int look(struct attach_ctx *c, struct sluice_bpf **probe)
{
	struct attach_opts *o = c->o;
	int ret;

	*probe = attach_open_skel(c);
	if (!*probe)
		return SLUICE_EXIT_RUNTIME;
	ret = attach_inspect_pins(c, *probe);
	if (!ret)
		ret = c->t->inspect(c);
	if (!ret)
		ret = plan_resume(o->ifname, o->ifindex, c->have_old_cfg ? &c->old_cfg : NULL,
				  c->prog_id != 0, o->resume, o->fresh, &c->plan, c->err,
				  sizeof(c->err));
	if (!ret)
		ret = attach_check_table(c);
	if (ret)
		return SLUICE_EXIT_RUNTIME;
	ret = validate_edits(c);
	return ret ? edit_status(ret) : SLUICE_EXIT_OK;
}

/* The program of step 3, or the failure a test injects. */
static int attach_or_fail(struct attach_ctx *c, __u32 *new_id)
{
	if (test_hook("SLUICE_TEST_FAIL_AT", "program"))
		return refuse(c, -EIO,
			      "Couldn't attach sluice to %s: failure injected by "
			      "SLUICE_TEST_FAIL_AT=program",
			      c->o->ifname);
	return attach_program(c, new_id);
}

/* The program runs with this state: it is the interface's now. */
static void take_state(struct attach_ctx *c, struct sluice_handle *h, char *run_msg, size_t len)
{
	h->cfg->layout = SLUICE_LAYOUT_VERSION;
	if (c->t->record)
		c->t->record(c, h->cfg);
	owner_set(h->cfg, c->o->ifindex, SLUICE_LIFE_ATTACHED);
	hand_over_run(c, h->cfg, run_msg, len);
	if (c->o->run_owned)
		__atomic_store_n(&h->cfg->run_pid, (__u32)getpid(), __ATOMIC_RELEASE);
}

int sluice_attach(const struct attach_target *t, struct attach_opts *o)
{
	struct attach_ctx c = { .o = o, .t = t };
	struct sluice_handle h = { .cfg = NULL };
	struct sluice_bpf *probe = NULL;
	bool maps_made = false, prog_tried = false, existing;
	char resumed[160] = "", run_msg[256] = "";
	__u32 new_id = 0;
	int lock_fd = -1, ret, status = SLUICE_EXIT_RUNTIME;

	sluice_handle_init(&h);
	c.priv = calloc(1, t->priv_size);
	if (!c.priv) {
		refuse(&c, -ENOMEM, "Couldn't attach to %s: %s", o->ifname, strerror(ENOMEM));
		goto out;
	}
	attach_size_keys(&c, o->table != ATTACH_TABLE_LRU);
	c.max_log_keys = o->max_log_keys ? (__u32)o->max_log_keys : SLUICE_DEFAULT_MAX_LOG_KEYS;
	c.max_rules = o->max_rules ? (__u32)o->max_rules : SLUICE_DEFAULT_MAX_RULES;
	c.fleet_keys = o->fleet_keys ? (__u32)o->fleet_keys : SLUICE_DEFAULT_FLEET_KEYS;

	ret = sluice_ensure_bpffs(c.err, sizeof(c.err));
	if (!ret)
		ret = sluice_pin_dir(o->name, c.dir, sizeof(c.dir), c.err, sizeof(c.err));
	if (ret)
		goto out;
	if (find_iface(&c)) {
		status = SLUICE_EXIT_USAGE;
		goto out;
	}
	lock_fd = lock_pin_root(c.err, sizeof(c.err));
	if (lock_fd < 0)
		goto out;

	status = look(&c, &probe);
	if (status != SLUICE_EXIT_OK)
		goto out;
	status = SLUICE_EXIT_RUNTIME;

	/* Step 2. */
	if (c.plan.kind == RESUME_DROP) {
		ret = remove_pins(c.dir, c.err, sizeof(c.err));
		if (ret)
			goto out;
		c.pins_existed = c.dir_existed = c.fresh_config = false;
	}
	existing = c.pins_existed && !c.fresh_config;
	ret = attach_create_maps(&c);
	maps_made = true;
	if (!ret)
		ret = sluice_open(o->name, &h, c.err, sizeof(c.err));
	if (!ret)
		ret = sync_policies(&h, c.err, sizeof(c.err));
	if (ret)
		goto undo;
	if (t->prepare)
		t->prepare(&c, &h);
	if (test_hook("SLUICE_TEST_KILL_AT", "maps"))
		raise(SIGKILL);

	/* Step 3. */
	if (!existing) {
		ret = apply_settings(&c, &h);
		if (ret) {
			status = edit_status(ret);
			goto undo;
		}
	}
	/* From here a new program may run with the maps: an existing state
	 * keeps even the ones this call added. */
	prog_tried = true;
	ret = attach_or_fail(&c, &new_id);
	if (ret)
		goto undo;
	take_state(&c, &h, run_msg, sizeof(run_msg));
	/* What was resumed, before the settings change it. */
	describe_state(&h, c.have_old_cfg ? &c.old_cfg : NULL, resumed, sizeof(resumed));
	if (existing) {
		ret = apply_settings(&c, &h);
		if (ret) {
			sluice_cli_err(0,
				       "sluice runs on %s, but its settings were not changed: "
				       "%s",
				       o->ifname, c.err);
			c.err[0] = '\0';
			status = edit_status(ret);
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
		attach_undo_pins(&c);
out:
	if (status != SLUICE_EXIT_OK)
		sluice_cli_err(0, "%s", c.err[0] ? c.err : "attach failed");
out_quiet:
	sluice_cmd_file_free(c.file);
	sluice_close(&h);
	if (probe)
		sluice_bpf__destroy(probe);
	unlock_pin_root(lock_fd);
	free(c.priv);
	return status;
}

int do_attach(int argc, char **argv)
{
	struct attach_opts o;
	int ret;

	ret = parse_attach_opts(OPTS_ATTACH, argc, argv, &o, NULL);
	if (ret < 0) {
		attach_help();
		return SLUICE_EXIT_OK;
	}
	if (ret)
		return ret;
	return sluice_attach(&xdp_target, &o);
}

void print_policy_line(struct sluice_handle *h)
{
	struct sluice_settings s;
	struct sluice_also al;
	char line[480], set[96];

	sluice_read_settings(h, &s, NULL);
	sluice_policy_text(&s.def, sluice_also_of(h, &s.def, &al), 0, h->shape, line, sizeof(line));
	sluice_settings_text(&s, set, sizeof(set));
	printf("  policy: %s\n  settings: %s, %u rule%s\n", line, set, sluice_rules_count(h, &s),
	       sluice_rules_count(h, &s) == 1 ? "" : "s");
}
