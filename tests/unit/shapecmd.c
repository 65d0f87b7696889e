// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A shaper's policies in the editing language (cmd.h), on in-memory copies
 * with no maps: --delay N and --nodelay belong to the --rate before them
 * and are stored in pkt_delay/byte_delay, only a shaper's state takes them
 * (and --burst 0), a delay is at most the burst and its longest wait stays
 * short of the fq horizon, a change of delay keeps every bucket, what
 * `sluicectl show` says of a key's queue is what the datapath's GCRA then
 * does, and the shaper's counters render as a Prometheus histogram.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sluice/algo.h>

#include "cmd.h"
#include "../lib/scratch.h"
#include "../lib/tap.h"

#define MS 1000000ULL
#define TICKS(ns) ((__u64)(ns) << SLUICE_TICK_SHIFT)

static char last_err[SLUICE_ERR_LEN];

/* Run one editing command given as one string of words (t NULL: a check
 * with no state; shape: a check for a shaper's, -1 for sluice_cmd_check()). */
static int run(struct sluice_txn *t, int shape, const char *line)
{
	char buf[512], *argv[32];
	int argc = scratch_words(line, buf, argv);

	last_err[0] = 0;
	if (t)
		return sluice_cmd_edit(t, argc, argv, last_err, sizeof(last_err));
	if (shape < 0)
		return sluice_cmd_check(argc, argv, last_err, sizeof(last_err));
	return sluice_cmd_check_kind(argc, argv, shape, last_err, sizeof(last_err));
}

static bool ok_edit(struct sluice_txn *t, const char *line)
{
	int ret = run(t, 0, line);

	if (ret)
		tap_diag("  '%s': %d: %s", line, ret, last_err);
	return !ret;
}

/* The edit is refused as a usage error and the message says every one of
 * the NULL-terminated words. */
static bool refused(struct sluice_txn *t, int shape, const char *line, ...)
{
	int ret = run(t, shape, line);
	const char *want;
	bool ok = ret == -EINVAL;
	va_list ap;

	va_start(ap, line);
	while ((want = va_arg(ap, const char *)))
		if (!strstr(last_err, want)) {
			tap_diag("  '%s': the message lacks '%s'", line, want);
			ok = false;
		}
	va_end(ap);
	if (!ok)
		tap_diag("  '%s': %d: %s", line, ret, last_err);
	return ok;
}

static void shaper(struct scratch *s)
{
	scratch_init(s);
	snprintf(s->h.name, sizeof(s->h.name), "shape:scratch0");
	s->h.shape = true;
	s->cfg.kind = SLUICE_KIND_SHAPE;
}

static struct sluice_txn_rule *find(struct sluice_txn *t, const char *cidr)
{
	struct sluice_cidr c;

	if (sluice_parse_cidr(cidr, &c, NULL, 0))
		return NULL;
	return sluice_txn_find_rule(t, &c);
}

static void test_store(void)
{
	struct sluice_txn_rule *r;
	struct scratch s;
	struct sluice_policy *d = &s.t.set.def;

	shaper(&s);
	TAP_TRUE(ok_edit(&s.t, "set --rate 100/s --burst 20 --delay 5") && d->pkt_delay == 5 &&
			 d->pkt.burst == 20 && d->pkt.tolerance == 20 * TICKS(10 * MS),
		 "shaper: set --rate 100/s --burst 20 --delay 5 stores delay 5, burst 20");
	TAP_TRUE(ok_edit(&s.t, "set --rate 100/s --burst 20") && d->pkt_delay == 0,
		 "shaper: a --rate without --delay gets delay 0 (every excess packet waits)");
	TAP_TRUE(ok_edit(&s.t, "set --rate 100/s --burst 20 --nodelay") &&
			 d->pkt_delay == SLUICE_NODELAY,
		 "shaper: --nodelay stores SLUICE_NODELAY");
	TAP_TRUE(ok_edit(&s.t, "set --delay 4 --burst 9 --rate 50/s") && d->pkt_delay == 4 &&
			 d->pkt.burst == 9,
		 "shaper: --delay and --burst before the first --rate belong to it");
	TAP_TRUE(ok_edit(&s.t, "set --rate 100/s --burst 20 --delay 3 --rate 10mbit --burst "
			       "30000 --delay 3000") &&
			 d->pkt_delay == 3 && d->byte_delay == 3000 && d->bytes.burst == 30000,
		 "shaper: each --delay is its --rate's: 3 packets, 3000 bytes");
	TAP_TRUE(ok_edit(&s.t, "rule add 198.18.0.0/24 --rate 10/s --burst 8 --delay 2") &&
			 s.t.nr_rules == 1 && s.t.rules[0].rule.policy.pkt_delay == 2 &&
			 s.t.rules[0].rule.policy.byte_delay == 0,
		 "shaper: rule add takes --delay: the rule's pkt_delay is 2");
	TAP_TRUE(ok_edit(&s.t, "rule add 198.18.1.0/24 --rate 10/s --burst 0") &&
			 (r = find(&s.t, "198.18.1.0/24")) && r->rule.policy.pkt.burst == 0 &&
			 r->rule.policy.pkt.tolerance == 0,
		 "shaper: --burst 0 is taken: no queue beyond the packet being sent");
	TAP_TRUE(ok_edit(&s.t, "set --rate 10mbit --burst 0 --delay 0") && d->bytes.burst == 0 &&
			 d->bytes.tolerance == 0 && !d->pkt.period_ns,
		 "shaper: a byte --burst 0 is taken too");
	scratch_free(&s);
}

static void test_refusals(void)
{
	struct scratch s, l;

	scratch_init(&l);
	TAP_TRUE(refused(&l.t, 0, "set --rate 100/s --delay 5", "a limiter drops and never delays",
			 "shape:IFACE", "sluice shape attach", NULL),
		 "limiter: set --delay is refused, naming the shaper");
	TAP_TRUE(refused(&l.t, 0, "set --rate 100/s --nodelay", "never delays", "--nodelay", NULL),
		 "limiter: set --nodelay is refused");
	TAP_TRUE(refused(&l.t, 0, "rule add 198.18.0.0/24 --rate 10/s --delay 1", "never delays",
			 NULL),
		 "limiter: rule add --delay is refused");
	TAP_TRUE(refused(&l.t, 0, "set --rate 100/s --burst 0", "--burst is 0", "shaper", NULL),
		 "limiter: --burst 0 is refused, saying a shaper takes it");
	TAP_EQ(l.t.set.def.pkt.burst, 100, "limiter: the refused edits left the policy as it was");
	TAP_TRUE(refused(NULL, 0, "set --rate 100/s --delay 5", "never delays", NULL),
		 "check for a limiter's state: --delay is refused");
	TAP_TRUE(refused(NULL, -1, "set --rate 100/s --burst 0", "--burst is 0", NULL),
		 "check with no state: --burst 0 is refused (a limiter's rules)");
	TAP_EQ(run(NULL, 1, "set --rate 100/s --burst 0"), 0,
	       "check for a shaper's state: --burst 0 is taken");
	TAP_EQ(run(NULL, -1, "set --rate 100/s --burst 0 --delay 0"), 0,
	       "check with no state: a command with --delay is a shaper's, --burst 0 taken");
	TAP_EQ(run(NULL, -1, "rule add 198.18.0.0/24 --rate 10/s --burst 4 --nodelay"), 0,
	       "check with no state: rule add --nodelay passes");
	scratch_free(&l);

	shaper(&s);
	TAP_TRUE(refused(&s.t, 0, "set --rate 100/s --burst 20 --delay 30", "--delay 30",
			 "--burst 20", "--nodelay", NULL),
		 "shaper: --delay 30 beyond --burst 20 is refused, naming both and --nodelay");
	TAP_TRUE(refused(NULL, 1, "set --rate 100/s --burst 20 --delay 30", "--burst 20", NULL),
		 "check: --delay beyond --burst is refused before any state");
	TAP_TRUE(ok_edit(&s.t, "set --rate 100/s --burst 20 --delay 5") &&
			 refused(&s.t, 0, "set --delay 21", "--delay 21", "--burst 20", "--nodelay",
				 NULL),
		 "shaper: set --delay alone beyond the live burst is refused");
	TAP_TRUE(refused(&s.t, 0, "set --burst 4", "--delay 5", "--burst 4", NULL),
		 "shaper: a --burst below the live delay is refused");
	TAP_TRUE(refused(&s.t, 0, "set --algo sliding-window --rate 10/s --delay 1", "meter",
			 "token-bucket", NULL),
		 "shaper: a window algorithm with --delay is refused: it is a meter");
	TAP_TRUE(ok_edit(&s.t, "set --algo fixed-window --rate 10/s") &&
			 refused(&s.t, 0, "set --delay 1", "meter", NULL),
		 "shaper: --delay on a live window algorithm is refused");
	TAP_TRUE(refused(&s.t, 0, "set --rate 100/s --delay 1 --delay 2", "two of --delay", NULL),
		 "shaper: two --delay for one --rate are refused");
	TAP_TRUE(refused(&s.t, 0, "rule add 198.18.0.0/24 --exempt --delay 1", "--delay", NULL),
		 "shaper: --exempt takes no --delay");
	TAP_TRUE(refused(&s.t, 0, "set --rate 100/s --delay -1", "negative", NULL),
		 "shaper: a negative --delay is refused");
	scratch_free(&s);
}

/* A change of delay keeps every bucket (the tag), and nothing zeroes it. */
static void test_keep(void)
{
	struct sluice_policy a, b;
	struct scratch s;
	__u32 tag;

	shaper(&s);
	ok_edit(&s.t, "set --rate 100/s --burst 20 --delay 5");
	tag = s.t.set.def.tag;
	TAP_TRUE(ok_edit(&s.t, "set --delay 8") && s.t.set.def.pkt_delay == 8 &&
			 s.t.set.def.tag == tag,
		 "shaper: set --delay 8 keeps the tag (every key's queue)");
	TAP_TRUE(ok_edit(&s.t, "set --nodelay") && s.t.set.def.pkt_delay == SLUICE_NODELAY &&
			 s.t.set.def.tag == tag,
		 "shaper: set --nodelay keeps the tag");
	ok_edit(&s.t, "set --delay 5");
	TAP_TRUE(ok_edit(&s.t, "set --burst 30") && s.t.set.def.pkt_delay == 5 &&
			 s.t.set.def.pkt.burst == 30 && s.t.set.def.tag == tag,
		 "shaper: set --burst keeps the delay and the tag");
	TAP_TRUE(ok_edit(&s.t, "set --algo leaky-bucket") && s.t.set.def.pkt_delay == 5,
		 "shaper: set --algo leaky-bucket keeps the delay");
	TAP_TRUE(ok_edit(&s.t, "set --prefix4 24") && s.t.set.def.pkt_delay == 5 &&
			 s.t.set.def.prefix4 == 24,
		 "shaper: set --prefix4 keeps the delay");
	TAP_TRUE(ok_edit(&s.t, "set --fleet off") && s.t.set.def.pkt_delay == 5,
		 "shaper: set --fleet off keeps the delay");
	ok_edit(&s.t, "rule add 198.18.0.0/24 --rate 10/s --burst 8 --delay 2");
	tag = s.t.rules[0].rule.policy.tag;
	TAP_TRUE(ok_edit(&s.t, "rule add 198.18.0.0/24 --rate 10/s --burst 8 --delay 6") &&
			 s.t.rules[0].rule.policy.tag == tag &&
			 s.t.rules[0].rule.policy.pkt_delay == 6,
		 "shaper: a rule's new delay keeps its tag");
	scratch_free(&s);

	memset(&a, 0, sizeof(a));
	a.algo = SLUICE_ALGO_TOKEN_BUCKET;
	a.prefix4 = 32;
	a.prefix6 = 64;
	b = a;
	b.pkt_delay = 7;
	TAP_TRUE(sluice_same_state_format(&a, &b),
		 "same_state_format: token bucket policies that differ in delay only");
	b.byte_delay = SLUICE_NODELAY;
	TAP_TRUE(sluice_same_state_format(&a, &b),
		 "same_state_format: ... and in byte delay (nodelay)");
	a.algo = b.algo = SLUICE_ALGO_SLIDING_WINDOW;
	a.window = TICKS(1000 * MS);
	b.window = TICKS(2000 * MS);
	TAP_TRUE(!sluice_same_state_format(&a, &b),
		 "same_state_format: sliding windows of 1s and 2s still differ");
}

static void test_horizon(void)
{
	struct sluice_limit l;
	struct scratch s;

	sluice_limit_set(&l, 100, SLUICE_NS_PER_SEC, 20, NULL, 0);
	TAP_EQ(sluice_shape_longest_ns(&l, 5), 150 * MS,
	       "100/s burst 20 delay 5: the longest delay is 15 x 10 ms");
	TAP_EQ(sluice_shape_longest_ns(&l, 0), 200 * MS, "delay 0: 20 x 10 ms");
	TAP_EQ(sluice_shape_longest_ns(&l, 20), 0, "delay = burst: nothing waits");
	TAP_EQ(sluice_shape_longest_ns(&l, SLUICE_NODELAY), 0, "nodelay: nothing waits");

	shaper(&s);
	s.cfg.shape_horizon_us = 100000; /* 100 ms */
	TAP_TRUE(refused(&s.t, 0, "set --rate 100/s --burst 20", "200ms", "100ms",
			 "sluice shape attach scratch0 --horizon", NULL),
		 "horizon 100ms: burst 20 at 100/s (a 200ms delay) is refused, naming both "
		 "and the fix");
	TAP_TRUE(refused(&s.t, 0, "set --rate 100/s --burst 20 --delay 10", "100ms", NULL),
		 "horizon 100ms: a delay of exactly 100ms reaches it: refused");
	TAP_TRUE(ok_edit(&s.t, "set --rate 100/s --burst 20 --delay 11") &&
			 s.t.set.def.pkt_delay == 11,
		 "horizon 100ms: a 90ms delay is taken");
	TAP_TRUE(ok_edit(&s.t, "set --rate 100/s --burst 2000 --nodelay"),
		 "horizon 100ms: --nodelay never waits: any burst is taken");
	TAP_TRUE(refused(&s.t, 0, "rule add 198.18.0.0/24 --rate 1/s --burst 1", "1s", "100ms",
			 NULL),
		 "horizon 100ms: a rule whose delay reaches it is refused");
	TAP_TRUE(refused(&s.t, 0, "set --rate 100/s --burst 5 --rate 1mbit --burst 100000",
			 "byte rate", "800ms", NULL),
		 "horizon 100ms: a byte limit's delay (100000 bytes at 1mbit) is checked too");
	s.cfg.shape_horizon_us = 0;
	TAP_TRUE(ok_edit(&s.t, "set --rate 100/s --burst 20"),
		 "no horizon known (0): nothing to check");
	scratch_free(&s);
}

/* What show says of a key, against what sluice_bucket_shape() then does. */
static void test_queue(void)
{
	struct sluice_shape_queue q;
	struct sluice_policy p;
	__u64 now = TICKS(1000 * SLUICE_NS_PER_SEC), iv, st[2] = { 0, 0 }, depart = 0;
	int i, agree = 0, v;

	memset(&p, 0, sizeof(p));
	p.algo = SLUICE_ALGO_TOKEN_BUCKET;
	sluice_limit_set(&p.pkt, 100, SLUICE_NS_PER_SEC, 20, NULL, 0);
	iv = p.pkt.interval;

	sluice_shape_queue(&p.pkt, 2, now + 5 * iv, now, &q);
	TAP_TRUE(q.ahead_units == 5 && q.ahead_ns == 50 * MS && q.delay_ns == 30 * MS && q.accepts,
		 "5 packets ahead at 100/s, delay 2: 50ms to drain, the next waits 30ms");
	sluice_shape_queue(&p.pkt, 0, now + 5 * iv / 2, now, &q);
	TAP_TRUE(q.ahead_units == 3 && q.delay_ns == 25 * MS,
		 "2.5 packets ahead: 3 (rounded up), the next waits 25ms");
	sluice_shape_queue(&p.pkt, SLUICE_NODELAY, now + 5 * iv, now, &q);
	TAP_TRUE(q.ahead_units == 5 && q.delay_ns == 0 && q.accepts,
		 "nodelay: 5 ahead, the next goes now");
	sluice_shape_queue(&p.pkt, 0, now - iv, now, &q);
	TAP_TRUE(q.ahead_units == 0 && q.ahead_ns == 0 && q.delay_ns == 0 && q.accepts,
		 "a TAT in the past: an idle key, the next goes now");
	sluice_shape_queue(&p.pkt, 0, now + 20 * iv + 1, now, &q);
	TAP_TRUE(!q.accepts, "more than the burst ahead: the next is dropped");

	/* A burst of 30 into an idle key, delay 3: each prediction holds. */
	p.pkt_delay = 3;
	for (i = 0; i < 30; i++) {
		sluice_shape_queue(&p.pkt, p.pkt_delay, st[0], now, &q);
		v = sluice_bucket_shape(&p, st, now, 1500, &depart);
		if ((v == SLUICE_PASS) == q.accepts &&
		    (v != SLUICE_PASS ||
		     (depart - now + SLUICE_TICKS_PER_NS - 1) >> SLUICE_TICK_SHIFT == q.delay_ns))
			agree++;
		else
			tap_diag(
				"  packet %d: verdict %d, depart +%llu ticks; predicted %d, %llu ns",
				i, v, (unsigned long long)(depart - now), q.accepts,
				(unsigned long long)q.delay_ns);
	}
	TAP_EQ(agree, 30,
	       "a burst of 30: show's queue predicts every verdict and delay of "
	       "sluice_bucket_shape()");
}

static bool has_line(const char *text, const char *line)
{
	const char *p = text;
	size_t n = strlen(line);

	while ((p = strstr(p, line))) {
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return true;
		p += n;
	}
	tap_diag("  no line '%s'", line);
	return false;
}

static void test_prometheus(void)
{
	struct sluice_shape_stats s, cpu;
	char *text = NULL, path[] = "/tmp/sluice-shapecmd-XXXXXX";
	size_t len = 0, i;
	FILE *f;
	int fd;

	memset(&s, 0, sizeof(s));
	memset(&cpu, 0, sizeof(cpu));
	cpu.shaped = 10;
	cpu.delayed = 6;
	cpu.delay_ns = 3000000;
	cpu.max_delay_ns = 900000;
	cpu.hist[0] = 1;
	cpu.hist[3] = 2;
	cpu.hist[10] = 3;
	sluice_shape_stats_add(&s, &cpu);
	cpu.max_delay_ns = 400000;
	cpu.restamped = 4;
	cpu.horizon_dropped = 1;
	sluice_shape_stats_add(&s, &cpu);
	TAP_TRUE(s.shaped == 20 && s.delayed == 12 && s.delay_ns == 6000000 &&
			 s.max_delay_ns == 900000 && s.hist[10] == 6 && s.restamped == 4,
		 "shape stats of two CPUs: sums, and the larger max_delay_ns");

	f = open_memstream(&text, &len);
	sluice_prometheus_shape(f, "shape:veth0", &s);
	fclose(f);
	TAP_TRUE(
		has_line(text, "sluice_shape_shaped_total{interface=\"shape:veth0\"} 20") &&
			has_line(text,
				 "sluice_shape_delayed_total{interface=\"shape:veth0\"} 12") &&
			has_line(text,
				 "sluice_shape_restamped_total{interface=\"shape:veth0\"} 4") &&
			has_line(text,
				 "sluice_shape_horizon_dropped_total{interface=\"shape:veth0\"} 1") &&
			has_line(text, "sluice_shape_max_delay_seconds{interface=\"shape:veth0\"} "
				       "0.000900"),
		"prometheus: the shaper's counters and max delay");
	TAP_TRUE(has_line(text, "# TYPE sluice_shape_delay_seconds histogram") &&
			 has_line(text,
				  "sluice_shape_delay_seconds_bucket{interface=\"shape:veth0\","
				  "le=\"1e-06\"} 2") &&
			 has_line(text,
				  "sluice_shape_delay_seconds_bucket{interface=\"shape:veth0\","
				  "le=\"4e-06\"} 2") &&
			 has_line(text,
				  "sluice_shape_delay_seconds_bucket{interface=\"shape:veth0\","
				  "le=\"8e-06\"} 6") &&
			 has_line(text,
				  "sluice_shape_delay_seconds_bucket{interface=\"shape:veth0\","
				  "le=\"0.001024\"} 12") &&
			 has_line(text,
				  "sluice_shape_delay_seconds_bucket{interface=\"shape:veth0\","
				  "le=\"2.097152\"} 12") &&
			 has_line(text,
				  "sluice_shape_delay_seconds_bucket{interface=\"shape:veth0\","
				  "le=\"+Inf\"} 12") &&
			 has_line(text, "sluice_shape_delay_seconds_sum{interface=\"shape:veth0\"} "
					"0.006000000") &&
			 has_line(text,
				  "sluice_shape_delay_seconds_count{interface=\"shape:veth0\"} 12"),
		 "prometheus: a cumulative histogram, le 1us doubling, +Inf and _count = delayed");
	for (i = 0, len = 0; text[i]; i++)
		len += !strncmp(text + i, "sluice_shape_delay_seconds_bucket{", 34);
	TAP_EQ(len, SLUICE_DELAY_BUCKETS,
	       "prometheus: one bucket per histogram entry (+Inf the last)");

	fd = mkstemp(path);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		tap_ok(false, "promtool check metrics accepts the shaper's metrics");
	} else if (system("command -v promtool >/dev/null 2>&1")) {
		tap_skip("promtool is not installed (Debian's prometheus package): run "
			 "'sudo make deps'",
			 "promtool check metrics accepts the shaper's metrics");
	} else {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "promtool check metrics <%s", path);
		TAP_TRUE(system(cmd) == 0, "promtool check metrics accepts the shaper's metrics");
	}
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	free(text);

	for (i = 0; i < sluice_stats_nfields; i++)
		if (strstr(sluice_stats_help(&sluice_stats_fields[i], true), "XDP"))
			break;
	TAP_TRUE(i == sluice_stats_nfields,
		 "a shaper's sluice_stats help never says XDP (first: %s)",
		 i < sluice_stats_nfields ? sluice_stats_fields[i].name : "none");
	TAP_TRUE(strstr(sluice_stats_help(&sluice_stats_fields[2], false), "XDP_PASS") != NULL,
		 "a limiter's passed help still says XDP_PASS");
}

/* A file of edits replacing a shaper's state is a shaper's: --delay taken,
 * and the horizon checked. */
static void test_file(void)
{
	char dir[] = "/tmp/sluice-shapefile-XXXXXX", path[128], err[SLUICE_ERR_LEN] = "";
	struct sluice_cmd_file *file = NULL;
	struct scratch s, l;
	FILE *f;
	int ret;

	if (!mkdtemp(dir)) {
		tap_ok(false, "a temporary directory");
		return;
	}
	snprintf(path, sizeof(path), "%s/shape.conf", dir);
	f = fopen(path, "we");
	fputs("set --rate 100/s --burst 20 --delay 5\n"
	      "rule add 198.18.0.0/24 --rate 10/s --burst 0\n",
	      f);
	fclose(f);
	ret = sluice_cmd_file_read(path, &file, err, sizeof(err));
	TAP_EQ(ret, 0, "a shaper's file is read (--delay, --burst 0: its state checks them)");
	if (ret) {
		tap_diag("  %s", err);
		rmdir(dir);
		return;
	}
	shaper(&s);
	ret = sluice_cmd_file_replace(&s.t, file, NULL, err, sizeof(err));
	TAP_TRUE(!ret && s.t.set.def.pkt_delay == 5 && s.t.nr_rules == 1 &&
			 s.t.rules[0].rule.policy.pkt.burst == 0,
		 "file replace on a shaper: delay 5, the rule's burst 0");
	if (ret)
		tap_diag("  %s", err);
	scratch_free(&s);

	shaper(&s);
	s.cfg.shape_horizon_us = 100000;
	ret = sluice_cmd_file_replace(&s.t, file, NULL, err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "--horizon"),
		 "file replace on a shaper checks its horizon (150ms past 100ms: refused)");
	scratch_free(&s);

	scratch_init(&l);
	ret = sluice_cmd_file_replace(&l.t, file, NULL, err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "never delays"),
		 "file replace on a limiter refuses --delay");
	scratch_free(&l);
	sluice_cmd_file_free(file);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_store();
	test_refusals();
	test_keep();
	test_horizon();
	test_queue();
	test_prometheus();
	test_file();
	return tap_done();
}
