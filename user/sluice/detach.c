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
#include "pinlock.h"
#include "target.h"

void detach_usage(FILE *f)
{
	fprintf(f, "  sluice detach IFACE [--keep-state]\n"
		   "      detach sluice from IFACE and remove its pinned state, unless\n"
		   "      --keep-state: then a later attach resumes every bucket and rule\n");
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

	sluice_cli_err(0,
		       "interface %s was renamed to %s: its %s is %s's now, and its state moved "
		       "with it; nothing was detached: 'sluice %sdetach %s' detaches it",
		       ifname, to, t->kind, to, t->verb, to);
}

/* One detach: the state, its interface, what was found and removed. */
struct detach {
	const struct attach_target *t;
	const char *name; /* the state's: IFACE or shape:IFACE */
	char ifname[IF_NAMESIZE];
	char dir[256];
	unsigned int ifindex; /* 0: the interface is gone */
	bool has_state; /* a config is pinned in dir, read into cfg */
	bool ours; /* it is this interface's (ifindex) */
	struct sluice_config cfg;
	int n; /* programs detached */
	bool keep_state;
};

/* Neither an interface nor a state of the name: where it went. */
static void say_no_iface(const struct detach *d)
{
	char other[SLUICE_STATE_NAME_MAX], where[600];

	if (sluice_renamed_to(d->name, other, sizeof(other)))
		say_renamed(d->ifname, other, d->t);
	else if (sluice_netns_elsewhere(d->ifname, sluice_cmdline(), where, sizeof(where)))
		sluice_cli_err(0,
			       "there is no interface '%s' in this network namespace, so "
			       "nothing was detached; the sluice limiter of a %s lives in %s",
			       d->ifname, d->ifname, where);
	else
		sluice_cli_err(0,
			       "there is no interface '%s' (see 'ip link'), and no sluice state "
			       "for it",
			       d->ifname);
}

/* --keep-state, but nothing of this interface's runs: why not. */
static void say_nothing_to_keep(const struct detach *d)
{
	const char *ifname = d->ifname, *dir = d->dir, *v = d->t->verb;

	if (d->has_state && !d->ours)
		sluice_cli_err(0,
			       "nothing to keep for %s: the state pinned in %s is not this %s's "
			       "(ifindex %u); 'sluice %sdetach %s' removes it",
			       ifname, dir, ifname, d->cfg.owner.ifindex, v, ifname);
	else if (d->has_state && d->cfg.owner.life == SLUICE_LIFE_ATTACHING)
		sluice_cli_err(0,
			       "sluice is not attached to %s: its state in %s was left by an "
			       "attach that did not finish ('sluice %sattach %s --resume' adopts "
			       "it, '--fresh' drops it, 'sluice %sdetach %s' removes it)",
			       ifname, dir, v, ifname, v, ifname);
	else if (d->has_state)
		sluice_cli_err(0,
			       "sluice is not attached to %s (its state is kept in %s: 'sluice "
			       "%sattach %s' resumes it, 'sluice %sdetach %s' removes it)",
			       ifname, dir, v, ifname, v, ifname);
	else if (d->n)
		sluice_cli_err(0,
			       "sluice was attached to %s without pinned state: detached it, "
			       "with no state to keep",
			       ifname);
	else
		sluice_cli_err(0, d->t->none, ifname);
}

/* The program's pin, and the state unless kept: 0, or -errno with err. */
static int remove_state(struct detach *d, char *err, size_t errlen)
{
	char path[512];
	int ret;

	/* A detached program's pin would only keep it in memory. */
	snprintf(path, sizeof(path), "%s/%s", d->dir, SLUICE_PROG_PIN);
	if (unlink(path) && errno != ENOENT)
		pr_warn("warning: Couldn't remove %s: %s\n", path, strerror(errno));
	if (d->keep_state)
		ret = mark_kept(d->t, d->name, d->ifindex, &d->cfg, err, errlen);
	else
		ret = d->has_state ? remove_pins(d->dir, err, errlen) : 0;
	if (!ret && !d->keep_state)
		sluice_rename_forget(d->name);
	return ret;
}

static void say_detached(const struct detach *d)
{
	const char *ifname = d->ifname, *v = d->t->verb;

	if (!d->n && !d->ifindex)
		printf("%s is gone (it was ifindex %u); removed the state it left in %s\n", ifname,
		       d->cfg.owner.ifindex, d->dir);
	else if (!d->n && !d->ours)
		printf("the state pinned for %s belonged to an earlier %s (ifindex %u; this one "
		       "is %u); removed it\n",
		       ifname, ifname, d->cfg.owner.ifindex, d->ifindex);
	else if (!d->n)
		printf("sluice was not attached to %s; removed its pinned state\n", ifname);
	else if (d->keep_state)
		printf("sluice %sdetached from %s; its state is kept in %s: 'sluice %sattach %s' "
		       "resumes every bucket\n",
		       v, ifname, d->dir, v, ifname);
	else
		printf("sluice %sdetached from %s; its pinned state is removed\n", v, ifname);
	if (d->t->detached && d->ifindex)
		printf(d->t->detached, ifname);
}

int sluice_detach(const char *name, bool keep_state, bool quiet)
{
	struct detach d = { .name = name, .keep_state = keep_state };
	char err[SLUICE_ERR_LEN] = "", other[SLUICE_STATE_NAME_MAX];
	struct sluice_netns ns;
	bool shape;
	int lock_fd, ret, status = SLUICE_EXIT_RUNTIME;

	ret = sluice_state_name(name, d.ifname, &shape, err, sizeof(err));
	if (ret)
		return sluice_cli_err(-EINVAL, "%s", err);
	d.t = target_of(shape);
	ret = sluice_ensure_bpffs(err, sizeof(err));
	if (!ret)
		ret = sluice_netns_self(&ns, err, sizeof(err));
	if (!ret)
		ret = sluice_pin_dir(name, d.dir, sizeof(d.dir), err, sizeof(err));
	if (ret) {
		sluice_cli_err(0, "%s", err);
		return SLUICE_EXIT_RUNTIME;
	}
	lock_fd = lock_pin_root(err, sizeof(err));
	if (lock_fd < 0) {
		sluice_cli_err(0, "%s", err);
		return SLUICE_EXIT_RUNTIME;
	}
	/* A state belongs to its ifindex: follow a rename of the interface
	 * first (rename.c), so that detach B finds what was pinned under A, and
	 * detach A does not remove the state of the interface now called B. */
	ret = sluice_follow_rename(name, other, sizeof(other), err, sizeof(err));
	if (ret < 0) {
		sluice_cli_err(0, "%s", err);
		goto out;
	}
	if (ret == SLUICE_RENAMED_TO) {
		say_renamed(d.ifname, other, d.t);
		status = SLUICE_EXIT_USAGE;
		goto out;
	}
	d.has_state = sluice_pinned_config(d.dir, &d.cfg);
	d.ifindex = if_nametoindex(d.ifname);
	if (!d.ifindex && !d.has_state) {
		say_no_iface(&d);
		status = SLUICE_EXIT_USAGE;
		goto out;
	}
	/* Layout 3 did not record an owner: it is the interface's of the name. */
	if (d.has_state)
		d.ours = d.ifindex && (d.cfg.layout < SLUICE_LAYOUT_OWNER ||
				       (d.cfg.owner.ifindex == d.ifindex &&
					sluice_netns_same(&ns, &d.cfg.owner)));
	if (d.ifindex) {
		d.n = d.t->detach(d.ifname, d.ifindex, d.dir, err, sizeof(err));
		if (d.n < 0) {
			sluice_cli_err(0, "%s", err);
			goto out;
		}
	}
	if (keep_state && (!d.n || !d.ours)) {
		say_nothing_to_keep(&d);
		goto out;
	}
	if (!d.n && !d.has_state) {
		sluice_cli_err(0, d.t->none, d.ifname);
		goto out;
	}

	/* What the target made around its program (the shaper's fq and
	 * clsact), whether its program ran or not (a removed filter stamps no
	 * packet for it any more). */
	if (d.t->restore && d.ifindex &&
	    d.t->restore(d.ifname, d.ifindex, &d.cfg, d.has_state && d.ours, err, sizeof(err))) {
		sluice_cli_err(0, "%s", err);
		goto out;
	}
	if (remove_state(&d, err, sizeof(err))) {
		sluice_cli_err(0, "%s", err);
		goto out;
	}
	status = SLUICE_EXIT_OK;
	/* The claim of a run that was killed (SIGKILL) stays behind, unheld:
	 * nothing of the interface's is left to report on. */
	if (!keep_state && d.t->run_claims)
		run_drop_stale(d.ifindex ? d.ifindex : d.has_state ? d.cfg.owner.ifindex : 0);
	if (!quiet)
		say_detached(&d);
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
			return sluice_cli_usage(cmd, "unknown option '%s' for 'sluice %s'",
						argv[optind - 1], cmd);
		}
	}
	if (optind >= argc)
		return sluice_cli_usage(cmd, "missing IFACE: e.g. 'sluice %s eth0'", cmd);
	if (optind + 1 < argc)
		return sluice_cli_usage(cmd, "one interface at a time: '%s' is extra",
					argv[optind + 1]);
	if (sluice_is_help(argv[optind])) {
		help();
		return SLUICE_EXIT_OK;
	}
	/* shape:IFACE is a shaper's name: a command of the shaper takes IFACE. */
	if (!t->shape && refuse_shape_name(cmd, argv[optind]))
		return SLUICE_EXIT_USAGE;
	if (!valid_ifname(argv[optind]))
		return sluice_cli_usage(cmd, "'%s' is not an interface name", argv[optind]);
	snprintf(name, sizeof(name), "%s%s", t->prefix, argv[optind]);
	return sluice_detach(name, keep_state, false);
}
