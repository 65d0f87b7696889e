// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluice detach IFACE [--keep-state]: remove the program, and its state. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "loader.h"

void detach_usage(FILE *f)
{
	fprintf(f,
		"  sluice detach IFACE [--keep-state]\n"
		"      detach sluice from IFACE and remove its pinned state, unless\n"
		"      --keep-state: then a later attach resumes every bucket and rule\n");
}

/*
 * A program attached alone is removed with XDP_FLAGS_REPLACE against its own
 * fd, so that a program someone else attached meanwhile is never removed.
 */
static int detach_legacy(unsigned int ifindex, const struct attachment *a)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	int fd, ret;

	fd = bpf_prog_get_fd_by_id(a->prog_id);
	if (fd < 0)
		return -errno;
	opts.old_prog_fd = fd;
	ret = bpf_xdp_detach((int)ifindex,
			     XDP_FLAGS_REPLACE | (a->mode == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE :
									    XDP_FLAGS_DRV_MODE),
			     &opts);
	close(fd);
	return ret;
}

static int detach_component(unsigned int ifindex, const struct attachment *a)
{
	struct xdp_program *p;
	int fd, ret;

	/* Not xdp_program__from_id(): libxdp 1.3.1 keeps the fd it opens
	 * there. xdp_program__from_fd() works on a duplicate of ours. */
	fd = bpf_prog_get_fd_by_id(a->prog_id);
	if (fd < 0)
		return -errno;
	p = xdp_program__from_fd(fd);
	close(fd);
	ret = (int)libxdp_get_error(p);
	if (ret)
		return ret;
	ret = xdp_program__detach(p, (int)ifindex, a->mode, 0);
	xdp_program__close(p);
	return ret;
}

/* Detach every sluice program from ifindex (one, unless someone attached
 * more through the dispatcher). Returns how many, or -errno. */
static int detach_programs(const char *ifname, unsigned int ifindex, char *err, size_t errlen)
{
	struct attachment a;
	int n, ret;

	for (n = 0; n < 16; n++) {
		ret = find_attachment(ifindex, &a);
		if (ret) {
			snprintf(err, errlen, "Couldn't query the XDP programs of %s: %s", ifname,
				 strerror(-ret));
			return ret;
		}
		if (!a.prog_id)
			return n;
		ret = a.dispatcher ? detach_component(ifindex, &a) : detach_legacy(ifindex, &a);
		/* Gone meanwhile (ENOENT, EEXIST): look again. */
		if (ret && ret != -ENOENT && ret != -EEXIST) {
			snprintf(err, errlen, "Couldn't detach program %u from %s: %s", a.prog_id,
				 ifname, strerror(-ret));
			return ret;
		}
		pr_debug("detached program %u from %s\n", a.prog_id, ifname);
	}
	snprintf(err, errlen, "Couldn't detach sluice from %s: programs keep appearing", ifname);
	return -EAGAIN;
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

/* Mark the state kept for ifindex: a later attach resumes it silently. A
 * shaper's records what detach left of its qdiscs (cfg). */
static int mark_kept(const char *name, unsigned int ifindex, const struct sluice_config *cfg,
		     char *err, size_t errlen)
{
	struct sluice_handle h;
	int ret;

	ret = sluice_open(name, &h, err, errlen);
	if (ret)
		return ret;
	h.cfg->run_pid = 0;
	if (h.shape) {
		h.cfg->shape_qdisc = cfg->shape_qdisc;
		h.cfg->shape_flags = cfg->shape_flags;
	}
	owner_set(h.cfg, ifindex, SLUICE_LIFE_KEPT);
	sluice_close(&h);
	return 0;
}

/* ifname's state went with its interface, now called `other` (a state's
 * name: shape:IFACE for a shaper). */
static void say_renamed(const char *ifname, const char *other, bool shape)
{
	const char *to = other + (shape ? strlen(SLUICE_SHAPE_PREFIX) : 0);

	p_err("interface %s was renamed to %s: its %s is %s's now, and its state moved with "
	      "it; nothing was detached: 'sluice %sdetach %s' detaches it", ifname, to,
	      shape ? "shaper" : "limiter", to, shape ? "shape " : "", to);
}

int sluice_detach(const char *name, bool keep_state, bool quiet)
{
	char err[SLUICE_ERR_LEN] = "", dir[256], path[512], where[600], ifname[IF_NAMESIZE];
	char other[SLUICE_STATE_NAME_MAX];
	struct sluice_config cfg;
	struct sluice_netns ns;
	unsigned int ifindex;
	bool has_state, ours = false, shape;
	const char *v; /* "shape " in a shaper's messages: "sluice shape attach" */
	int lock_fd, n = 0, ret, status = SLUICE_EXIT_RUNTIME;

	ret = sluice_state_name(name, ifname, &shape, err, sizeof(err));
	if (ret) {
		p_err("%s", err);
		return SLUICE_EXIT_USAGE;
	}
	v = shape ? "shape " : "";
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
		say_renamed(ifname, other, shape);
		status = SLUICE_EXIT_USAGE;
		goto out;
	}
	has_state = read_owner(dir, &cfg);
	ifindex = if_nametoindex(ifname);
	if (!ifindex && !has_state) {
		if (sluice_renamed_to(name, other, sizeof(other)))
			say_renamed(ifname, other, shape);
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
		n = shape ? shape_detach_filter(ifname, ifindex, dir, err, sizeof(err)) :
			    detach_programs(ifname, ifindex, err, sizeof(err));
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
			p_err(shape ? "no sluice shaper is attached to %s" :
				      "sluice is not attached to %s", ifname);
		goto out;
	}
	if (!n && !has_state) {
		p_err(shape ? "no sluice shaper is attached to %s" : "sluice is not attached to %s",
		      ifname);
		goto out;
	}

	/* The shaper's fq and clsact, whether its program ran or not
	 * (a removed filter stamps no packet for it any more). */
	if (shape && ifindex &&
	    shape_restore_qdiscs(ifname, ifindex, &cfg, has_state && ours, err, sizeof(err))) {
		p_err("%s", err);
		goto out;
	}

	/* A detached program's pin would only keep it in memory. */
	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_PROG_PIN);
	if (unlink(path) && errno != ENOENT)
		pr_warn("warning: Couldn't remove %s: %s\n", path, strerror(errno));
	if (keep_state)
		ret = mark_kept(name, ifindex, &cfg, err, sizeof(err));
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
	if (!keep_state && !shape)
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
	if (shape && !quiet && ifindex)
		printf("  qdisc: the kernel's default is the root of %s again\n", ifname);
out:
	unlock_pin_root(lock_fd);
	return status;
}

static void detach_help(bool shape)
{
	printf("Usage:\n");
	if (shape) {
		printf("  sluice shape detach IFACE [--keep-state]\n"
		       "\nRemoves sluice's tc filter from the egress of IFACE (only if its\n"
		       "program is the one pinned with the state), deletes sluice's fq root qdisc\n"
		       "(the kernel puts its default back; never another root), and the clsact\n"
		       "qdisc if sluice made it and no filter is left on it. Without --keep-state\n"
		       "the pins in %s/shape:IFACE/ are removed too.\n", SLUICE_PIN_ROOT);
		return;
	}
	detach_usage(stdout);
	printf("\nWithout --keep-state every pin of IFACE (in %s/IFACE/, or\n"
	       "%s/netns:INODE/IFACE/ outside the initial network namespace) is removed.\n"
	       "If the program or the interface is gone already, detach removes the state\n"
	       "left behind. Only this network namespace's interfaces are detached.\n",
	       SLUICE_PIN_ROOT, SLUICE_PIN_ROOT);
}

int do_detach(int argc, char **argv)
{
	return detach_cmd("detach", false, argc, argv);
}

int detach_cmd(const char *cmd, bool shape, int argc, char **argv)
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
		detach_help(shape);
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
			detach_help(shape);
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
		detach_help(shape);
		return SLUICE_EXIT_OK;
	}
	if (!shape && refuse_shape_name(cmd, argv[optind]))
		return SLUICE_EXIT_USAGE;
	if (!valid_ifname(argv[optind]))
		return usage_err(cmd, "'%s' is not an interface name", argv[optind]);
	snprintf(name, sizeof(name), "%s%s", shape ? SLUICE_SHAPE_PREFIX : "", argv[optind]);
	return sluice_detach(name, keep_state, false);
}
