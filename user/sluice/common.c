// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* What the loader's commands share: attach options, finding sluice on an
 * interface, pins, and a policy in words. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cmd.h"
#include "loader.h"

/*
 * Every pinned map, from the registry (<sluice/maps.h>). One added in a
 * later layout than the oldest is `added_later`: attach creates and pins it
 * in an existing state that lacks it (keeping every other map) instead of
 * calling the state incomplete, and readers (sluice_open()) do without it.
 */
const struct sluice_map_spec sluice_maps[] = {
#define MAP_SPEC(name, layout, fd) { name, SLUICE_MAP_ADDED_LATER(layout) },
	SLUICE_MAPS(MAP_SPEC)
#undef MAP_SPEC
};
const size_t sluice_nr_maps = sizeof(sluice_maps) / sizeof(sluice_maps[0]);
_Static_assert(sizeof(sluice_maps) / sizeof(sluice_maps[0]) <= SLUICE_MAX_MAPS,
	       "SLUICE_MAX_MAPS holds every map");

/* Largest --max-keys: the kernel refuses larger hash tables anyway, and a
 * table this size already holds tens of GiB. */
#define MAX_KEYS_LIMIT (1ULL << 31)
/* Largest --max-rules: 4M rules are 570 MB of rule table. */
#define MAX_RULES_LIMIT (1ULL << 22)
#define MIN_INTERVAL_NS (100ULL * 1000000ULL)
#define MAX_INTERVAL_NS (3600ULL * SLUICE_NS_PER_SEC)

enum {
	OPT_MODE = 256,
	OPT_RATE, /* OPT_RATE to OPT_PREFIX6: as policy_opts[] */
	OPT_BURST,
	OPT_ALGO,
	OPT_WINDOW,
	OPT_PREFIX4,
	OPT_PREFIX6,
	OPT_MAX_KEYS,
	OPT_MAX_LOG_KEYS,
	OPT_MAX_RULES,
	OPT_FLEET_KEYS,
	OPT_NEW_KEYS,
	OPT_FAIL_CLOSED,
	OPT_FAIL_OPEN,
	OPT_CONFIG,
	OPT_INTERVAL,
	OPT_METRICS,
	OPT_METRICS_ALLOW,
	OPT_METRICS_GROUP,
	OPT_KEEP_STATE,
	OPT_RESUME,
	OPT_FRESH,
	OPT_DELAY, /* the shaper's: shape attach only */
	OPT_NODELAY,
	OPT_KEY,
	OPT_HORIZON,
	OPT_QUEUE_LIMIT,
	OPT_TABLE,
	OPT_FLEET_FIRST, /* run's fleet agent: fleet_opts[] of fleet_opts.c, in order */
	OPT_FLEET_LAST = OPT_FLEET_FIRST + FLEET_NR_OPTS - 1,
};

static const struct option attach_long[] = {
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "burst", required_argument, NULL, OPT_BURST },
	{ "algo", required_argument, NULL, OPT_ALGO },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "prefix4", required_argument, NULL, OPT_PREFIX4 },
	{ "prefix6", required_argument, NULL, OPT_PREFIX6 },
	{ "max-keys", required_argument, NULL, OPT_MAX_KEYS },
	{ "max-log-keys", required_argument, NULL, OPT_MAX_LOG_KEYS },
	{ "max-rules", required_argument, NULL, OPT_MAX_RULES },
	{ "fleet-keys", required_argument, NULL, OPT_FLEET_KEYS },
	{ "new-keys", required_argument, NULL, OPT_NEW_KEYS },
	{ "fail-closed", no_argument, NULL, OPT_FAIL_CLOSED },
	{ "fail-open", no_argument, NULL, OPT_FAIL_OPEN },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "metrics-allow", required_argument, NULL, OPT_METRICS_ALLOW },
	{ "metrics-group", required_argument, NULL, OPT_METRICS_GROUP },
	{ "keep-state", no_argument, NULL, OPT_KEEP_STATE },
	{ "resume", no_argument, NULL, OPT_RESUME },
	{ "fresh", no_argument, NULL, OPT_FRESH },
	{ "delay", required_argument, NULL, OPT_DELAY },
	{ "nodelay", no_argument, NULL, OPT_NODELAY },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "horizon", required_argument, NULL, OPT_HORIZON },
	{ "queue-limit", required_argument, NULL, OPT_QUEUE_LIMIT },
	{ "table", required_argument, NULL, OPT_TABLE },
	{ "redis", required_argument, NULL, OPT_FLEET_FIRST + FLEET_OPT_REDIS },
	{ "fleet", required_argument, NULL, OPT_FLEET_FIRST + FLEET_OPT_FLEET },
	{ "redis-password-file", required_argument, NULL, OPT_FLEET_FIRST + FLEET_OPT_PASSWORD },
	{ "fleet-member", required_argument, NULL, OPT_FLEET_FIRST + FLEET_OPT_MEMBER },
	{ "sync-interval", required_argument, NULL, OPT_FLEET_FIRST + FLEET_OPT_SYNC },
	{ "redis-timeout", required_argument, NULL, OPT_FLEET_FIRST + FLEET_OPT_TIMEOUT },
	{ "sync-keys", required_argument, NULL, OPT_FLEET_FIRST + FLEET_OPT_KEYS },
	{ "redis-batch", required_argument, NULL, OPT_FLEET_FIRST + FLEET_OPT_BATCH },
	{ "fleet-size", required_argument, NULL, OPT_FLEET_FIRST + FLEET_OPT_SIZE },
	{ "fleet-max", required_argument, NULL, OPT_FLEET_FIRST + FLEET_OPT_MAX },
	{ "help", no_argument, NULL, 'h' },
	{ "verbose", no_argument, NULL, 'v' },
	{ NULL, 0, NULL, 0 },
};

/* The policy options, in the order of their OPT_ values: they are the "set"
 * editing command's (user/lib/cmd.h), which checks them. */
static char *const policy_opts[] = { "--rate",	 "--burst",   "--algo",
				     "--window", "--prefix4", "--prefix6" };

/* Forward a policy option to the "set" command, in the order given: a
 * --burst belongs to the --rate before it. */
static int set_arg(const char *cmd, struct attach_opts *o, const char *opt, const char *val)
{
	if (o->set_argc + 3 > SET_ARGV_MAX)
		return usage_err(cmd, "too many policy options: give each at most twice");
	o->set_argv[o->set_argc++] = (char *)opt;
	o->set_argv[o->set_argc++] = (char *)val;
	o->set_argv[o->set_argc] = NULL;
	return 0;
}

/* "--redis" for OPT_FLEET_FIRST + FLEET_OPT_REDIS (argv[optind - 1] may be
 * the value of the option, not its name). */
static const char *opt_name(int val)
{
	static char buf[48];
	const struct option *p;

	for (p = attach_long; p->name; p++)
		if (p->val == val)
			break;
	snprintf(buf, sizeof(buf), "--%s", p->name ? p->name : "?");
	return buf;
}

/* The options the set command takes more than once (a --rate of each kind,
 * a --burst or --delay after each) or checks itself (--fail-closed). */
static bool multi_valued(int c)
{
	switch (c) {
	case OPT_RATE:
	case OPT_BURST:
	case OPT_ALGO:
	case OPT_WINDOW:
	case OPT_PREFIX4:
	case OPT_PREFIX6:
	case OPT_NEW_KEYS:
	case OPT_FAIL_CLOSED:
	case OPT_FAIL_OPEN:
	case OPT_DELAY:
	case OPT_NODELAY:
		return true;
	}
	return false;
}

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

static int run_only(const char *cmd, const char *opt)
{
	return usage_err(cmd, "%s is an option of 'sluice run', not of 'sluice %s'", opt, cmd);
}

static int shape_only(const char *cmd, const char *opt)
{
	return usage_err(cmd, "%s is an option of 'sluice shape attach' (the shaper), not of "
			 "'sluice %s'", opt, cmd);
}

static int limiter_only(const char *cmd, const char *opt, const char *why)
{
	return usage_err(cmd, "%s is the limiter's ('sluice attach'), not the shaper's: %s",
			 opt, why);
}

/* A shaper's fq horizon is a u32 of microseconds (about 71 minutes). */
#define MAX_HORIZON_NS (0xffffffffULL * 1000ULL)
/* --queue-limit: fq's packet limit is a u32; 16M packets is already GiBs. */
#define MAX_QUEUE_LIMIT (1ULL << 24)

int refuse_shape_name(const char *cmd, const char *name)
{
	size_t plen = strlen(SLUICE_SHAPE_PREFIX);

	if (strncmp(name, SLUICE_SHAPE_PREFIX, plen))
		return 0;
	return usage_err(cmd, "'%s' is a shaper's state: 'sluice %s' is the limiter's; a shaper "
			 "is attached with 'sluice shape attach %s', shown with 'sluice shape "
			 "status', tuned with 'sluicectl -i %s'", name, cmd, name + plen, name);
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
	usage_err(cmd, "'%.*s' is short for '--%s': write options in full (sluice takes no "
		  "abbreviations)", (int)(len + 2), word, opt->name);
	return false;
}

int parse_attach_opts(const char *cmd, int argc, char **argv, struct attach_opts *o)
{
	bool is_run = !strcmp(cmd, "run"), is_shape = !strcmp(cmd, "shape attach");
	int delay_seen = 0; /* OPT_DELAY or OPT_NODELAY, since the last --rate */
	const char *seen[OPT_FLEET_LAST - OPT_MODE + 1] = { NULL };
	char err[SLUICE_ERR_LEN];
	int c, ret, fail_seen = 0, longindex = -1;
	__u64 v;

	memset(o, 0, sizeof(*o));
	o->mode = XDP_MODE_NATIVE;
	o->interval_ns = SLUICE_NS_PER_SEC;
	o->set_argv[o->set_argc++] = "set";
	o->shape = is_shape;
	if (argc >= 2 && sluice_is_help(argv[1]))
		return -1;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hv", attach_long, &longindex)) != -1) {
		const char *arg = optarg;

		if (longindex >= 0 && !full_name(cmd, argc, argv, &attach_long[longindex]))
			return SLUICE_EXIT_USAGE;
		longindex = -1;
		/* One value each, but for the policy's (a --rate of each kind,
		 * a --burst per --rate), which the set command checks: a second
		 * --mode is refused as a second --rate is, never taken unsaid. */
		if (c >= OPT_MODE && c <= OPT_FLEET_LAST && !multi_valued(c)) {
			const char **first = &seen[c - OPT_MODE];

			if (*first)
				return usage_err(cmd, "%s is given twice%s%s%s%s%s: give it once",
						 opt_name(c), arg ? " ('" : "",
						 arg ? *first : "", arg ? "' and '" : "",
						 arg ? arg : "", arg ? "')" : "");
			*first = arg ? arg : "";
		}
		switch (c) {
		case 'h':
			return -1;
		case 'v':
			set_verbose();
			break;
		case OPT_MODE:
			if (is_shape)
				return limiter_only(cmd, "--mode", "a shaper runs at tc egress, "
						    "not at XDP");
			if (!strcmp(arg, "native"))
				o->mode = XDP_MODE_NATIVE;
			else if (!strcmp(arg, "skb"))
				o->mode = XDP_MODE_SKB;
			else
				return usage_err(cmd, "--mode takes 'native' or 'skb', not '%s'%s",
						 arg, lower_hint(arg, "native", "skb"));
			o->mode_given = true;
			break;
		case OPT_RATE:
		case OPT_BURST:
		case OPT_ALGO:
		case OPT_WINDOW:
		case OPT_PREFIX4:
		case OPT_PREFIX6:
			if (set_arg(cmd, o, policy_opts[c - OPT_RATE], optarg))
				return SLUICE_EXIT_USAGE;
			if (c == OPT_RATE)
				delay_seen = 0;
			break;
		case OPT_MAX_KEYS:
		case OPT_MAX_LOG_KEYS:
		case OPT_FLEET_KEYS:
			if (c == OPT_FLEET_KEYS && is_shape)
				return limiter_only(cmd, "--fleet-keys", "fleet-wide limits are "
						    "synced by 'sluice run --redis' on a limiter");
			if (sluice_parse_uint(c == OPT_MAX_KEYS ? "--max-keys" :
					      c == OPT_MAX_LOG_KEYS ? "--max-log-keys" :
								      "--fleet-keys",
					      arg, MAX_KEYS_LIMIT, &v, err, sizeof(err)))
				return usage_err(cmd, "%s", err);
			if (c == OPT_FLEET_KEYS && !v)
				return usage_err(cmd, "--fleet-keys 0: give at least 1 (default %u)",
						 SLUICE_DEFAULT_FLEET_KEYS);
			if (c == OPT_MAX_KEYS)
				o->max_keys = v;
			else if (c == OPT_MAX_LOG_KEYS)
				o->max_log_keys = v;
			else
				o->fleet_keys = v;
			break;
		case OPT_MAX_RULES:
			if (sluice_parse_uint("--max-rules", arg, MAX_RULES_LIMIT, &v, err,
					      sizeof(err)))
				return usage_err(cmd, "%s", err);
			if (!v)
				return usage_err(cmd, "--max-rules 0: give at least 1 (default %u)",
						 SLUICE_DEFAULT_MAX_RULES);
			o->max_rules = v;
			break;
		case OPT_NEW_KEYS:
			/* Settings that sluicectl set changes live: checked and
			 * applied by the set command, as the policy options. */
			if (set_arg(cmd, o, "--new-keys", optarg))
				return SLUICE_EXIT_USAGE;
			break;
		case OPT_FAIL_CLOSED:
		case OPT_FAIL_OPEN:
			/* Two of them: name both, not "--fail-closed twice". */
			if (fail_seen && fail_seen != c)
				return usage_err(cmd, "--fail-closed and --fail-open exclude each "
						 "other: give one of them");
			if (fail_seen)
				return usage_err(cmd, "--%s is given twice",
						 c == OPT_FAIL_CLOSED ? "fail-closed" :
									"fail-open");
			fail_seen = c;
			if (set_arg(cmd, o, "--fail-closed", c == OPT_FAIL_CLOSED ? "on" : "off"))
				return SLUICE_EXIT_USAGE;
			break;
		case OPT_CONFIG:
			o->config = optarg;
			break;
		case OPT_INTERVAL:
			if (!is_run)
				return run_only(cmd, "--interval");
			ret = sluice_parse_duration("--interval", arg, &o->interval_ns, err,
						    sizeof(err));
			if (ret && ret != -ERANGE)
				return usage_err(cmd, "%s", err);
			if (ret || o->interval_ns < MIN_INTERVAL_NS ||
			    o->interval_ns > MAX_INTERVAL_NS)
				return usage_err(cmd, "--interval '%s' is out of range: give "
						 "100ms to 1h (a report every DUR; 1.5s and "
						 "250ms work)", arg);
			break;
		case OPT_METRICS:
			if (!is_run)
				return run_only(cmd, "--metrics");
			o->metrics = optarg;
			break;
		case OPT_METRICS_ALLOW:
		case OPT_METRICS_GROUP:
			if (!is_run)
				return run_only(cmd, opt_name(c));
			if (c == OPT_METRICS_ALLOW)
				o->metrics_allow = optarg;
			else
				o->metrics_group = optarg;
			break;
		case OPT_KEEP_STATE:
			if (!is_run)
				return run_only(cmd, "--keep-state");
			o->keep_state = true;
			break;
		case OPT_RESUME:
			o->resume = true;
			break;
		case OPT_FRESH:
			o->fresh = true;
			break;
		case OPT_DELAY:
		case OPT_NODELAY:
			/* Checked and applied by the set command, as the policy
			 * options: --delay belongs to the --rate before it. */
			if (!is_shape)
				return shape_only(cmd, c == OPT_DELAY ? "--delay" : "--nodelay");
			if (delay_seen && delay_seen != c)
				return usage_err(cmd, "--nodelay and --delay exclude each other "
						 "(of one --rate): --nodelay sends every accepted "
						 "packet at once");
			delay_seen = c;
			if (c == OPT_DELAY ? set_arg(cmd, o, "--delay", optarg) :
					     set_arg(cmd, o, "--nodelay", NULL))
				return SLUICE_EXIT_USAGE;
			if (c == OPT_NODELAY)
				o->set_argc--; /* a flag: no value */
			break;
		case OPT_KEY:
			if (!is_shape)
				return shape_only(cmd, "--key");
			if (!strcmp(arg, "src"))
				o->key_kind = 0;
			else if (!strcmp(arg, "dst"))
				o->key_kind = SLUICE_KIND_KEY_DST;
			else
				return usage_err(cmd, "--key takes 'src' (the source address, "
						 "the default) or 'dst' (the destination), not "
						 "'%s'%s", arg, lower_hint(arg, "src", "dst"));
			o->key_given = true;
			break;
		case OPT_HORIZON:
			if (!is_shape)
				return shape_only(cmd, "--horizon");
			if (sluice_parse_duration("--horizon", arg, &o->horizon_ns, err,
						  sizeof(err)))
				return usage_err(cmd, "%s", err);
			if (o->horizon_ns < 1000ULL || o->horizon_ns > MAX_HORIZON_NS)
				return usage_err(cmd, "--horizon '%s' is out of range: give 1us to "
						 "71m (fq counts it in microseconds, a u32), or leave "
						 "it out for the longest queue of the policies x 1.25",
						 arg);
			break;
		case OPT_QUEUE_LIMIT:
			if (!is_shape)
				return shape_only(cmd, "--queue-limit");
			if (sluice_parse_uint("--queue-limit", arg, MAX_QUEUE_LIMIT, &o->queue_limit,
					      err, sizeof(err)))
				return usage_err(cmd, "%s", err);
			if (!o->queue_limit)
				return usage_err(cmd, "--queue-limit 0: give at least the largest "
						 "burst + 1 packets, or leave it out (sluice(8))");
			break;
		case OPT_TABLE:
			if (!strcmp(arg, "lru"))
				o->table = ATTACH_TABLE_LRU;
			else if (!strcmp(arg, "sets"))
				o->table = ATTACH_TABLE_SETS;
			else
				return usage_err(cmd, "--table takes 'lru' (an LRU hash, the "
						 "default) or 'sets' (the set-associative table), "
						 "not '%s'%s", arg, lower_hint(arg, "lru", "sets"));
			break;
		case OPT_FLEET_FIRST ... OPT_FLEET_LAST:
			if (!is_run)
				return run_only(cmd, opt_name(c));
			if (fleet_parse_opt(c - OPT_FLEET_FIRST, optarg, &o->fleet, err,
					    sizeof(err)))
				return usage_err(cmd, "%s", err);
			break;
		case ':':
			return usage_err(cmd, "option '%s' needs a value", argv[optind - 1]);
		case '?':
		default:
			if (optopt && c == '?')
				return usage_err(cmd, "unknown option '-%c'", optopt);
			return usage_err(cmd, "unknown option '%s' for 'sluice %s'",
					 argv[optind - 1], cmd);
		}
	}
	if (is_run && fleet_check_opts(&o->fleet, err, sizeof(err)))
		return usage_err(cmd, "%s", err);
	if ((o->metrics_allow || o->metrics_group) && !o->metrics)
		return usage_err(cmd, "%s says who may read --metrics: give --metrics ADDR:PORT "
				 "or unix:PATH too", o->metrics_allow ? "--metrics-allow" :
									"--metrics-group");
	if (o->resume && o->fresh)
		return usage_err(cmd, "--resume and --fresh exclude each other: --resume adopts "
				 "the pinned state, --fresh drops it");
	/* Bad policy values are usage errors before anything looks at IFACE. */
	if (o->set_argc > 1 &&
	    sluice_cmd_check_kind(o->set_argc, o->set_argv, o->shape, err, sizeof(err)))
		return usage_err(cmd, "%s", err);
	if (optind >= argc)
		return usage_err(cmd, "missing IFACE: say which interface, e.g. 'sluice %s eth0'",
				 cmd);
	if (optind + 1 < argc)
		return usage_err(cmd, "one interface at a time: '%s' is extra", argv[optind + 1]);
	if (sluice_is_help(argv[optind]))
		return -1;
	if (refuse_shape_name(cmd, argv[optind]))
		return SLUICE_EXIT_USAGE;
	if (!valid_ifname(argv[optind]))
		return usage_err(cmd, "'%s' is not an interface name (at most %d characters, "
				 "no '/' or ':')", argv[optind], IF_NAMESIZE - 1);
	strcpy(o->ifname, argv[optind]);
	snprintf(o->name, sizeof(o->name), "%s%s", is_shape ? SLUICE_SHAPE_PREFIX : "",
		 o->ifname);
	return 0;
}

bool valid_ifname(const char *name)
{
	size_t len = strlen(name);

	/* The kernel refuses ':' too (and shape:IFACE names a shaper's state). */
	return len && len < IF_NAMESIZE && !strchr(name, '/') && !strchr(name, ':') &&
	       strcmp(name, ".") &&
	       strcmp(name, "..");
}

const char *mode_name(enum xdp_attach_mode mode)
{
	switch (mode) {
	case XDP_MODE_NATIVE:
		return "native";
	case XDP_MODE_SKB:
		return "skb";
	case XDP_MODE_HW:
		return "hw";
	default:
		return "none";
	}
}

/*
 * Finding sluice on an interface opens nothing that it does not close: run
 * asks on every report, status and detach on every call. libxdp's
 * xdp_multiprog__get_from_ifindex() is not used for it: the libxdp of
 * Debian 12 (1.3.1; fixed in 1.4.1) keeps one duplicate of every program fd
 * it opens there (the attached program's, and each dispatcher component's),
 * which made a long `sluice run` die of EMFILE. Instead: the program ids from
 * netlink (bpf_xdp_query()), then each program's name through an fd that is
 * closed at once, and a dispatcher's components from libxdp's pins
 * (LIBXDP_BPFFS or /sys/fs/bpf, then xdp/dispatch-IFINDEX-ID/progN-prog),
 * read under libxdp's lock as libxdp itself reads them.
 */
#define XDP_DISPATCHER_NAME "xdp_dispatcher"
#define XDP_MAX_COMPONENTS 10 /* MAX_DISPATCHER_ACTIONS of libxdp */

/* The program attached to ifindex at the interface (the dispatcher, or a
 * program alone) and its mode: netlink only, no fd. 0 or -errno. */
static int xdp_top(unsigned int ifindex, __u32 *id, enum xdp_attach_mode *mode)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int ret;

	*id = 0;
	*mode = XDP_MODE_UNSPEC;
	ret = bpf_xdp_query((int)ifindex, 0, &q);
	if (ret)
		return ret;
	/* As libxdp: the driver's program first, then generic XDP; a
	 * program offloaded to the NIC is not sluice's. */
	if (q.attach_mode == XDP_ATTACHED_DRV ||
	    (q.attach_mode == XDP_ATTACHED_MULTI && q.drv_prog_id)) {
		*id = q.drv_prog_id;
		*mode = XDP_MODE_NATIVE;
	} else if (q.attach_mode == XDP_ATTACHED_SKB ||
		   (q.attach_mode == XDP_ATTACHED_MULTI && q.skb_prog_id)) {
		*id = q.skb_prog_id;
		*mode = XDP_MODE_SKB;
	}
	return 0;
}

/* The name and id of a program, by id or by pin (path non-NULL); the fd is
 * closed before returning. 0, or -ENOENT when it is gone. */
static int prog_name(__u32 id, const char *path, char *name, __u32 *out_id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd, ret = 0;

	fd = path ? bpf_obj_get(path) : bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		ret = -errno;
	close(fd);
	if (ret)
		return ret;
	memcpy(name, info.name, BPF_OBJ_NAME_LEN);
	name[BPF_OBJ_NAME_LEN - 1] = '\0';
	*out_id = info.id;
	return 0;
}

/* libxdp's pin directory of the dispatcher top_id on ifindex. */
static void dispatcher_dir(unsigned int ifindex, __u32 top_id, char *buf, size_t len)
{
	const char *root = secure_getenv(XDP_BPFFS_ENVVAR); /* as libxdp */

	snprintf(buf, len, "%s/xdp/dispatch-%u-%u", root && *root ? root : "/sys/fs/bpf",
		 ifindex, top_id);
}

/* The components of the dispatcher in dir, in their order. */
static int read_components(const char *dir, struct attachment *a)
{
	char lockdir[512], path[600], name[BPF_OBJ_NAME_LEN];
	const char *slash;
	__u32 id;
	int lock_fd, i, ret = 0;

	/* libxdp locks its directory (the parent of dir) while it changes a
	 * dispatcher: read whole sets of pins only. */
	slash = strrchr(dir, '/');
	snprintf(lockdir, sizeof(lockdir), "%.*s", (int)(slash - dir), dir);
	lock_fd = open(lockdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock_fd >= 0 && sluice_lock_fd(lock_fd, lockdir, NULL, 0)) {
		close(lock_fd);
		lock_fd = -1;
	}
	for (i = 0; i < XDP_MAX_COMPONENTS; i++) {
		snprintf(path, sizeof(path), "%s/prog%d-prog", dir, i);
		ret = prog_name(0, path, name, &id);
		if (ret == -ENOENT) {
			ret = 0;
			break;
		}
		if (ret)
			break;
		a->nr_progs++;
		if (!a->prog_id && !strcmp(name, SLUICE_PROG_NAME)) {
			a->prog_id = id;
			a->slot = i;
		}
	}
	if (lock_fd >= 0)
		close(lock_fd); /* releases the flock */
	return ret;
}

int find_attachment(unsigned int ifindex, struct attachment *a)
{
	char name[BPF_OBJ_NAME_LEN], dir[512];
	struct stat st;
	__u32 id;
	int ret, tries;

	for (tries = 0;; tries++) {
		memset(a, 0, sizeof(*a));
		a->slot = -1;
		ret = xdp_top(ifindex, &a->top_id, &a->mode);
		if (ret || !a->top_id)
			return ret == -ENODEV ? -ENODEV : ret;
		ret = prog_name(a->top_id, NULL, name, &id);
		/* Replaced between the two questions: ask again. */
		if (ret == -ENOENT && tries < 5)
			continue;
		if (ret)
			return ret;
		break;
	}
	dispatcher_dir(ifindex, a->top_id, dir, sizeof(dir));
	if (!strcmp(name, XDP_DISPATCHER_NAME) && stat(dir, &st) == 0) {
		a->dispatcher = true;
		return read_components(dir, a);
	}
	/* A program alone (or a dispatcher libxdp does not know: not ours). */
	a->nr_progs = 1;
	if (!strcmp(name, SLUICE_PROG_NAME)) {
		a->prog_id = a->top_id;
	} else {
		a->other_id = a->top_id;
		snprintf(a->other_name, sizeof(a->other_name), "%s", name);
	}
	return 0;
}

int attachment_check(unsigned int ifindex, struct attachment *a)
{
	char dir[512], path[600];
	enum xdp_attach_mode mode;
	struct stat st;
	__u32 top;
	int ret;

	ret = xdp_top(ifindex, &top, &mode);
	if (ret)
		return ret;
	if (top && top == a->top_id && mode == a->mode) {
		if (!a->dispatcher)
			return a->prog_id ? 1 : 0;
		/* The same dispatcher: its components are fixed (libxdp makes
		 * a new one for any change), unless the link's pin was removed
		 * by hand. stat() opens nothing. */
		if (a->slot < 0)
			return 0;
		dispatcher_dir(ifindex, top, dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/prog%d-prog", dir, a->slot);
		if (stat(path, &st) == 0)
			return 1;
	}
	/* Something changed (an upgrade, a program added or removed): look
	 * again, once. */
	ret = find_attachment(ifindex, a);
	if (ret)
		return ret;
	return a->prog_id ? 1 : 0;
}

int lock_pin_root(char *err, size_t errlen)
{
	return sluice_lock_pin_root(err, errlen);
}

void unlock_pin_root(int fd)
{
	struct sluice_netns ns;

	if (fd < 0)
		return;
	sluice_unlock_pin_root(fd);
	/* A namespace's directory goes with its last limiter (rmdir fails,
	 * harmlessly, while it holds any). */
	if (sluice_netns_self(&ns, NULL, 0) == 0 && !ns.initial)
		rmdir(ns.root);
}

int remove_pins(const char *dir, char *err, size_t errlen)
{
	static const char *const extra[] = { SLUICE_PROG_PIN, PROG_PIN_NEW };
	char path[512];
	size_t i;

	for (i = 0; i < sluice_nr_maps + 2; i++) {
		const char *name = i < sluice_nr_maps ? sluice_maps[i].name :
							extra[i - sluice_nr_maps];

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (unlink(path) && errno != ENOENT) {
			snprintf(err, errlen, "Couldn't remove %s: %s", path, strerror(errno));
			return -errno;
		}
	}
	if (rmdir(dir) && errno != ENOENT) {
		int ret = -errno;

		if (ret == -ENOTEMPTY)
			snprintf(err, errlen,
				 "Couldn't remove %s: it holds files sluice did not create; look "
				 "at them and remove them by hand", dir);
		else
			snprintf(err, errlen, "Couldn't remove %s: %s", dir, strerror(-ret));
		return ret;
	}
	return 0;
}

void print_policy_line(struct sluice_handle *h)
{
	struct sluice_settings s;
	char line[320], set[96];

	sluice_read_settings(h, &s, NULL);
	sluice_policy_text(&s.def, 0, h->shape, line, sizeof(line));
	sluice_settings_text(&s, set, sizeof(set));
	printf("  policy: %s\n  settings: %s, %u rule%s\n", line, set, s.nr_rules,
	       s.nr_rules == 1 ? "" : "s");
}
