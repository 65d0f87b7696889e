/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* sluice-gen: what its files share. */
#ifndef SLUICE_GEN_H
#define SLUICE_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/types.h>

#include "libsluice.h"
#include "frame.h" /* the frame itself: struct sluice_frame, in libsluice */
#include "gen_shared.h" /* struct gen_knobs: each frame's source */

/* link.c */

/* "aa:bb:cc:dd:ee:ff" */
int gen_parse_mac(const char *str, __u8 mac[6], char *err, size_t errlen);
void gen_format_mac(const __u8 mac[6], char *buf, size_t len);

struct gen_link {
	__u8 mac[6];
	unsigned int mtu;
	bool veth; /* DEV is a veth */
	bool has_peer; /* the peer_ fields are its other end's */
	__u8 peer_mac[6];
	char peer_name[IF_NAMESIZE];
	int peer_ifindex;
	int peer_netnsid; /* its namespace's id as seen from ours; -1: ours */
	bool peer_up;
	__u8 peer_xdp; /* XDP_ATTACHED_NONE, _DRV (native), _SKB, _HW or _MULTI */
};
/* Read DEV's address and MTU and, for a veth, its peer's, even when the peer
 * lives in another network namespace (rtnetlink, IFLA_TARGET_NETNSID). */
int gen_read_link(int ifindex, struct gen_link *l, char *err, size_t errlen);

/* veth.c: what became of the frames sent out of a veth. */

/* The veth's own count of the XDP frames sent out of it, read from DEV's
 * ethtool statistics (they are the peer's receive queues' counters):
 * taken into the peer's queues, and refused because they were full. Frames
 * the veth did not take at all (the peer runs no NAPI) are counted nowhere. */
struct gen_veth_counters {
	__u64 xmit; /* tx_queue_N_xdp_xmit, summed */
	__u64 xmit_err; /* tx_queue_N_xdp_xmit_errors, summed */
};
/* -EOPNOTSUPP when DEV has no such counters (not a veth). */
int gen_veth_read(const char *dev, struct gen_veth_counters *c);

/* What the veth did with `sent` frames, from its counters before and after. */
struct gen_delivery {
	__u64 delivered; /* taken into the peer's queue: they reach its XDP hook */
	__u64 queue_full; /* refused: the peer's queue was full */
	__u64 not_taken; /* never taken: the peer runs no NAPI (or the redirect failed) */
};
void gen_veth_delivery(const struct gen_veth_counters *before,
		       const struct gen_veth_counters *after, __u64 sent, struct gen_delivery *d);
/* (Nearly) nothing taken: at least 99 % of what was sent. */
bool gen_delivery_failed(const struct gen_delivery *d, __u64 sent);

/* Does the peer run NAPI for sure (an XDP program in native mode, and up)?
 * If not, veth takes XDP frames only while the peer has GRO or threaded NAPI
 * on, which cannot be read from this namespace. */
bool gen_peer_runs_napi(const struct gen_link *l);
/* Why the peer may take no XDP frames, and the fix, as a sentence. */
void gen_peer_advice(const struct gen_link *l, char *buf, size_t len);

/* frames.c: TCP SYN frames (-p tcp), and --check. */

/* The smallest SYN frame of these headers: Ethernet, VLAN tags, IP, TCP. */
unsigned int gen_syn_min_len(const struct sluice_frame *f);
/* Write a SYN (no ACK, no options, no data) from f->src to f->dst, f->sport
 * to f->dport, valid checksums, into buf: f->len bytes, the Ethernet padding
 * zero. 0, or -EINVAL (err says why). */
int gen_build_syn(const struct sluice_frame *f, __u8 *buf, char *err, size_t errlen);
/* --check N: give N copies of frame their source through the XDP program
 * (test runs without live frames: nothing is sent) and through the packet
 * socket's sender; every copy must have valid checksums and a source in the
 * prefix. 0, or an -errno and the first fault in err. */
int gen_check(int prog_fd, int ifindex, const __u8 *frame, unsigned int len,
	      const struct gen_knobs *k, __u64 n, char *err, size_t errlen);

/* sock.c: a packet socket, where the kernel refuses live frames. */

#define GEN_SOCK_BATCH 64 /* frames a sendmmsg() */

struct gen_sock {
	int fd;
	unsigned int len;
	__u64 rng;
	__u8 *frames; /* GEN_SOCK_BATCH copies of the frame */
	struct iovec iov[GEN_SOCK_BATCH];
	struct mmsghdr msgs[GEN_SOCK_BATCH];
};

/* Does a live-frames probe's error (a too-short frame) say the kernel
 * refuses live frames? */
bool gen_live_refused(int err);
/* A packet socket bound to ifindex, with its batch of frames. */
int gen_sock_open(struct gen_sock *s, int ifindex, const __u8 *frame, unsigned int len);
/* Give frame f (a copy of the template) a new source as k says. */
void gen_sock_rewrite(struct gen_sock *s, const struct gen_knobs *k, __u8 *f);
/* Send n frames, each with a new source as k says; 0 when all went out. */
int gen_sock_send(struct gen_sock *s, const struct gen_knobs *k, __u64 n);
void gen_sock_close(struct gen_sock *s);
/* DEV's count of frames it dropped on the way out (a veth: its peer's
 * queue full, or the peer down), of this network namespace's DEV. */
int gen_link_tx_dropped(const char *dev, __u64 *dropped);

#endif /* SLUICE_GEN_H */
