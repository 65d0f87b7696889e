// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-gen's second way out: a packet socket, for kernels that refuse
 * BPF_F_TEST_XDP_LIVE_FRAMES (a sandbox's kernel may answer EPERM to every
 * live-frames run, whatever the caller's capabilities).
 *
 * The frames are the same: the template sluice-gen built, each copy given a
 * new source by the XDP program's own code and knobs (gen_set_source(),
 * gen_shared.h), its checksums patched incrementally (RFC 1624) from what
 * the copy held before. They
 * leave through the veth's ndo_start_xmit instead of its ndo_xdp_xmit, and
 * reach a peer that runs XDP in native mode through that same XDP hook (the
 * veth hands its NAPI the skb, which the program sees as an XDP frame); a
 * peer without XDP gets them in its stack. Slower (a syscall per batch of
 * GEN_SOCK_BATCH, an skb a frame), but every test needs far less than it
 * gives; the bench says which way it sent.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>

#include "gen.h"
#include "gen_shared.h"

bool gen_live_refused(int err)
{
	/* A too-short probe is refused with EINVAL by a kernel that takes
	 * live frames: anything else says it would not send them. */
	return err != -EINVAL;
}

/* xorshift64*: a thread's own random numbers, no lock. */
static __u64 next_rand(struct gen_sock *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545F4914F6CDD1DULL;
}

static __u64 draw_host(struct gen_sock *s, const struct gen_knobs *k)
{
	if (k->nkeys)
		return (next_rand(s) >> 32) % k->nkeys;
	return next_rand(s);
}

void gen_sock_rewrite(struct gen_sock *s, const struct gen_knobs *k, __u8 *f)
{
	if (k->family)
		gen_set_source(k, f, f + s->len, draw_host(s, k));
}

int gen_sock_open(struct gen_sock *s, int ifindex, const __u8 *frame, unsigned int len)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = 0, /* send only: receive nothing */
		.sll_ifindex = ifindex,
	};
	int one = 1, i;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->len = len;
	if (getrandom(&s->rng, sizeof(s->rng), 0) != sizeof(s->rng))
		s->rng = (__u64)time(NULL) ^ (__u64)(unsigned long)s;
	s->rng |= 1;
	s->frames = malloc((size_t)GEN_SOCK_BATCH * len);
	if (!s->frames)
		return -ENOMEM;
	for (i = 0; i < GEN_SOCK_BATCH; i++) {
		memcpy(s->frames + (size_t)i * len, frame, len);
		s->iov[i].iov_base = s->frames + (size_t)i * len;
		s->iov[i].iov_len = len;
		s->msgs[i].msg_hdr.msg_iov = &s->iov[i];
		s->msgs[i].msg_hdr.msg_iovlen = 1;
	}
	s->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		int err = -errno;

		free(s->frames);
		s->frames = NULL;
		return err;
	}
	/* Straight to the driver: a veth has no queue to wait in anyway. */
	setsockopt(s->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	if (bind(s->fd, (struct sockaddr *)&sll, sizeof(sll))) {
		int err = -errno;

		gen_sock_close(s);
		return err;
	}
	return 0;
}

int gen_sock_send(struct gen_sock *s, const struct gen_knobs *k, __u64 n)
{
	while (n) {
		unsigned int b = n < GEN_SOCK_BATCH ? (unsigned int)n : GEN_SOCK_BATCH, i;
		int ret;

		for (i = 0; i < b; i++)
			gen_sock_rewrite(s, k, s->frames + (size_t)i * s->len);
		for (i = 0; i < b;) {
			ret = sendmmsg(s->fd, s->msgs + i, b - i, 0);
			if (ret < 0) {
				if (errno == EINTR)
					continue;
				if (errno == ENOBUFS || errno == EAGAIN) {
					/* The device's queue is full: let it drain. */
					struct timespec ts = { .tv_nsec = 50000 };

					nanosleep(&ts, NULL);
					continue;
				}
				return -errno;
			}
			i += (unsigned int)ret;
		}
		n -= b;
	}
	return 0;
}

void gen_sock_close(struct gen_sock *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->frames);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

int gen_link_tx_dropped(const char *dev, __u64 *dropped)
{
	struct ifaddrs *ifa, *i;
	int ret = -ENODEV;

	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		const struct rtnl_link_stats *st = i->ifa_data;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_PACKET || !st ||
		    strcmp(i->ifa_name, dev))
			continue;
		*dropped = st->tx_dropped;
		ret = 0;
		break;
	}
	freeifaddrs(ifa);
	return ret;
}
