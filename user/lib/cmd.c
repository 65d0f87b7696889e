// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The editing commands (set, rule add, rule del, rule flush): from argv to a
 * change of a transaction's copy of the settings and rules; and files of them,
 * read once, applied on top of the live state or made the whole desired state.
 *
 * Work happens in two steps. parse_edit() reads the words alone and checks
 * everything that does not depend on the live settings, so that bad input is
 * refused (exit status 2) before an interface is even opened. apply_edit()
 * then merges the request into the live policy and checks the result. Both
 * are used by sluicectl, by its batch files and by `sluice attach`, so
 * nothing here prints or exits: errors are returned with a sentence in err.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cmd_edit.h"

enum opt_id {
	OPT_RATE,
	OPT_BURST,
	OPT_DELAY,
	OPT_NODELAY,
	OPT_ALGO,
	OPT_WINDOW,
	OPT_PREFIX4,
	OPT_PREFIX6,
	OPT_PREFIX,
	OPT_DRY_RUN,
	OPT_FLEET,
	OPT_EXEMPT,
	OPT_DENY,
	OPT_NEW_KEYS,
	OPT_FAIL_CLOSED,
	OPT_PENALTY,
	OPT_KEY,
	OPT_ALSO_RATE,
	OPT_ALSO_BURST,
	OPT_ALSO_PREFIX4,
	OPT_ALSO_PREFIX6,
	OPT_ALSO_PREFIX,
};

#define FOR_SET (1U << EDIT_SET)
#define FOR_ADD (1U << EDIT_RULE_ADD)

static const struct opt {
	const char *name;
	enum opt_id id;
	bool has_arg;
	unsigned int ops;
} opts[] = {
	{ "rate", OPT_RATE, true, FOR_SET | FOR_ADD },
	{ "burst", OPT_BURST, true, FOR_SET | FOR_ADD },
	/* a shaper's: the excess of the --rate before it that goes at once */
	{ "delay", OPT_DELAY, true, FOR_SET | FOR_ADD },
	{ "nodelay", OPT_NODELAY, false, FOR_SET | FOR_ADD },
	{ "algo", OPT_ALGO, true, FOR_SET | FOR_ADD },
	{ "window", OPT_WINDOW, true, FOR_SET | FOR_ADD },
	{ "prefix4", OPT_PREFIX4, true, FOR_SET },
	{ "prefix6", OPT_PREFIX6, true, FOR_SET },
	{ "prefix", OPT_PREFIX, true, FOR_ADD },
	/* `set --dry-run on|off`; `rule add ... --dry-run [on|off]` */
	{ "dry-run", OPT_DRY_RUN, false, FOR_SET | FOR_ADD },
	/* `set --fleet on|off`, `rule add ... --fleet [on|off]`: the policy's */
	{ "fleet", OPT_FLEET, false, FOR_SET | FOR_ADD },
	/* a key over its limit refused whole for DUR (the penalty box) */
	{ "penalty", OPT_PENALTY, true, FOR_SET | FOR_ADD },
	/* what a key holds besides the masked source: src, src,dport, flow */
	{ "key", OPT_KEY, true, FOR_SET | FOR_ADD },
	/* a second key: the source's prefix, charged too (--also-rate off: none) */
	{ "also-rate", OPT_ALSO_RATE, true, FOR_SET | FOR_ADD },
	{ "also-burst", OPT_ALSO_BURST, true, FOR_SET | FOR_ADD },
	{ "also-prefix4", OPT_ALSO_PREFIX4, true, FOR_SET | FOR_ADD },
	{ "also-prefix6", OPT_ALSO_PREFIX6, true, FOR_SET | FOR_ADD },
	{ "also-prefix", OPT_ALSO_PREFIX, true, FOR_ADD },
	{ "exempt", OPT_EXEMPT, false, FOR_ADD },
	{ "deny", OPT_DENY, false, FOR_ADD },
	/* settings: what `sluice attach --new-keys/--fail-closed` set */
	{ "new-keys", OPT_NEW_KEYS, true, FOR_SET },
	{ "fail-closed", OPT_FAIL_CLOSED, true, FOR_SET },
};

static const char *help_of(const struct edit *e)
{
	return e->op == EDIT_SET ? "see 'sluicectl set help'" : "see 'sluicectl rule help'";
}

static int parse_rate_opt(struct edit *e, const char *v, char *err, size_t errlen)
{
	struct sluice_rate r;
	struct rate_arg *slot;
	int ret;

	ret = sluice_parse_rate(v, &r, err, errlen);
	if (ret)
		return -EINVAL;
	slot = r.is_bytes ? &e->bytes : &e->pkt;
	if (slot->given)
		return sluice_err(
			err, errlen, -EINVAL,
			"two %s rates given (%s and %s): give at most one packet rate and one "
			"byte rate, e.g. --rate 100/s --rate 10mbit",
			r.is_bytes ? "byte" : "packet", slot->text, v);
	slot->given = true;
	slot->text = v;
	slot->rate = r;
	/* A --burst (or --delay) written before the first --rate belongs to it. */
	if (e->burst_given && !e->last_rate) {
		slot->burst = e->burst;
		slot->burst_given = true;
		slot->burst_size = e->burst_size;
		e->burst = 0;
		e->burst_given = false;
		e->burst_size = NULL;
	}
	if (e->delay_given && !e->last_rate) {
		slot->delay = e->delay;
		slot->delay_given = true;
		slot->delay_size = e->delay_size;
		e->delay = 0;
		e->delay_given = false;
		e->delay_size = NULL;
	}
	e->last_rate = slot;
	return 0;
}

/*
 * A whole number from 0 to max (--burst 0 is a shaper's, --delay 0 every
 * shaper's default), or a byte size (64k: 65536), which *size then holds as
 * written: only a byte rate's --burst and --delay take one, which the rate
 * they belong to decides (sluice_edit_size_for_rate()).
 */
static int parse_count0(const char *what, const char *v, __u64 max, __u64 *out, const char **size,
			char *err, size_t errlen)
{
	bool sized;

	if (sluice_parse_size(what, v, max, out, &sized, err, errlen))
		return -EINVAL;
	*size = sized ? v : NULL;
	return 0;
}

int sluice_edit_size_for_rate(const char *opt, const char *size, const struct rate_arg *r,
			      const char *rate_text, char *err, size_t errlen)
{
	if (!size || r->rate.is_bytes)
		return 0;
	return sluice_err(
		err, errlen, -EINVAL,
		"%s %s is a byte size, but it belongs to the packet rate %s, which counts "
		"packets: give a count (%s 64), or put it after a byte rate (--rate 10mbit "
		"%s %s)",
		opt, size, rate_text, opt, opt, size);
}

static int parse_burst_opt(struct edit *e, const char *v, char *err, size_t errlen)
{
	const char *size;
	__u64 b;

	/* 0 is a shaper's (nothing queued beyond the packet being sent): the
	 * kind of state decides (sluice_edit_check_kind()). */
	if (parse_count0("--burst", v, MAX_BURST, &b, &size, err, errlen))
		return -EINVAL;
	if (e->last_rate) {
		if (e->last_rate->burst_given)
			return sluice_err(err, errlen, -EINVAL,
					  "two --burst values for --rate %s: "
					  "give one --burst after each --rate",
					  e->last_rate->text);
		e->last_rate->burst = b;
		e->last_rate->burst_given = true;
		e->last_rate->burst_size = size;
		return 0;
	}
	if (e->burst_given)
		return sluice_err(err, errlen, -EINVAL,
				  "two --burst values: give one --burst after each --rate");
	e->burst = b;
	e->burst_given = true;
	e->burst_size = size;
	return 0;
}

/*
 * --delay N and --nodelay (a shaper's): like --burst, they belong to the
 * --rate before it (or, given first, to the first --rate after it), in
 * that rate's unit. SLUICE_NODELAY itself is not a number one may write.
 */
static int parse_delay_opt(struct edit *e, const char *v, char *err, size_t errlen)
{
	const char *what = v ? "--delay" : "--nodelay", *size = NULL;
	__u64 d = SLUICE_NODELAY;
	bool *given = e->last_rate ? &e->last_rate->delay_given : &e->delay_given;
	__u32 *dst = e->last_rate ? &e->last_rate->delay : &e->delay;

	if (v && parse_count0("--delay", v, SLUICE_NODELAY - 1, &d, &size, err, errlen))
		return -EINVAL;
	if (e->last_rate)
		e->last_rate->delay_size = size;
	else
		e->delay_size = size;
	if (*given) {
		if (e->last_rate)
			return sluice_err(
				err, errlen, -EINVAL,
				"two of --delay and --nodelay for --rate %s: give one after "
				"each --rate",
				e->last_rate->text);
		return sluice_err(err, errlen, -EINVAL,
				  "two of --delay and --nodelay: give one after each --rate");
	}
	*given = true;
	*dst = (__u32)d;
	if (!e->delay_text)
		e->delay_text = what;
	return 0;
}

const char *sluice_delay_words(__u32 delay, char *buf, size_t len)
{
	if (delay == SLUICE_NODELAY)
		snprintf(buf, len, "--nodelay");
	else
		snprintf(buf, len, "--delay %u", delay);
	return buf;
}

int sluice_edit_check_kind(const struct edit *e, enum edit_kind kind, char *err, size_t errlen)
{
	bool delay = sluice_edit_delay_given(e);
	/* A check with no state behind it takes a command with a shaper's
	 * option for a shaper's; else it holds it to a limiter's rules. */
	bool shaper = kind == EDIT_FOR_SHAPER || kind == EDIT_FOR_EITHER ||
		      (kind == EDIT_FOR_ANY && delay);
	const struct rate_arg *zero = NULL;

	if (delay && kind == EDIT_FOR_LIMITER)
		return sluice_err(err, errlen, -EINVAL,
				  "a limiter drops and never delays: %s is for a shaper, "
				  "sluicectl -i shape:IFACE or sluice shape attach",
				  e->delay_text ? e->delay_text : "--delay");
	if (e->pkt.burst_given && !e->pkt.burst)
		zero = &e->pkt;
	else if (e->bytes.burst_given && !e->bytes.burst)
		zero = &e->bytes;
	if (!shaper && (zero || (e->burst_given && !e->burst)))
		return sluice_err(
			err, errlen, -EINVAL,
			"--burst is 0: it must be at least 1 (1 to %llu); only a shaper "
			"(sluicectl -i shape:IFACE, sluice shape attach) takes --burst 0, "
			"which queues nothing beyond the packet being sent",
			MAX_BURST);
	return 0;
}

/*
 * --new-keys and --fail-closed of set: settings of the interface, not of a
 * policy, so they never touch the default policy. They mean what the same
 * options of `sluice attach` mean.
 */
static int parse_setting(struct edit *e, enum opt_id id, const char *v, char *err, size_t errlen)
{
	char inner[SLUICE_ERR_LEN];
	struct sluice_limit l;
	bool on;

	if (id == OPT_FAIL_CLOSED) {
		if (e->fail_closed >= 0)
			return sluice_err(err, errlen, -EINVAL, "--fail-closed is given twice");
		if (sluice_parse_onoff("--fail-closed", v, &on, err, errlen))
			return -EINVAL;
		e->fail_closed = on;
		return 0;
	}
	if (e->new_keys_given)
		return sluice_err(err, errlen, -EINVAL, "--new-keys is given twice");
	e->new_keys_given = true;
	if (!strcmp(v, "off")) {
		e->new_keys_off = true;
		return 0;
	}
	if (sluice_parse_rate(v, &e->new_keys, inner, sizeof(inner))) {
		size_t z = strspn(v, "0");

		/* A zero rate of new sources is not a deny: name what is meant. */
		if (z && (v[z] == '/' || !strcmp(v + z, "pps")))
			return sluice_err(
				err, errlen, -EINVAL,
				"--new-keys '%s' is zero, which would admit no new source "
				"ever: give at least 1/h (e.g. 1000/s), or 'off' for no limit",
				v);
		return sluice_err(err, errlen, -EINVAL, "--new-keys: %s (or 'off' for no limit)",
				  inner);
	}
	if (e->new_keys.is_bytes)
		return sluice_err(err, errlen, -EINVAL,
				  "--new-keys counts new sources, not bytes: write a rate like "
				  "1000/s, or 'off'");
	/* Refuse here what apply_edit() could not set, so a check is enough. */
	if (sluice_limit_set(&l, e->new_keys.count, e->new_keys.period_ns,
			     sluice_default_burst(e->new_keys.count, e->new_keys.period_ns), inner,
			     sizeof(inner)))
		return sluice_err(err, errlen, -EINVAL, "--new-keys %s: %s", v, inner);
	return 0;
}

/*
 * Could word be the CIDR of a rule add that has none yet? Then a word after
 * --dry-run is left for it (rule add --dry-run 198.18.0.0/24 --deny), and a
 * malformed one is refused as a CIDR, which is what it was meant to be.
 */
static bool looks_like_cidr(const struct edit *e, const char *word)
{
	return !e->have_cidr && (strchr(word, '.') || strchr(word, ':') || strchr(word, '/'));
}

/* Returns how many words the option used (1 or 2), or -EINVAL. */
/* --dry-run and --fleet: set needs on|off; rule add takes an optional on|off.
 * How many words it used, or -EINVAL. */
static int parse_onoff_opt(struct edit *e, enum opt_id id, int argc, char **argv, int i,
			   const char *eq, char *err, size_t errlen)
{
	const char *v = NULL;
	int used = 1;
	bool fleet = id == OPT_FLEET;
	int *dst = fleet ? &e->fleet : &e->dry_run;
	const char *o = fleet ? "--fleet" : "--dry-run";
	char what[40];

	snprintf(what, sizeof(what), "%s of %s", o, e->op == EDIT_SET ? "set" : "rule add");
	if (eq) {
		v = eq + 1;
	} else if (i + 1 < argc && (e->op == EDIT_SET || !strcmp(argv[i + 1], "on") ||
				    !strcmp(argv[i + 1], "off"))) {
		v = argv[i + 1];
		used = 2;
	} else if (i + 1 < argc && argv[i + 1][0] != '-' && !looks_like_cidr(e, argv[i + 1])) {
		/* Not the rule's CIDR: a value meant for this option. */
		static const char *const words[] = { "on", "off" };
		const char *lower = sluice_case_hint(argv[i + 1], words, 2);

		if (lower)
			return sluice_err(err, errlen, -EINVAL,
					  "%s takes 'on' or 'off' (lower case), not '%s': write "
					  "'%s'",
					  what, argv[i + 1], lower);
		return sluice_err(err, errlen, -EINVAL,
				  "%s takes no value (or 'on' or 'off'), not '%s': write %s "
				  "alone",
				  what, argv[i + 1], o);
	}
	if (*dst >= 0)
		return sluice_err(err, errlen, -EINVAL, "%s is given twice", o);
	if (!v && e->op == EDIT_SET)
		return sluice_err(err, errlen, -EINVAL, "%s needs 'on' or 'off'", what);
	if (v) {
		bool on;

		if (sluice_parse_onoff(what, v, &on, err, errlen))
			return -EINVAL;
		*dst = on;
	} else {
		*dst = 1;
	}
	/* set --dry-run is a setting; --fleet is the policy's. */
	if (e->op != EDIT_SET || fleet)
		e->nr_policy_opts++;
	return used;
}

/* An option of the second key: 0 or -EINVAL. */
static int parse_also_opt(struct edit *e, const struct opt *o, const char *v, char *err,
			  size_t errlen)
{
	char what[24], inner[SLUICE_ERR_LEN];
	__u64 n;
	int *dst;

	snprintf(what, sizeof(what), "--%s", o->name);
	if (o->id == OPT_ALSO_RATE) {
		if (e->also.given || e->also_off)
			return sluice_err(err, errlen, -EINVAL, "--also-rate is given twice");
		if (!strcmp(v, "off")) {
			e->also_off = true;
			return 0;
		}
		if (sluice_parse_rate(v, &e->also.rate, inner, sizeof(inner)))
			return sluice_err(err, errlen, -EINVAL, "--also-rate: %s (or 'off')",
					  inner);
		if (e->also.rate.is_bytes)
			return sluice_err(err, errlen, -EINVAL,
					  "--also-rate %s is a byte rate: the second key counts "
					  "packets (e.g. --also-rate 1000/s)",
					  v);
		e->also.given = true;
		e->also.text = v;
		return 0;
	}
	if (o->id == OPT_ALSO_BURST) {
		if (e->also.burst_given)
			return sluice_err(err, errlen, -EINVAL, "--also-burst is given twice");
		if (sluice_parse_uint(what, v, MAX_BURST, &n, err, errlen))
			return -EINVAL;
		if (!n)
			return sluice_err(err, errlen, -EINVAL,
					  "--also-burst is 0: it must be at least 1 (1 to %llu)",
					  MAX_BURST);
		e->also.burst = n;
		e->also.burst_given = true;
		return 0;
	}
	dst = o->id == OPT_ALSO_PREFIX4 ? &e->also_prefix4 :
	      o->id == OPT_ALSO_PREFIX6 ? &e->also_prefix6 :
					  &e->also_prefix;
	if (*dst >= 0)
		return sluice_err(err, errlen, -EINVAL, "%s is given twice", what);
	if (sluice_parse_uint(what, v, o->id == OPT_ALSO_PREFIX4 ? 32 : 128, &n, err, errlen))
		return -EINVAL;
	*dst = (int)n;
	return 0;
}

/* An option of a policy, o, with its value v (NULL for one that takes
 * none): used (the words it took), or -EINVAL. */
static int parse_policy_opt(struct edit *e, const struct opt *o, const char *arg, const char *v,
			    int used, char *err, size_t errlen)
{
	__u64 n;
	int ret;

	switch (o->id) {
	case OPT_RATE:
		return parse_rate_opt(e, v, err, errlen) ?: used;
	case OPT_BURST:
		return parse_burst_opt(e, v, err, errlen) ?: used;
	case OPT_DELAY:
	case OPT_NODELAY:
		return parse_delay_opt(e, o->id == OPT_DELAY ? v : NULL, err, errlen) ?: used;
	case OPT_ALGO:
		if (e->algo >= 0)
			return sluice_err(err, errlen, -EINVAL, "--algo is given twice");
		e->algo = sluice_parse_algo(v, err, errlen);
		return e->algo < 0 ? -EINVAL : used;
	case OPT_WINDOW:
		if (e->window_ns)
			return sluice_err(err, errlen, -EINVAL, "--window is given twice");
		ret = sluice_parse_duration("--window", v, &n, err, errlen);
		if (ret && ret != -ERANGE)
			return -EINVAL;
		if (ret || n < SLUICE_MIN_WINDOW_NS || n > SLUICE_MAX_WINDOW_NS)
			return sluice_err(err, errlen, -EINVAL,
					  "--window %s is out of range: give 100ms to 1h", v);
		e->window_ns = n;
		return used;
	case OPT_PENALTY:
		if (e->penalty_ds >= 0)
			return sluice_err(err, errlen, -EINVAL, "--penalty is given twice");
		if (!strcmp(v, "off") || !strcmp(v, "0")) {
			e->penalty_ds = 0;
			return used;
		}
		ret = sluice_parse_duration("--penalty", v, &n, err, errlen);
		if (ret && ret != -ERANGE)
			return -EINVAL;
		/* in tenths of a second, rounded up: never shorter than asked */
		if (!ret)
			n = (n + SLUICE_PENALTY_NS_PER_DS - 1) / SLUICE_PENALTY_NS_PER_DS;
		if (ret || !n || n > SLUICE_PENALTY_MAX_DS)
			return sluice_err(err, errlen, -EINVAL,
					  "--penalty %s is out of range: give 100ms to 19d, or off",
					  v);
		e->penalty_ds = (long)n;
		return used;
	case OPT_KEY:
		if (e->key_mode >= 0)
			return sluice_err(
				err, errlen, -EINVAL,
				"--key is given twice: give one of src, src,dport or flow");
		e->key_mode = sluice_parse_key_mode(v, err, errlen);
		return e->key_mode < 0 ? -EINVAL : used;
	case OPT_ALSO_RATE:
	case OPT_ALSO_BURST:
	case OPT_ALSO_PREFIX4:
	case OPT_ALSO_PREFIX6:
	case OPT_ALSO_PREFIX:
		return parse_also_opt(e, o, v, err, errlen) ?: used;
	case OPT_PREFIX4:
	case OPT_PREFIX6:
	case OPT_PREFIX: {
		int *dst = o->id == OPT_PREFIX4 ? &e->prefix4 :
			   o->id == OPT_PREFIX6 ? &e->prefix6 :
						  &e->prefix;
		char what[16];

		snprintf(what, sizeof(what), "--%s", o->name);
		if (*dst >= 0)
			return sluice_err(err, errlen, -EINVAL, "%s is given twice", what);
		if (sluice_parse_uint(what, v, o->id == OPT_PREFIX4 ? 32 : 128, &n, err, errlen))
			return -EINVAL;
		*dst = (int)n;
		return used;
	}
	case OPT_EXEMPT:
	case OPT_DENY:
		if (e->action >= 0)
			return sluice_err(err, errlen, -EINVAL,
					  "give one of --exempt and --deny, not both");
		e->action = o->id == OPT_EXEMPT ? SLUICE_ACT_EXEMPT : SLUICE_ACT_DENY;
		return used;
	case OPT_DRY_RUN:
	case OPT_FLEET:
	case OPT_NEW_KEYS:
	case OPT_FAIL_CLOSED:
		break;
	}
	return sluice_err(err, errlen, -EINVAL, "unknown option '%s'", arg);
}

/* An option of a rule's L4 match (match.h): the words it used, or -EINVAL. */
static int parse_match_opt(struct edit *e, int argc, char **argv, int i, char *err, size_t errlen)
{
	const char *eq = strchr(argv[i], '=');
	char opt[32];
	int used = 2;

	snprintf(opt, sizeof(opt), "%.*s", eq ? (int)(eq - argv[i]) : (int)strlen(argv[i]),
		 argv[i]);
	if (!eq && (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2)))
		return sluice_err(err, errlen, -EINVAL, "%s needs a value: %s", opt, help_of(e));
	if (!e->has_match)
		sluice_match_in_init(&e->match);
	e->has_match = true;
	if (sluice_match_opt(&e->match, opt, eq ? eq + 1 : argv[i + 1], err, errlen))
		return -EINVAL;
	return eq ? 1 : used;
}

static int parse_opt(struct edit *e, int argc, char **argv, int i, char *err, size_t errlen)
{
	const char *word = argv[i] + 2, *eq = strchr(word, '='), *v = NULL;
	size_t len = eq ? (size_t)(eq - word) : strlen(word);
	unsigned int k;
	int used = 1;
	char opt[32];

	snprintf(opt, sizeof(opt), "%.*s", (int)(len + 2), argv[i]);
	if ((e->op == EDIT_RULE_ADD || e->op == EDIT_RULE_DEL) && sluice_match_is_opt(opt))
		return parse_match_opt(e, argc, argv, i, err, errlen);

	for (k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
		if (strlen(opts[k].name) == len && !strncmp(opts[k].name, word, len))
			break;
	if (k == sizeof(opts) / sizeof(opts[0]) || !(opts[k].ops & (1U << e->op)))
		return sluice_err(err, errlen, -EINVAL, "unknown option '%s' for %s: %s", argv[i],
				  e->name, help_of(e));

	if (opts[k].id == OPT_DRY_RUN || opts[k].id == OPT_FLEET)
		return parse_onoff_opt(e, opts[k].id, argc, argv, i, eq, err, errlen);

	if (opts[k].has_arg) {
		if (eq) {
			v = eq + 1;
		} else {
			if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2))
				return sluice_err(err, errlen, -EINVAL, "--%s needs %s: %s",
						  opts[k].name,
						  opts[k].id == OPT_FAIL_CLOSED ? "'on' or 'off'" :
						  opts[k].id == OPT_NEW_KEYS ? "a rate or 'off'" :
									       "a value",
						  help_of(e));
			v = argv[i + 1];
			used = 2;
		}
	} else if (eq) {
		return sluice_err(err, errlen, -EINVAL, "--%s takes no value", opts[k].name);
	}
	if (opts[k].id == OPT_NEW_KEYS || opts[k].id == OPT_FAIL_CLOSED)
		return parse_setting(e, opts[k].id, v, err, errlen) ?: used;
	e->nr_policy_opts++;
	return parse_policy_opt(e, &opts[k], argv[i], v, used, err, errlen);
}

/*
 * The period a rate was written in (100/s: 1s, 30/m: 1m), which the default
 * window of the window algorithms follows: sluice_parse_rate() reduces 30/m
 * to 1 per 2s, and a 2s window allowing 1 is not what "30/m" asks for. For
 * a rate kept from the live policy the text is gone: then the shortest of
 * 1s, 1m, 1h that holds a whole number of packets.
 */
__u64 sluice_edit_period_ns(const struct rate_arg *r)
{
	static const struct {
		const char *suffix;
		__u64 ns;
	} units[] = {
		{ "/s", SLUICE_NS_PER_SEC },           { "/sec", SLUICE_NS_PER_SEC },
		{ "pps", SLUICE_NS_PER_SEC },          { "/m", 60 * SLUICE_NS_PER_SEC },
		{ "/min", 60 * SLUICE_NS_PER_SEC },    { "/h", 3600 * SLUICE_NS_PER_SEC },
		{ "/hour", 3600 * SLUICE_NS_PER_SEC },
	};
	size_t i, tl = r->text ? strlen(r->text) : 0;

	for (i = 0; i < sizeof(units) / sizeof(units[0]) && r->text; i++) {
		size_t sl = strlen(units[i].suffix);

		if (tl > sl && !strcmp(r->text + tl - sl, units[i].suffix))
			return units[i].ns;
	}
	for (i = 0; i < 3; i++) {
		__u64 ns = i == 0 ? SLUICE_NS_PER_SEC :
			   i == 1 ? 60 * SLUICE_NS_PER_SEC :
				    3600 * SLUICE_NS_PER_SEC;

		if ((unsigned __int128)r->rate.count * ns % r->rate.period_ns == 0)
			return ns;
	}
	return 0; /* sluice_window_set picks */
}

/* Check a rate and its burst as the bucket algorithms would use them. */
static int check_rate(const struct rate_arg *r, char *err, size_t errlen)
{
	struct sluice_limit l;
	char inner[SLUICE_ERR_LEN];
	__u64 burst = r->burst_given ? r->burst : 0;
	char dw[32];

	if (!r->given)
		return 0;
	if (sluice_edit_size_for_rate("--burst", r->burst_size, r, r->text, err, errlen) ||
	    sluice_edit_size_for_rate("--delay", r->delay_size, r, r->text, err, errlen))
		return -EINVAL;
	/* A shaper's --delay beyond its queue could never be reached. */
	if (r->delay_given && r->delay != SLUICE_NODELAY && r->burst_given && r->delay > r->burst)
		return sluice_err(err, errlen, -EINVAL,
				  "%s is more than --burst %llu of --rate %s: at most the queue "
				  "(--burst) can go at once; to send every accepted packet at once "
				  "use --nodelay",
				  sluice_delay_words(r->delay, dw, sizeof(dw)),
				  (unsigned long long)r->burst, r->text);
	if (r->rate.is_bytes && burst && burst < MIN_BYTE_BURST)
		return sluice_err(
			err, errlen, -EINVAL,
			"--burst %llu for the byte rate %s is smaller than one full %llu-byte "
			"frame, which then could never pass: use at least %llu (a byte "
			"rate's burst counts bytes)",
			(unsigned long long)burst, r->text, MIN_BYTE_BURST, MIN_BYTE_BURST);
	if (!r->burst_given)
		burst = sluice_default_burst(r->rate.count, r->rate.period_ns);
	else if (!burst)
		burst = 1; /* a shaper's 0: the rate alone is checked */
	if (sluice_limit_set(&l, r->rate.count, r->rate.period_ns, burst, inner, sizeof(inner)))
		return sluice_err(err, errlen, -EINVAL, "--rate %s: %s", r->text, inner);
	return 0;
}

/* The command's words: e->op and e->name, and the index of the word after
 * them; 0 for rule flush, which takes nothing after them. */
static int parse_command(int argc, char **argv, struct edit *e, char *err, size_t errlen)
{
	int i;

	if (argc < 1 || !argv[0])
		return sluice_err(err, errlen, -EINVAL,
				  "missing command: use set, rule add, rule del or rule flush");
	if (!strcmp(argv[0], "set")) {
		e->op = EDIT_SET;
		e->name = "set";
		i = 1;
	} else if (!strcmp(argv[0], "rule")) {
		if (argc < 2)
			return sluice_err(
				err, errlen, -EINVAL,
				"rule needs a command: rule add CIDR ..., rule del CIDR or "
				"rule flush");
		if (!strcmp(argv[1], "add")) {
			e->op = EDIT_RULE_ADD;
			e->name = "rule add";
		} else if (!strcmp(argv[1], "del")) {
			e->op = EDIT_RULE_DEL;
			e->name = "rule del";
		} else if (!strcmp(argv[1], "flush")) {
			/* Every rule: a word after it is a mistake, maybe a
			 * CIDR meant for rule del, never something to ignore. */
			if (argc > 2)
				return sluice_err(
					err, errlen, -EINVAL,
					"rule flush takes no arguments, not '%s': it removes "
					"every rule (to remove one: rule del CIDR)",
					argv[2]);
			e->op = EDIT_RULE_FLUSH;
			e->name = "rule flush";
			return 0;
		} else {
			return sluice_err(err, errlen, -EINVAL,
					  "unknown command 'rule %s': use rule add, rule del or "
					  "rule flush",
					  argv[1]);
		}
		i = 2;
	} else {
		return sluice_err(err, errlen, -EINVAL,
				  "unknown editing command '%s': use set, rule add, rule del or "
				  "rule flush",
				  argv[0]);
	}
	return i;
}

/* The checks of rule add: <0 a refusal, 1 a complete exempt or deny rule,
 * 0 a limit for the checks every policy gets. */
static int check_rule_add(const struct edit *e, char *err, size_t errlen)
{
	if (!e->have_cidr)
		return sluice_err(err, errlen, -EINVAL,
				  "rule add needs a CIDR: rule add 198.18.0.0/15 --rate 100/s");
	if (e->action >= 0) {
		if (e->key_mode >= 0)
			return sluice_err(err, errlen, -EINVAL,
					  "--%s takes no --key: its sources keep no state to key",
					  e->action == SLUICE_ACT_EXEMPT ? "exempt" : "deny");
		if (e->pkt.given || e->bytes.given || sluice_edit_burst_given(e) || e->algo >= 0 ||
		    e->window_ns || e->prefix >= 0 || sluice_edit_delay_given(e) ||
		    e->penalty_ds >= 0 || sluice_edit_also_given(e))
			return sluice_err(
				err, errlen, -EINVAL,
				"--%s takes no --rate, --burst, --delay, --algo, --window, "
				"--prefix, --penalty or --also-*: its sources are %s",
				e->action == SLUICE_ACT_EXEMPT ? "exempt" : "deny",
				e->action == SLUICE_ACT_EXEMPT ? "never limited" :
								 "always dropped");
		/* --deny --dry-run counts what it would drop; an exempt
		 * rule drops nothing, so there is nothing to try. */
		if (e->fleet > 0)
			return sluice_err(err, errlen, -EINVAL,
					  "--%s takes no --fleet: only a limit can be shared by a "
					  "fleet",
					  e->action == SLUICE_ACT_EXEMPT ? "exempt" : "deny");
		if (e->action == SLUICE_ACT_EXEMPT && e->dry_run > 0)
			return sluice_err(err, errlen, -EINVAL,
					  "--exempt takes no --dry-run: an exempt rule never "
					  "drops, so there is nothing to try out; leave "
					  "--dry-run out");
		return 1;
	}
	if (!e->pkt.given && !e->bytes.given)
		return sluice_err(err, errlen, -EINVAL,
				  "rule add %s needs --rate RATE, --exempt or --deny",
				  e->cidr_text);
	if (e->prefix > (e->cidr.family == 4 ? 32 : 128))
		return sluice_err(err, errlen, -EINVAL,
				  "--prefix %d is out of range for the IPv%u rule %s: 1 to %u",
				  e->prefix, e->cidr.family, e->cidr_text,
				  e->cidr.family == 4 ? 32 : 128);
	/* A key wider than the rule would hold sources the rule does
	 * not match: its bucket would mean nothing anyone asked for. */
	if (e->also_prefix >= 0 && (e->also_prefix4 >= 0 || e->also_prefix6 >= 0))
		return sluice_err(err, errlen, -EINVAL,
				  "give --also-prefix (for the rule's family) or --also-prefix4/6, "
				  "not both");
	if (e->also_prefix > (e->cidr.family == 4 ? 32 : 128))
		return sluice_err(
			err, errlen, -EINVAL,
			"--also-prefix %d is out of range for the IPv%u rule %s: 0 to %u (and shorter than the key)",
			e->also_prefix, e->cidr.family, e->cidr_text,
			e->cidr.family == 4 ? 32 : 128);
	if (e->prefix >= 0 && e->prefix < e->cidr.prefixlen)
		return sluice_err(err, errlen, -EINVAL,
				  "--prefix %d is shorter than the rule %s itself (/%u): give "
				  "--prefix %u to %u (one bucket for the whole rule is --prefix "
				  "%u), or a rule as wide as /%d",
				  e->prefix, e->cidr_text, e->cidr.prefixlen, e->cidr.prefixlen,
				  e->cidr.family == 4 ? 32 : 128, e->cidr.prefixlen, e->prefix);
	return 0;
}

/* A rule's L4 match, once every option is read: the combination, and what
 * the rule's own family and policy allow. */
static int check_match(struct edit *e, char *err, size_t errlen)
{
	const struct sluice_match *m = &e->match.m;

	if (sluice_match_finish(&e->match, err, errlen))
		return -EINVAL;
	if (!e->have_cidr)
		return 0; /* check_op() says what is missing */
	if ((m->has & SLUICE_MATCH_PROTO) && e->cidr.family == 6 && m->proto == SLUICE_IPPROTO_ICMP)
		return sluice_err(err, errlen, -EINVAL,
				  "--proto icmp never matches the IPv6 rule %s: IPv6 carries "
				  "ICMPv6, --proto icmpv6",
				  e->cidr_text);
	if ((m->has & SLUICE_MATCH_PROTO) && e->cidr.family == 4 &&
	    m->proto == SLUICE_IPPROTO_ICMPV6)
		return sluice_err(err, errlen, -EINVAL,
				  "--proto icmpv6 never matches the IPv4 rule %s: IPv4 carries "
				  "ICMP, --proto icmp",
				  e->cidr_text);
	if ((m->has & SLUICE_MATCH_DST) && m->dst_family != e->cidr.family)
		return sluice_err(err, errlen, -EINVAL,
				  "--dst is IPv%u and the rule %s IPv%u: a packet has both of one "
				  "family, so it never matches",
				  m->dst_family, e->cidr_text, e->cidr.family);
	return 0;
}

/* What each command needs: <0 a refusal, 1 an edit complete as it is, 0 one
 * with a policy for the checks of its algorithm and rates. */
static int check_op(const struct edit *e, char *err, size_t errlen)
{
	switch (e->op) {
	case EDIT_SET:
		if (!e->nr_policy_opts && e->dry_run < 0 && e->fail_closed < 0 &&
		    !e->new_keys_given)
			return sluice_err(
				err, errlen, -EINVAL,
				"set needs something to change: --rate, --burst, --delay, "
				"--nodelay, --algo, --window, --prefix4, --prefix6, --key, "
				"--fleet, --penalty, --also-rate, --also-burst, --also-prefix4, "
				"--also-prefix6, --dry-run, --new-keys or --fail-closed");
		break;
	case EDIT_RULE_FLUSH:
		return 1;
	case EDIT_RULE_DEL:
		if (!e->have_cidr)
			return sluice_err(err, errlen, -EINVAL,
					  "rule del needs a CIDR: rule del 198.18.0.0/15");
		return 1;
	case EDIT_RULE_ADD:
		return check_rule_add(e, err, errlen);
	}
	return 0;
}

/* The algorithm against the rates, burst, delay and window given. */
static int check_algo(const struct edit *e, char *err, size_t errlen)
{
	/* What the policy keeps (its algorithm, fleet flag) is checked
	 * against a key given alone by sluice_policy_check(). */
	if (e->key_mode > SLUICE_KEY_SRC && e->algo == SLUICE_ALGO_SLIDING_LOG)
		return sluice_err(err, errlen, -EINVAL,
				  "--key %s with --algo sliding-log: the sliding log keeps its "
				  "timestamps per source only; use another --algo "
				  "(sliding-window keeps a count per key), or --key src",
				  sluice_key_mode_name((unsigned int)e->key_mode));
	if (e->key_mode > SLUICE_KEY_SRC && e->fleet > 0)
		return sluice_err(err, errlen, -EINVAL,
				  "--key %s with --fleet: a fleet-wide limit is shared per "
				  "source only (not yet per %s); use --key src, or --fleet off",
				  sluice_key_mode_name((unsigned int)e->key_mode),
				  sluice_key_mode_name((unsigned int)e->key_mode));
	if (e->also_off && (e->also.burst_given || e->also_prefix4 >= 0 || e->also_prefix6 >= 0 ||
			    e->also_prefix >= 0))
		return sluice_err(err, errlen, -EINVAL,
				  "--also-rate off removes the second key: it takes no "
				  "--also-burst or --also-prefix");
	if (sluice_edit_also_given(e) && !e->also_off && e->algo >= 0 &&
	    e->algo > SLUICE_ALGO_LEAKY_BUCKET)
		return sluice_err(err, errlen, -EINVAL,
				  "--algo %s with a second key (--also-rate): the second key "
				  "gives a packet's charge back when it refuses it, which only "
				  "token-bucket and leaky-bucket do",
				  sluice_algo_name(e->algo));
	if (e->algo >= 0 && sluice_algo_is_window(e->algo)) {
		if (e->bytes.given)
			return sluice_err(
				err, errlen, -EINVAL,
				"%s counts packets: the byte rate %s needs token-bucket or "
				"leaky-bucket",
				sluice_algo_name(e->algo), e->bytes.text);
		if (sluice_edit_burst_given(e))
			return sluice_err(
				err, errlen, -EINVAL,
				"%s has no --burst: it admits the rate's count per --window "
				"(leave --burst out, or use token-bucket)",
				sluice_algo_name(e->algo));
		if (sluice_edit_delay_given(e))
			return sluice_err(
				err, errlen, -EINVAL,
				"%s on a shaper is a meter (its excess is dropped, nothing "
				"waits), so it takes no %s: use token-bucket or leaky-bucket "
				"to delay",
				sluice_algo_name(e->algo), e->delay_text);
	}
	if (e->algo >= 0 && !sluice_algo_is_window(e->algo) && e->window_ns)
		return sluice_err(
			err, errlen, -EINVAL,
			"--window applies to sliding-window, fixed-window and sliding-log, "
			"not to %s (whose burst is --burst)",
			sluice_algo_name(e->algo));
	return 0;
}

int sluice_edit_parse(int argc, char **argv, struct edit *e, char *err, size_t errlen)
{
	int i, ret;

	memset(e, 0, sizeof(*e));
	e->algo = e->prefix4 = e->prefix6 = e->prefix = e->dry_run = e->action = -1;
	e->fleet = -1;
	e->penalty_ds = -1;
	e->key_mode = -1;
	e->also_prefix4 = e->also_prefix6 = e->also_prefix = -1;
	e->fail_closed = -1;
	i = parse_command(argc, argv, e, err, errlen);
	if (i <= 0)
		return i;
	while (i < argc) {
		const char *a = argv[i];

		if (!strncmp(a, "--", 2) && a[2]) {
			ret = parse_opt(e, argc, argv, i, err, errlen);
			if (ret < 0)
				return ret;
			i += ret;
			continue;
		}
		if (a[0] == '-')
			return sluice_err(err, errlen, -EINVAL, "unknown option '%s' for %s: %s", a,
					  e->name, help_of(e));
		if (e->op == EDIT_SET)
			return sluice_err(err, errlen, -EINVAL,
					  "unexpected argument '%s' to set: %s", a, help_of(e));
		if (e->have_cidr)
			return sluice_err(err, errlen, -EINVAL,
					  "unexpected argument '%s': %s takes one CIDR", a,
					  e->name);
		if (sluice_parse_cidr(a, &e->cidr, err, errlen))
			return -EINVAL;
		e->have_cidr = true;
		e->cidr_text = a;
		i++;
	}

	if (e->has_match) {
		ret = check_match(e, err, errlen);
		if (ret)
			return ret;
	}
	ret = check_op(e, err, errlen);
	if (ret)
		return ret < 0 ? ret : 0;
	ret = check_algo(e, err, errlen);
	if (!ret)
		ret = check_rate(&e->pkt, err, errlen);
	if (!ret)
		ret = check_rate(&e->bytes, err, errlen);
	return ret;
}
