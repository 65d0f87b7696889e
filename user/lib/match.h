/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A rule's L4 match (struct sluice_match, include/sluice/l4.h) as its
 * options write it (match.c), read and written back the same way:
 *
 *   --proto tcp|udp|udplite|sctp|icmp|icmpv6|NUMBER (0-255)
 *   --sport P[-Q], --dport P[-Q]   ports 0-65535, P <= Q; tcp, udp, udplite
 *                                  or sctp
 *   --tcp-flags syn | MASK/VALUE   tcp; syn is SYN without ACK (syn,ack/syn);
 *                                  MASK and VALUE are lists of fin, syn, rst,
 *                                  psh, ack, urg, ece, cwr joined by ',' (or
 *                                  none), VALUE within MASK
 *   --icmp-type TYPE[/CODE]        icmp or icmpv6; TYPE a number or a name of
 *                                  that protocol's (echo-request, ...)
 *   --dst CIDR                     the destination: an address or a CIDR
 *
 * Options come in any order: a name or a protocol's requirement is checked
 * by sluice_match_finish(), once every option is read. libsluice.h
 * includes it, with the others.
 */
#ifndef SLUICE_MATCH_H
#define SLUICE_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sluice/l4.h>

#include "json.h"

/* A match being read: the match, and the ICMP type as written (its name
 * depends on the protocol, which may come later). */
struct sluice_match_in {
	struct sluice_match m;
	char icmp[32];
};

void sluice_match_in_init(struct sluice_match_in *in);
/* Is opt (e.g. "--dport") one of a match's options? */
bool sluice_match_is_opt(const char *opt);
/* Read one option's value into in: 0, or -EINVAL with err saying why (a
 * value out of range, an unknown name, an option given twice). */
int sluice_match_opt(struct sluice_match_in *in, const char *opt, const char *val, char *err,
		     size_t errlen);
/* Every option read: the names resolved and the combination checked (ports
 * need --proto tcp, udp, udplite or sctp; --tcp-flags --proto tcp;
 * --icmp-type --proto icmp or icmpv6). 0 or -EINVAL. */
int sluice_match_finish(struct sluice_match_in *in, char *err, size_t errlen);

/* The match as its options ("--proto tcp --dport 443 --tcp-flags syn"),
 * which read back give it again; "" for a match of nothing. */
void sluice_match_text(const struct sluice_match *m, char *buf, size_t len);
/* Its fields, as JSON or text (struct sluice_rec): proto, sport and dport
 * ({from, to}), tcp_flags (as --tcp-flags writes it), icmp_type, icmp_code,
 * dst (a CIDR); only those it names. */
void sluice_match_rec(struct sluice_rec *r, const struct sluice_match *m);
/* The protocol's name (tcp, ...), or NULL for one without. */
const char *sluice_proto_name(unsigned int proto);

#endif /* SLUICE_MATCH_H */
