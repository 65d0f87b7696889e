// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The frames sluice-gen makes beyond libsluice's, and their check.
 *
 * TCP SYN frames (-p tcp): what a SYN flood sends, a SYN
 * without ACK, no options and no data. The Ethernet, VLAN and IP headers are
 * libsluice's (sluice_frame_build(), as for UDP), the transport header is
 * replaced by a TCP one, and the checksums made valid again: the receiver's
 * stack checks them, and a frame it drops for a bad one would make every
 * peer comparison lie. A frame longer than the headers is padded at the
 * Ethernet level (the IP length covers the headers only).
 *
 * --check N: N copies of the frame given their sources by the XDP program
 * (a test run without live frames: nothing is sent, so it runs on a kernel
 * that refuses live frames too) and by the packet socket's sender, each
 * copy's checksums computed again from scratch and its source checked
 * against the prefix: both ways out are checked, whichever this kernel uses.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf.h>

#include "gen.h"

#define TCP_SYN 0x02
#define SYN_WINDOW 64240
#define SYN_SEQ 0x5eed0001U /* any: every SYN of a flood may carry the same */

static unsigned int ip_hlen(const struct sluice_frame *f)
{
	return f->src.family == 6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
}

unsigned int gen_syn_min_len(const struct sluice_frame *f)
{
	return sluice_frame_l3_off(f) + ip_hlen(f) + GEN_TCP_HLEN;
}

/* One's complement sum of 16-bit words as they lie in memory (RFC 1071: the
 * sum is the same in either byte order), not yet folded; an odd last byte
 * is padded with a zero. */
static __u32 csum_words(__u32 sum, const void *p, size_t len)
{
	const __u8 *b = p;
	__u16 w;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		memcpy(&w, b + i, 2);
		sum += w;
	}
	if (len & 1) {
		w = 0;
		memcpy(&w, b + len - 1, 1);
		sum += w;
	}
	return sum;
}

static __u16 fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

static void put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

int gen_build_syn(const struct sluice_frame *spec, __u8 *buf, char *err, size_t errlen)
{
	struct sluice_frame f = *spec;
	unsigned int l3 = sluice_frame_l3_off(spec), seg = gen_syn_min_len(spec), alen;
	bool v6 = spec->src.family == 6;
	__u8 *ip = buf + l3, *tcp = ip + ip_hlen(spec), pseudo[40] = { 0 };
	__u16 old, new, check;
	__u32 sum;
	int ret;

	if (spec->len < seg || spec->len > SLUICE_FRAME_MAX)
		return sluice_err(err, errlen, -EINVAL,
				  "frame length %u must be %u to %u for a TCP SYN", spec->len, seg,
				  SLUICE_FRAME_MAX);
	/* The headers as for UDP, with the IP length of a bare TCP header... */
	f.len = seg;
	f.ihl = 0;
	f.payload = NULL;
	f.payload_len = 0;
	ret = sluice_frame_build(&f, buf, err, errlen);
	if (ret)
		return ret;
	memset(buf + seg, 0, spec->len - seg);
	/* ...then TCP in place of UDP: the protocol, IPv4's checksum patched
	 * for the word that holds it (RFC 1624, as every source rewrite)... */
	if (v6) {
		ip[6] = IPPROTO_TCP;
	} else {
		memcpy(&old, ip + 8, 2); /* TTL, protocol */
		ip[9] = IPPROTO_TCP;
		memcpy(&new, ip + 8, 2);
		memcpy(&check, ip + 10, 2);
		check = gen_csum_replace(check, &old, &new, 1);
		memcpy(ip + 10, &check, 2);
	}
	memset(tcp, 0, GEN_TCP_HLEN);
	put16(tcp, spec->sport);
	put16(tcp + 2, spec->dport);
	put16(tcp + 4, SYN_SEQ >> 16);
	put16(tcp + 6, SYN_SEQ & 0xffff);
	tcp[12] = (GEN_TCP_HLEN / 4) << 4; /* data offset */
	tcp[13] = TCP_SYN;
	put16(tcp + 14, SYN_WINDOW);
	/* ...and the TCP checksum over the pseudo-header (source, destination,
	 * protocol, TCP length) and the header. */
	alen = v6 ? 16 : 4;
	memcpy(pseudo, spec->src.addr, alen);
	memcpy(pseudo + alen, spec->dst.addr, alen);
	if (v6) { /* TCP length (32 bits), three zeros, the next header */
		pseudo[35] = GEN_TCP_HLEN;
		pseudo[39] = IPPROTO_TCP;
	} else { /* a zero, the protocol, TCP length (16 bits) */
		pseudo[9] = IPPROTO_TCP;
		pseudo[11] = GEN_TCP_HLEN;
	}
	sum = csum_words(0, pseudo, v6 ? 40 : 12);
	sum = csum_words(sum, tcp, GEN_TCP_HLEN);
	check = (__u16)~fold(sum);
	memcpy(tcp + 16, &check, 2);
	return 0;
}

static __u16 get16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

/* Is the frame f (len bytes, its IP header at k->l3_off) valid: IPv4's
 * header checksum, the transport's over its pseudo-header, the source in
 * the knobs' prefix? 0, or -EINVAL and why in err. */
static int verify(const struct gen_knobs *k, const __u8 *f, unsigned int len, char *err,
		  size_t errlen)
{
	const __u8 *ip = f + k->l3_off, *l4;
	bool v6 = (ip[0] >> 4) == 6;
	unsigned int alen = v6 ? 16 : 4, l4len, hlen;
	__u8 pseudo[40] = { 0 }, proto;
	__u32 sum;

	if (v6) {
		l4 = ip + sizeof(struct ipv6hdr);
		l4len = get16(ip + 4);
		proto = ip[6];
	} else {
		hlen = 4 * (ip[0] & 0x0f);
		if (fold(csum_words(0, ip, hlen)) != 0xffff)
			return sluice_err(err, errlen, -EINVAL, "a bad IPv4 header checksum");
		l4 = ip + hlen;
		l4len = get16(ip + 2) - hlen;
		proto = ip[9];
	}
	if (l4 + l4len > f + len)
		return sluice_err(err, errlen, -EINVAL, "an IP length of %u past the frame", l4len);
	if (proto != k->proto)
		return sluice_err(err, errlen, -EINVAL, "IP protocol %u, not %u", proto, k->proto);
	memcpy(pseudo, ip + (v6 ? 8 : 12), 2 * alen); /* the source and destination */
	if (v6) {
		pseudo[34] = l4len >> 8;
		pseudo[35] = l4len & 0xff;
		pseudo[39] = proto;
	} else {
		pseudo[9] = proto;
		pseudo[10] = l4len >> 8;
		pseudo[11] = l4len & 0xff;
	}
	sum = csum_words(csum_words(0, pseudo, v6 ? 40 : 12), l4, l4len);
	if (fold(sum) != 0xffff)
		return sluice_err(err, errlen, -EINVAL, "a bad %s checksum",
				  proto == IPPROTO_TCP ? "TCP" : "UDP");
	if (proto == IPPROTO_UDP && !get16(l4 + 6))
		return sluice_err(err, errlen, -EINVAL, "a UDP checksum of 0 (none)");
	if (proto == IPPROTO_TCP && l4[13] != TCP_SYN)
		return sluice_err(err, errlen, -EINVAL, "TCP flags 0x%02x, not SYN", l4[13]);
	if (k->family) {
		__u64 hi = 0, lo = 0;
		unsigned int i;

		for (i = 0; i < alen; i++) {
			if (v6 && i < 8)
				hi = hi << 8 | ip[8 + i];
			else
				lo = lo << 8 | ip[(v6 ? 8 : 12) + i];
		}
		if ((hi & ~k->mask_hi) != k->base_hi || (lo & ~k->mask_lo) != k->base_lo)
			return sluice_err(err, errlen, -EINVAL, "a source outside the prefix");
	}
	return 0;
}

int gen_check(int prog_fd, int ifindex, const __u8 *frame, unsigned int len,
	      const struct gen_knobs *k, __u64 n, char *err, size_t errlen)
{
	static __u8 cur[SLUICE_FRAME_MAX], out[SLUICE_FRAME_MAX];
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = ifindex };
	struct gen_sock s = { .fd = -1, .len = len, .rng = 0x9e3779b97f4a7c15ULL };
	char why[SLUICE_ERR_LEN];
	__u64 i;

	/* The program: each run's output is the next one's input, as a live
	 * frame's page comes back with the last rewrite in it. */
	memcpy(cur, frame, len);
	for (i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = cur, .data_size_in = len,
			    .data_out = out, .data_size_out = sizeof(out), .ctx_in = &ctx,
			    .ctx_size_in = sizeof(ctx), .repeat = 1);

		if (bpf_prog_test_run_opts(prog_fd, &opts))
			return sluice_err(err, errlen, -errno,
					  "Couldn't run the generator's program once: %s",
					  strerror(errno));
		if (opts.retval != XDP_TX && opts.retval != XDP_REDIRECT)
			return sluice_err(err, errlen, -EINVAL,
					  "the XDP program did not send frame %llu (action %u)",
					  (unsigned long long)i + 1, opts.retval);
		if (verify(k, out, len, why, sizeof(why)))
			return sluice_err(err, errlen, -EINVAL,
					  "frame %llu out of the XDP program has %s",
					  (unsigned long long)i + 1, why);
		memcpy(cur, out, len);
	}
	/* The packet socket's sender, on one copy over and over as well. */
	memcpy(cur, frame, len);
	for (i = 0; i < n; i++) {
		gen_sock_rewrite(&s, k, cur);
		if (verify(k, cur, len, why, sizeof(why)))
			return sluice_err(err, errlen, -EINVAL,
					  "frame %llu of the packet socket's sender has %s",
					  (unsigned long long)i + 1, why);
	}
	return 0;
}
