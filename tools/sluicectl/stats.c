// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl stats: the datapath's counters, once, watched, or for Prometheus. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sluicectl.h"

void stats_help(FILE *f)
{
	fprintf(f,
		"Usage: sluicectl [-i IFACE] [-j] stats [--watch SECS] [--prometheus]\n"
		"\n"
		"The counters of the XDP program, summed over every CPU. Every packet is\n"
		"counted in rx and in exactly one of passed and dropped; the other counters\n"
		"say why.\n"
		"\n"
		"  --watch SECS    print the counters and their rate per second every SECS\n"
		"                  seconds (1 to 3600) until interrupted; under -j one JSON\n"
		"                  object per line\n"
		"  --prometheus    print the Prometheus text format (global and per-policy\n"
		"                  counters), e.g. for node_exporter's textfile collector\n"
		"\n"
		"Examples:\n"
		"  sluicectl stats\n"
		"  sluicectl -j stats | jq .dropped\n"
		"  sluicectl stats --watch 1\n"
		"  sluicectl stats --prometheus > /var/lib/node_exporter/sluice.prom\n");
}

/* What each counter means, for Prometheus' HELP lines. */
static const struct {
	const char *name;
	const char *help;
} field_help[] = {
	{ "rx", "Packets the XDP program saw." },
	{ "rx_bytes", "Bytes of the packets the XDP program saw." },
	{ "passed", "Packets passed (XDP_PASS), for any reason." },
	{ "dropped", "Packets dropped (XDP_DROP), for any reason." },
	{ "dropped_bytes", "Bytes of the packets dropped." },
	{ "non_ip", "Packets passed because they are neither IPv4 nor IPv6." },
	{ "malformed", "Packets passed because their headers are too short or bad." },
	{ "limited", "Packets dropped because their source was over its limit." },
	{ "would_drop", "Packets passed under dry-run that the limit would have dropped." },
	{ "exempt", "Packets passed by an --exempt rule." },
	{ "denied", "Packets dropped by a --deny rule." },
	{ "new_keys", "Buckets created for sources seen for the first time." },
	{ "aggregated", "New sources charged to their prefix's aggregate bucket." },
	{ "update_failed", "Packets whose source the key table refused (passed, fail-open)." },
	{ "contended", "Packets dropped because other CPUs kept updating their bucket." },
	{ "events_lost", "Drop events the ring buffer had no room for." },
};

static const char *help_of(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(field_help) / sizeof(field_help[0]); i++)
		if (!strcmp(field_help[i].name, name))
			return field_help[i].help;
	return "A sluice counter.";
}

static __u64 field(const struct sluice_stats *s, size_t i)
{
	return *(const __u64 *)((const char *)s + sluice_stats_fields[i].offset);
}

static void print_once(const struct sluice_stats *s)
{
	struct sluice_json j;
	size_t i;

	if (ctl.json) {
		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		for (i = 0; i < sluice_stats_nfields; i++)
			json_u64(&j, sluice_stats_fields[i].name, field(s, i));
		json_obj_end(&j);
		json_end(&j);
		return;
	}
	for (i = 0; i < sluice_stats_nfields; i++)
		printf("%-14s %llu\n", sluice_stats_fields[i].name,
		       (unsigned long long)field(s, i));
}

/* Escape a Prometheus label value: backslash, quote and newline. */
static void prom_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static int print_prometheus(struct sluice_handle *h, const struct sluice_stats *s)
{
	static const struct {
		const char *name;
		const char *help;
		size_t offset;
	} pf[] = {
		{ "passed", "Packets passed under each policy (the default or a rule).",
		  offsetof(struct sluice_rstats, passed) },
		{ "dropped", "Packets dropped under each policy.",
		  offsetof(struct sluice_rstats, dropped) },
		{ "passed_bytes", "Bytes passed under each policy.",
		  offsetof(struct sluice_rstats, passed_bytes) },
		{ "dropped_bytes", "Bytes dropped under each policy.",
		  offsetof(struct sluice_rstats, dropped_bytes) },
	};
	struct sluice_policies pol;
	size_t i, k;
	int st;

	st = ctl_read_policies(h, &pol, true);
	if (st)
		return st;

	for (i = 0; i < sluice_stats_nfields; i++) {
		const char *name = sluice_stats_fields[i].name;

		printf("# HELP sluice_%s_total %s\n", name, help_of(name));
		printf("# TYPE sluice_%s_total counter\n", name);
		printf("sluice_%s_total{interface=\"", name);
		prom_label(stdout, h->ifname);
		printf("\"} %llu\n", (unsigned long long)field(s, i));
	}
	for (i = 0; i < sizeof(pf) / sizeof(pf[0]); i++) {
		printf("# HELP sluice_policy_%s_total %s\n", pf[i].name, pf[i].help);
		printf("# TYPE sluice_policy_%s_total counter\n", pf[i].name);
		for (k = 0; k <= pol.nr_rules; k++) {
			char match[64];

			sluice_policy_at(&pol, k, match, sizeof(match), NULL);
			printf("sluice_policy_%s_total{interface=\"", pf[i].name);
			prom_label(stdout, h->ifname);
			printf("\",policy=\"%s\"} %llu\n", match,
			       (unsigned long long)*(const __u64 *)((const char *)&pol.rstats[k] +
								    pf[i].offset));
		}
	}
	printf("# HELP sluice_dry_run Whether dry-run is on for every policy (1) or not (0).\n");
	printf("# TYPE sluice_dry_run gauge\n");
	printf("sluice_dry_run{interface=\"");
	prom_label(stdout, h->ifname);
	printf("\"} %d\n", pol.set.flags & SLUICE_DRY_RUN ? 1 : 0);
	sluice_free_policies(&pol);
	return SLUICE_EXIT_OK;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_watch(const struct sluice_stats *cur, const struct sluice_stats *prev,
			double dt)
{
	char when[32];
	time_t t = time(NULL);
	struct sluice_json j;
	struct tm tm;
	size_t i;

	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	if (ctl.json) {
		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "time", when);
		json_f64(&j, "interval_s", dt);
		for (i = 0; i < sluice_stats_nfields; i++)
			json_u64(&j, sluice_stats_fields[i].name, field(cur, i));
		json_obj_begin(&j, "per_second");
		for (i = 0; i < sluice_stats_nfields; i++)
			json_f64(&j, sluice_stats_fields[i].name,
				 (double)(field(cur, i) - field(prev, i)) / dt);
		json_obj_end(&j);
		json_obj_end(&j);
		json_end(&j);
		return;
	}
	printf("%s  (over %.2fs)\n", when, dt);
	printf("%-14s %20s %14s\n", "COUNTER", "TOTAL", "PER-SEC");
	for (i = 0; i < sluice_stats_nfields; i++)
		printf("%-14s %20llu %14.1f\n", sluice_stats_fields[i].name,
		       (unsigned long long)field(cur, i),
		       (double)(field(cur, i) - field(prev, i)) / dt);
	printf("\n");
}

static int watch(struct sluice_handle *h, __u64 secs)
{
	struct sluice_stats prev, cur;
	struct sigaction sa = { .sa_handler = on_signal };
	double t0, t1;
	int ret;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ret = sluice_read_stats(h, &prev);
	if (ret)
		return ctl_err(ret, "Couldn't read the counters of %s: %s", h->ifname,
			       strerror(-ret));
	t0 = now_sec();
	while (!stop) {
		struct timespec left = { .tv_sec = (time_t)secs };

		/* Interrupted by a signal: stop quietly, as the user asked. */
		if (nanosleep(&left, NULL) && errno == EINTR && stop)
			break;
		ret = sluice_read_stats(h, &cur);
		if (ret)
			return ctl_err(ret, "Couldn't read the counters of %s: %s", h->ifname,
				       strerror(-ret));
		t1 = now_sec();
		print_watch(&cur, &prev, t1 - t0);
		prev = cur;
		t0 = t1;
	}
	return SLUICE_EXIT_OK;
}

int do_stats(int argc, char **argv)
{
	char err[SLUICE_ERR_LEN];
	struct sluice_handle h;
	struct sluice_stats s;
	bool prometheus = false;
	__u64 secs = 0;
	int i, ret, st;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (ctl_is_help(a)) {
			stats_help(stdout);
			return SLUICE_EXIT_OK;
		} else if (!strcmp(a, "--prometheus")) {
			prometheus = true;
		} else if (!strcmp(a, "--watch") || !strncmp(a, "--watch=", 8)) {
			const char *v = a[7] == '=' ? a + 8 : i + 1 < argc ? argv[++i] : NULL;

			if (!v)
				return ctl_usage("stats", "--watch needs a number of seconds: "
						 "--watch 1");
			if (sluice_parse_uint("--watch", v, 3600, &secs, err, sizeof(err)))
				return ctl_usage("stats", "%s", err);
		} else {
			return ctl_usage("stats", "unknown argument '%s' to stats", a);
		}
	}
	if (prometheus && (secs || ctl.json))
		return ctl_usage("stats", "--prometheus prints one snapshot in its own format: "
				 "leave out %s", secs ? "--watch" : "-j");

	st = ctl_open(&h);
	if (st)
		return st;
	if (secs) {
		st = watch(&h, secs);
		goto out;
	}
	ret = sluice_read_stats(&h, &s);
	if (ret) {
		st = ctl_err(ret, "Couldn't read the counters of %s: %s", h.ifname, strerror(-ret));
		goto out;
	}
	if (prometheus)
		st = print_prometheus(&h, &s);
	else
		print_once(&s);
out:
	sluice_close(&h);
	return st;
}
