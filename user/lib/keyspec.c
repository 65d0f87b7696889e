// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Key modes and wide keys in words (keyspec.h): --key's three spellings,
 * a wide key as show, top and flush print it, and the words that narrow
 * show and flush to some of a source's keys, read back in the spelling
 * they are printed in.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libsluice.h"

static const char *const mode_names[SLUICE_KEY_MODES] = {
	[SLUICE_KEY_SRC] = "src",
	[SLUICE_KEY_SRC_DPORT] = "src,dport",
	[SLUICE_KEY_FLOW] = "flow",
};

const char *sluice_key_mode_name(unsigned int mode)
{
	return mode < SLUICE_KEY_MODES ? mode_names[mode] : "?";
}

const char *sluice_key_mode_words(unsigned int mode)
{
	switch (mode) {
	case SLUICE_KEY_SRC:
		return "source";
	case SLUICE_KEY_SRC_DPORT:
		return "source, protocol and destination port";
	case SLUICE_KEY_FLOW:
		return "source, destination, protocol and ports";
	}
	return "?";
}

int sluice_parse_key_mode(const char *v, char *err, size_t errlen)
{
	const char *lower = sluice_case_hint(v, mode_names, SLUICE_KEY_MODES);
	unsigned int m;

	for (m = 0; m < SLUICE_KEY_MODES; m++)
		if (!strcmp(v, mode_names[m]))
			return (int)m;
	if (lower)
		return sluice_err(err, errlen, -EINVAL,
				  "--key %s: key modes are lower case: write '%s'", v, lower);
	return sluice_err(err, errlen, -EINVAL,
			  "--key takes src (the source, the default), src,dport (the source, "
			  "protocol and destination port) or flow (source, destination, "
			  "protocol and ports), not '%s'",
			  v);
}

void sluice_fkey_of_key(struct sluice_fkey *f, const struct sluice_key *k)
{
	memset(f, 0, sizeof(*f));
	f->k = *k;
	f->mode = SLUICE_KEY_SRC;
}

bool sluice_proto_has_ports(unsigned int proto)
{
	return proto == SLUICE_IPPROTO_TCP || proto == SLUICE_IPPROTO_UDP ||
	       proto == SLUICE_IPPROTO_UDPLITE || proto == SLUICE_IPPROTO_SCTP;
}

/* "tcp", or the number of a protocol without a name. */
static void proto_word(__u8 proto, char *buf, size_t len)
{
	const char *name = sluice_proto_name(proto);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%u", proto);
}

void sluice_fkey_rest_text(const struct sluice_fkey *f, char *buf, size_t len)
{
	char proto[16], dst[64] = "";
	struct sluice_cidr c;

	if (f->mode != SLUICE_KEY_SRC_DPORT && f->mode != SLUICE_KEY_FLOW) {
		if (len)
			buf[0] = '\0';
		return;
	}
	proto_word(f->proto, proto, sizeof(proto));
	if (f->mode == SLUICE_KEY_FLOW) {
		memset(&c, 0, sizeof(c));
		c.family = f->k.family;
		c.prefixlen = f->k.family == 4 ? 32 : 128;
		memcpy(c.addr, f->dst, 16);
		sluice_format_cidr(&c, false, dst, sizeof(dst));
		if (sluice_proto_has_ports(f->proto))
			snprintf(buf, len, "> %s %s/%u>%u", dst, proto, f->sport, f->dport);
		else
			snprintf(buf, len, "> %s %s", dst, proto);
		return;
	}
	if (sluice_proto_has_ports(f->proto))
		snprintf(buf, len, "%s/%u", proto, f->dport);
	else
		snprintf(buf, len, "%s", proto);
}

void sluice_fkey_text(const struct sluice_fkey *f, char *buf, size_t len)
{
	char src[64], rest[96];
	struct sluice_cidr c;

	memset(&c, 0, sizeof(c));
	c.family = f->k.family;
	c.prefixlen = f->k.prefixlen;
	memcpy(c.addr, f->k.addr, 16);
	sluice_format_cidr(&c, true, src, sizeof(src));
	sluice_fkey_rest_text(f, rest, sizeof(rest));
	snprintf(buf, len, "%s%s%s", src, *rest ? " " : "", rest);
}

static const char *help_keyspec(void)
{
	return "write a key as show prints it: tcp/443, icmp, or a flow's "
	       "'> 198.18.1.1 tcp/40000>443'";
}

/* A protocol: a name of match.c's table or a number 0-255. */
static int read_proto(const char *w, size_t n, __u8 *proto, char *err, size_t errlen)
{
	char word[32];
	unsigned int p;
	__u64 v;

	if (!n || n >= sizeof(word))
		return sluice_err(err, errlen, -EINVAL,
				  "'%.*s' is not a protocol: write tcp/443, udp/53, icmp or a "
				  "protocol number",
				  (int)n, w);
	memcpy(word, w, n);
	word[n] = '\0';
	for (p = 0; p < 256; p++) {
		const char *name = sluice_proto_name(p);

		if (name && !strcmp(name, word)) {
			*proto = (__u8)p;
			return 0;
		}
	}
	if (word[0] >= '0' && word[0] <= '9' &&
	    !sluice_parse_uint("a protocol", word, 255, &v, NULL, 0)) {
		*proto = (__u8)v;
		return 0;
	}
	return sluice_err(err, errlen, -EINVAL,
			  "'%s' is not a protocol (tcp, udp, udplite, sctp, icmp, icmpv6 or a "
			  "number 0-255): write a key as show prints it, e.g. tcp/443 or icmp",
			  word);
}

static int read_port(const char *w, size_t n, __u16 *port, char *err, size_t errlen)
{
	char word[16];
	__u64 v;

	if (!n || n >= sizeof(word) || w[0] < '0' || w[0] > '9')
		return sluice_err(err, errlen, -EINVAL,
				  "'%.*s' is not a port: give 0 to 65535 (tcp/443)", (int)n, w);
	memcpy(word, w, n);
	word[n] = '\0';
	/* sluice_parse_uint() refuses 0, a port of a packet without ports */
	if (!strcmp(word, "0")) {
		*port = 0;
		return 0;
	}
	if (sluice_parse_uint("a port", word, 65535, &v, NULL, 0))
		return sluice_err(err, errlen, -EINVAL,
				  "'%s' is not a port: give 0 to 65535 (tcp/443)", word);
	*port = (__u16)v;
	return 0;
}

/* PROTO, PROTO/PORT or PROTO/SPORT>DPORT. */
static int read_proto_ports(const char *w, struct sluice_keyspec *ks, char *err, size_t errlen)
{
	const char *slash = strchr(w, '/'), *gt;

	if (read_proto(w, slash ? (size_t)(slash - w) : strlen(w), &ks->proto, err, errlen))
		return -EINVAL;
	ks->has_proto = true;
	if (!slash)
		return 0;
	if (!sluice_proto_has_ports(ks->proto))
		return sluice_err(err, errlen, -EINVAL,
				  "'%s': %s carries no ports, and its keys have none: write "
				  "%.*s alone",
				  w, sluice_proto_name(ks->proto) ?: "this protocol",
				  (int)(slash - w), w);
	gt = strchr(slash + 1, '>');
	if (gt) {
		if (read_port(slash + 1, (size_t)(gt - slash - 1), &ks->sport, err, errlen))
			return -EINVAL;
		ks->has_sport = true;
		slash = gt;
	}
	if (read_port(slash + 1, strlen(slash + 1), &ks->dport, err, errlen))
		return -EINVAL;
	ks->has_dport = true;
	return 0;
}

int sluice_keyspec_parse(int argc, char **argv, struct sluice_keyspec *ks, char *err, size_t errlen)
{
	char *words[8];
	char buf[256];
	size_t used = 0;
	int i, n = 0;
	char *w;

	memset(ks, 0, sizeof(*ks));
	if (argc <= 0)
		return 0;
	/* The words as one line, split again at spaces and after a '>' that
	 * starts one: "> 198.18.1.1 tcp/1>2" may come as one quoted word. */
	for (i = 0; i < argc; i++) {
		int k = snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? " " : "", argv[i]);

		if (k < 0 || (size_t)k >= sizeof(buf) - used)
			return sluice_err(err, errlen, -EINVAL, "the key's words are too long");
		used += (size_t)k;
	}
	for (w = strtok(buf, " \t"); w; w = strtok(NULL, " \t")) {
		if (n == (int)(sizeof(words) / sizeof(words[0])))
			return sluice_err(err, errlen, -EINVAL, "too many words for a key: %s",
					  help_keyspec());
		words[n++] = w;
	}
	ks->given = n > 0;
	i = 0;
	if (i < n && words[i][0] == '>') {
		if (words[i][1])
			words[i]++; /* ">198.18.1.1" */
		else
			i++;
		if (i >= n)
			return sluice_err(err, errlen, -EINVAL,
					  "'>' needs the flow's destination after it: > 198.18.1.1 "
					  "tcp/40000>443");
		if (sluice_parse_addr(words[i], &ks->dst, err, errlen))
			return -EINVAL;
		ks->has_dst = true;
		i++;
	} else if (i < n && (strchr(words[i], '.') || strchr(words[i], ':'))) {
		return sluice_err(err, errlen, -EINVAL,
				  "'%s' after the source: a flow's destination comes after "
				  "'>' (> %s tcp/40000>443)",
				  words[i], words[i]);
	}
	if (i < n) {
		if (read_proto_ports(words[i], ks, err, errlen))
			return -EINVAL;
		i++;
	}
	if (i < n)
		return sluice_err(err, errlen, -EINVAL, "unexpected word '%s' in the key: %s",
				  words[i], help_keyspec());
	return 0;
}

bool sluice_keyspec_match(const struct sluice_keyspec *ks, const struct sluice_fkey *f)
{
	if (!ks->given)
		return true;
	if (f->mode != SLUICE_KEY_SRC_DPORT && f->mode != SLUICE_KEY_FLOW)
		return false;
	if ((ks->has_dst || ks->has_sport) && f->mode != SLUICE_KEY_FLOW)
		return false;
	if (ks->has_dst && (ks->dst.family != f->k.family ||
			    memcmp(ks->dst.addr, f->dst, f->k.family == 4 ? 4 : 16)))
		return false;
	if (ks->has_proto && ks->proto != f->proto)
		return false;
	if (ks->has_sport && ks->sport != f->sport)
		return false;
	return !ks->has_dport || ks->dport == f->dport;
}
