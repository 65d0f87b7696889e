// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice detach IFACE [--keep-state]: remove the program, and its state; the
 * target (target.h: XDP, or the shaper's tc egress) removes its program and
 * undoes what it made around it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "cli.h"
#include "opts.h"
#include "owner.h"
#include "pins.h"
#include "target.h"

void detach_usage(FILE *f)
{
	fprintf(f,
		"  sluice detach IFACE [--keep-state]\n"
		"      detach sluice from IFACE and remove its pinned state, unless\n"
		"      --keep-state: then a later attach resumes every bucket and rule\n");
}

/* The owner recorded in dir's config; false when there is none to read. */
static bool read_owner(const char *dir, struct sluice_config *cfg)
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

/* Mark the state kept for ifindex: a later attach resumes it silently. The
 * target keeps what detach left around its program (cfg). */
static int mark_kept(const struct attach_target *t, const char *name, unsigned int ifindex,
		     const struct sluice_config *cfg, char *err, size_t errlen)
{
	struct sluice_handle h;
	int ret;

	ret = sluice_open(name, &h, err, errlen);
	if (ret)
		return ret;
	h.cfg->run_pid = 0;
	if (t->keep)
		t->keep(h.cfg, cfg);
	owner_set(h.cfg, ifindex, SLUICE_LIFE_KEPT);
	sluice_close(&h);
	return 0;
}

/* ifname's state went with its interface, now called `other` (a state's
 * name: shape:IFACE for a shaper). */
static void say_renamed(const char *ifname, const char *other, const struct attach_target *t)
{
	const char *to = other + strlen(t->prefix);

	p_err("interface %s was renamed to %s: its %s is %s's now, and its state moved with "
	      "it; nothing was detached: 'sluice %sdetach %s' detaches it", ifname, to,
	      t->kind, to, t->verb, to);
}

int sluice_detach(const char *name, bool keep_state, bool quiet)
{
	char err[SLUICE_ERR_LEN] = "", dir[256], path[512], where[600], ifname[IF_NAMESIZE];
	char other[SLUICE_STATE_NAME_MAX];
	struct sluice_config cfg;
	struct sluice_netns ns;
	unsigned int ifindex;
	const struct attach_target *t;
	bool has_state, ours = false, shape;
	const char *v; /* "shape " in a shaper's messages: "sluice shape attach" */
	int lock_fd, n = 0, ret, status = SLUICE_EXIT_RUNTIME;

	ret = sluice_state_name(name, ifname, &shape, err, sizeof(err));
	if (ret) {
		p_err("%s", err);
		return SLUICE_EXIT_USAGE;
	}
	t = target_of(shape);
	v = t->verb;
	ret = sluice_ensure_bpffs(err, sizeof(err));
	if (!ret)
		ret = sluice_netns_self(&ns, err, sizeof(err));
	if (!ret)
		ret = sluice_pin_dir(name, dir, sizeof(dir), err, sizeof(err));
	if (ret) {
		p_err("%s", err);
		return SLUICE_EXIT_RUNTIME;
	}
	lock_fd = lock_pin_root(err, sizeof(err));
	if (lock_fd < 0) {
		p_err("%s", err);
		return SLUICE_EXIT_RUNTIME;
	}
	/* A state belongs to its ifindex: follow a rename of the interface
	 * first (rename.c), so that detach B finds what was pinned under A, and
	 * detach A does not remove the state of the interface now called B. */
	ret = sluice_follow_rename(name, other, sizeof(other), err, sizeof(err));
	if (ret < 0) {
		p_err("%s", err);
		goto out;
	}
	if (ret == SLUICE_RENAMED_TO) {
		say_renamed(ifname, other, t);
		status = SLUICE_EXIT_USAGE;
		goto out;
	}
	has_state = read_owner(dir, &cfg);
	ifindex = if_nametoindex(ifname);
	if (!ifindex && !has_state) {
		if (sluice_renamed_to(name, other, sizeof(other)))
			say_renamed(ifname, other, t);
		else if (sluice_netns_elsewhere(ifname, sluice_cmdline(), where, sizeof(where)))
			p_err("there is no interface '%s' in this network namespace, so nothing "
			      "was detached; the sluice limiter of a %s lives in %s", ifname,
			      ifname, where);
		else
			p_err("there is no interface '%s' (see 'ip link'), and no sluice state for "
			      "it", ifname);
		status = SLUICE_EXIT_USAGE;
		goto out;
	}
	/* Layout 3 did not record an owner: it is the interface's of the name. */
	if (has_state)
		ours = ifindex && (cfg.layout < SLUICE_LAYOUT_OWNER ||
				   (cfg.owner.ifindex == ifindex && sluice_netns_same(&ns, &cfg.owner)));
	if (ifindex) {
		n = t->detach(ifname, ifindex, dir, err, sizeof(err));
		if (n < 0) {
			p_err("%s", err);
			goto out;
		}
	}
	if (keep_state && (!n || !ours)) {
		if (has_state && !ours)
			p_err("nothing to keep for %s: the state pinned in %s is not this %s's "
			      "(ifindex %u); 'sluice %sdetach %s' removes it", ifname, dir, ifname,
			      cfg.owner.ifindex, v, ifname);
		else if (has_state && cfg.owner.life == SLUICE_LIFE_ATTACHING)
			p_err("sluice is not attached to %s: its state in %s was left by an attach "
			      "that did not finish ('sluice %sattach %s --resume' adopts it, "
			      "'--fresh' drops it, 'sluice %sdetach %s' removes it)", ifname, dir,
			      v, ifname, v, ifname);
		else if (has_state)
			p_err("sluice is not attached to %s (its state is kept in %s: 'sluice "
			      "%sattach %s' resumes it, 'sluice %sdetach %s' removes it)",
			      ifname, dir, v, ifname, v, ifname);
		else if (n)
			p_err("sluice was attached to %s without pinned state: detached it, with "
			      "no state to keep", ifname);
		else
			p_err(t->none, ifname);
		goto out;
	}
	if (!n && !has_state) {
		p_err(t->none, ifname);
		goto out;
	}

	/* What the target made around its program (the shaper's fq and
	 * clsact), whether its program ran or not (a removed filter stamps no
	 * packet for it any more). */
	if (t->restore && ifindex &&
	    t->restore(ifname, ifindex, &cfg, has_state && ours, err, sizeof(err))) {
		p_err("%s", err);
		goto out;
	}

	/* A detached program's pin would only keep it in memory. */
	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_PROG_PIN);
	if (unlink(path) && errno != ENOENT)
		pr_warn("warning: Couldn't remove %s: %s\n", path, strerror(errno));
	if (keep_state)
		ret = mark_kept(t, name, ifindex, &cfg, err, sizeof(err));
	else
		ret = has_state ? remove_pins(dir, err, sizeof(err)) : 0;
	if (!ret && !keep_state)
		sluice_rename_forget(name);
	if (ret) {
		p_err("%s", err);
		goto out;
	}
	status = SLUICE_EXIT_OK;
	/* The claim of a run that was killed (SIGKILL) stays behind, unheld:
	 * nothing of the interface's is left to report on. */
	if (!keep_state && t->run_claims)
		run_drop_stale(ifindex ? ifindex : has_state ? cfg.owner.ifindex : 0);
	if (quiet)
		goto out;
	if (!n && !ifindex)
		printf("%s is gone (it was ifindex %u); removed the state it left in %s\n",
		       ifname, cfg.owner.ifindex, dir);
	else if (!n && !ours)
		printf("the state pinned for %s belonged to an earlier %s (ifindex %u; this one "
		       "is %u); removed it\n", ifname, ifname, cfg.owner.ifindex, ifindex);
	else if (!n)
		printf("sluice was not attached to %s; removed its pinned state\n", ifname);
	else if (keep_state)
		printf("sluice %sdetached from %s; its state is kept in %s: 'sluice %sattach %s' "
		       "resumes every bucket\n", v, ifname, dir, v, ifname);
	else
		printf("sluice %sdetached from %s; its pinned state is removed\n", v, ifname);
	if (t->detached && ifindex)
		printf(t->detached, ifname);
out:
	unlock_pin_root(lock_fd);
	return status;
}

static void detach_help(void)
{
	printf("Usage:\n");
	detach_usage(stdout);
	printf("\nWithout --keep-state every pin of IFACE (in %s/IFACE/, or\n"
	       "%s/netns:INODE/IFACE/ outside the initial network namespace) is removed.\n"
	       "If the program or the interface is gone already, detach removes the state\n"
	       "left behind. Only this network namespace's interfaces are detached.\n",
	       SLUICE_PIN_ROOT, SLUICE_PIN_ROOT);
}

int do_detach(int argc, char **argv)
{
	return detach_cmd("detach", &xdp_target, detach_help, argc, argv);
}

int detach_cmd(const char *cmd, const struct attach_target *t, void (*help)(void), int argc,
	       char **argv)
{
	char name[SLUICE_STATE_NAME_MAX];
	static const struct option longopts[] = {
		{ "keep-state", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	bool keep_state = false;
	int c;

	if (argc >= 2 && sluice_is_help(argv[1])) {
		help();
		return SLUICE_EXIT_OK;
	}
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hv", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			set_verbose();
			break;
		case 'k':
			keep_state = true;
			break;
		case 'h':
			help();
			return SLUICE_EXIT_OK;
		default:
			return usage_err(cmd, "unknown option '%s' for 'sluice %s'",
					 argv[optind - 1], cmd);
		}
	}
	if (optind >= argc)
		return usage_err(cmd, "missing IFACE: e.g. 'sluice %s eth0'", cmd);
	if (optind + 1 < argc)
		return usage_err(cmd, "one interface at a time: '%s' is extra",
				 argv[optind + 1]);
	if (sluice_is_help(argv[optind])) {
		help();
		return SLUICE_EXIT_OK;
	}
	/* shape:IFACE is a shaper's name: a command of the shaper takes IFACE. */
	if (!t->shape && refuse_shape_name(cmd, argv[optind]))
		return SLUICE_EXIT_USAGE;
	if (!valid_ifname(argv[optind]))
		return usage_err(cmd, "'%s' is not an interface name", argv[optind]);
	snprintf(name, sizeof(name), "%s%s", t->prefix, argv[optind]);
	return sluice_detach(name, keep_state, false);
}
