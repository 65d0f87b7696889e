// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice shape attach|detach|status IFACE: the shaper. A tc egress program
 * (sluice_tc, of the same object as the XDP limiter) gives each accepted
 * packet its departure time, and an fq qdisc, which sluice installs as the
 * interface's root, sends it then. Its state is a limiter's map set pinned
 * as shape:IFACE, made and resumed by the limiter's attach (attach.c), which
 * calls the steps here where a shaper differs: what is on the egress side,
 * the fq's size, and the program's attachment (clsact + cls_bpf, the same on
 * 6.1, which has no tcx, and on later kernels).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach.h"
#include "loader.h"

/* fq's own defaults, the least sluice gives it. */
#define FQ_DEFAULT_PLIMIT 10000
#define FQ_DEFAULT_FLOW_PLIMIT 100
/* The horizon: the longest queue of the policies x 5/4, at least 1 s. */
#define HORIZON_MIN_NS SLUICE_NS_PER_SEC
/* A byte burst in packets: as many as the smallest frames it could be. */
#define MIN_PKT_BYTES 64

void shape_usage(FILE *f)
{
	fprintf(f,
		"  sluice shape attach IFACE [--rate RATE [--burst N] [--delay N | --nodelay]]...\n"
		"               [--algo ALGO] [--window DUR] [--prefix4 LEN] [--prefix6 LEN]\n"
		"               [--key src|dst] [--table lru|sets] [--max-keys N]\n"
		"               [--max-log-keys N] [--max-rules N] [--new-keys RATE|off]\n"
		"               [--fail-closed|--fail-open] [--horizon DUR] [--queue-limit N]\n"
		"               [--config FILE] [--resume|--fresh]\n"
		"  sluice shape detach IFACE [--keep-state]\n"
		"  sluice shape status [-j] [IFACE]\n"
		"      shape what IFACE sends (tc egress and an fq qdisc): each key's packets\n"
		"      leave at its rate, a burst queued, beyond the queue dropped\n");
}

static void shape_help(void)
{
	printf("Usage:\n");
	shape_usage(stdout);
	printf("\n"
	       "  --rate RATE         the rate per key: 100/s 6000/m, or bytes: 10mbit 500kbps\n"
	       "  --burst N           the queue per key: N packets (bytes: 1514, 64k) beyond\n"
	       "                      the first wait for their turn; beyond the queue,\n"
	       "                      dropped; without it one second's worth of the rate\n"
	       "  --delay N           of a burst, the first N excess go at once, the rest wait\n"
	       "  --nodelay           every accepted packet goes at once (a meter, no queue)\n"
	       "  --algo ALGO         token-bucket (default) or leaky-bucket shape; the window\n"
	       "                      algorithms (with --window) only meter: drop, never delay\n"
	       "  --prefix4/--prefix6 LEN  keys share a bucket per /LEN (default 32, 64)\n"
	       "  --key src|dst       key by source (default: the client, on a gateway's\n"
	       "                      interface toward a backend) or by destination\n"
	       "  --table lru|sets    the key table: an LRU hash (default) or the\n"
	       "                      set-associative table, as 'sluice attach'\n"
	       "  --max-keys N        size of the key table (default %u); fixed once pinned;\n"
	       "                      with --table sets N keys per family\n"
	       "  --max-rules N       most rules (default %u); fixed once pinned\n"
	       "  --horizon DUR       fq's horizon: no packet waits this long (default: the\n"
	       "                      longest queue of the policies x 1.25, at least 1s)\n"
	       "  --queue-limit N     packets fq holds in all (default: 10000, or 4 x the\n"
	       "                      per-flow limit, the largest burst + 1, when larger)\n"
	       "  --config FILE, --resume, --fresh   as 'sluice attach'\n"
	       "\n"
	       "sluice makes its fq (handle 51ce:) the root qdisc of IFACE, replacing the\n"
	       "kernel's default one (noqueue, pfifo_fast, mq: one fq for every queue), and\n"
	       "hangs its program on clsact's egress hook (handle 0x%x, priority 0x%x).\n"
	       "Any other root qdisc is refused and left alone. The state is shape:IFACE:\n"
	       "'sluicectl -i shape:IFACE' tunes it. Detach deletes the fq (the kernel puts\n"
	       "its default back) and the clsact if sluice made it. See sluice(8).\n",
	       SLUICE_DEFAULT_MAX_KEYS, SLUICE_DEFAULT_MAX_RULES, SHAPE_TC_HANDLE, SHAPE_TC_PRIO);
}

static void hook_init(struct bpf_tc_hook *hook, unsigned int ifindex,
		      enum bpf_tc_attach_point where)
{
	memset(hook, 0, sizeof(*hook));
	hook->sz = sizeof(*hook);
	hook->ifindex = (int)ifindex;
	hook->attach_point = where;
}

static void tc_opts_init(struct bpf_tc_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->handle = SHAPE_TC_HANDLE;
	o->priority = SHAPE_TC_PRIO;
}

int shape_find(unsigned int ifindex, struct shape_hook *sh)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct bpf_tc_hook hook;
	struct bpf_tc_opts o;
	int fd, ret;

	memset(sh, 0, sizeof(*sh));
	hook_init(&hook, ifindex, BPF_TC_EGRESS);
	tc_opts_init(&o);
	ret = bpf_tc_query(&hook, &o);
	/* No clsact (EINVAL), or nothing at our handle and priority. */
	if (ret == -ENOENT || ret == -EINVAL)
		return 0;
	if (ret)
		return ret;
	fd = bpf_prog_get_fd_by_id(o.prog_id);
	if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
	    !strcmp(info.name, SHAPE_PROG_NAME)) {
		sh->prog_id = o.prog_id;
	} else {
		sh->other_id = o.prog_id;
		snprintf(sh->other_name, sizeof(sh->other_name), "%s", fd >= 0 ? info.name : "?");
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

int shape_inspect(struct attach_ctx *c)
{
	struct attach_opts *o = c->o;
	int ret;

	ret = sluice_qdisc_root(o->ifindex, &c->root, &c->had_clsact, c->err, sizeof(c->err));
	if (ret)
		return ret;
	if (!sluice_qdisc_is_default(&c->root) && !sluice_qdisc_is_ours(&c->root))
		return refuse(c, -EBUSY,
			      "the root qdisc of %s is %s %x:, not the kernel's default nor "
			      "sluice's fq: the shaper needs its own fq as the root and will not "
			      "replace one someone installed. Remove it ('tc qdisc del dev %s "
			      "root', the kernel puts its default back), then attach again; or "
			      "shape on another interface (e.g. the other side of a veth)",
			      o->ifname, c->root.kind, c->root.handle >> 16, o->ifname);
	ret = shape_find(o->ifindex, &c->sh);
	if (ret)
		return refuse(c, ret, "Couldn't query the tc filters of %s: %s", o->ifname,
			      strerror(-ret));
	if (c->sh.other_id)
		return refuse(c, -EBUSY,
			      "the tc egress filter at sluice's handle 0x%x and priority 0x%x "
			      "of %s runs '%s' (program %u), not sluice's: remove it ('tc filter "
			      "del dev %s egress pref %u handle 0x%x bpf'), then attach again",
			      SHAPE_TC_HANDLE, SHAPE_TC_PRIO, o->ifname, c->sh.other_name,
			      c->sh.other_id, o->ifname, SHAPE_TC_PRIO, SHAPE_TC_HANDLE);
	/* c->a.prog_id says "a program of ours runs" to the resume plan. */
	memset(&c->a, 0, sizeof(c->a));
	c->a.prog_id = c->sh.prog_id;
	c->kind = c->sh.prog_id ? ATTACH_UPGRADE_LEGACY : ATTACH_FRESH;
	if (c->sh.prog_id && !c->pins_existed)
		pr_warn("warning: sluice shapes %s but its pinned state is gone: the upgrade "
			"starts with empty key tables and the default policy\n", o->ifname);
	return 0;
}

static void size_policy(struct attach_ctx *c, const struct sluice_policy *p)
{
	__u64 q, b;

	if (p->action != SLUICE_ACT_LIMIT || sluice_algo_is_window(p->algo))
		return; /* exempt, deny and the meters queue nothing */
	q = p->pkt.tolerance > p->bytes.tolerance ? p->pkt.tolerance : p->bytes.tolerance;
	q >>= SLUICE_TICK_SHIFT;
	if (q > c->longest_queue_ns)
		c->longest_queue_ns = q;
	b = p->pkt.interval ? p->pkt.burst : 0;
	if (p->bytes.interval && p->bytes.burst / MIN_PKT_BYTES > b)
		b = p->bytes.burst / MIN_PKT_BYTES;
	if (b > c->largest_burst)
		c->largest_burst = (__u32)(b > 0xfffffffeU ? 0xfffffffeU : b);
}

int shape_size(struct attach_ctx *c, const struct sluice_settings *set,
	       const struct sluice_txn_rule *rules, size_t nr_rules)
{
	const struct attach_opts *o = c->o;
	__u64 h, flow, limit;
	size_t i;

	c->longest_queue_ns = 0;
	c->largest_burst = 0;
	size_policy(c, &set->def);
	for (i = 0; i < nr_rules; i++)
		size_policy(c, &rules[i].rule.policy);
	h = o->horizon_ns;
	if (!h) {
		h = c->longest_queue_ns + c->longest_queue_ns / 4;
		if (h < HORIZON_MIN_NS)
			h = HORIZON_MIN_NS;
	}
	h = (h + 999) / 1000;
	c->fq.horizon_us = h > 0xffffffffULL ? 0xffffffffU : (__u32)h;
	/* One key's burst can be one fq flow (one socket, or one hash). */
	flow = (__u64)c->largest_burst + 1;
	if (flow < FQ_DEFAULT_FLOW_PLIMIT)
		flow = FQ_DEFAULT_FLOW_PLIMIT;
	limit = o->queue_limit;
	if (limit && limit < (__u64)c->largest_burst + 1)
		return refuse(c, -EINVAL,
			      "--queue-limit %llu is below the largest burst + 1 (%llu packets): "
			      "fq would drop a key's queued burst; give at least %llu",
			      (unsigned long long)limit,
			      (unsigned long long)c->largest_burst + 1,
			      (unsigned long long)c->largest_burst + 1);
	if (!limit)
		limit = 4 * flow > FQ_DEFAULT_PLIMIT ? 4 * flow : FQ_DEFAULT_PLIMIT;
	if (flow > limit)
		flow = limit;
	c->fq.plimit = limit > 0xffffffffULL ? 0xffffffffU : (__u32)limit;
	c->fq.flow_plimit = (__u32)flow;
	return 0;
}

/* Undo what this attach made on the egress side. */
static void undo_egress(struct attach_ctx *c)
{
	struct bpf_tc_hook hook;
	char err[SLUICE_ERR_LEN];

	if (c->made_clsact) {
		hook_init(&hook, c->o->ifindex, BPF_TC_INGRESS | BPF_TC_EGRESS);
		bpf_tc_hook_destroy(&hook);
		c->made_clsact = false;
	}
	if (c->made_fq) {
		if (sluice_qdisc_del_root(c->o->ifindex, SLUICE_FQ_HANDLE, err, sizeof(err)))
			pr_warn("warning: %s\n", err);
		c->made_fq = false;
	}
}

int shape_attach_program(struct attach_ctx *c, struct sluice_bpf *skel, __u32 *new_id)
{
	const struct attach_opts *o = c->o;
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct bpf_program *prog;
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;
	char err[SLUICE_ERR_LEN];
	int fd, ret;

	ret = sluice_bpf__load(skel);
	if (ret) {
		ret = -errno;
		return refuse(c, ret, "Couldn't load the shaper's program: %s (run with -v to see "
			      "the verifier's log)", strerror(-ret));
	}
	prog = bpf_object__find_program_by_name(skel->obj, SHAPE_PROG_NAME);
	fd = prog ? bpf_program__fd(prog) : -1;
	if (fd < 0)
		return refuse(c, -ENOENT, "Couldn't find the program %s", SHAPE_PROG_NAME);
	if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
		*new_id = info.id;

	/* The qdisc first: a packet stamped before fq is there would go at
	 * once (nothing else reads the stamp), never wait too long. */
	ret = sluice_fq_install(o->ifindex, &c->fq, err, sizeof(err));
	if (ret)
		return refuse(c, ret, "Couldn't shape %s: %s", o->ifname, err);
	c->made_fq = !sluice_qdisc_is_ours(&c->root);

	hook_init(&hook, o->ifindex, BPF_TC_EGRESS);
	ret = bpf_tc_hook_create(&hook);
	if (ret && ret != -EEXIST) {
		refuse(c, ret, "Couldn't add the clsact qdisc to %s: %s", o->ifname,
		       strerror(-ret));
		goto undo;
	}
	c->made_clsact = ret == 0;
	tc_opts_init(&opts);
	opts.prog_fd = fd;
	/* An upgrade swaps the program of the filter in one step. */
	opts.flags = c->sh.prog_id ? BPF_TC_F_REPLACE : 0;
	ret = bpf_tc_attach(&hook, &opts);
	if (ret) {
		refuse(c, ret, "Couldn't attach the shaper's program to the egress of %s: %s "
		       "(run with -v to see why)", o->ifname, strerror(-ret));
		goto undo;
	}
	ret = attach_pin_prog(c, fd);
	if (ret && !c->sh.prog_id) {
		tc_opts_init(&opts);
		bpf_tc_detach(&hook, &opts);
		goto undo;
	}
	if (ret) {
		/* An upgrade: the new program runs; only its pin is missing. */
		pr_warn("warning: %s\n", c->err);
		ret = 0;
	}
	return 0;
undo:
	if (!c->sh.prog_id)
		undo_egress(c);
	return ret;
}

void shape_record(struct attach_ctx *c, struct sluice_config *cfg)
{
	cfg->shape_qdisc = SLUICE_FQ_HANDLE;
	if (c->made_clsact)
		cfg->shape_flags |= SLUICE_SHAPE_MADE_CLSACT;
}

/* Is ifname up in the caller's namespace? -1 when it cannot be told. */
static int iface_up(const char *ifname)
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret;

	if (fd < 0)
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ret = ioctl(fd, SIOCGIFFLAGS, &ifr) ? -1 : !!(ifr.ifr_flags & IFF_UP);
	close(fd);
	return ret;
}

void shape_print_summary(struct attach_ctx *c, __u32 new_id)
{
	const struct attach_opts *o = c->o;
	char horizon[32], queue[32];

	if (c->kind == ATTACH_FRESH)
		printf("sluice shaping %s at tc egress: program %u, filter handle 0x%x priority "
		       "0x%x on %s clsact\n", o->ifname, new_id, SHAPE_TC_HANDLE, SHAPE_TC_PRIO,
		       c->made_clsact ? "a new" : "the existing");
	else
		printf("sluice shaper upgraded on %s: program %u replaced by %u in one step\n",
		       o->ifname, c->sh.prog_id, new_id);
	shape_fmt_ns((__u64)c->fq.horizon_us * 1000ULL, horizon, sizeof(horizon));
	shape_fmt_ns(c->longest_queue_ns, queue, sizeof(queue));
	if (sluice_qdisc_is_ours(&c->root))
		printf("  qdisc: fq 51ce: root (kept, options set)");
	else
		printf("  qdisc: fq 51ce: root, replacing the default %s", c->root.present ?
		       c->root.kind : "none");
	printf(", limit %u, flow_limit %u, horizon %s (drop beyond; longest queue %s)\n",
	       c->fq.plimit, c->fq.flow_plimit, horizon, queue);
	printf("  key: the %s address\n",
	       (o->key_given ? o->key_kind :
			       c->have_old_cfg && (c->old_cfg.kind & SLUICE_KIND_KEY_DST)) ?
		       "destination" :
		       "source");
	/* Attaching to a down interface is not an error (it may come up
	 * later), but nothing leaves it meanwhile; an ifb that ingress
	 * traffic is redirected to drops all of it while it is down. */
	if (iface_up(o->ifname) == 0)
		pr_warn("sluice: warning: %s is down: nothing it sends leaves (and an ifb drops "
			"everything redirected to it) until 'ip link set %s up'\n", o->ifname,
			o->ifname);
}

/* ---- detach's side (detach.c calls these for shape:IFACE) ---- */

int shape_detach_filter(const char *ifname, unsigned int ifindex, const char *dir, char *err,
			size_t errlen)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), pinned = 0;
	struct bpf_tc_hook hook;
	struct bpf_tc_opts o;
	struct shape_hook sh;
	char path[512];
	int fd, ret;

	ret = shape_find(ifindex, &sh);
	if (ret)
		return sluice_err(err, errlen, ret, "Couldn't query the tc filters of %s: %s",
				  ifname, strerror(-ret));
	if (!sh.prog_id)
		return 0;
	/* Ours only: the program pinned with this state (without its pin, one
	 * named sluice_tc at sluice's handle and priority). */
	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_PROG_PIN);
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			pinned = info.id;
		close(fd);
	}
	if (pinned && pinned != sh.prog_id)
		return sluice_err(err, errlen, -EBUSY,
				  "the shaper's filter on %s runs program %u, not the program "
				  "pinned in %s (%u): left it in place; remove it with 'tc filter "
				  "del dev %s egress pref %u handle 0x%x bpf' if it is a stale "
				  "sluice's", ifname, sh.prog_id, dir, pinned, ifname,
				  SHAPE_TC_PRIO, SHAPE_TC_HANDLE);
	hook_init(&hook, ifindex, BPF_TC_EGRESS);
	tc_opts_init(&o);
	ret = bpf_tc_detach(&hook, &o);
	if (ret && ret != -ENOENT)
		return sluice_err(err, errlen, ret, "Couldn't detach program %u from the egress "
				  "of %s: %s", sh.prog_id, ifname, strerror(-ret));
	return 1;
}

int shape_restore_qdiscs(const char *ifname, unsigned int ifindex, struct sluice_config *cfg,
			 bool has_cfg, char *err, size_t errlen)
{
	struct bpf_tc_hook hook;
	struct sluice_qdisc q;
	bool clsact;
	int ret, n_in, n_eg;

	ret = sluice_qdisc_root(ifindex, &q, &clsact, err, errlen);
	if (ret)
		return ret;
	/* sluice's own fq, never another root. */
	if (sluice_qdisc_is_ours(&q)) {
		ret = sluice_qdisc_del_root(ifindex, SLUICE_FQ_HANDLE, err, errlen);
		if (ret)
			return ret;
	}
	if (has_cfg)
		cfg->shape_qdisc = 0;
	if (!clsact || !has_cfg || !(cfg->shape_flags & SLUICE_SHAPE_MADE_CLSACT))
		return 0;
	n_in = sluice_tc_count_filters(ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS));
	n_eg = sluice_tc_count_filters(ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS));
	if (n_in < 0 || n_eg < 0)
		return sluice_err(err, errlen, n_in < 0 ? n_in : n_eg,
				  "Couldn't list the tc filters of %s: %s", ifname,
				  strerror(-(n_in < 0 ? n_in : n_eg)));
	if (n_in || n_eg) {
		/* Someone hung filters on it since: it is theirs now too. */
		pr_info("kept the clsact qdisc of %s: it holds %d other filter%s\n", ifname,
			n_in + n_eg, n_in + n_eg == 1 ? "" : "s");
		cfg->shape_flags &= ~SLUICE_SHAPE_MADE_CLSACT;
		return 0;
	}
	hook_init(&hook, ifindex, BPF_TC_INGRESS | BPF_TC_EGRESS);
	ret = bpf_tc_hook_destroy(&hook);
	if (ret && ret != -ENOENT && ret != -EINVAL)
		return sluice_err(err, errlen, ret, "Couldn't remove the clsact qdisc of %s: %s",
				  ifname, strerror(-ret));
	cfg->shape_flags &= ~SLUICE_SHAPE_MADE_CLSACT;
	return 0;
}

/* ---- the command ---- */

static int shape_attach_cmd(int argc, char **argv)
{
	struct attach_opts o;
	int ret;

	ret = parse_attach_opts("shape attach", argc, argv, &o);
	if (ret < 0) {
		shape_help();
		return SLUICE_EXIT_OK;
	}
	if (ret)
		return ret;
	return sluice_attach(&o);
}

int do_shape(int argc, char **argv)
{
	if (argc < 2) {
		if (json_output)
			return usage_err("shape", "missing command: attach, detach or status");
		fprintf(stderr, "Usage:\n");
		shape_usage(stderr);
		return SLUICE_EXIT_USAGE;
	}
	if (sluice_is_help(argv[1])) {
		shape_help();
		return SLUICE_EXIT_OK;
	}
	if (!strcmp(argv[1], "attach"))
		return shape_attach_cmd(argc - 1, argv + 1);
	if (!strcmp(argv[1], "detach"))
		return detach_cmd("shape detach", true, argc - 1, argv + 1);
	if (!strcmp(argv[1], "status"))
		return status_cmd("shape status", true, argc - 1, argv + 1);
	return usage_err("shape", "unknown command 'shape %s': use shape attach, shape detach "
			 "or shape status", argv[1]);
}
