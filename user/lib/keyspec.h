/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A policy's key mode (--key src|src,dport|flow) and its wide keys (struct
 * sluice_fkey) in words, read and written the same way (keyspec.c):
 *
 *   198.18.0.7/32                            a source's key (--key src)
 *   198.18.0.7/32 tcp/443                    src,dport: protocol and port
 *   198.18.0.7/32 icmp                       ... a protocol without ports
 *   198.18.0.7/32 > 198.18.1.1 tcp/40000>443 flow: destination, protocol,
 *                                            source and destination ports
 *
 * A protocol with ports (tcp, udp, udplite, sctp) always shows its port, 0
 * for a packet that carried none (a non-first fragment); another shows none
 * (its keys' ports are 0). fmt.h includes it.
 */
#ifndef SLUICE_KEYSPEC_H
#define SLUICE_KEYSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

#include "parse.h"

/* --key's word for a mode ("src", "src,dport", "flow"); "?" for another. */
const char *sluice_key_mode_name(unsigned int mode);
/* --key's value: the mode (SLUICE_KEY_*), or -EINVAL with err naming the
 * three spellings. */
int sluice_parse_key_mode(const char *v, char *err, size_t errlen);
/* What a mode keys by, in words: "source", "source, protocol and
 * destination port", "source, destination, protocol and ports". */
const char *sluice_key_mode_words(unsigned int mode);
/* The mode of a policy's keys (its flags' SLUICE_POLICY_KEY bits). */
static inline unsigned int sluice_policy_key_mode(const struct sluice_policy *p)
{
	return SLUICE_POLICY_KEY(p);
}
static inline void sluice_policy_set_key_mode(struct sluice_policy *p, unsigned int mode)
{
	p->flags = (__u8)((p->flags & ~SLUICE_POLICY_KEY_MASK) |
			  ((mode << SLUICE_POLICY_KEY_SHIFT) & SLUICE_POLICY_KEY_MASK));
}

/* A plain key as a wide one: mode SLUICE_KEY_SRC, every other field 0. */
void sluice_fkey_of_key(struct sluice_fkey *f, const struct sluice_key *k);
/* Does the protocol carry ports (tcp, udp, udplite, sctp)? */
bool sluice_proto_has_ports(unsigned int proto);
/* The part of a wide key after its source: "tcp/443", "icmp",
 * "> 198.18.1.1 tcp/40000>443"; "" for a key of mode src (a plain key, or
 * a wide table's aggregate). */
void sluice_fkey_rest_text(const struct sluice_fkey *f, char *buf, size_t len);
/* The whole key: its source as a CIDR, then the rest. */
void sluice_fkey_text(const struct sluice_fkey *f, char *buf, size_t len);

/*
 * What narrows show and flush to some keys of a source: the words after the
 * address, as sluice_fkey_rest_text() writes them (one word or several:
 * "tcp/443", "icmp", "> 198.18.1.1 tcp/40000>443", ">198.18.1.1 tcp"). A
 * protocol alone matches its every key; PROTO/PORT the keys of that
 * destination port (src,dport, and flows to it); the flow's spelling that
 * flow (the destination alone: every flow to it).
 */
struct sluice_keyspec {
	bool given; /* words were given: the source's plain key is not matched */
	bool has_proto, has_dst, has_sport, has_dport;
	__u8 proto;
	__u16 sport, dport;
	struct sluice_cidr dst; /* an address (full length) */
};
/* argv: the words after the address. 0, or -EINVAL with err. */
int sluice_keyspec_parse(int argc, char **argv, struct sluice_keyspec *ks, char *err,
			 size_t errlen);
/* Does key f match ks? Every key matches a spec with no words; a key of
 * mode src (a plain key, a wide table's aggregate) matches no other. */
bool sluice_keyspec_match(const struct sluice_keyspec *ks, const struct sluice_fkey *f);

#endif /* SLUICE_KEYSPEC_H */
