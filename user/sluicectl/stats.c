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
		"Usage: sluicectl [-i IFACE] [-j] stats [--watch DUR] [--prometheus]\n"
		"\n"
		"The counters of the XDP program (of a shaper, -i shape:IFACE: its tc egress\n"
		"program), summed over every CPU. Every packet is counted in rx and in\n"
		"exactly one of passed (a shaper: sent, at once or later) and dropped; the\n"
		"other counters say why. Then two numbers about the key tables, counted by\n"
		"walking them (about 0.3 s per million keys):\n"
		"  keys              keys in the tables now (the key table, lru or sets, and\n"
		"                    the sliding logs)\n"
		"  evicted_estimate  new_keys - keys: keys the tables evicted to make room,\n"
		"                    estimated; keys removed by 'flush' count too\n"
		"Then the key table per family (key_table_table, key_table_used,\n"
		"key_table_max, key_table_ipv4_used, key_table_ipv4_max, key_table_ipv4_full\n"
		"and the same of ipv6: a set table's families fill apart, an lru table's\n"
		"share its capacity). Each line is named as its path in -j, objects joined\n"
		"by '_' (fleet_sync_errors is fleet.sync_errors; see sluicectl(8), JSON\n"
		"OUTPUT). A shaper adds its own counters (under --watch: shaped, delayed,\n"
		"restamped, horizon_dropped and the interval's mean delay):\n"
		"  shape_shaped           packets a bucket policy gave a departure time\n"
		"  shape_delayed          of those, packets that wait (depart later than now)\n"
		"  shape_mean_delay_ns    the mean delay of the delayed packets\n"
		"  shape_max_delay_ns     the longest delay given (the largest of every CPU's)\n"
		"  shape_restamped        untouched packets whose foreign timestamp was cleared\n"
		"  shape_horizon_dropped  dropped: the delay would reach the fq horizon\n"
		"  shape_delay_histogram_lt_Nus  delayed packets by delay, under N us (only\n"
		"                    the buckets that hold some; -j: all; --prometheus: the\n"
		"                    histogram sluice_shape_delay_seconds)\n"
		"Once a fleet agent has run, or a policy is fleet-wide, the fleet's state:\n"
		"fleet_state, fleet_outage_share (rate/N now), fleet_boxes, fleet_syncs,\n"
		"fleet_sync_errors, fleet_keys_pushed, fleet_last_error, ...\n"
		"\n"
		"  --watch DUR     print the counters and their rate per second every DUR\n"
		"                  (100ms to 1h; a bare number is seconds: 1, 1.5) until\n"
		"                  interrupted; under -j one JSON object per line\n"
		"  --prometheus    print the Prometheus text format (global and per-policy\n"
		"                  counters, the same as 'sluice run --metrics' serves), e.g.\n"
		"                  for node_exporter's textfile collector\n"
		"\n"
		"Examples:\n"
		"  sluicectl stats\n"
		"  sluicectl -j stats | jq .dropped\n"
		"  sluicectl stats --watch 1\n"
		"  sluicectl stats --prometheus > /var/lib/node_exporter/sluice.prom\n");
}

static __u64 field(const struct sluice_counters *c, size_t i)
{
	return sluice_field_get(c, &sluice_stats_fields[i]);
}

/*
 * The counters, then the key table (per family), a shaper's own counters and
 * the fleet agent's state once one has run (or a policy is fleet-wide, so
 * that "no agent" is said): as JSON, or as lines "name value" whose names are
 * the JSON's, objects joined by '_' (fleet.sync_errors: fleet_sync_errors).
 */
static void print_once(struct sluice_handle *h, const struct sluice_counters *c)
{
	bool policies = sluice_has_fleet_policy(h);
	struct sluice_fleet_view v;
	bool fleet = !sluice_fleet_view(h, &v) && (policies || v.state_code != SLUICE_FLEET_NONE);
	struct sluice_shape_stats ss;
	bool shape = h->shape && !sluice_read_shape_stats(h, &ss);
	struct sluice_keys_view kv;
	struct sluice_json j;
	struct sluice_rec r;
	size_t i;

	sluice_keys_view(h, c, &kv);
	json_init(&j, stdout);
	sluice_rec_init(&r, ctl.json ? &j : NULL, stdout, 16);
	if (ctl.json)
		json_obj_begin(&j, NULL);
	for (i = 0; i < sluice_counters_nfields; i++)
		sluice_rec_u64(&r, sluice_stats_fields[i].name, field(c, i));
	sluice_keys_out(&r, &kv);
	if (shape)
		sluice_shape_stats_out(&r, &ss);
	if (fleet)
		sluice_fleet_out(&r, &v);
	if (ctl.json) {
		json_obj_end(&j);
		json_end(&j);
	}
}

/* --watch DUR: a bare number is seconds, as everywhere a duration is. */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_sec(void)
{
	return (double)sluice_now_ns() / 1e9;
}

/* Per second; keys (a gauge) may go down. */
static double per_sec(const struct sluice_counters *cur, const struct sluice_counters *prev,
		      size_t i, double dt)
{
	return ((double)field(cur, i) - (double)field(prev, i)) / dt;
}

/* A shaper's own counters under --watch: totals and rates, and the mean
 * delay of the packets delayed within the interval. */
static const struct {
	const char *name;
	size_t off;
} shape_watch[] = {
	{ "shaped", offsetof(struct sluice_shape_stats, shaped) },
	{ "delayed", offsetof(struct sluice_shape_stats, delayed) },
	{ "restamped", offsetof(struct sluice_shape_stats, restamped) },
	{ "horizon_dropped", offsetof(struct sluice_shape_stats, horizon_dropped) },
};
#define SHAPE_WATCH_N (sizeof(shape_watch) / sizeof(shape_watch[0]))

static __u64 shape_field(const struct sluice_shape_stats *s, size_t i)
{
	__u64 v;

	memcpy(&v, (const char *)s + shape_watch[i].off, sizeof(v));
	return v;
}

static double shape_rate(const struct sluice_shape_stats *cur,
			 const struct sluice_shape_stats *prev, size_t i, double dt)
{
	return ((double)shape_field(cur, i) - (double)shape_field(prev, i)) / dt;
}

/* The mean delay (ns) of the packets delayed between prev and cur; 0: none. */
static __u64 shape_mean_since(const struct sluice_shape_stats *cur,
			      const struct sluice_shape_stats *prev)
{
	__u64 n = cur->delayed - prev->delayed;

	return n && cur->delayed >= prev->delayed ? (cur->delay_ns - prev->delay_ns) / n : 0;
}

static void print_watch(const struct sluice_counters *cur, const struct sluice_counters *prev,
			const struct sluice_shape_stats *scur,
			const struct sluice_shape_stats *sprev, double dt)
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
		for (i = 0; i < sluice_counters_nfields; i++)
			json_u64(&j, sluice_stats_fields[i].name, field(cur, i));
		json_obj_begin(&j, "per_second");
		for (i = 0; i < sluice_counters_nfields; i++)
			json_f64(&j, sluice_stats_fields[i].name, per_sec(cur, prev, i, dt));
		json_obj_end(&j);
		if (scur) {
			json_obj_begin(&j, "shape");
			for (i = 0; i < SHAPE_WATCH_N; i++)
				json_u64(&j, shape_watch[i].name, shape_field(scur, i));
			json_u64(&j, "mean_delay_ns", shape_mean_since(scur, sprev));
			json_obj_begin(&j, "per_second");
			for (i = 0; i < SHAPE_WATCH_N; i++)
				json_f64(&j, shape_watch[i].name, shape_rate(scur, sprev, i, dt));
			json_obj_end(&j);
			json_obj_end(&j);
		}
		json_obj_end(&j);
		json_end(&j);
		return;
	}
	printf("%s  (over %.2fs)\n", when, dt);
	printf("%-16s %20s %14s\n", "COUNTER", "TOTAL", "PER-SEC");
	for (i = 0; i < sluice_counters_nfields; i++)
		printf("%-16s %20llu %14.1f\n", sluice_stats_fields[i].name,
		       (unsigned long long)field(cur, i), per_sec(cur, prev, i, dt));
	if (scur) {
		char mean[32];

		for (i = 0; i < SHAPE_WATCH_N; i++)
			printf("%-16s %20llu %14.1f\n", shape_watch[i].name,
			       (unsigned long long)shape_field(scur, i),
			       shape_rate(scur, sprev, i, dt));
		sluice_format_duration(shape_mean_since(scur, sprev), mean, sizeof(mean));
		printf("%-16s %20s %14s\n", "mean_delay", mean, "(this interval)");
	}
	printf("\n");
}

/* The counters, and a shaper's own into *sc (which becomes NULL for a
 * limiter, or a shaper whose state has no sluice_shape_stats). */
static int read_counters(struct sluice_handle *h, struct sluice_counters *c,
			 struct sluice_shape_stats **sc)
{
	int ret = sluice_read_counters(h, c);

	if (ret)
		return sluice_cli_err(ret, "Couldn't read the counters of %s: %s", h->name,
				      strerror(-ret));
	if (*sc && (!h->shape || sluice_read_shape_stats(h, *sc)))
		*sc = NULL;
	return 0;
}

/*
 * Open the state a new attach pins, once it has finished: the attach makes
 * its maps one by one, then writes the config, then runs the program, so for
 * a moment a map is missing or the state is still "attaching". Waits up to
 * ATTACH_WAIT_MS for that, then reports what it found.
 */
#define ATTACH_WAIT_MS 10000
static int open_finished(const char *ifname, struct sluice_handle *h, char *err, size_t errlen)
{
	struct timespec pause = { .tv_nsec = 100 * 1000 * 1000 };
	int waited, ret = 0;

	for (waited = 0; waited <= ATTACH_WAIT_MS; waited += 100) {
		ret = sluice_open(ifname, h, err, errlen);
		if (!ret && h->standing != SLUICE_STANDING_UNFINISHED)
			return 0;
		if (!ret)
			sluice_close(h);
		if (stop)
			break;
		nanosleep(&pause, NULL);
	}
	if (!ret)
		ret = sluice_open(ifname, h, err, errlen); /* unfinished: shown as it is */
	return ret;
}

static int watch(struct sluice_handle *h, __u64 every_ns)
{
	struct sluice_counters prev, cur;
	struct sluice_shape_stats sprev_s, scur_s, *sprev = &sprev_s, *scur = &scur_s;
	struct sigaction sa = { .sa_handler = on_signal };
	double t0, t1;
	int st, ret;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	st = read_counters(h, &prev, &sprev);
	if (st)
		return st;
	t0 = now_sec();
	while (!stop) {
		struct timespec left = { .tv_sec = (time_t)(every_ns / SLUICE_NS_PER_SEC),
					 .tv_nsec = (long)(every_ns % SLUICE_NS_PER_SEC) };

		/* Interrupted by a signal: stop quietly, as the user asked. */
		if (nanosleep(&left, NULL) && errno == EINTR && stop)
			break;
		/* Follow the live state: a detach ends the watch, a fresh
		 * attach (new maps) is followed from its own counters. */
		ret = sluice_still_pinned(h);
		if (ret == -ENOENT)
			return sluice_cli_err(ret,
					      "sluice was detached from %s: nothing more to watch",
					      h->ifname);
		if (ret == -ESTALE) {
			char ifname[SLUICE_STATE_NAME_MAX], err[SLUICE_ERR_LEN];

			snprintf(ifname, sizeof(ifname), "%s", h->ifname);
			sluice_close(h);
			ret = open_finished(ifname, h, err, sizeof(err));
			if (ret)
				return sluice_cli_err(ret, "%s", err);
			fprintf(stderr,
				"sluicectl: %s was attached again with a new state: "
				"watching that one, from its own counters\n",
				ifname);
			sprev = &sprev_s;
			st = read_counters(h, &prev, &sprev);
			if (st)
				return st;
			t0 = now_sec();
			continue;
		}
		scur = sprev ? &scur_s : NULL;
		st = read_counters(h, &cur, &scur);
		if (st)
			return st;
		t1 = now_sec();
		print_watch(&cur, &prev, sprev && scur ? scur : NULL, sprev, t1 - t0);
		prev = cur;
		if (sprev && scur)
			sprev_s = scur_s;
		t0 = t1;
	}
	return SLUICE_EXIT_OK;
}

int do_stats(int argc, char **argv)
{
	char err[SLUICE_ERR_LEN];
	struct sluice_counters c;
	struct sluice_handle h;
	bool prometheus = false;
	const char *watch_given = NULL;
	__u64 secs = 0;
	int i, ret, st;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (sluice_is_help(a)) {
			stats_help(stdout);
			return SLUICE_EXIT_OK;
		} else if (!strcmp(a, "--prometheus")) {
			if (prometheus)
				return sluice_cli_usage("stats",
							"--prometheus is given twice: give it "
							"once");
			prometheus = true;
		} else if (!strcmp(a, "--watch") || !strncmp(a, "--watch=", 8)) {
			const char *v = a[7] == '=' ? a + 8 : i + 1 < argc ? argv[++i] : NULL;

			if (!v)
				return sluice_cli_usage("stats",
							"--watch needs a duration: --watch 1 (a "
							"second), --watch 500ms");
			if (watch_given)
				return sluice_cli_usage("stats",
							"--watch is given twice ('%s' and '%s'): "
							"give it once",
							watch_given, v);
			watch_given = v;
			ret = ctl_parse_watch("stats", v, false, &secs);
			if (ret)
				return ret;
		} else {
			return sluice_cli_usage("stats", "unknown argument '%s' to stats", a);
		}
	}
	if (prometheus && (secs || ctl.json))
		return sluice_cli_usage("stats",
					"--prometheus prints one snapshot in its own format: "
					"leave out %s",
					secs ? "--watch" : "-j");

	st = ctl_open(&h);
	if (st)
		return st;
	if (secs) {
		st = watch(&h, secs);
	} else if (prometheus) {
		ret = sluice_prometheus(stdout, &h, err, sizeof(err));
		st = ret ? sluice_cli_err(ret, "%s", err) : SLUICE_EXIT_OK;
	} else {
		struct sluice_shape_stats *none = NULL; /* print_once() reads its own */

		st = read_counters(&h, &c, &none);
		if (!st)
			print_once(&h, &c);
	}
	sluice_close(&h);
	return st;
}
