/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Inside libsluice: one editing command as written (cmd.c parses it), for
 * cmd_apply.c, which builds the policy it asks for and applies it.
 */
#ifndef SLUICE_CMD_EDIT_H
#define SLUICE_CMD_EDIT_H

#include <errno.h>

#include "cmd.h"

/*
 * A byte limit charges a packet its whole frame. A byte burst smaller than a
 * full frame (1500 bytes of MTU plus the Ethernet header) would refuse every
 * full-size packet forever, which is never what an operator means.
 */
#define MIN_BYTE_BURST 1514ULL
#define MAX_BURST 0xffffffffULL

enum edit_op { EDIT_SET, EDIT_RULE_ADD, EDIT_RULE_DEL, EDIT_RULE_FLUSH };

struct rate_arg {
	bool given;
	const char *text; /* as written, for messages */
	struct sluice_rate rate;
	__u64 burst; /* with burst_given; a limiter's is at least 1 */
	bool burst_given;
	bool delay_given; /* --delay N or --nodelay after this rate */
	__u32 delay; /* a shaper's: excess units that go at once; SLUICE_NODELAY */
	/* --burst 64k, --delay 16k: written as a byte size, a byte rate's only */
	const char *burst_size, *delay_size;
};

/* Who an edit is checked for: a limiter's state, a shaper's, a check before
 * any state is open (EDIT_FOR_ANY: a command with --delay or --nodelay is
 * a shaper's, any other a limiter's), or a line of a file, which is checked
 * again against its state when applied (EDIT_FOR_EITHER: what either takes). */
enum edit_kind { EDIT_FOR_ANY, EDIT_FOR_LIMITER, EDIT_FOR_SHAPER, EDIT_FOR_EITHER };

/* One editing command as written; -1 (or 0 for counts) means not given. */
struct edit {
	enum edit_op op;
	const char *name; /* "set", "rule add", ...: for messages */
	bool have_cidr;
	struct sluice_cidr cidr;
	const char *cidr_text;
	/* rule add, rule del: an L4 match (--proto, --dport, ...), when given */
	bool has_match;
	struct sluice_match_in match;
	int algo;
	struct rate_arg pkt, bytes;
	struct rate_arg *last_rate; /* the --rate a following --burst belongs to */
	__u64 burst; /* a --burst given before any --rate (with burst_given) */
	bool burst_given;
	bool delay_given; /* a --delay/--nodelay given before any --rate */
	__u32 delay;
	const char *burst_size, *delay_size; /* those, when written as a byte size */
	const char *delay_text; /* the first --delay or --nodelay, for messages */
	__u64 window_ns;
	int prefix4, prefix6, prefix;
	int dry_run;
	int fleet; /* --fleet: 1 on, 0 off, -1 not given */
	long penalty_ds; /* --penalty: tenths of a second, 0 off, -1 not given */
	int key_mode; /* --key: SLUICE_KEY_*, -1 not given */
	/* The second key: --also-rate (also.given; also_off: --also-rate off),
	 * --also-burst, --also-prefix4/6 and a rule's --also-prefix (-1: not
	 * given) */
	struct rate_arg also;
	bool also_off;
	int also_prefix4, also_prefix6, also_prefix;
	int action; /* SLUICE_ACT_EXEMPT or _DENY */
	int nr_policy_opts; /* options that change a policy (none of set's settings) */
	/* settings of set, not of a policy */
	int fail_closed;
	bool new_keys_given, new_keys_off;
	struct sluice_rate new_keys;
};

/* Read one editing command; checks all that does not need the live state. */
int sluice_edit_parse(int argc, char **argv, struct edit *e, char *err, size_t errlen);
/* The period a rate was written in ("30/m": 1 min), for a window. */
__u64 sluice_edit_period_ns(const struct rate_arg *r);

/* Was any option of the second key given? */
static inline bool sluice_edit_also_given(const struct edit *e)
{
	return e->also.given || e->also_off || e->also.burst_given || e->also_prefix4 >= 0 ||
	       e->also_prefix6 >= 0 || e->also_prefix >= 0;
}

static inline bool sluice_edit_burst_given(const struct edit *e)
{
	return e->burst_given || e->pkt.burst_given || e->bytes.burst_given;
}

/* Was a --delay or --nodelay given anywhere in the edit? */
static inline bool sluice_edit_delay_given(const struct edit *e)
{
	return e->delay_given || e->pkt.delay_given || e->bytes.delay_given;
}

/* Is the state of h a shaper's (sluice shape)? */
static inline bool sluice_edit_is_shaper(const struct sluice_handle *h)
{
	return h && (h->shape || (h->cfg && (h->cfg->kind & SLUICE_KIND_SHAPE)));
}

/* Check the parts of an edit that depend on the kind of state (--delay,
 * --nodelay, --burst 0): 0 or -EINVAL. */
int sluice_edit_check_kind(const struct edit *e, enum edit_kind kind, char *err, size_t errlen);
/* A --burst or --delay written as a byte size (size: as written, NULL when
 * a count) counts bytes: r's, a packet rate's (rate_text), counts packets,
 * and 64k packets is never what "64k" meant. 0 or -EINVAL. */
int sluice_edit_size_for_rate(const char *opt, const char *size, const struct rate_arg *r,
			      const char *rate_text, char *err, size_t errlen);
/* A shaper's delay as the option that gives it: "--delay 5" or "--nodelay". */
const char *sluice_delay_words(__u32 delay, char *buf, size_t len);
/* sluice_cmd_check() for a kind of state. */
int sluice_cmd_check_for(int argc, char **argv, enum edit_kind kind, char *err, size_t errlen);

#endif /* SLUICE_CMD_EDIT_H */
