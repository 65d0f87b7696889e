// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Crafted frames through the loaded program (BPF_PROG_TEST_RUN, test clock),
 * one table row each: the verdict, every counter of sluice_stats, the
 * policy's counters and the drop event.
 *
 * Sources 198.18.0.66 and 2001:2::66 are denied by /32 and /128 rules: a
 * frame from them drops only if the parser found the source at the right
 * offset, through any VLAN tags. Every other source passes the default
 * policy (100/s burst 200).
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>

#include "libsluice.h"
#include "../lib/bpfrun.h"
#include "../lib/tap.h"

#define DENY4 "198.18.0.66"
#define DENY6 "2001:2::66"

enum outcome {
	LIMITED_PASS, /* passed the default policy, new key */
	DENIED, /* dropped by a deny rule */
	NON_IP,
	MALFORMED,
};

/* frame_opts.ihl 0 means the default 5: a header length of 0 is patched in. */
#define IHL_ZERO 0xf0

struct row {
	const char *name;
	const char *src; /* NULL: ARP */
	__u32 len; /* frame length built */
	int vlans;
	__u8 ihl;
	__u32 cut; /* run only the first `cut` bytes (0: all) */
	enum outcome want;
};

static const struct row rows[] = {
	{ "IPv4", "198.18.0.1", 60, 0, 0, 0, LIMITED_PASS },
	{ "IPv4 from a denied source", DENY4, 60, 0, 0, 0, DENIED },
	{ "IPv4, header only (34 bytes)", DENY4, 34, 0, 0, 0, DENIED },
	{ "IPv6", "2001:2::1", 80, 0, 0, 0, LIMITED_PASS },
	{ "IPv6 from a denied source", DENY6, 80, 0, 0, 0, DENIED },
	{ "IPv6, header only (54 bytes)", DENY6, 54, 0, 0, 0, DENIED },
	{ "802.1Q IPv4", "198.18.0.1", 64, 1, 0, 0, LIMITED_PASS },
	{ "802.1Q IPv4 from a denied source", DENY4, 64, 1, 0, 0, DENIED },
	{ "802.1Q IPv6 from a denied source", DENY6, 84, 1, 0, 0, DENIED },
	{ "802.1ad + 802.1Q IPv4", "198.18.0.1", 68, 2, 0, 0, LIMITED_PASS },
	{ "802.1ad + 802.1Q IPv4 from a denied source", DENY4, 68, 2, 0, 0, DENIED },
	{ "802.1ad + 802.1Q IPv6 from a denied source", DENY6, 88, 2, 0, 0, DENIED },
	{ "three VLAN tags: not followed, non-IP", DENY4, 72, 3, 0, 0, NON_IP },
	{ "ARP", NULL, 60, 0, 0, 0, NON_IP },
	{ "truncated Ethernet (8 bytes)", DENY4, 60, 0, 0, 8, MALFORMED },
	{ "truncated Ethernet (13 bytes)", DENY4, 60, 0, 0, 13, MALFORMED },
	{ "Ethernet header only, IPv4 type (14 bytes)", DENY4, 60, 0, 0, 14, MALFORMED },
	{ "truncated 802.1Q tag (16 bytes)", DENY4, 64, 1, 0, 16, MALFORMED },
	{ "truncated 802.1ad + 802.1Q (20 bytes)", DENY4, 68, 2, 0, 20, MALFORMED },
	{ "truncated IPv4 (14 + 19 bytes)", DENY4, 60, 0, 0, 33, MALFORMED },
	{ "truncated IPv4 in 802.1ad + 802.1Q (22 + 19 bytes)", DENY4, 68, 2, 0, 41, MALFORMED },
	{ "truncated IPv6 (14 + 39 bytes)", DENY6, 80, 0, 0, 53, MALFORMED },
	{ "truncated IPv6 in 802.1Q (18 + 39 bytes)", DENY6, 84, 1, 0, 57, MALFORMED },
	{ "IPv4 IHL 0", DENY4, 60, 0, IHL_ZERO, 0, MALFORMED },
	{ "IPv4 IHL 4 (< 5)", DENY4, 60, 0, 4, 0, MALFORMED },
	{ "IPv4 IHL 15 pointing past the end", DENY4, 60, 0, 15, 0, MALFORMED },
	{ "IPv4 IHL 6 pointing 1 byte past the end", DENY4, 37, 0, 6, 0, MALFORMED },
	{ "IPv4 IHL 6 with options", DENY4, 60, 0, 6, 0, DENIED },
	{ "IPv4 IHL 15 exactly filling the frame", DENY4, 74, 0, 15, 0, DENIED },
};

static bool setup(struct bpfrun *r)
{
	struct sluice_settings set;
	struct sluice_policy deny;

	if (bpfrun_reset(r))
		return false;
	sluice_settings_init(&set);
	set.nr_rules = 2;
	set.rules_gen = 0;
	bpfrun_policy(&deny, SLUICE_ACT_DENY, 0);
	return !bpfrun_configure(r, &set) && !bpfrun_rule(r, 0, DENY4 "/32", &deny, 1) &&
	       !bpfrun_rule(r, 0, DENY6 "/128", &deny, 2);
}

static void run_row(struct bpfrun *r, const struct row *w)
{
	__u8 frame[FRAME_MAX];
	struct frame_opts fo = { .vlans = w->vlans, .ihl = w->ihl };
	struct sluice_stats got, want;
	struct sluice_rstats rs[3], rs_want[3];
	size_t len;
	__u32 action, run_len, slot = w->src && strchr(w->src, ':') ? 2 : 1;
	bool ihl0 = w->ihl == IHL_ZERO;
	int i, ret;

	if (!setup(r)) {
		tap_ok(false, "%s: setup", w->name);
		return;
	}
	if (ihl0)
		fo.ihl = 0;
	len = w->src ? frame_ip(frame, w->src, w->len, &fo) : frame_arp(frame);
	if (!len) {
		tap_ok(false, "%s: frame", w->name);
		return;
	}
	if (ihl0)
		frame[ETH_HLEN] = 0x40;
	run_len = w->cut ? w->cut : (__u32)len;
	bpfrun_clock(r, SCN_T0);
	ret = bpfrun_run(r, frame, run_len, &action);
	if (ret == -EINVAL && run_len < ETH_HLEN) {
		tap_skip("BPF_PROG_TEST_RUN refuses XDP frames shorter than 14 bytes (EINVAL)",
			 "%s", w->name);
		return;
	}
	if (ret) {
		tap_ok(false, "%s: run", w->name);
		return;
	}
	TAP_EQ(action, w->want == DENIED ? XDP_DROP : XDP_PASS, "%s: verdict", w->name);

	memset(&want, 0, sizeof(want));
	memset(rs_want, 0, sizeof(rs_want));
	want.rx = 1;
	want.rx_bytes = run_len;
	switch (w->want) {
	case LIMITED_PASS:
		want.passed = 1;
		want.new_keys = 1;
		rs_want[0].passed = 1;
		rs_want[0].passed_bytes = run_len;
		break;
	case DENIED:
		want.dropped = 1;
		want.dropped_bytes = run_len;
		want.denied = 1;
		rs_want[slot].dropped = 1;
		rs_want[slot].dropped_bytes = run_len;
		break;
	case NON_IP:
		want.passed = 1;
		want.non_ip = 1;
		break;
	case MALFORMED:
		want.passed = 1;
		want.malformed = 1;
		break;
	}
	if (bpfrun_stats(r, &got)) {
		tap_ok(false, "%s: read stats", w->name);
		return;
	}
	bpfrun_stats_eq(&got, &want, "%s: every counter", w->name);
	for (i = 0; i < 3; i++)
		if (bpfrun_rstats(r, (__u32)i, &rs[i]))
			memset(&rs[i], 0xff, sizeof(rs[i]));
	if (!tap_ok(!memcmp(rs, rs_want, sizeof(rs)), "%s: policy counters", w->name))
		for (i = 0; i < 3; i++)
			tap_diag("  slot %d: passed %llu/%llu B dropped %llu/%llu B", i,
				 (unsigned long long)rs[i].passed,
				 (unsigned long long)rs[i].passed_bytes,
				 (unsigned long long)rs[i].dropped,
				 (unsigned long long)rs[i].dropped_bytes);

	bpfrun_events(r);
	if (w->want != DENIED) {
		TAP_EQ(r->nr_events, 0, "%s: no drop event", w->name);
	} else if (TAP_EQ(r->nr_events, 1, "%s: one drop event", w->name)) {
		const struct sluice_event *ev = &r->events[0];
		struct sluice_cidr c;

		sluice_parse_addr(w->src, &c, NULL, 0);
		TAP_TRUE(ev->reason == SLUICE_REASON_DENIED && ev->family == c.family &&
				 !memcmp(ev->addr, c.addr, 16) && ev->pkt_len == run_len &&
				 ev->slot == slot && ev->sample == 64,
			 "%s: the event names the source, reason, length and rule slot", w->name);
	}
}

int main(void)
{
	struct bpfrun r;
	size_t i;

	/* One CPU: the sampled events depend on the per-CPU drop count. */
	bpfrun_one_cpu();
	if (!bpfrun_load(&r, NULL))
		return tap_done();
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		run_row(&r, &rows[i]);
	bpfrun_close(&r);
	return tap_done();
}
