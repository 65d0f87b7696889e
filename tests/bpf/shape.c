// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The shaper's tc program (sluice_tc) through BPF_PROG_TEST_RUN, a struct
 * __sk_buff in and out (the departure comes back in tstamp) on the test
 * clock: departures exactly as the host algorithm computes them, packet for
 * packet over random arrivals (IPv4 and IPv6, GSO segments), drops beyond
 * the queue, the counters, keys by destination, exempt and non-IP packets
 * untouched, a foreign tstamp cleared and counted, a later monotonic one
 * kept, the horizon drop, window algorithms as meters and dry-run, a
 * second key (--also-rate) that delays too; and the
 * clock at 0, on the key table under test (SLUICE_TEST_TABLE).
 *
 * BPF_PROG_TEST_RUN gives a tstamp no type: tools/bench/tcbare.bpf.c's
 * tc_stamp sets a monotonic delivery time and tail-calls sluice_tc.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <sluice/algo.h>
#include "frame.h"
#include "libsluice.h"
#include "tcbare.skel.h"
#include "../lib/bpfrun.h"
#include "../lib/tap.h"

#define TC_OK 0
#define TC_SHOT 2
#define MS_NS 1000000ULL
#define T0 SCN_T0 /* the test clock's start, ns */
#define EXEMPT_SLOT 3

static struct bpfrun r;
static struct tcbare_bpf *bare;

/* A UDP frame of len bytes from src to dst. */
static size_t frame2(__u8 *buf, const char *src, const char *dst, __u32 len)
{
	struct sluice_frame f = {
		.dst_mac = { 0x02, 0, 0, 0, 0, 0x02 },
		.src_mac = { 0x02, 0, 0, 0, 0, 0x01 },
		.sport = 1234,
		.dport = 9,
		.len = len,
	};

	if (sluice_parse_addr(src, &f.src, NULL, 0) || sluice_parse_addr(dst, &f.dst, NULL, 0) ||
	    sluice_frame_build(&f, buf, NULL, 0))
		return 0;
	return len;
}

/* One packet through sluice_tc at t_ns: the verdict (or -errno), *ts the
 * tstamp it leaves (in: *ts as a tstamp of no type; gso segments). */
static int tc(const char *src, const char *dst, __u32 len, __u32 gso_segs, __u64 t_ns, __u64 *ts)
{
	__u8 frame[FRAME_MAX];
	struct __sk_buff skb;
	__u32 ret;
	int err;

	if (!frame2(frame, src, dst, len))
		return -EINVAL;
	memset(&skb, 0, sizeof(skb));
	skb.tstamp = *ts;
	skb.gso_segs = gso_segs;
	bpfrun_clock(&r, t_ns);
	err = bpfrun_run_tc(&r, frame, len, &skb, &ret);
	if (err)
		return err;
	*ts = skb.tstamp;
	return (int)ret;
}

/* The same, the packet stamped first with a monotonic delivery time
 * (mono_ns) by tc_stamp, which then tail-calls sluice_tc. */
static int tc_mono(const __u8 *frame, __u32 len, __u64 mono_ns, __u64 t_ns, __u64 *ts)
{
	struct __sk_buff skb;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .repeat = 1,
		    .ctx_in = &skb, .ctx_size_in = sizeof(skb), .ctx_out = &skb,
		    .ctx_size_out = sizeof(skb));

	memset(&skb, 0, sizeof(skb));
	bare->bss->stamp_ns = mono_ns;
	bpfrun_clock(&r, t_ns);
	if (bpf_prog_test_run_opts(bpf_program__fd(bare->progs.tc_stamp), &o))
		return -errno;
	*ts = skb.tstamp;
	return (int)o.retval;
}

/* A shaper's leaky bucket: rate/s, burst, delay; keys /32 and /64. */
static void shaper(struct sluice_settings *set, __u64 rate, __u64 burst, __u32 delay)
{
	bpfrun_reset(&r);
	sluice_settings_init(set);
	set->def.algo = SLUICE_ALGO_LEAKY_BUCKET;
	sluice_limit_set(&set->def.pkt, rate, SLUICE_NS_PER_SEC, burst, NULL, 0);
	set->def.pkt_delay = delay;
	r.kind = SLUICE_KIND_SHAPE;
	r.horizon_us = 0;
}

static struct sluice_stats stats(void)
{
	struct sluice_stats st;

	if (bpfrun_stats(&r, &st))
		memset(&st, 0xff, sizeof(st));
	return st;
}

static struct sluice_shape_stats sstats(void)
{
	struct sluice_shape_stats ss;

	if (bpfrun_shape_stats(&r, &ss))
		memset(&ss, 0xff, sizeof(ss));
	return ss;
}

/* n packets at once from src at t_ns: their tstamps as ms after t_ns ("-"
 * none, "D" dropped, "x" a tstamp that is no whole ms after t_ns). */
static const char *burst(const char *src, const char *dst, int n, __u64 t_ns, char *out)
{
	size_t off = 0;
	int i;

	out[0] = '\0';
	for (i = 0; i < n; i++) {
		__u64 ts = 0;
		int v = tc(src, dst, 100, 1, t_ns, &ts);
		char one[24];

		if (v == TC_SHOT)
			snprintf(one, sizeof(one), "D");
		else if (v != TC_OK)
			snprintf(one, sizeof(one), "?%d", v);
		else if (!ts)
			snprintf(one, sizeof(one), "-");
		else if (ts < t_ns || (ts - t_ns) % MS_NS)
			snprintf(one, sizeof(one), "x");
		else
			snprintf(one, sizeof(one), "%llu",
				 (unsigned long long)((ts - t_ns) / MS_NS));
		off += (size_t)snprintf(out + off, 512 - off, "%s%s", i ? " " : "", one);
	}
	return out;
}

static bool expect(const char *src, const char *dst, int n, __u64 t_ns, const char *want,
		   const char *name)
{
	char got[512];

	burst(src, dst, n, t_ns, got);
	if (tap_ok(!strcmp(got, want), "%s", name))
		return true;
	tap_diag("  got  %s", got);
	tap_diag("  want %s", want);
	return false;
}

/* Host against BPF, packet for packet: random gaps, lengths, GSO segments,
 * an IPv4 and an IPv6 source, each on its own key. */
static void host_vs_bpf(__u64 rate, __u64 burst_, __u32 delay, __u64 brate, __u32 bdelay,
			unsigned int seed, __u64 t0)
{
	struct sluice_settings set;
	struct sluice_shape_stats want = {}, got;
	struct sluice_stats st;
	__u64 s[2][2] = { { 0, 0 }, { 0, 0 } }, t = t0, limited = 0;
	const char *srcs[2] = { "198.18.0.1", "2001:2::1" };
	int i, bad = -1, n = 2000;
	char name[128];

	shaper(&set, rate, burst_, delay);
	if (brate) {
		sluice_limit_set_bytes(&set.def.bytes, brate, SLUICE_NS_PER_SEC, 8000, NULL, 0);
		set.def.byte_delay = bdelay;
	}
	bpfrun_configure(&r, &set);
	srand(seed);
	snprintf(name, sizeof(name), "%llu/s burst %llu delay %d%s%s", (unsigned long long)rate,
		 (unsigned long long)burst_, delay == SLUICE_NODELAY ? -1 : (int)delay,
		 brate ? " and a byte limit" : "", t0 ? "" : ", the clock from 0");
	for (i = 0; i < n && bad < 0; i++) {
		int k = rand() % 2, v, wv;
		__u32 len = 60 + (__u32)(rand() % 1400),
		      segs = rand() % 5 == 0 ? 1 + rand() % 4 : 0;
		__u64 now, dep = 0, ts = 0, wts = 0, used[2];

		if (rand() % 3)
			t += (__u64)(rand() % 20000) * 1000;
		now = t << SLUICE_TICK_SHIFT;
		wv = sluice_bucket_shape_shared(&set.def, s[k], now, len, segs ? segs : 1, 1, 1,
						~0ULL, used, &dep);
		if (wv == SLUICE_PASS && dep > now) {
			__u64 d;

			wts = (dep + 15) >> SLUICE_TICK_SHIFT;
			d = wts - t;
			want.delayed++;
			want.delay_ns += d;
			want.max_delay_ns = d > want.max_delay_ns ? d : want.max_delay_ns;
			want.hist[d < 1000 ? 0 :
				  64 - __builtin_clzll(d / 1000) < SLUICE_DELAY_BUCKETS ?
					     64 - __builtin_clzll(d / 1000) :
					     SLUICE_DELAY_BUCKETS - 1]++;
		}
		want.shaped += wv == SLUICE_PASS;
		limited += wv != SLUICE_PASS;
		v = tc(srcs[k], k ? "2001:2::fe" : "198.19.255.254", len, segs, t, &ts);
		if (v != (wv == SLUICE_PASS ? TC_OK : TC_SHOT) || ts != wts) {
			bad = i;
			tap_diag("  packet %d from %s at %llu ns, %u B, %u segments: sluice_tc %d "
				 "tstamp %llu, host %s tstamp %llu",
				 i, srcs[k], (unsigned long long)t, len, segs, v,
				 (unsigned long long)ts, wv == SLUICE_PASS ? "pass" : "drop",
				 (unsigned long long)wts);
		}
	}
	tap_ok(bad < 0, "host vs BPF, %s: the same verdicts and departures over %d packets", name,
	       n);
	got = sstats();
	TAP_TRUE(!memcmp(&got, &want, sizeof(got)),
		 "host vs BPF, %s: shaped %llu, delayed %llu, delay_ns, max and histogram as the "
		 "host counts them",
		 name, (unsigned long long)want.shaped, (unsigned long long)want.delayed);
	if (memcmp(&got, &want, sizeof(got)))
		tap_diag("  got shaped %llu delayed %llu delay_ns %llu max %llu",
			 (unsigned long long)got.shaped, (unsigned long long)got.delayed,
			 (unsigned long long)got.delay_ns, (unsigned long long)got.max_delay_ns);
	st = stats();
	TAP_TRUE(st.limited == limited && st.dropped == limited && st.passed == want.shaped &&
			 limited > 0 && want.delayed > 0,
		 "host vs BPF, %s: %llu beyond the queue counted limited and dropped", name,
		 (unsigned long long)limited);
}

static void semantics(void)
{
	struct sluice_settings set;
	struct sluice_shape_stats ss;
	struct sluice_stats st;

	shaper(&set, 100, 5, 0);
	bpfrun_configure(&r, &set);
	expect("198.18.0.1", "198.19.255.254", 8, T0, "- 10 20 30 40 50 D D",
	       "burst 5 delay 0: 6 accepted, the first at once, the rest 10 ms apart, 2 dropped");
	st = stats();
	ss = sstats();
	TAP_TRUE(st.limited == 2 && st.dropped == 2 && st.passed == 6 && st.dropped_bytes == 200,
		 "the 2 beyond the queue: limited and dropped");
	TAP_TRUE(ss.shaped == 6 && ss.delayed == 5 && ss.delay_ns == 150 * MS_NS &&
			 ss.max_delay_ns == 50 * MS_NS && ss.horizon_dropped == 0 &&
			 ss.restamped == 0,
		 "shaped 6, delayed 5, delay_ns 150 ms, max 50 ms");
	/* 10 ms = 10000 us: under 2^14 us, bucket 14; 20-30: 15; 40-50: 16 */
	TAP_TRUE(ss.hist[14] == 1 && ss.hist[15] == 2 && ss.hist[16] == 2 && ss.hist[0] == 0,
		 "histogram: 10 ms in [14], 20 and 30 ms in [15], 40 and 50 ms in [16]");
	expect("198.18.0.2", "198.19.255.254", 2, T0, "- 10",
	       "a quiet source is not delayed by a noisy one");

	shaper(&set, 100, 5, 2);
	bpfrun_configure(&r, &set);
	expect("198.18.0.1", "198.19.255.254", 8, T0, "- - - 10 20 30 D D",
	       "burst 5 delay 2: 3 at once, then spaced");
	expect("198.18.0.1", "198.19.255.254", 3, T0 + 25 * MS_NS, "15 25 D",
	       "25 ms later: 2 more fit, at their turns (60 and 70 ms) less 2 intervals");

	shaper(&set, 100, 5, SLUICE_NODELAY);
	bpfrun_configure(&r, &set);
	expect("2001:2::1", "2001:2::fe", 8, T0, "- - - - - - D D",
	       "IPv6, nodelay: a meter, 6 at once and 2 dropped");
	shaper(&set, 100, 5, 0);
	bpfrun_configure(&r, &set);
	expect("2001:2::1", "2001:2::fe", 3, T0, "- 10 20", "IPv6, delay 0: spaced");
	expect("2001:2:0:1::1", "2001:2::fe", 2, T0, "- 10", "IPv6: another /64 is another key");
	expect("2001:2::2", "2001:2::fe", 1, T0, "30", "IPv6: the same /64 is the same key");
}

static void gso(void)
{
	struct sluice_settings set;
	__u64 ts = 0;

	shaper(&set, 100, 10, 0);
	bpfrun_configure(&r, &set);
	TAP_EQ(tc("198.18.0.1", "198.19.255.254", 1000, 4, T0, &ts), TC_OK,
	       "gso: 4 segments in one packet pass");
	ts = 0;
	tc("198.18.0.1", "198.19.255.254", 100, 0, T0, &ts);
	TAP_EQ(ts, T0 + 40 * MS_NS, "gso: the next packet waits for 4 turns (40 ms)");
	ts = 0;
	TAP_TRUE(tc("198.18.0.1", "198.19.255.254", 1000, 7, T0, &ts) == TC_OK &&
			 ts == T0 + 50 * MS_NS,
		 "gso: 7 segments with 5 turns ahead (within a queue of 10) depart at 50 ms");
	ts = 0;
	TAP_EQ(tc("198.18.0.1", "198.19.255.254", 100, 0, T0, &ts), TC_SHOT,
	       "gso: and charged 7 turns: 12 ahead is beyond the queue");
}

static void key_dst(void)
{
	struct sluice_settings set;

	shaper(&set, 100, 5, 0);
	r.kind = SLUICE_KIND_SHAPE | SLUICE_KIND_KEY_DST;
	bpfrun_configure(&r, &set);
	expect("198.18.0.1", "198.19.0.1", 2, T0, "- 10", "key dst: a destination's queue");
	expect("198.18.0.2", "198.19.0.1", 1, T0, "20",
	       "key dst: another source to the same destination joins its queue");
	expect("198.18.0.1", "198.19.0.2", 1, T0, "-",
	       "key dst: the same source to another destination is another key");
	expect("2001:2::1", "2001:2:0:0:5::1", 2, T0, "- 10", "key dst: IPv6 destinations too");
	TAP_EQ(bpfrun_count_keys(&r, false), 3, "key dst: three keys, by destination");
}

static void untouched(void)
{
	struct sluice_settings set;
	struct sluice_policy ex;
	struct sluice_shape_stats ss;
	__u8 arp[64];
	__u64 ts;
	int v;

	shaper(&set, 100, 1, 0);
	bpfrun_policy(&ex, SLUICE_ACT_EXEMPT, 0);
	bpfrun_rule(&r, 0, "198.18.0.9/32", &ex, EXEMPT_SLOT);
	set.nr_rules = 1;
	bpfrun_configure(&r, &set);
	expect("198.18.0.9", "198.19.255.254", 4, T0, "- - - -",
	       "exempt: passes at once, no tstamp, past what the default would queue");
	ts = 0;
	frame_arp(arp);
	bpfrun_clock(&r, T0);
	{
		struct __sk_buff skb = { 0 };
		__u32 ret;

		skb.tstamp = 0;
		v = bpfrun_run_tc(&r, arp, 60, &skb, &ret);
		TAP_TRUE(!v && ret == TC_OK && skb.tstamp == 0, "non-IP: passes, no tstamp");
		memset(&skb, 0, sizeof(skb));
		skb.tstamp = 1764600000000000000ULL; /* a receive time: realtime */
		v = bpfrun_run_tc(&r, arp, 60, &skb, &ret);
		if (!TAP_TRUE(!v && ret == TC_OK && skb.tstamp == 0,
			      "non-IP with a foreign (realtime) tstamp: passes, tstamp cleared"))
			tap_diag("  run %d, verdict %u, tstamp %llu, restamped %llu", v, ret,
				 (unsigned long long)skb.tstamp,
				 (unsigned long long)sstats().restamped);
	}
	ts = 1764600000000000000ULL;
	v = tc("198.18.0.9", "198.19.255.254", 100, 0, T0, &ts);
	TAP_TRUE(v == TC_OK && ts == 0, "exempt with a foreign tstamp: cleared");
	ts = 1764600000000000000ULL;
	v = tc("198.18.0.1", "198.19.255.254", 100, 0, T0, &ts);
	TAP_TRUE(v == TC_OK && ts == 0, "shaped, departing now, with a foreign tstamp: cleared");
	ts = 1764600000000000000ULL;
	v = tc("198.18.0.1", "198.19.255.254", 100, 0, T0, &ts);
	TAP_TRUE(v == TC_OK && ts == T0 + 10 * MS_NS,
		 "shaped, delayed, with a foreign tstamp: the departure replaces it");
	ss = sstats();
	TAP_EQ(ss.restamped, 3, "restamped counts the 3 cleared (non-IP, exempt, departing now)");
	TAP_EQ(stats().non_ip, 2, "non-IP counted");
	TAP_EQ(stats().exempt, 5, "exempt counted");
}

static void mono(void)
{
	struct sluice_settings set;
	__u8 frame[FRAME_MAX];
	size_t len = frame2(frame, "198.18.0.1", "198.19.255.254", 100);
	__u8 exf[FRAME_MAX];
	size_t exlen = frame2(exf, "198.18.0.9", "198.19.255.254", 100);
	struct sluice_policy ex;
	__u64 ts;
	int v;

	shaper(&set, 100, 5, 0);
	bpfrun_policy(&ex, SLUICE_ACT_EXEMPT, 0);
	bpfrun_rule(&r, 0, "198.18.0.9/32", &ex, EXEMPT_SLOT);
	set.nr_rules = 1;
	bpfrun_configure(&r, &set);
	v = tc_mono(frame, (__u32)len, 0, T0, &ts);
	TAP_TRUE(v == TC_OK && ts == 0, "tail call: an unstamped packet reaches sluice_tc (%d)", v);
	v = tc_mono(frame, (__u32)len, T0 + 500 * MS_NS, T0, &ts);
	TAP_TRUE(v == TC_OK && ts == T0 + 500 * MS_NS,
		 "a later monotonic delivery time (500 ms, turn at 10 ms) is kept");
	v = tc_mono(frame, (__u32)len, T0 + 1 * MS_NS, T0, &ts);
	TAP_TRUE(v == TC_OK && ts == T0 + 20 * MS_NS,
		 "an earlier monotonic delivery time (1 ms, turn at 20 ms) gives way to the turn");
	v = tc_mono(exf, (__u32)exlen, T0 + 7 * MS_NS, T0, &ts);
	TAP_TRUE(v == TC_OK && ts == T0 + 7 * MS_NS,
		 "exempt: a monotonic delivery time is left as it is");
	TAP_EQ(sstats().restamped, 0, "no monotonic tstamp is counted restamped");
}

static void horizon(void)
{
	struct sluice_settings set;
	struct sluice_shape_stats ss;
	struct sluice_stats st;

	shaper(&set, 100, 10, 0);
	r.horizon_us = 25000;
	bpfrun_configure(&r, &set);
	expect("198.18.0.1", "198.19.255.254", 5, T0, "- 10 20 D D",
	       "horizon 25 ms: departures at 30 and 40 ms are dropped");
	ss = sstats();
	st = stats();
	TAP_TRUE(ss.horizon_dropped == 2 && st.dropped == 2 && st.limited == 0,
		 "horizon drops: horizon_dropped 2, dropped 2, not limited");
	expect("198.18.0.1", "198.19.255.254", 1, T0 + 10 * MS_NS, "20",
	       "horizon: the dropped ones took no turn (10 ms later: the 30 ms turn, 20 ms ahead)");
	r.horizon_us = 0;
	bpfrun_configure(&r, &set);
	expect("198.18.0.1", "198.19.255.254", 1, T0 + 10 * MS_NS, "30",
	       "horizon 0: no bound (the 40 ms turn, 30 ms ahead)");
}

/*
 * The clock at 0 (the test clock's start; a box booted a moment ago is
 * inside its first window the same way), on the key table under test: a
 * new key's queue is as empty at 0 as at any time, and its turns fall
 * where they do from 1 s. On the set table a new key's way starts at
 * SLUICE_FRESH, read as an empty queue.
 */
static void clock_zero(void)
{
	struct sluice_settings set;

	shaper(&set, 100, 5, 0);
	bpfrun_configure(&r, &set);
	expect("198.18.0.1", "198.19.255.254", 8, 0, "- 10 20 30 40 50 D D",
	       "clock at 0: burst 5 delay 0: 6 accepted, the first at once, the rest 10 ms apart");
	expect("198.18.0.1", "198.19.255.254", 1, 10 * MS_NS - 1, "D",
	       "clock at 0: a ns before the first turn is done the queue is still full");
	expect("198.18.0.1", "198.19.255.254", 2, 10 * MS_NS, "50 D",
	       "clock at 0: at 10 ms one more fits, at the 60 ms turn");
	expect("198.18.0.1", "198.19.255.254", 1, 10 * MS_NS + 1, "D",
	       "clock at 0: a ns past it, full again");
	expect("2001:2::1", "2001:2::fe", 3, 0, "- 10 20", "clock at 0: IPv6, spaced the same");

	shaper(&set, 100, 1, 0);
	set.def.pkt.burst = 0;
	set.def.pkt.tolerance = 0; /* --burst 0: no queue */
	bpfrun_configure(&r, &set);
	expect("198.18.0.1", "198.19.255.254", 2, 0, "- D",
	       "clock at 0: burst 0: the first packet goes at once, the next is beyond the queue");
	expect("198.18.0.1", "198.19.255.254", 1, 10 * MS_NS - 1, "D",
	       "clock at 0: burst 0: a ns before the interval, still dropped");
	expect("198.18.0.1", "198.19.255.254", 2, 10 * MS_NS, "- D",
	       "clock at 0: burst 0: one packet per interval");

	shaper(&set, 100, 5, 0);
	set.def.algo = SLUICE_ALGO_FIXED_WINDOW;
	sluice_window_set(&set.def, 3, SLUICE_NS_PER_SEC, NULL, 0);
	bpfrun_configure(&r, &set);
	expect("198.18.0.1", "198.19.255.254", 5, 0, "- - - D D",
	       "clock at 0: a fixed window on a shaper meters window 0: 3 of 5");
	expect("198.18.0.1", "198.19.255.254", 1, SLUICE_NS_PER_SEC - 1, "D",
	       "clock at 0: ... to its last ns");
	expect("198.18.0.1", "198.19.255.254", 4, SLUICE_NS_PER_SEC, "- - - D",
	       "clock at 0: ... and window 1 from its first ns");
}

static void meters_and_dry_run(void)
{
	struct sluice_settings set;
	struct sluice_shape_stats ss;
	struct sluice_stats st;
	__u64 ts;

	shaper(&set, 100, 5, 0);
	set.def.algo = SLUICE_ALGO_FIXED_WINDOW;
	set.def.pkt_delay = 0;
	sluice_window_set(&set.def, 3, SLUICE_NS_PER_SEC, NULL, 0);
	bpfrun_configure(&r, &set);
	expect("198.18.0.1", "198.19.255.254", 5, T0, "- - - D D",
	       "fixed window on a shaper: a meter, 3 at once and 2 dropped");
	TAP_EQ(sstats().shaped, 0, "a meter's packets are not shaped");
	ts = 1764600000000000000ULL;
	bpfrun_clock(&r, T0 + 2 * SLUICE_NS_PER_SEC);
	TAP_TRUE(tc("198.18.0.1", "198.19.255.254", 100, 0, T0 + 2 * SLUICE_NS_PER_SEC, &ts) ==
				 TC_OK &&
			 ts == 0,
		 "a metered packet's foreign tstamp is cleared");

	shaper(&set, 100, 2, 0);
	set.flags |= SLUICE_DRY_RUN;
	bpfrun_configure(&r, &set);
	expect("198.18.0.1", "198.19.255.254", 5, T0, "- - - - -",
	       "dry-run: nothing delayed, nothing dropped");
	ss = sstats();
	st = stats();
	TAP_TRUE(ss.shaped == 3 && ss.delayed == 2 && ss.delay_ns == 30 * MS_NS,
		 "dry-run: the delays it would give are counted (2, 30 ms in all)");
	TAP_TRUE(st.would_drop == 2 && st.dropped == 0 && st.limited == 0 && st.passed == 5,
		 "dry-run: the 2 beyond the queue are would-drops");
}

/*
 * A second key on a shaper (--also-rate): the prefix delays too. Each
 * source of a /24 is far under its own limit (1000/s), and the /24 has
 * 10/s with --also-burst 4: a packet departs at the later of its two keys'
 * turns, so one packet from each of six sources departs at 0, 100, 200,
 * 300 and 400 ms, and the sixth, beyond the prefix's queue, is dropped
 * with its own key's charge given back (also_limited). With the fq horizon
 * at 250 ms the fourth turn is refused as a horizon drop instead, and takes
 * no turn. Another /24 is a prefix of its own.
 */
static void also(void)
{
	struct sluice_also a = { .prefix4 = 24, .prefix6 = 48 };
	struct sluice_settings set;
	struct sluice_shape_stats ss;
	struct sluice_xstats xs;
	struct sluice_bucket b;
	struct sluice_stats st;
	char got[128], src[32];
	__u32 id = 3;
	size_t off = 0;
	int i;

	shaper(&set, 1000, 100, 0);
	set.def.flags |= id << SLUICE_POLICY_ALSO_SHIFT;
	if (!tap_ok(!sluice_limit_set(&a.pkt, 10, SLUICE_NS_PER_SEC, 4, NULL, 0) &&
			    !bpf_map_update_elem(r.also_fd, &id, &a, BPF_ANY) &&
			    !bpfrun_configure(&r, &set),
		    "second key: a shaper's policy with --also-rate 10/s --also-burst 4"))
		return;
	got[0] = '\0';
	for (i = 1; i <= 6; i++) {
		snprintf(src, sizeof(src), "198.18.0.%d", i);
		off += (size_t)snprintf(got + off, sizeof(got) - off, "%s%s", i > 1 ? " " : "",
					burst(src, "198.19.255.254", 1, T0, (char[512]){ 0 }));
	}
	TAP_TRUE(!strcmp(got, "- 100 200 300 400 D"),
		 "second key: six sources of a /24 depart at the prefix's turns, the sixth "
		 "beyond its queue (got %s)",
		 got);
	st = stats();
	if (bpfrun_xstats(&r, &xs))
		memset(&xs, 0xff, sizeof(xs));
	if (bpfrun_lookup(&r, false, set.def.tag, "198.18.0.6", 32, &b))
		memset(&b, 0xff, sizeof(b));
	TAP_TRUE(xs.also_limited == 1 && st.limited == 1 && st.dropped == 1,
		 "second key: the drop is the prefix's: also_limited %llu, limited %llu",
		 (unsigned long long)xs.also_limited, (unsigned long long)st.limited);
	TAP_TRUE(b.s[0] == SLUICE_FRESH || b.s[0] <= (T0 << SLUICE_TICK_SHIFT),
		 "second key: the dropped source's own turn is given back (TAT %llu)",
		 (unsigned long long)b.s[0]);
	expect("198.18.1.1", "198.19.255.254", 2, T0, "- 100",
	       "second key: another /24 is a prefix of its own: at once, then the prefix's 100 ms");

	shaper(&set, 1000, 100, 0);
	set.def.flags |= id << SLUICE_POLICY_ALSO_SHIFT;
	r.horizon_us = 250000;
	bpfrun_configure(&r, &set);
	got[0] = '\0';
	off = 0;
	for (i = 1; i <= 5; i++) {
		snprintf(src, sizeof(src), "198.18.0.%d", i);
		off += (size_t)snprintf(got + off, sizeof(got) - off, "%s%s", i > 1 ? " " : "",
					burst(src, "198.19.255.254", 1, T0, (char[512]){ 0 }));
	}
	ss = sstats();
	TAP_TRUE(!strcmp(got, "- 100 200 D D") && ss.horizon_dropped == 2,
		 "second key, horizon 250 ms: the prefix's turns at 300 ms and on are horizon "
		 "drops, taking no turn (got %s, horizon_dropped %llu)",
		 got, (unsigned long long)ss.horizon_dropped);
	r.horizon_us = 0;
}

int main(void)
{
	int fd, zero = 0;

	bpfrun_one_cpu();
	if (!bpfrun_load(&r, &(struct bpfrun_opts){ .tc = true }))
		return tap_done();
	bare = tcbare_bpf__open_and_load();
	fd = r.tc_fd;
	if (!tap_ok(bare && !bpf_map_update_elem(bpf_map__fd(bare->maps.tc_next), &zero, &fd,
						 BPF_ANY),
		    "load tc_stamp and chain sluice_tc behind it"))
		return tap_done();

	semantics();
	gso();
	key_dst();
	untouched();
	mono();
	horizon();
	meters_and_dry_run();
	clock_zero();
	also();
	host_vs_bpf(100, 20, 0, 0, 0, 1, T0);
	host_vs_bpf(100, 20, 5, 0, 0, 2, T0);
	host_vs_bpf(3, 4, 1, 0, 0, 3, T0);
	host_vs_bpf(200, 10, 2, 40000, 3000, 4, T0);
	host_vs_bpf(100, 20, 5, 0, 0, 5, 0);
	host_vs_bpf(200, 10, 2, 40000, 3000, 6, 0);

	tcbare_bpf__destroy(bare);
	bpfrun_close(&r);
	return tap_done();
}
