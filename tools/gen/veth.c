// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What became of the frames sluice-gen sent out of a veth.
 *
 * A test run's frames leave through the veth's ndo_xdp_xmit, which puts
 * them straight into the peer's receive ring. That ring exists only while
 * the peer runs NAPI: with an XDP program attached in native mode, or with
 * GRO or threaded NAPI on. Without it the veth refuses the whole batch and
 * the frames are freed, counted nowhere: BPF_PROG_TEST_RUN still returns 0
 * for every one of them. What the veth took, and what it refused because
 * the ring was full, it counts per queue in DEV's ethtool statistics
 * (tx_queue_N_xdp_xmit, tx_queue_N_xdp_xmit_errors: the peer's ring's
 * counters, readable from the sender's namespace): sent minus those two is
 * what was never taken.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>

#include "gen.h"

static int ethtool(int fd, const char *dev, void *data)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	ifr.ifr_data = data;
	return ioctl(fd, SIOCETHTOOL, &ifr) ? -errno : 0;
}

int gen_veth_read(const char *dev, struct gen_veth_counters *c)
{
	struct {
		struct ethtool_sset_info hdr;
		__u32 len;
	} sset = { .hdr = { .cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ULL << ETH_SS_STATS } };
	struct ethtool_gstrings *strs = NULL;
	struct ethtool_stats *stats = NULL;
	bool found = false;
	__u32 n, i;
	int fd, ret;

	memset(c, 0, sizeof(*c));
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = ethtool(fd, dev, &sset);
	if (ret)
		goto out;
	n = sset.hdr.sset_mask ? sset.len : 0;
	strs = calloc(1, sizeof(*strs) + (size_t)n * ETH_GSTRING_LEN);
	stats = calloc(1, sizeof(*stats) + (size_t)n * sizeof(__u64));
	if (!strs || !stats) {
		ret = -ENOMEM;
		goto out;
	}
	strs->cmd = ETHTOOL_GSTRINGS;
	strs->string_set = ETH_SS_STATS;
	strs->len = n;
	stats->cmd = ETHTOOL_GSTATS;
	stats->n_stats = n;
	ret = ethtool(fd, dev, strs);
	if (!ret)
		ret = ethtool(fd, dev, stats);
	if (ret)
		goto out;
	for (i = 0; i < n && i < strs->len && i < stats->n_stats; i++) {
		const char *s = (const char *)strs->data + (size_t)i * ETH_GSTRING_LEN;
		unsigned int q;
		int end = 0;

		if (sscanf(s, "tx_queue_%u_xdp_xmit%n", &q, &end) != 1 || !end)
			continue;
		if (!s[end]) {
			c->xmit += stats->data[i];
			found = true;
		} else if (!strcmp(s + end, "_errors")) {
			c->xmit_err += stats->data[i];
		}
	}
	ret = found ? 0 : -EOPNOTSUPP;
out:
	free(strs);
	free(stats);
	close(fd);
	return ret;
}

void gen_veth_delivery(const struct gen_veth_counters *before,
		       const struct gen_veth_counters *after, __u64 sent, struct gen_delivery *d)
{
	/* Another sender on DEV adds to the counters: what is ours is at most
	 * what we sent. */
	d->delivered = after->xmit - before->xmit;
	if (d->delivered > sent)
		d->delivered = sent;
	d->queue_full = after->xmit_err - before->xmit_err;
	if (d->queue_full > sent - d->delivered)
		d->queue_full = sent - d->delivered;
	d->not_taken = sent - d->delivered - d->queue_full;
}

bool gen_delivery_failed(const struct gen_delivery *d, __u64 sent)
{
	return sent && d->not_taken >= sent - sent / 100;
}

bool gen_peer_runs_napi(const struct gen_link *l)
{
	return l->has_peer && l->peer_up &&
	       (l->peer_xdp == XDP_ATTACHED_DRV || l->peer_xdp == XDP_ATTACHED_MULTI);
}

/* The id our namespace gives the namespace of fd (RTM_GETNSID), or -1. */
static int nsid_of(int nl, int fd)
{
	struct {
		struct nlmsghdr nh;
		struct rtgenmsg g;
		char attrs[16];
	} req;
	__u8 buf[4096];
	struct nlmsghdr *nh;
	struct rtattr *rta;
	ssize_t n;
	int len, id = -1;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtgenmsg));
	req.nh.nlmsg_type = RTM_GETNSID;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.g.rtgen_family = AF_UNSPEC;
	rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
	rta->rta_type = NETNSA_FD;
	rta->rta_len = RTA_LENGTH(sizeof(__u32));
	memcpy(RTA_DATA(rta), &fd, sizeof(__u32));
	req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
	if (send(nl, &req, req.nh.nlmsg_len, 0) < 0)
		return -1;
	n = recv(nl, buf, sizeof(buf), 0);
	for (nh = (struct nlmsghdr *)buf; n > 0 && NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
		if (nh->nlmsg_type != RTM_NEWNSID)
			continue;
		len = nh->nlmsg_len - NLMSG_LENGTH(sizeof(struct rtgenmsg));
		rta = (struct rtattr *)((char *)NLMSG_DATA(nh) +
					NLMSG_ALIGN(sizeof(struct rtgenmsg)));
		for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
			if (rta->rta_type == NETNSA_NSID)
				memcpy(&id, RTA_DATA(rta), sizeof(id));
	}
	return id;
}

/* The nsfs inode of the namespace our namespace calls netnsid, found among
 * the initial one and those 'ip netns' names; 0 when none is it. */
static __u64 find_netnsid(int netnsid, bool *initial)
{
	char path[300] = "/proc/1/ns/net";
	struct dirent *de = NULL;
	__u64 ino = 0;
	struct stat st;
	DIR *d = NULL;
	int nl, fd;

	*initial = false;
	nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl < 0)
		return 0;
	for (;;) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (nsid_of(nl, fd) == netnsid && !fstat(fd, &st)) {
				ino = st.st_ino;
				*initial = !d;
			}
			close(fd);
		}
		if (ino)
			break;
		if (!d)
			d = opendir("/var/run/netns");
		do
			de = d ? readdir(d) : NULL;
		while (de && de->d_name[0] == '.');
		if (!de)
			break;
		snprintf(path, sizeof(path), "/var/run/netns/%s", de->d_name);
	}
	if (d)
		closedir(d);
	close(nl);
	return ino;
}

void gen_peer_advice(const struct gen_link *l, char *buf, size_t len)
{
	char cmd[64], where[700], what[200];
	const char *fix = "sluice attach %s --mode native";
	bool initial;
	__u64 ino;

	if (!l->has_peer) {
		snprintf(buf, len, "the veth's peer cannot be read from this namespace");
		return;
	}
	if (!l->peer_up) {
		snprintf(what, sizeof(what),
			 "%s, the veth's peer, is down: a veth takes no frames "
			 "for a peer that is down",
			 l->peer_name);
		fix = "ip link set %s up";
	} else if (l->peer_xdp == XDP_ATTACHED_SKB) {
		snprintf(what, sizeof(what),
			 "%s, the veth's peer, runs its XDP program in generic "
			 "(skb) mode: a veth delivers XDP frames only to a peer that runs one in "
			 "native mode, or has GRO or threaded NAPI on",
			 l->peer_name);
	} else if (l->peer_xdp == XDP_ATTACHED_NONE) {
		snprintf(what, sizeof(what),
			 "%s, the veth's peer, has no XDP program: a veth "
			 "delivers XDP frames only to a peer that runs one in native mode, or has "
			 "GRO or threaded NAPI on",
			 l->peer_name);
	} else {
		snprintf(
			buf, len,
			"%s, the veth's peer, has an XDP program in native mode, yet "
			"the veth did not take the frames: see 'perf trace -e xdp:xdp_devmap_xmit'",
			l->peer_name);
		return;
	}
	snprintf(cmd, sizeof(cmd), fix, l->peer_name);
	if (l->peer_netnsid < 0) {
		snprintf(buf, len, "%s; fix: run '%s' (it is in this network namespace)", what,
			 cmd);
		return;
	}
	ino = find_netnsid(l->peer_netnsid, &initial);
	if (ino)
		sluice_netns_where(ino, initial, cmd, where, sizeof(where));
	else
		snprintf(where, sizeof(where),
			 "the network namespace with id %d here ('ip netns "
			 "list-id'): run '%s' there",
			 l->peer_netnsid, cmd);
	snprintf(buf, len, "%s; fix: it is in %s", what, where);
}
