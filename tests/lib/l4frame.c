// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Frames with transport headers, byte by byte (l4frame.h). */
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "libsluice.h"
#include "l4frame.h"
#include "tap.h"

static void put(struct l4frame *f, const void *p, __u32 n)
{
	memcpy(f->b + f->len, p, n);
	f->len += n;
}

static void put16(struct l4frame *f, __u16 v)
{
	__u8 b[2] = { (__u8)(v >> 8), (__u8)v };

	put(f, b, 2);
}

/* Ethernet (and vlans 802.1Q tags), then an IPv4 header of ihl words,
 * protocol proto, fragment field frag (flags and offset). */
void l4f_eth(struct l4frame *f, int vlans, __u16 type)
{
	static const __u8 macs[12] = { 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1 };
	int i;

	memset(f, 0, sizeof(*f));
	put(f, macs, 12);
	for (i = 0; i < vlans; i++) {
		put16(f, 0x8100);
		put16(f, 100 + i);
	}
	put16(f, type);
	f->l3 = f->len;
}

void l4f_ip4(struct l4frame *f, int vlans, int ihl, __u8 proto, __u16 frag)
{
	__u8 h[60] = { 0 };

	l4f_eth(f, vlans, 0x0800);
	h[0] = 0x40 | ihl;
	h[6] = frag >> 8;
	h[7] = frag;
	h[8] = 64;
	h[9] = proto;
	memcpy(h + 12, (__u8[]){ 198, 18, 0, 1 }, 4);
	memcpy(h + 16, (__u8[]){ 198, 18, 0, 2 }, 4);
	put(f, h, ihl * 4);
	f->family = 4;
}

void l4f_ip6(struct l4frame *f, __u8 next)
{
	__u8 h[40] = { 0x60 };

	l4f_eth(f, 0, 0x86dd);
	h[6] = next;
	h[7] = 64;
	h[8] = 0x20, h[9] = 0x01, h[11] = 0x02, h[23] = 1; /* 2001:2::1 */
	h[24] = 0x20, h[25] = 0x01, h[27] = 0x02, h[39] = 2;
	put(f, h, 40);
	f->family = 6;
}

/* An IPv6 extension header: next, and its length in bytes (a multiple of
 * 8; AH: of 4), written in its own unit. */
void l4f_ext6(struct l4frame *f, __u8 type, __u8 next, __u32 bytes)
{
	__u8 h[64] = { 0 };

	h[0] = next;
	h[1] = type == SLUICE_IPPROTO_AH ? bytes / 4 - 2 : bytes / 8 - 1;
	put(f, h, bytes);
}

void l4f_frag6(struct l4frame *f, __u8 next, __u16 offset8, int more)
{
	__u8 h[8] = { next };

	h[2] = (__u8)((offset8 << 3) >> 8);
	h[3] = (__u8)(offset8 << 3) | (more ? 1 : 0);
	put(f, h, 8);
}

void l4f_tcp(struct l4frame *f, __u16 sport, __u16 dport, __u8 flags)
{
	__u8 h[20] = { 0 };

	h[0] = sport >> 8, h[1] = sport, h[2] = dport >> 8, h[3] = dport;
	h[12] = 5 << 4;
	h[13] = flags;
	put(f, h, 20);
}

void l4f_udp(struct l4frame *f, __u16 sport, __u16 dport)
{
	__u8 h[8] = { (__u8)(sport >> 8), (__u8)sport, (__u8)(dport >> 8), (__u8)dport, 0, 8 };

	put(f, h, 8);
}

void l4f_sctp(struct l4frame *f, __u16 sport, __u16 dport)
{
	__u8 h[12] = { (__u8)(sport >> 8), (__u8)sport, (__u8)(dport >> 8), (__u8)dport };

	put(f, h, 12);
}

void l4f_icmp(struct l4frame *f, __u8 type, __u8 code)
{
	__u8 h[8] = { type, code };

	put(f, h, 8);
}

/* Pad to the 60 bytes of a minimal Ethernet frame, as a NIC would (the
 * parser must not take padding for a header: every short row cuts below). */
void l4f_pad(struct l4frame *f)
{
	while (f->len < 60)
		f->b[f->len++] = 0;
}

int l4f_src(struct l4frame *f, const char *addr)
{
	if (f->family == 4)
		return inet_pton(AF_INET, addr, f->b + f->l3 + 12) == 1 ? 0 : -1;
	return inet_pton(AF_INET6, addr, f->b + f->l3 + 8) == 1 ? 0 : -1;
}

int l4f_dst(struct l4frame *f, const char *addr)
{
	if (f->family == 4)
		return inet_pton(AF_INET, addr, f->b + f->l3 + 16) == 1 ? 0 : -1;
	return inet_pton(AF_INET6, addr, f->b + f->l3 + 24) == 1 ? 0 : -1;
}

/* A rule from a CIDR and match options ("--proto tcp --tcp-flags syn"). */
struct sluice_l4rule l4f_rule(const char *cidr, const char *opts)
{
	struct sluice_l4rule r;
	struct sluice_match_in in;
	struct sluice_cidr c;
	char err[256] = "", buf[256], *save = NULL, *o, *v;

	memset(&r, 0, sizeof(r));
	sluice_match_in_init(&in);
	snprintf(buf, sizeof(buf), "%s", opts);
	if (sluice_parse_cidr(cidr, &c, err, sizeof(err)))
		tap_diag("test: %s: %s", cidr, err);
	for (o = strtok_r(buf, " ", &save); o; o = strtok_r(NULL, " ", &save)) {
		v = strtok_r(NULL, " ", &save);
		if (!v || sluice_match_opt(&in, o, v, err, sizeof(err)))
			tap_diag("test: %s: %s", opts, err);
	}
	if (sluice_match_finish(&in, err, sizeof(err)))
		tap_diag("test: %s: %s", opts, err);
	r.m = in.m;
	r.family = c.family;
	r.prefixlen = c.prefixlen;
	memcpy(r.addr, c.addr, 16);
	return r;
}
