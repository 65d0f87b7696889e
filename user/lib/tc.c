// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Qdiscs and tc filters over rtnetlink, for the shaper (`sluice shape`):
 * what the root qdisc of an interface is (with fq's options and counters),
 * installing sluice's fq as the root, deleting it, and counting the filters
 * on a hook. No `tc` command: one request at a time on a socket of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/gen_stats.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include "libsluice.h"

#define NL_BUF 32768

struct nl_req {
	struct nlmsghdr n;
	struct tcmsg t;
	char attrs[512];
};

static struct rtattr *nl_tail(struct nlmsghdr *n)
{
	return (struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));
}

static void nl_put(struct nlmsghdr *n, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a = nl_tail(n);

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(a->rta_len);
}

static void nl_put_u32(struct nlmsghdr *n, unsigned short type, __u32 v)
{
	nl_put(n, type, &v, sizeof(v));
}

static struct rtattr *nl_nest(struct nlmsghdr *n, unsigned short type)
{
	struct rtattr *a = nl_tail(n);

	nl_put(n, type, NULL, 0);
	return a;
}

static void nl_nest_end(struct nlmsghdr *n, struct rtattr *a)
{
	a->rta_len = (unsigned short)((char *)nl_tail(n) - (char *)a);
}

static int nl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

typedef int (*nl_msg_fn)(struct nlmsghdr *n, void *ctx);

/*
 * Send req and read the answer: each message of a dump to fn, or the ack.
 * Returns 0, the kernel's -errno (with its extended ack message in ext when
 * it gives one), or fn's non-zero return.
 */
static int nl_talk(struct nlmsghdr *req, nl_msg_fn fn, void *ctx, char *ext, size_t extlen)
{
	static __u32 seq;
	char *buf;
	int fd, ret = 0;
	bool done = false;
	int one = 1;

	if (ext && extlen)
		ext[0] = '\0';
	fd = nl_open();
	if (fd < 0)
		return fd;
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	req->nlmsg_seq = ++seq;
	if (send(fd, req, req->nlmsg_len, 0) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	buf = malloc(NL_BUF);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (!done) {
		ssize_t len = recv(fd, buf, NL_BUF, 0);
		struct nlmsghdr *n;

		if (len < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		for (n = (struct nlmsghdr *)buf; NLMSG_OK(n, (unsigned int)len);
		     n = NLMSG_NEXT(n, len)) {
			if (n->nlmsg_seq != req->nlmsg_seq)
				continue;
			if (n->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (n->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(n);

				ret = e->error;
				done = true;
				/* The extended ack's message, after the request. */
				if (ret && ext && (n->nlmsg_flags & NLM_F_ACK_TLVS)) {
					size_t off = sizeof(*e) +
						     ((n->nlmsg_flags & NLM_F_CAPPED) ?
							      0 :
							      e->msg.nlmsg_len - sizeof(e->msg));
					struct rtattr *a =
						(struct rtattr *)((char *)e + NLMSG_ALIGN(off));
					int alen = (int)n->nlmsg_len - (int)NLMSG_HDRLEN -
						   (int)NLMSG_ALIGN(off);

					for (; alen > 0 && RTA_OK(a, alen); a = RTA_NEXT(a, alen))
						if (a->rta_type == NLMSGERR_ATTR_MSG)
							snprintf(ext, extlen, "%s",
								 (char *)RTA_DATA(a));
				}
				break;
			}
			if (fn) {
				ret = fn(n, ctx);
				if (ret) {
					/* Drain nothing more: the socket goes. */
					done = true;
					break;
				}
			}
		}
		if (!(req->nlmsg_flags & NLM_F_DUMP) && !(req->nlmsg_flags & NLM_F_ACK))
			break;
	}
	free(buf);
	close(fd);
	return ret;
}

static void req_init(struct nl_req *r, __u16 type, __u16 flags, unsigned int ifindex)
{
	memset(r, 0, sizeof(*r));
	r->n.nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg));
	r->n.nlmsg_type = type;
	r->n.nlmsg_flags = NLM_F_REQUEST | flags;
	r->t.tcm_family = AF_UNSPEC;
	r->t.tcm_ifindex = (int)ifindex;
}

static void parse_attrs(struct rtattr *tb[], int max, struct rtattr *a, int len)
{
	memset(tb, 0, sizeof(*tb) * (max + 1));
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type <= max)
			tb[a->rta_type] = a;
}

static __u32 attr_u32(const struct rtattr *a)
{
	__u32 v = 0;

	if (a && RTA_PAYLOAD(a) >= sizeof(v))
		memcpy(&v, RTA_DATA(a), sizeof(v));
	return v;
}

static void parse_fq(struct sluice_qdisc *q, struct rtattr *opts, struct rtattr *stats2)
{
	struct rtattr *tb[TCA_FQ_MAX + 1], *st[TCA_STATS_MAX + 1];

	if (opts) {
		parse_attrs(tb, TCA_FQ_MAX, RTA_DATA(opts), (int)RTA_PAYLOAD(opts));
		q->plimit = attr_u32(tb[TCA_FQ_PLIMIT]);
		q->flow_plimit = attr_u32(tb[TCA_FQ_FLOW_PLIMIT]);
		q->horizon_us = attr_u32(tb[TCA_FQ_HORIZON]);
		q->has_horizon = tb[TCA_FQ_HORIZON] != NULL;
		q->horizon_drop = tb[TCA_FQ_HORIZON_DROP] &&
				  *(__u8 *)RTA_DATA(tb[TCA_FQ_HORIZON_DROP]);
	}
	if (stats2) {
		parse_attrs(st, TCA_STATS_MAX, RTA_DATA(stats2), (int)RTA_PAYLOAD(stats2));
		if (st[TCA_STATS_APP]) {
			size_t n = RTA_PAYLOAD(st[TCA_STATS_APP]);

			/* An older kernel's struct is a prefix of this one. */
			memcpy(&q->fq, RTA_DATA(st[TCA_STATS_APP]),
			       n < sizeof(q->fq) ? n : sizeof(q->fq));
			q->has_fq_stats = true;
		}
	}
}

struct qdisc_ctx {
	unsigned int ifindex;
	struct sluice_qdisc *root;
	bool *clsact;
};

static int qdisc_msg(struct nlmsghdr *n, void *ctx)
{
	struct qdisc_ctx *c = ctx;
	struct tcmsg *t = NLMSG_DATA(n);
	struct rtattr *tb[TCA_MAX + 1], *st[TCA_STATS_MAX + 1];
	struct sluice_qdisc *q = c->root;
	const char *kind;

	if (n->nlmsg_type != RTM_NEWQDISC || (unsigned int)t->tcm_ifindex != c->ifindex)
		return 0;
	parse_attrs(tb, TCA_MAX, TCA_RTA(t), (int)TCA_PAYLOAD(n));
	kind = tb[TCA_KIND] ? RTA_DATA(tb[TCA_KIND]) : "";
	if (t->tcm_parent == TC_H_CLSACT && !strcmp(kind, "clsact")) {
		if (c->clsact)
			*c->clsact = true;
		return 0;
	}
	if (t->tcm_parent != TC_H_ROOT)
		return 0;
	memset(q, 0, sizeof(*q));
	q->present = true;
	snprintf(q->kind, sizeof(q->kind), "%s", kind);
	q->handle = t->tcm_handle;
	if (tb[TCA_STATS2]) {
		parse_attrs(st, TCA_STATS_MAX, RTA_DATA(tb[TCA_STATS2]),
			    (int)RTA_PAYLOAD(tb[TCA_STATS2]));
		if (st[TCA_STATS_QUEUE] &&
		    RTA_PAYLOAD(st[TCA_STATS_QUEUE]) >= sizeof(struct gnet_stats_queue)) {
			struct gnet_stats_queue qs;

			memcpy(&qs, RTA_DATA(st[TCA_STATS_QUEUE]), sizeof(qs));
			q->qlen = qs.qlen;
			q->drops = qs.drops;
		}
	}
	if (!strcmp(kind, "fq"))
		parse_fq(q, tb[TCA_OPTIONS], tb[TCA_STATS2]);
	return 0;
}

int sluice_qdisc_root(unsigned int ifindex, struct sluice_qdisc *q, bool *clsact, char *err,
		      size_t errlen)
{
	struct qdisc_ctx c = { .ifindex = ifindex, .root = q, .clsact = clsact };
	struct nl_req r;
	int ret;

	memset(q, 0, sizeof(*q));
	if (clsact)
		*clsact = false;
	req_init(&r, RTM_GETQDISC, NLM_F_DUMP, ifindex);
	ret = nl_talk(&r.n, qdisc_msg, &c, NULL, 0);
	if (ret)
		return sluice_err(err, errlen, ret, "Couldn't list the qdiscs of ifindex %u: %s",
				  ifindex, strerror(-ret));
	return 0;
}

bool sluice_qdisc_is_default(const struct sluice_qdisc *q)
{
	/* The kernel's own root (noqueue, pfifo_fast, mq, or what
	 * net.core.default_qdisc says) has handle 0; a qdisc that someone
	 * added has one of its own (given, or 8001: and on). */
	return !q->present || q->handle == 0;
}

bool sluice_qdisc_is_ours(const struct sluice_qdisc *q)
{
	return q->present && q->handle == SLUICE_FQ_HANDLE && !strcmp(q->kind, "fq");
}

int sluice_fq_install(unsigned int ifindex, const struct sluice_fq_params *p, char *err,
		      size_t errlen)
{
	char ext[256];
	struct rtattr *opts;
	struct nl_req r;
	__u8 one = 1;
	int ret;

	/* Create, or replace the root that is there (the kernel's default, or
	 * our own fq: then its options change in place, queue kept). */
	req_init(&r, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK, ifindex);
	r.t.tcm_parent = TC_H_ROOT;
	r.t.tcm_handle = SLUICE_FQ_HANDLE;
	nl_put(&r.n, TCA_KIND, "fq", 3);
	opts = nl_nest(&r.n, TCA_OPTIONS);
	nl_put_u32(&r.n, TCA_FQ_PLIMIT, p->plimit);
	nl_put_u32(&r.n, TCA_FQ_FLOW_PLIMIT, p->flow_plimit);
	nl_put_u32(&r.n, TCA_FQ_HORIZON, p->horizon_us);
	nl_put(&r.n, TCA_FQ_HORIZON_DROP, &one, sizeof(one));
	nl_nest_end(&r.n, opts);
	ret = nl_talk(&r.n, NULL, NULL, ext, sizeof(ext));
	if (ret == -ENOENT)
		return sluice_err(err, errlen, ret,
				  "this kernel has no fq qdisc (RTM_NEWQDISC of kind fq: %s): "
				  "the shaper needs it to send packets at their departure time; "
				  "build the kernel with CONFIG_NET_SCH_FQ or load its module "
				  "('modprobe sch_fq')",
				  strerror(-ret));
	if (ret)
		return sluice_err(err, errlen, ret,
				  "Couldn't install the fq qdisc (limit %u, "
				  "flow_limit %u, horizon %u us): %s%s%s",
				  p->plimit, p->flow_plimit, p->horizon_us, strerror(-ret),
				  ext[0] ? ": " : "", ext);
	return 0;
}

int sluice_qdisc_del_root(unsigned int ifindex, __u32 handle, char *err, size_t errlen)
{
	char ext[256];
	struct nl_req r;
	int ret;

	req_init(&r, RTM_DELQDISC, NLM_F_ACK, ifindex);
	r.t.tcm_parent = TC_H_ROOT;
	r.t.tcm_handle = handle;
	ret = nl_talk(&r.n, NULL, NULL, ext, sizeof(ext));
	if (ret)
		return sluice_err(err, errlen, ret,
				  "Couldn't delete the root qdisc %x: of "
				  "ifindex %u: %s%s%s",
				  handle >> 16, ifindex, strerror(-ret), ext[0] ? ": " : "", ext);
	return 0;
}

static int filter_msg(struct nlmsghdr *n, void *ctx)
{
	struct tcmsg *t = NLMSG_DATA(n);

	/* A dump gives each classifier instance, then its filters (handle != 0). */
	if (n->nlmsg_type == RTM_NEWTFILTER && t->tcm_handle)
		(*(int *)ctx)++;
	return 0;
}

int sluice_tc_count_filters(unsigned int ifindex, __u32 parent)
{
	struct nl_req r;
	int n = 0, ret;

	req_init(&r, RTM_GETTFILTER, NLM_F_DUMP, ifindex);
	r.t.tcm_parent = parent;
	ret = nl_talk(&r.n, filter_msg, &n, NULL, 0);
	return ret ? ret : n;
}
