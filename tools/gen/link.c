// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What sluice-gen needs to know about the sending device: its MAC and MTU
 * and, for a veth, the other end, which is where the frames land: its MAC,
 * its name, whether it is up and runs an XDP program, and in which
 * namespace; and MAC addresses as text.
 * The other end is usually in another network namespace; rtnetlink reads it
 * there by the namespace id the kernel reports with the link
 * (IFLA_LINK_NETNSID, then IFLA_TARGET_NETNSID), without entering it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_link.h>

#include "gen.h"

struct link_info {
	bool has_mac, has_link, has_netnsid;
	__u8 mac[6];
	unsigned int mtu;
	int link; /* IFLA_LINK: the peer's ifindex */
	int netnsid; /* IFLA_LINK_NETNSID: the peer's namespace, seen from ours */
	char name[IF_NAMESIZE];
	bool up;
	bool veth; /* IFLA_INFO_KIND "veth" */
	__u8 xdp_attached; /* XDP_ATTACHED_*: the mode of its XDP program(s) */
};

/* The nested attributes of interest: IFLA_XDP's mode, IFLA_LINKINFO's kind. */
static void get_nested(struct rtattr *nest, struct link_info *li)
{
	int len = RTA_PAYLOAD(nest);
	struct rtattr *rta;

	for (rta = RTA_DATA(nest); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (nest->rta_type == IFLA_XDP && rta->rta_type == IFLA_XDP_ATTACHED &&
		    RTA_PAYLOAD(rta) >= 1)
			li->xdp_attached = *(__u8 *)RTA_DATA(rta);
		if (nest->rta_type == IFLA_LINKINFO && rta->rta_type == IFLA_INFO_KIND)
			li->veth = RTA_PAYLOAD(rta) >= 5 && !strncmp(RTA_DATA(rta), "veth", 5);
	}
}

/* RTM_GETLINK of ifindex, in the namespace netnsid (or ours when < 0). */
static int get_link(int fd, int ifindex, int netnsid, struct link_info *li)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
		char attrs[64];
	} req;
	static __u8 buf[65536];
	struct nlmsghdr *nh;
	struct rtattr *rta;
	ssize_t n;
	int len;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	req.nh.nlmsg_type = RTM_GETLINK;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = ifindex;
	if (netnsid >= 0) {
		rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
		rta->rta_type = IFLA_TARGET_NETNSID;
		rta->rta_len = RTA_LENGTH(sizeof(__s32));
		memcpy(RTA_DATA(rta), &netnsid, sizeof(__s32));
		req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
	}
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0)
		return -errno;
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0)
		return -errno;
	for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
		if (nh->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = NLMSG_DATA(nh);

			return e->error ? e->error : -ENODATA;
		}
		if (nh->nlmsg_type != RTM_NEWLINK)
			continue;
		memset(li, 0, sizeof(*li));
		li->up = ((struct ifinfomsg *)NLMSG_DATA(nh))->ifi_flags & IFF_UP;
		len = nh->nlmsg_len - NLMSG_LENGTH(sizeof(struct ifinfomsg));
		rta = IFLA_RTA((struct ifinfomsg *)NLMSG_DATA(nh));
		for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
			switch (rta->rta_type) {
			case IFLA_IFNAME:
				snprintf(li->name, sizeof(li->name), "%.*s", (int)RTA_PAYLOAD(rta),
					 (char *)RTA_DATA(rta));
				break;
			case IFLA_XDP:
			case IFLA_LINKINFO:
				get_nested(rta, li);
				break;
			case IFLA_ADDRESS:
				if (RTA_PAYLOAD(rta) == 6) {
					memcpy(li->mac, RTA_DATA(rta), 6);
					li->has_mac = true;
				}
				break;
			case IFLA_MTU:
				memcpy(&li->mtu, RTA_DATA(rta), sizeof(li->mtu));
				break;
			case IFLA_LINK:
				memcpy(&li->link, RTA_DATA(rta), sizeof(li->link));
				li->has_link = true;
				break;
			case IFLA_LINK_NETNSID:
				memcpy(&li->netnsid, RTA_DATA(rta), sizeof(li->netnsid));
				li->has_netnsid = true;
				break;
			}
		}
		return 0;
	}
	return -ENODATA;
}

int gen_read_link(int ifindex, struct gen_link *l, char *err, size_t errlen)
{
	struct link_info li, peer;
	int fd, ret;

	memset(l, 0, sizeof(*l));
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "Couldn't open a netlink socket: %s", strerror(-ret));
		return ret;
	}
	ret = get_link(fd, ifindex, -1, &li);
	if (ret) {
		snprintf(err, errlen, "Couldn't read interface %d: %s", ifindex, strerror(-ret));
		goto out;
	}
	if (!li.has_mac) {
		ret = -EOPNOTSUPP;
		snprintf(err, errlen,
			 "interface %d has no Ethernet address: use an Ethernet or "
			 "veth device",
			 ifindex);
		goto out;
	}
	memcpy(l->mac, li.mac, 6);
	l->mtu = li.mtu;
	l->veth = li.veth;
	/* A veth reports its peer as IFLA_LINK; other devices have no such peer,
	 * and a failure to read it only means the caller must be told the MAC. */
	if (li.has_link && (li.has_netnsid || li.link != ifindex) &&
	    !get_link(fd, li.link, li.has_netnsid ? li.netnsid : -1, &peer) && peer.has_mac) {
		memcpy(l->peer_mac, peer.mac, 6);
		l->has_peer = true;
		l->peer_ifindex = li.link;
		l->peer_netnsid = li.has_netnsid ? li.netnsid : -1;
		memcpy(l->peer_name, peer.name, sizeof(l->peer_name));
		l->peer_up = peer.up;
		l->peer_xdp = peer.xdp_attached;
	}
out:
	close(fd);
	return ret;
}

int gen_parse_mac(const char *str, __u8 mac[6], char *err, size_t errlen)
{
	unsigned int b[6];
	char tail;
	int i;

	if (sscanf(str, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6)
		return sluice_err(err, errlen, -EINVAL,
				  "'%s' is not a MAC address: write it as aa:bb:cc:dd:ee:ff", str);
	for (i = 0; i < 6; i++)
		mac[i] = b[i];
	return 0;
}

void gen_format_mac(const __u8 mac[6], char *buf, size_t len)
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
		 mac[5]);
}
