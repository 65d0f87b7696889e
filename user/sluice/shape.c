// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The shaper's target (target.h): a tc egress program (sluice_tc, of the
 * same object as the XDP limiter) gives each accepted packet its departure
 * time, and an fq qdisc, which sluice installs as the interface's root,
 * sends it then. Its state is a limiter's map set pinned as shape:IFACE,
 * made and resumed by the same attach (attach.c), which calls the steps
 * here: what is on the egress side, the fq's size, and the program's
 * attachment (clsact + cls_bpf, the same on 6.1, which has no tcx, and on
 * later kernels); then detach's filter and qdiscs, and status's lines.
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
#include "shape.h"

/* fq's own defaults, the least sluice gives it. */
#define FQ_DEFAULT_PLIMIT 10000
#define FQ_DEFAULT_FLOW_PLIMIT 100
/* The horizon: the longest queue of the policies (their second keys' too)
 * x 5/4, at least 1 s. */
#define HORIZON_MIN_NS SLUICE_NS_PER_SEC
/* A byte burst in packets: as many as the smallest frames it could be. */
#define MIN_PKT_BYTES 64

/* The shaper's part of an attach (c->priv): its filter, the root qdisc
 * before this call, the fq it installs, and what this call made. */
struct shape_attach {
	struct shape_hook sh;
	struct sluice_qdisc root;
	bool had_clsact;
	struct sluice_fq_params fq;
	__u64 longest_queue_ns; /* of the policies: burst x interval */
	__u32 largest_burst; /* packets (a byte burst in 64-byte packets) */
	bool made_clsact, made_fq;
};

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

static int shape_inspect(struct attach_ctx *c)
{
	struct shape_attach *s = c->priv;
	struct attach_opts *o = c->o;
	int ret;

	ret = sluice_qdisc_root(o->ifindex, &s->root, &s->had_clsact, c->err, sizeof(c->err));
	if (ret)
		return ret;
	if (!sluice_qdisc_is_default(&s->root) && !sluice_qdisc_is_ours(&s->root))
		return refuse(c, -EBUSY,
			      "the root qdisc of %s is %s %x:, not the kernel's default nor "
			      "sluice's fq: the shaper needs its own fq as the root and will not "
			      "replace one someone installed. Remove it ('tc qdisc del dev %s "
			      "root', the kernel puts its default back), then attach again; or "
			      "shape on another interface (e.g. the other side of a veth)",
			      o->ifname, s->root.kind, s->root.handle >> 16, o->ifname);
	ret = shape_find(o->ifindex, &s->sh);
	if (ret)
		return refuse(c, ret, "Couldn't query the tc filters of %s: %s", o->ifname,
			      strerror(-ret));
	if (s->sh.other_id)
		return refuse(c, -EBUSY,
			      "the tc egress filter at sluice's handle 0x%x and priority 0x%x "
			      "of %s runs '%s' (program %u), not sluice's: remove it ('tc filter "
			      "del dev %s egress pref %u handle 0x%x bpf'), then attach again",
			      SHAPE_TC_HANDLE, SHAPE_TC_PRIO, o->ifname, s->sh.other_name,
			      s->sh.other_id, o->ifname, SHAPE_TC_PRIO, SHAPE_TC_HANDLE);
	c->prog_id = s->sh.prog_id;
	c->kind = s->sh.prog_id ? ATTACH_UPGRADE_LEGACY : ATTACH_FRESH;
	if (s->sh.prog_id && !c->pins_existed)
		pr_warn("warning: sluice shapes %s but its pinned state is gone: the upgrade "
			"starts with empty key tables and the default policy\n",
			o->ifname);
	return 0;
}

/* A policy's queues (and its second key's, al: NULL for none): the longest
 * wait, the largest burst. */
static void size_policy(struct shape_attach *s, const struct sluice_policy *p,
			const struct sluice_also *al)
{
	__u64 q, b;

	if (p->action != SLUICE_ACT_LIMIT || sluice_algo_is_window(p->algo))
		return; /* exempt, deny and the meters queue nothing */
	if (al) {
		/* the prefix's queue: a packet may wait its whole --also-burst */
		q = al->pkt.tolerance >> SLUICE_TICK_SHIFT;
		if (q > s->longest_queue_ns)
			s->longest_queue_ns = q;
		if (al->pkt.burst > s->largest_burst)
			s->largest_burst = al->pkt.burst;
	}
	q = p->pkt.tolerance > p->bytes.tolerance ? p->pkt.tolerance : p->bytes.tolerance;
	q >>= SLUICE_TICK_SHIFT;
	if (q > s->longest_queue_ns)
		s->longest_queue_ns = q;
	b = p->pkt.interval ? p->pkt.burst : 0;
	if (p->bytes.interval && p->bytes.burst / MIN_PKT_BYTES > b)
		b = p->bytes.burst / MIN_PKT_BYTES;
	if (b > s->largest_burst)
		s->largest_burst = (__u32)(b > 0xfffffffeU ? 0xfffffffeU : b);
}

static int shape_size(struct attach_ctx *c, struct sluice_txn *t)
{
	struct shape_attach *s = c->priv;
	const struct attach_opts *o = c->o;
	__u64 h, flow, limit;
	size_t i;

	s->longest_queue_ns = 0;
	s->largest_burst = 0;
	size_policy(s, &t->set.def, sluice_txn_also_of(t, &t->set.def));
	for (i = 0; i < t->nr_rules; i++)
		size_policy(s, &t->rules[i].rule.policy,
			    sluice_txn_also_of(t, &t->rules[i].rule.policy));
	h = o->shape.horizon_ns;
	if (!h) {
		h = s->longest_queue_ns + s->longest_queue_ns / 4;
		if (h < HORIZON_MIN_NS)
			h = HORIZON_MIN_NS;
	}
	h = (h + 999) / 1000;
	s->fq.horizon_us = h > 0xffffffffULL ? 0xffffffffU : (__u32)h;
	/* One key's burst can be one fq flow (one socket, or one hash). */
	flow = (__u64)s->largest_burst + 1;
	if (flow < FQ_DEFAULT_FLOW_PLIMIT)
		flow = FQ_DEFAULT_FLOW_PLIMIT;
	limit = o->shape.queue_limit;
	if (limit && limit < (__u64)s->largest_burst + 1)
		return refuse(c, -EINVAL,
			      "--queue-limit %llu is below the largest burst + 1 (%llu packets): "
			      "fq would drop a key's queued burst; give at least %llu",
			      (unsigned long long)limit, (unsigned long long)s->largest_burst + 1,
			      (unsigned long long)s->largest_burst + 1);
	if (!limit)
		limit = 4 * flow > FQ_DEFAULT_PLIMIT ? 4 * flow : FQ_DEFAULT_PLIMIT;
	if (flow > limit)
		flow = limit;
	s->fq.plimit = limit > 0xffffffffULL ? 0xffffffffU : (__u32)limit;
	s->fq.flow_plimit = (__u32)flow;
	return 0;
}

/* The edits are checked as a shaper's (--delay, --burst 0), against the
 * horizon asked for; one derived from the policies fits them by
 * construction. */
static void shape_scratch(struct attach_ctx *c, struct sluice_config *cfg)
{
	cfg->kind |= SLUICE_KIND_SHAPE;
	cfg->shape_horizon_us = (__u32)(c->o->shape.horizon_ns / 1000);
}

static __u32 shape_new_kind(const struct attach_ctx *c)
{
	return SLUICE_KIND_SHAPE | c->o->shape.key_kind;
}

/* Before any program reads it: what it keys by, and the horizon that no
 * delay may reach. */
static void shape_prepare(struct attach_ctx *c, struct sluice_handle *h)
{
	const struct shape_opts *o = &c->o->shape;
	struct shape_attach *s = c->priv;
	__u32 key = o->key_given ? o->key_kind : (h->cfg->kind & SLUICE_KIND_KEY_DST);

	h->cfg->kind = SLUICE_KIND_SHAPE | key |
		       (h->cfg->kind & (SLUICE_KIND_SETS | SLUICE_KIND_TABLE_ASKED));
	__atomic_store_n(&h->cfg->shape_horizon_us, s->fq.horizon_us, __ATOMIC_RELEASE);
}

/* Undo what this attach made on the egress side. */
static void undo_egress(struct attach_ctx *c)
{
	struct shape_attach *s = c->priv;
	struct bpf_tc_hook hook;
	char err[SLUICE_ERR_LEN];

	if (s->made_clsact) {
		hook_init(&hook, c->o->ifindex, BPF_TC_INGRESS | BPF_TC_EGRESS);
		bpf_tc_hook_destroy(&hook);
		s->made_clsact = false;
	}
	if (s->made_fq) {
		if (sluice_qdisc_del_root(c->o->ifindex, SLUICE_FQ_HANDLE, err, sizeof(err)))
			pr_warn("warning: %s\n", err);
		s->made_fq = false;
	}
}

static int shape_attach_prog(struct attach_ctx *c, struct sluice_bpf **skelp, __u32 *new_id)
{
	struct shape_attach *s = c->priv;
	const struct attach_opts *o = c->o;
	struct sluice_bpf *skel = *skelp;
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
		return refuse(c, ret,
			      "Couldn't load the shaper's program: %s (run with -v to see "
			      "the verifier's log)",
			      strerror(-ret));
	}
	prog = bpf_object__find_program_by_name(skel->obj, SHAPE_PROG_NAME);
	fd = prog ? bpf_program__fd(prog) : -1;
	if (fd < 0)
		return refuse(c, -ENOENT, "Couldn't find the program %s", SHAPE_PROG_NAME);
	if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
		*new_id = info.id;

	/* The qdisc first: a packet stamped before fq is there would go at
	 * once (nothing else reads the stamp), never wait too long. */
	ret = sluice_fq_install(o->ifindex, &s->fq, err, sizeof(err));
	if (ret)
		return refuse(c, ret, "Couldn't shape %s: %s", o->ifname, err);
	s->made_fq = !sluice_qdisc_is_ours(&s->root);

	hook_init(&hook, o->ifindex, BPF_TC_EGRESS);
	ret = bpf_tc_hook_create(&hook);
	if (ret && ret != -EEXIST) {
		refuse(c, ret, "Couldn't add the clsact qdisc to %s: %s", o->ifname,
		       strerror(-ret));
		goto undo;
	}
	s->made_clsact = ret == 0;
	tc_opts_init(&opts);
	opts.prog_fd = fd;
	/* An upgrade swaps the program of the filter in one step. */
	opts.flags = s->sh.prog_id ? BPF_TC_F_REPLACE : 0;
	ret = bpf_tc_attach(&hook, &opts);
	if (ret) {
		refuse(c, ret,
		       "Couldn't attach the shaper's program to the egress of %s: %s "
		       "(run with -v to see why)",
		       o->ifname, strerror(-ret));
		goto undo;
	}
	ret = attach_pin_prog(c, fd);
	if (ret && !s->sh.prog_id) {
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
	if (!s->sh.prog_id)
		undo_egress(c);
	return ret;
}

static void shape_record(struct attach_ctx *c, struct sluice_config *cfg)
{
	struct shape_attach *s = c->priv;
	cfg->shape_qdisc = SLUICE_FQ_HANDLE;
	if (s->made_clsact)
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

static void shape_summary(struct attach_ctx *c, __u32 new_id)
{
	struct shape_attach *s = c->priv;
	const struct attach_opts *o = c->o;
	char horizon[32], queue[32];

	if (c->kind == ATTACH_FRESH)
		printf("sluice shaping %s at tc egress: program %u, filter handle 0x%x priority "
		       "0x%x on %s clsact\n",
		       o->ifname, new_id, SHAPE_TC_HANDLE, SHAPE_TC_PRIO,
		       s->made_clsact ? "a new" : "the existing");
	else
		printf("sluice shaper upgraded on %s: program %u replaced by %u in one step\n",
		       o->ifname, s->sh.prog_id, new_id);
	shape_fmt_ns((__u64)s->fq.horizon_us * 1000ULL, horizon, sizeof(horizon));
	shape_fmt_ns(s->longest_queue_ns, queue, sizeof(queue));
	if (sluice_qdisc_is_ours(&s->root))
		printf("  qdisc: fq 51ce: root (kept, options set)");
	else
		printf("  qdisc: fq 51ce: root, replacing the default %s",
		       s->root.present ? s->root.kind : "none");
	printf(", limit %u, flow_limit %u, horizon %s (drop beyond; longest queue %s)\n",
	       s->fq.plimit, s->fq.flow_plimit, horizon, queue);
	printf("  key: the %s address\n",
	       (o->shape.key_given ? o->shape.key_kind :
				     c->have_old_cfg && (c->old_cfg.kind & SLUICE_KIND_KEY_DST)) ?
		       "destination" :
		       "source");
	/* Attaching to a down interface is not an error (it may come up
	 * later), but nothing leaves it meanwhile; an ifb that ingress
	 * traffic is redirected to drops all of it while it is down. */
	if (iface_up(o->ifname) == 0)
		pr_warn("sluice: warning: %s is down: nothing it sends leaves (and an ifb drops "
			"everything redirected to it) until 'ip link set %s up'\n",
			o->ifname, o->ifname);
}

/* ---- detach ---- */

/* Remove sluice's filter when its program is the one pinned in dir (1:
 * removed, 0: none there, or -errno). */
static int shape_detach(const char *ifname, unsigned int ifindex, const char *dir, char *err,
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
				  "sluice's",
				  ifname, sh.prog_id, dir, pinned, ifname, SHAPE_TC_PRIO,
				  SHAPE_TC_HANDLE);
	hook_init(&hook, ifindex, BPF_TC_EGRESS);
	tc_opts_init(&o);
	ret = bpf_tc_detach(&hook, &o);
	if (ret && ret != -ENOENT)
		return sluice_err(err, errlen, ret,
				  "Couldn't detach program %u from the egress "
				  "of %s: %s",
				  sh.prog_id, ifname, strerror(-ret));
	return 1;
}

/* Delete sluice's root fq (the kernel puts its default back) and the
 * clsact when cfg says sluice made it and no filter is left on it. */
static int shape_restore(const char *ifname, unsigned int ifindex, struct sluice_config *cfg,
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

/* --keep-state: what detach left of the qdiscs. */
static void shape_keep(struct sluice_config *live, const struct sluice_config *cfg)
{
	live->shape_qdisc = cfg->shape_qdisc;
	live->shape_flags = cfg->shape_flags;
}

/* ---- status ---- */

static int shape_find_prog(unsigned int ifindex, struct attachment *a)
{
	struct shape_hook sh;
	int ret = shape_find(ifindex, &sh);

	a->prog_id = sh.prog_id;
	return ret;
}

static const char *shape_mode(const struct attachment *a)
{
	(void)a;
	return "tc-egress";
}

static void shape_status_line(const char *name, unsigned int ifindex, const struct attachment *a,
			      const char *run)
{
	(void)run;
	printf("%s (ifindex %u): shaping at tc egress, program %u (filter handle 0x%x priority "
	       "0x%x)\n",
	       name, ifindex, a->prog_id, SHAPE_TC_HANDLE, SHAPE_TC_PRIO);
}

const struct attach_target shape_target = {
	.kind = "shaper",
	.verb = "shape ",
	.prefix = SLUICE_SHAPE_PREFIX,
	.shape = true,
	.prog_name = SHAPE_PROG_NAME,
	.no_prog = "this sluice's BPF object has no program " SHAPE_PROG_NAME ": it was built "
		   "without the shaper's datapath, so 'sluice shape' cannot run; build sluice "
		   "from a tree whose bpf/sluice.bpf.c has it",
	.priv_size = sizeof(struct shape_attach),
	.inspect = shape_inspect,
	.scratch = shape_scratch,
	.size = shape_size,
	.new_kind = shape_new_kind,
	.prepare = shape_prepare,
	.attach_prog = shape_attach_prog,
	.record = shape_record,
	.summary = shape_summary,
	.detach = shape_detach,
	.restore = shape_restore,
	.keep = shape_keep,
	.none = "no sluice shaper is attached to %s",
	.detached = "  qdisc: the kernel's default is the root of %s again\n",
	.find = shape_find_prog,
	.mode = shape_mode,
	.status_line = shape_status_line,
	.status_text = shape_status_text,
	.status_json = shape_status_json,
};
