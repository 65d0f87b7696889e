// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The options of sluice attach, sluice shape attach and sluice run: one
 * table, in which each option names the commands that take it and how its
 * value is read; getopt_long() reads the words, this file the table.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmd.h"
#include "opts.h"

/* Largest --max-keys: the kernel refuses larger hash tables anyway, and a
 * table this size already holds tens of GiB. */
#define MAX_KEYS_LIMIT (1ULL << 31)
/* Largest --max-rules: 4M rules are 570 MB of rule table. */
#define MAX_RULES_LIMIT (1ULL << 22)
#define MIN_INTERVAL_NS (100ULL * 1000000ULL)
#define MAX_INTERVAL_NS (3600ULL * SLUICE_NS_PER_SEC)
/* A shaper's fq horizon is a u32 of microseconds (about 71 minutes). */
#define MAX_HORIZON_NS (0xffffffffULL * 1000ULL)
/* --queue-limit: fq's packet limit is a u32; 16M packets is already GiBs. */
#define MAX_QUEUE_LIMIT (1ULL << 24)

#define LIMITER (OPTS_ATTACH | OPTS_RUN)
#define ALL (OPTS_ATTACH | OPTS_RUN | OPTS_SHAPE)

/* One parse: the command, where the values go, what was seen. */
struct opt_parse {
	enum opts_cmd cmd;
	const char *name; /* "attach", "run", "shape attach" */
	struct attach_opts *o;
	struct run_opts *r; /* OPTS_RUN only */
	const struct attach_opt *delay_seen; /* --delay or --nodelay, since the last --rate */
	const struct attach_opt *fail_seen; /* --fail-closed or --fail-open */
};

struct attach_opt {
	const char *name; /* without the "--" */
	int has_arg;
	unsigned int cmds; /* the enum opts_cmd that take it */
	/* given more than once: the set command checks it (a --rate of each
	 * kind, a --burst or --delay after each) or the parser does */
	bool multi;
	/* a limiter's option given to sluice shape attach: why it is not the
	 * shaper's */
	const char *why;
	int (*parse)(struct opt_parse *p, const struct attach_opt *opt, const char *arg);
	int arg; /* the parser's: FLEET_OPT_*, or which of several */
};

/* " (lower case: 'skb')" when word is a or b in another case, else "". */
static const char *lower_hint(const char *word, const char *a, const char *b)
{
	static char buf[48];
	const char *const names[] = { a, b };
	const char *l = sluice_case_hint(word, names, 2);

	if (!l)
		return "";
	snprintf(buf, sizeof(buf), " (words are lower case: '%s')", l);
	return buf;
}

/* Forward an option to the "set" command, in the order given: a --burst
 * belongs to the --rate before it. */
static int set_arg(struct opt_parse *p, const char *opt, const char *val)
{
	struct attach_opts *o = p->o;

	if (o->set_argc + 3 > SET_ARGV_MAX)
		return sluice_cli_usage(p->name, "too many policy options: give each at most "
						 "twice");
	o->set_argv[o->set_argc++] = (char *)opt;
	o->set_argv[o->set_argc++] = (char *)val;
	o->set_argv[o->set_argc] = NULL;
	return 0;
}

/* The policy options and --new-keys: checked and applied by the set
 * command (settings that sluicectl set changes live). */
static int opt_policy(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	static char *const names[] = { "--rate",    "--burst",   "--algo",    "--window",
				       "--prefix4", "--prefix6", "--new-keys" };

	if (set_arg(p, names[opt->arg], arg))
		return SLUICE_EXIT_USAGE;
	if (opt->arg == 0) /* --rate */
		p->delay_seen = NULL;
	return 0;
}

static int opt_mode(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	struct xdp_opts *x = &p->o->xdp;

	(void)opt;
	if (!strcmp(arg, "native"))
		x->mode = XDP_MODE_NATIVE;
	else if (!strcmp(arg, "skb"))
		x->mode = XDP_MODE_SKB;
	else
		return sluice_cli_usage(p->name, "--mode takes 'native' or 'skb', not '%s'%s", arg,
					lower_hint(arg, "native", "skb"));
	x->mode_given = true;
	return 0;
}

/* --max-keys, --max-log-keys, --fleet-keys, --max-flows */
static int opt_keys(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	__u64 *dst[] = { &p->o->max_keys, &p->o->max_log_keys, &p->o->fleet_keys,
			 &p->o->max_flows };
	char err[SLUICE_ERR_LEN], name[32];
	__u64 v;

	snprintf(name, sizeof(name), "--%s", opt->name);
	if (sluice_parse_uint(name, arg, MAX_KEYS_LIMIT, &v, err, sizeof(err)))
		return sluice_cli_usage(p->name, "%s", err);
	if (dst[opt->arg] == &p->o->fleet_keys && !v)
		return sluice_cli_usage(p->name, "--fleet-keys 0: give at least 1 (default %u)",
					SLUICE_DEFAULT_FLEET_KEYS);
	if (dst[opt->arg] == &p->o->max_flows && v < SLUICE_MIN_FLOWS)
		return sluice_cli_usage(p->name,
					"--max-flows %llu: give at least %u (wide keys are off "
					"without the option)",
					(unsigned long long)v, SLUICE_MIN_FLOWS);
	*dst[opt->arg] = v;
	return 0;
}

static int opt_max_rules(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	char err[SLUICE_ERR_LEN];
	__u64 v;

	(void)opt;
	if (sluice_parse_uint("--max-rules", arg, MAX_RULES_LIMIT, &v, err, sizeof(err)))
		return sluice_cli_usage(p->name, "%s", err);
	if (!v)
		return sluice_cli_usage(p->name, "--max-rules 0: give at least 1 (default %u)",
					SLUICE_DEFAULT_MAX_RULES);
	p->o->max_rules = v;
	return 0;
}

/* --fail-closed, --fail-open: two of them name both, not "--fail-closed
 * twice". */
static int opt_fail(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	(void)arg;
	if (p->fail_seen && p->fail_seen != opt)
		return sluice_cli_usage(p->name, "--fail-closed and --fail-open exclude each "
						 "other: give one of them");
	if (p->fail_seen)
		return sluice_cli_usage(p->name, "--%s is given twice", opt->name);
	p->fail_seen = opt;
	if (set_arg(p, "--fail-closed", opt->arg ? "on" : "off"))
		return SLUICE_EXIT_USAGE;
	return 0;
}

static int opt_config(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	(void)opt;
	p->o->config = arg;
	return 0;
}

/* --resume, --fresh */
static int opt_resume(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	(void)arg;
	if (opt->arg)
		p->o->fresh = true;
	else
		p->o->resume = true;
	return 0;
}

static int opt_table(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	(void)opt;
	if (!strcmp(arg, "lru"))
		p->o->table = ATTACH_TABLE_LRU;
	else if (!strcmp(arg, "sets"))
		p->o->table = ATTACH_TABLE_SETS;
	else
		return sluice_cli_usage(p->name,
					"--table takes 'sets' (the set-associative table, "
					"the default) or 'lru' (an LRU hash), not '%s'%s",
					arg, lower_hint(arg, "sets", "lru"));
	return 0;
}

static int opt_interval(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	char err[SLUICE_ERR_LEN];
	__u64 *ns = &p->r->interval_ns;
	int ret;

	(void)opt;
	ret = sluice_parse_duration("--interval", arg, ns, err, sizeof(err));
	if (ret && ret != -ERANGE)
		return sluice_cli_usage(p->name, "%s", err);
	if (ret || *ns < MIN_INTERVAL_NS || *ns > MAX_INTERVAL_NS)
		return sluice_cli_usage(p->name,
					"--interval '%s' is out of range: give 100ms to "
					"1h (a report every DUR; 1.5s and 250ms work)",
					arg);
	return 0;
}

/* --metrics, --metrics-allow, --metrics-group */
static int opt_metrics(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	const char **dst[] = { &p->r->metrics, &p->r->metrics_allow, &p->r->metrics_group };

	*dst[opt->arg] = arg;
	return 0;
}

static int opt_keep_state(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	(void)opt;
	(void)arg;
	p->r->keep_state = true;
	return 0;
}

static int opt_fleet(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	char err[SLUICE_ERR_LEN];

	if (fleet_parse_opt(opt->arg, arg, &p->r->fleet, err, sizeof(err)))
		return sluice_cli_usage(p->name, "%s", err);
	return 0;
}

/* --delay, --nodelay: checked and applied by the set command, as the
 * policy options: --delay belongs to the --rate before it. */
static int opt_delay(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	if (p->delay_seen && p->delay_seen != opt)
		return sluice_cli_usage(p->name,
					"--nodelay and --delay exclude each other (of one "
					"--rate): --nodelay sends every accepted packet at once");
	p->delay_seen = opt;
	if (opt->has_arg ? set_arg(p, "--delay", arg) : set_arg(p, "--nodelay", NULL))
		return SLUICE_EXIT_USAGE;
	if (!opt->has_arg)
		p->o->set_argc--; /* a flag: no value */
	return 0;
}

static int opt_key(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	struct shape_opts *s = &p->o->shape;

	(void)opt;
	if (!strcmp(arg, "src"))
		s->key_kind = 0;
	else if (!strcmp(arg, "dst"))
		s->key_kind = SLUICE_KIND_KEY_DST;
	else
		return sluice_cli_usage(p->name,
					"--key takes 'src' (the source address, the "
					"default) or 'dst' (the destination), not '%s'%s",
					arg, lower_hint(arg, "src", "dst"));
	s->key_given = true;
	return 0;
}

static int opt_horizon(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	struct shape_opts *s = &p->o->shape;
	char err[SLUICE_ERR_LEN];

	(void)opt;
	if (sluice_parse_duration("--horizon", arg, &s->horizon_ns, err, sizeof(err)))
		return sluice_cli_usage(p->name, "%s", err);
	if (s->horizon_ns < 1000ULL || s->horizon_ns > MAX_HORIZON_NS)
		return sluice_cli_usage(p->name,
					"--horizon '%s' is out of range: give 1us to 71m "
					"(fq counts it in microseconds, a u32), or leave it out "
					"for the longest queue of the policies x 1.25",
					arg);
	return 0;
}

static int opt_queue_limit(struct opt_parse *p, const struct attach_opt *opt, const char *arg)
{
	struct shape_opts *s = &p->o->shape;
	char err[SLUICE_ERR_LEN];

	(void)opt;
	if (sluice_parse_uint("--queue-limit", arg, MAX_QUEUE_LIMIT, &s->queue_limit, err,
			      sizeof(err)))
		return sluice_cli_usage(p->name, "%s", err);
	if (!s->queue_limit)
		return sluice_cli_usage(p->name, "--queue-limit 0: give at least the largest burst "
						 "+ 1 packets, or leave it out (sluice(8))");
	return 0;
}

static const struct attach_opt attach_opts_table[] = {
	{ "mode", required_argument, LIMITER, false, "a shaper runs at tc egress, not at XDP",
	  opt_mode, 0 },
	{ "rate", required_argument, ALL, true, NULL, opt_policy, 0 },
	{ "burst", required_argument, ALL, true, NULL, opt_policy, 1 },
	{ "algo", required_argument, ALL, true, NULL, opt_policy, 2 },
	{ "window", required_argument, ALL, true, NULL, opt_policy, 3 },
	{ "prefix4", required_argument, ALL, true, NULL, opt_policy, 4 },
	{ "prefix6", required_argument, ALL, true, NULL, opt_policy, 5 },
	{ "max-keys", required_argument, ALL, false, NULL, opt_keys, 0 },
	{ "max-log-keys", required_argument, ALL, false, NULL, opt_keys, 1 },
	{ "max-flows", required_argument, ALL, false, NULL, opt_keys, 3 },
	{ "max-rules", required_argument, ALL, false, NULL, opt_max_rules, 0 },
	{ "fleet-keys", required_argument, LIMITER, false,
	  "fleet-wide limits are synced by 'sluice run --redis' on a limiter", opt_keys, 2 },
	{ "new-keys", required_argument, ALL, true, NULL, opt_policy, 6 },
	{ "fail-closed", no_argument, ALL, true, NULL, opt_fail, 1 },
	{ "fail-open", no_argument, ALL, true, NULL, opt_fail, 0 },
	{ "config", required_argument, ALL, false, NULL, opt_config, 0 },
	{ "interval", required_argument, OPTS_RUN, false, NULL, opt_interval, 0 },
	{ "metrics", required_argument, OPTS_RUN, false, NULL, opt_metrics, 0 },
	{ "metrics-allow", required_argument, OPTS_RUN, false, NULL, opt_metrics, 1 },
	{ "metrics-group", required_argument, OPTS_RUN, false, NULL, opt_metrics, 2 },
	{ "keep-state", no_argument, OPTS_RUN, false, NULL, opt_keep_state, 0 },
	{ "resume", no_argument, ALL, false, NULL, opt_resume, 0 },
	{ "fresh", no_argument, ALL, false, NULL, opt_resume, 1 },
	{ "delay", required_argument, OPTS_SHAPE, true, NULL, opt_delay, 0 },
	{ "nodelay", no_argument, OPTS_SHAPE, true, NULL, opt_delay, 0 },
	{ "key", required_argument, OPTS_SHAPE, false, NULL, opt_key, 0 },
	{ "horizon", required_argument, OPTS_SHAPE, false, NULL, opt_horizon, 0 },
	{ "queue-limit", required_argument, OPTS_SHAPE, false, NULL, opt_queue_limit, 0 },
	{ "table", required_argument, ALL, false, NULL, opt_table, 0 },
	{ "redis", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_REDIS },
	{ "fleet", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_FLEET },
	{ "redis-password-file", required_argument, OPTS_RUN, false, NULL, opt_fleet,
	  FLEET_OPT_PASSWORD },
	{ "fleet-member", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_MEMBER },
	{ "sync-interval", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_SYNC },
	{ "redis-timeout", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_TIMEOUT },
	{ "sync-keys", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_KEYS },
	{ "redis-batch", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_BATCH },
	{ "fleet-size", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_SIZE },
	{ "fleet-max", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_MAX },
	{ "sync-threshold", required_argument, OPTS_RUN, false, NULL, opt_fleet,
	  FLEET_OPT_THRESHOLD },
	{ "sync-max-age", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_MAX_AGE },
	{ "redis-sentinel", required_argument, OPTS_RUN, false, NULL, opt_fleet,
	  FLEET_OPT_SENTINEL },
	{ "redis-master", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_MASTER },
	{ "redis-cluster", required_argument, OPTS_RUN, false, NULL, opt_fleet, FLEET_OPT_CLUSTER },
};
#define NR_OPTS (sizeof(attach_opts_table) / sizeof(attach_opts_table[0]))
/* getopt_long()'s value of attach_opts_table[i] */
#define OPT_FIRST 256

/* An option that cmd does not take, refused in words that say whose it is. */
static int not_this_cmd(const struct opt_parse *p, const struct attach_opt *opt)
{
	char name[32];

	snprintf(name, sizeof(name), "--%s", opt->name);
	if (opt->cmds == OPTS_RUN)
		return sluice_cli_usage(p->name,
					"%s is an option of 'sluice run', not of 'sluice "
					"%s'",
					name, p->name);
	if (opt->cmds == OPTS_SHAPE)
		return sluice_cli_usage(p->name,
					"%s is an option of 'sluice shape attach' (the "
					"shaper), not of 'sluice %s'",
					name, p->name);
	return sluice_cli_usage(p->name,
				"%s is the limiter's ('sluice attach'), not the shaper's: "
				"%s",
				name, opt->why);
}

int refuse_shape_name(const char *cmd, const char *name)
{
	size_t plen = strlen(SLUICE_SHAPE_PREFIX);

	if (strncmp(name, SLUICE_SHAPE_PREFIX, plen))
		return 0;
	return sluice_cli_usage(cmd,
				"'%s' is a shaper's state: 'sluice %s' is the limiter's; a "
				"shaper is attached with 'sluice shape attach %s', shown with "
				"'sluice shape status', tuned with 'sluicectl -i %s'",
				name, cmd, name + plen, name);
}

bool valid_ifname(const char *name)
{
	size_t len = strlen(name);

	/* The kernel refuses ':' too (and shape:IFACE names a shaper's state). */
	return len && len < IF_NAMESIZE && !strchr(name, '/') && !strchr(name, ':') &&
	       strcmp(name, ".") && strcmp(name, "..");
}

/*
 * getopt_long() takes any unique prefix of a long option ("--fr" for
 * --fresh, which drops the pinned state): sluice takes an option only by its
 * full name, as sluicectl's editing commands do, so that a shortened word
 * never means more than was written. The word is argv[optind - 1], or the
 * one before it when that is the option's separate value.
 */
static bool full_name(const char *cmd, int argc, char **argv, const struct option *opt)
{
	const char *word = optind - 1 < argc ? argv[optind - 1] : NULL;
	size_t len;

	if (word && optarg == word && optind >= 2)
		word = argv[optind - 2];
	if (!word || strncmp(word, "--", 2))
		return true;
	len = strcspn(word + 2, "=");
	if (len == strlen(opt->name) && !strncmp(word + 2, opt->name, len))
		return true;
	sluice_cli_usage(cmd,
			 "'%.*s' is short for '--%s': write options in full (sluice takes no "
			 "abbreviations)",
			 (int)(len + 2), word, opt->name);
	return false;
}

/* getopt_long()'s table of attach_opts_table, then --help and --verbose. */
static const struct option *long_options(void)
{
	static struct option longs[NR_OPTS + 3];
	size_t i;

	if (longs[0].name)
		return longs;
	for (i = 0; i < NR_OPTS; i++)
		longs[i] = (struct option){ attach_opts_table[i].name, attach_opts_table[i].has_arg,
					    NULL, OPT_FIRST + (int)i };
	longs[NR_OPTS] = (struct option){ "help", no_argument, NULL, 'h' };
	longs[NR_OPTS + 1] = (struct option){ "verbose", no_argument, NULL, 'v' };
	return longs;
}

/* One option: given once (but for those the set command checks), taken by
 * this command, and its value. */
static int take_opt(struct opt_parse *p, const struct attach_opt *opt, const char *arg,
		    const char **first)
{
	/* A second --mode is refused as a second --rate is, never taken
	 * unsaid. */
	if (!opt->multi) {
		if (*first)
			return sluice_cli_usage(p->name,
						"--%s is given twice%s%s%s%s%s: give it "
						"once",
						opt->name, arg ? " ('" : "", arg ? *first : "",
						arg ? "' and '" : "", arg ? arg : "",
						arg ? "')" : "");
		*first = arg ? arg : "";
	}
	if (!(opt->cmds & p->cmd))
		return not_this_cmd(p, opt);
	return opt->parse(p, opt, arg);
}

/* After every option: what they say together. */
static int check_together(struct opt_parse *p)
{
	struct attach_opts *o = p->o;
	struct run_opts *r = p->r;
	char err[SLUICE_ERR_LEN];

	if (r && fleet_check_opts(&r->fleet, err, sizeof(err)))
		return sluice_cli_usage(p->name, "%s", err);
	if (r && (r->metrics_allow || r->metrics_group) && !r->metrics)
		return sluice_cli_usage(p->name,
					"%s says who may read --metrics: give --metrics "
					"ADDR:PORT or unix:PATH too",
					r->metrics_allow ? "--metrics-allow" : "--metrics-group");
	if (o->resume && o->fresh)
		return sluice_cli_usage(p->name,
					"--resume and --fresh exclude each other: "
					"--resume adopts the pinned state, --fresh drops it");
	/* Bad policy values are usage errors before anything looks at IFACE. */
	if (o->set_argc > 1 &&
	    sluice_cmd_check_kind(o->set_argc, o->set_argv, p->cmd == OPTS_SHAPE, err, sizeof(err)))
		return sluice_cli_usage(p->name, "%s", err);
	return 0;
}

/* The one IFACE, after the options. */
static int take_iface(struct opt_parse *p, int argc, char **argv)
{
	const char *cmd = p->name;

	if (optind >= argc)
		return sluice_cli_usage(cmd,
					"missing IFACE: say which interface, e.g. 'sluice %s "
					"eth0'",
					cmd);
	if (optind + 1 < argc)
		return sluice_cli_usage(cmd, "one interface at a time: '%s' is extra",
					argv[optind + 1]);
	if (sluice_is_help(argv[optind]))
		return -1;
	if (refuse_shape_name(cmd, argv[optind]))
		return SLUICE_EXIT_USAGE;
	if (!valid_ifname(argv[optind]))
		return sluice_cli_usage(cmd,
					"'%s' is not an interface name (at most %d "
					"characters, no '/' or ':')",
					argv[optind], IF_NAMESIZE - 1);
	strcpy(p->o->ifname, argv[optind]);
	snprintf(p->o->name, sizeof(p->o->name), "%s%s",
		 p->cmd == OPTS_SHAPE ? SLUICE_SHAPE_PREFIX : "", p->o->ifname);
	return 0;
}

int parse_attach_opts(enum opts_cmd cmd, int argc, char **argv, struct attach_opts *o,
		      struct run_opts *r)
{
	struct opt_parse p = { .cmd = cmd, .o = o, .r = cmd == OPTS_RUN ? r : NULL };
	const struct option *longs = long_options();
	const char *seen[NR_OPTS] = { NULL };
	int c, ret, longindex = -1;

	p.name = cmd == OPTS_RUN ? "run" : cmd == OPTS_SHAPE ? "shape attach" : "attach";
	if (p.r) {
		memset(p.r, 0, sizeof(*p.r));
		p.r->interval_ns = SLUICE_NS_PER_SEC;
	}
	memset(o, 0, sizeof(*o));
	o->xdp.mode = XDP_MODE_NATIVE;
	o->set_argv[o->set_argc++] = "set";
	if (argc >= 2 && sluice_is_help(argv[1]))
		return -1;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hv", longs, &longindex)) != -1) {
		if (longindex >= 0 && !full_name(p.name, argc, argv, &longs[longindex]))
			return SLUICE_EXIT_USAGE;
		longindex = -1;
		if (c >= OPT_FIRST && c < OPT_FIRST + (int)NR_OPTS) {
			ret = take_opt(&p, &attach_opts_table[c - OPT_FIRST], optarg,
				       &seen[c - OPT_FIRST]);
			if (ret)
				return ret;
			continue;
		}
		switch (c) {
		case 'h':
			return -1;
		case 'v':
			set_verbose();
			break;
		case ':':
			return sluice_cli_usage(p.name, "option '%s' needs a value",
						argv[optind - 1]);
		case '?':
		default:
			if (optopt && c == '?')
				return sluice_cli_usage(p.name, "unknown option '-%c'", optopt);
			return sluice_cli_usage(p.name, "unknown option '%s' for 'sluice %s'",
						argv[optind - 1], p.name);
		}
	}
	ret = check_together(&p);
	if (ret)
		return ret;
	return take_iface(&p, argc, argv);
}
