// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Wide keys (--key src,dport and --key flow): a policy keyed by more than
 * the source gives each (source, protocol, destination port), or each flow,
 * a bucket of its own, in sluice_flows or (--table sets) sluice_setsf; a
 * policy keyed by the source (the control) gives one source one bucket
 * whatever its ports. A packet without ports (ICMP, a non-first fragment) is
 * keyed with port 0. Past the new-key limit a wide key is charged to its
 * aggregate (the aggregate source, every other field 0) in the same table;
 * dry-run passes what the wide bucket would drop; a penalty boxes the
 * source; the shaper's program keys the same way. Each case checks the
 * verdicts, and the key's state where the table holds it.
 *
 * On the test clock, a policy of 1/h burst 2: each new key passes two
 * packets, then drops.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <sluice/sets.h>
#include "libsluice.h"
#include "sluice.skel.h"
#include "../lib/bpfrun.h"
#include "../lib/l4frame.h"
#include "../lib/scenario.h"
#include "../lib/tap.h"

#define TAG_DEFAULT SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 1)
/* The shaper delays what a bucket would drop: its cases meter with a fixed
 * window of 2 packets an hour instead, which drops. */
#define TAG_WINDOW SLUICE_TAG(0, SLUICE_ALGO_FIXED_WINDOW, 1)
#define TCP 6
#define UDP 17
#define ICMP 1

/* A packet: protocol, ports, source and destination (family by form). */
struct pkt {
	__u8 proto;
	__u16 sport, dport;
	const char *src, *dst;
	int frag; /* a non-first fragment (IPv4) */
};

static void build(struct l4frame *f, const struct pkt *p)
{
	int v6 = strchr(p->src, ':') != NULL;
	__u8 proto = v6 && p->proto == ICMP ? 58 : p->proto;

	if (v6)
		l4f_ip6(f, proto);
	else
		l4f_ip4(f, 0, 5, proto, p->frag ? 0x0010 : 0);
	if (!p->frag) {
		if (proto == TCP)
			l4f_tcp(f, p->sport, p->dport, 0x02);
		else if (proto == UDP)
			l4f_udp(f, p->sport, p->dport);
		else
			l4f_icmp(f, v6 ? 128 : 8, 0);
	}
	l4f_pad(f);
	l4f_src(f, p->src);
	l4f_dst(f, p->dst ? p->dst : (v6 ? "2001:2::fe" : "198.19.255.254"));
}

/* Send strlen(want) copies of p (XDP, or the tc program): one TAP line. */
static bool expect(struct bpfrun *r, bool tc, const struct pkt *p, const char *want,
		   const char *what)
{
	char got[32] = "";
	size_t i, n = strlen(want);
	struct l4frame f;

	memset(&f, 0, sizeof(f));
	build(&f, p);
	for (i = 0; i < n && i < sizeof(got) - 1; i++) {
		__u32 v = 0;
		int err = tc ? bpfrun_run_tc(r, f.b, f.len, NULL, &v) :
			       bpfrun_run(r, f.b, f.len, &v);

		got[i] = err ? '?' : (tc ? v == TC_ACT_SHOT : v == XDP_DROP) ? 'D' : 'P';
	}
	got[i] = 0;
	if (tap_ok(!strcmp(got, want), "%s: %s", what, want))
		return true;
	tap_diag("  got %s", got);
	return false;
}

/* The default policy at 1/h burst 2 (window: 2 an hour), keyed by `mode`,
 * and flags. */
static bool setup(struct bpfrun *r, struct sluice_settings *set, __u32 mode, __u32 set_flags,
		  __u8 pol_flags, bool window)
{
	if (!bpfrun_setup(r, set, 2))
		return false;
	set->def.tag = TAG_DEFAULT;
	if (window) {
		set->def.algo = SLUICE_ALGO_FIXED_WINDOW;
		set->def.tag = TAG_WINDOW;
		if (sluice_window_set(&set->def, 2, BPFRUN_HOUR, NULL, 0))
			return false;
	}
	set->def.flags = (__u8)(pol_flags | mode << SLUICE_POLICY_KEY_SHIFT);
	set->flags |= set_flags;
	return !bpfrun_configure(r, set);
}

static struct sluice_stats stats(struct bpfrun *r)
{
	struct sluice_stats st;

	if (bpfrun_stats(r, &st))
		memset(&st, 0xff, sizeof(st));
	return st;
}

/* Is r's program the shaper's? */
static bool tc_loaded(struct bpfrun *r)
{
	return bpf_program__fd(r->skel->progs.sluice_tc) >= 0;
}

/* The wide key the datapath makes of p under the default policy. */
static struct sluice_fkey fkey_of(const struct pkt *p, __u32 mode, __u32 tag)
{
	struct sluice_fkey k;
	int v6 = strchr(p->src, ':') != NULL;

	memset(&k, 0, sizeof(k));
	k.k.tag = tag;
	k.k.family = v6 ? 6 : 4;
	k.k.prefixlen = v6 ? 64 : 32;
	inet_pton(v6 ? AF_INET6 : AF_INET, p->src, k.k.addr);
	if (v6)
		memset(k.k.addr + 8, 0, 8);
	k.mode = (__u8)mode;
	k.proto = v6 && p->proto == ICMP ? 58 : p->proto;
	k.dport = p->frag ? 0 : p->dport;
	if (mode == SLUICE_KEY_FLOW) {
		k.sport = p->frag ? 0 : p->sport;
		inet_pton(v6 ? AF_INET6 : AF_INET,
			  p->dst ? p->dst : (v6 ? "2001:2::fe" : "198.19.255.254"), k.dst);
	}
	return k;
}

/* The state of wide key k in the table under test: 0, or -ENOENT. */
static int wide_state(struct bpfrun *r, const struct sluice_fkey *k, struct sluice_bucket *b)
{
	struct sluice_bpf *skel = r->skel;

	if (!r->table_sets)
		return bpf_map__lookup_elem(skel->maps.sluice_flows, k, sizeof(*k), b, sizeof(*b),
					    0) ?
			       -ENOENT :
			       0;
	{
		__u32 nsets = bpf_map__max_entries(skel->maps.sluice_setsf);
		__u64 h = sluice_fkey_hash(r->seed, k);
		__u64 want = sluice_way_ident_wide(k, h);
		__u32 idx[SLUICE_KEY_SETS];
		struct sluice_setf s;
		int i, c, n = sluice_key_sets(h, want, nsets, 0, idx);

		for (c = 0; c < n; c++) {
			if (bpf_map__lookup_elem(skel->maps.sluice_setsf, &idx[c], sizeof(idx[c]),
						 &s, sizeof(s), 0))
				return -ENOENT;
			for (i = 0; i < SLUICE_SET_WAYS; i++) {
				if (SLUICE_WAY_MATCH(s.w[i].ident) != want)
					continue;
				/* The way holds the whole key, as claimed. */
				if (memcmp(&s.x[i].key, k, sizeof(*k)))
					return -EBADMSG;
				b->s[0] = s.w[i].s0;
				b->s[1] = s.x[i].a.s1;
				b->dropped = s.x[i].a.dropped;
				return 0;
			}
		}
		return -ENOENT;
	}
}

static void has_state(struct bpfrun *r, const struct pkt *p, __u32 mode, __u64 dropped,
		      const char *what)
{
	struct sluice_fkey k = fkey_of(p, mode, tc_loaded(r) ? TAG_WINDOW : TAG_DEFAULT);
	struct sluice_bucket b;
	int ret = wide_state(r, &k, &b);

	if (!tap_ok(!ret && b.dropped == dropped, "%s: its wide key is in %s, %llu dropped", what,
		    r->table_sets ? "sluice_setsf" : "sluice_flows", (unsigned long long)dropped))
		tap_diag("  %s, dropped %llu", ret ? strerror(-ret) : "found",
			 ret ? 0ULL : (unsigned long long)b.dropped);
}

#define V4 "198.18.0.1"
#define V4B "198.18.0.2"
#define V6 "2001:2::1"

static void src_dport(struct bpfrun *r, bool tc)
{
	struct sluice_settings set;
	const char *t = tc ? "tc" : "xdp";
	struct pkt https = { TCP, 40000, 443, V4 }, http = { TCP, 40000, 80, V4 };
	struct pkt udp443 = { UDP, 40000, 443, V4 }, other_sport = { TCP, 40001, 443, V4 };
	struct pkt other_dst = { TCP, 40000, 443, V4, "198.19.0.9" };
	struct pkt icmp = { ICMP, 0, 0, V4 }, frag = { UDP, 0, 53, V4, NULL, 1 };
	struct pkt udp0 = { UDP, 9, 0, V4 }, v6 = { TCP, 40000, 443, V6 };
	struct pkt v6b = { TCP, 40000, 80, V6 }, other = { TCP, 40000, 443, V4B };
	char what[96];

	if (!setup(r, &set, SLUICE_KEY_SRC_DPORT, 0, 0, tc))
		return;
#define W(s) (snprintf(what, sizeof(what), "%s src,dport: %s", t, s), what)
	expect(r, tc, &https, "PPD", W("tcp/443 passes its burst"));
	expect(r, tc, &http, "PPD", W("tcp/80 of the same source has a bucket of its own"));
	expect(r, tc, &udp443, "PPD", W("udp/443: the protocol is part of the key"));
	expect(r, tc, &other_sport, "D", W("another source port is the same key"));
	expect(r, tc, &other_dst, "D", W("another destination is the same key"));
	expect(r, tc, &icmp, "PPD", W("ICMP: one key of port 0"));
	expect(r, tc, &udp0, "PPD", W("udp/0 is a key apart from tcp/0 and ICMP"));
	expect(r, tc, &frag, "D", W("a non-first UDP fragment is udp/0"));
	expect(r, tc, &v6, "PPD", W("IPv6 tcp/443"));
	expect(r, tc, &v6b, "PPD", W("IPv6 tcp/80"));
	expect(r, tc, &other, "PPD", W("another source, tcp/443"));
	has_state(r, &https, SLUICE_KEY_SRC_DPORT, 3, W("tcp/443"));
	has_state(r, &icmp, SLUICE_KEY_SRC_DPORT, 1, W("ICMP"));
	has_state(r, &v6, SLUICE_KEY_SRC_DPORT, 1, W("IPv6 tcp/443"));
	TAP_EQ(stats(r).new_keys, 8, "%s", W("8 keys made"));
#undef W
}

static void flow(struct bpfrun *r)
{
	struct sluice_settings set;
	struct pkt a = { TCP, 40000, 443, V4, "198.19.0.1" },
		   b = { TCP, 40001, 443, V4, "198.19.0.1" };
	struct pkt c = { TCP, 40000, 443, V4, "198.19.0.2" },
		   d = { UDP, 40000, 443, V4, "198.19.0.1" };
	struct pkt e = { TCP, 40000, 444, V4, "198.19.0.1" };
	struct pkt f6 = { UDP, 5353, 53, V6, "2001:2::53" },
		   g6 = { UDP, 5354, 53, V6, "2001:2::53" };

	if (!setup(r, &set, SLUICE_KEY_FLOW, 0, 0, false))
		return;
	expect(r, false, &a, "PPD", "flow: a flow passes its burst");
	expect(r, false, &b, "PPD", "flow: another source port is another flow");
	expect(r, false, &c, "PPD", "flow: another destination is another flow");
	expect(r, false, &d, "PPD", "flow: another protocol is another flow");
	expect(r, false, &e, "PPD", "flow: another destination port is another flow");
	expect(r, false, &f6, "PPD", "flow: an IPv6 flow");
	expect(r, false, &g6, "PPD", "flow: an IPv6 flow of another source port");
	expect(r, false, &a, "D", "flow: the first flow is still over");
	has_state(r, &a, SLUICE_KEY_FLOW, 2, "flow: the first flow");
	has_state(r, &g6, SLUICE_KEY_FLOW, 1, "flow: the IPv6 flow");
}

/* The control: a policy keyed by the source gives it one bucket. */
static void by_source(struct bpfrun *r)
{
	struct sluice_settings set;
	struct pkt https = { TCP, 40000, 443, V4 }, http = { TCP, 40000, 80, V4 };
	struct sluice_fkey k = fkey_of(&https, SLUICE_KEY_SRC_DPORT, TAG_DEFAULT);
	struct sluice_bucket b;

	if (!setup(r, &set, SLUICE_KEY_SRC, 0, 0, false))
		return;
	expect(r, false, &https, "P", "src: tcp/443");
	expect(r, false, &http, "PD", "src: tcp/80 shares the source's bucket");
	TAP_TRUE(wide_state(r, &k, &b) == -ENOENT, "src: no wide key was made");
}

/* Past the new-key limit: the aggregate's wide key, all but the source 0. */
static void new_keys(struct bpfrun *r)
{
	struct sluice_settings set;
	struct pkt a = { TCP, 40000, 443, V4 }, b = { TCP, 40000, 80, "198.18.0.7" };
	struct pkt agg = { 0, 0, 0, "198.18.0.0" };
	struct sluice_fkey k;
	struct sluice_bucket bk;
	int ret;

	if (!bpfrun_setup(r, &set, 2))
		return;
	set.def.tag = TAG_DEFAULT;
	set.def.flags = SLUICE_KEY_SRC_DPORT << SLUICE_POLICY_KEY_SHIFT;
	sluice_limit_set(&set.new_keys, 1, BPFRUN_HOUR, 1, NULL, 0);
	if (bpfrun_configure(r, &set))
		return;
	expect(r, false, &a, "PP", "new keys: the first key is its own");
	expect(r, false, &b, "PPD", "new keys: a second one is charged to its /24");
	/* counted a packet at a time: each of the second key's three */
	TAP_EQ(stats(r).aggregated, 3, "new keys: the second key's packets were aggregated");
	k = fkey_of(&agg, 0, TAG_DEFAULT);
	k.k.tag |= SLUICE_TAG_AGGREGATE;
	k.k.prefixlen = set.agg4;
	ret = wide_state(r, &k, &bk);
	TAP_TRUE(!ret, "new keys: the aggregate's wide key (/%u, no port, mode 0) holds it",
		 set.agg4);
	if (ret)
		tap_diag("  %s", strerror(-ret));
}

static void dry_run(struct bpfrun *r)
{
	struct sluice_settings set;
	struct pkt a = { UDP, 5000, 53, V4 };
	struct sluice_stats st;

	if (!setup(r, &set, SLUICE_KEY_SRC_DPORT, 0, SLUICE_POLICY_DRY_RUN, false))
		return;
	expect(r, false, &a, "PPPP", "dry-run: udp/53 passes past its burst");
	st = stats(r);
	TAP_TRUE(st.would_drop == 2 && st.dropped == 0 && st.passed == 4,
		 "dry-run: 2 would-drops, none dropped");
	has_state(r, &a, SLUICE_KEY_SRC_DPORT, 2, "dry-run: udp/53 counts its would-drops");
}

/* A penalty boxes the source under the policy, whatever the port. */
static void penalty(struct bpfrun *r)
{
	struct sluice_settings set;
	struct pkt a = { TCP, 40000, 443, V4 }, b = { TCP, 40000, 80, V4 };
	struct pkt c = { TCP, 40000, 80, V4B };

	if (!bpfrun_setup(r, &set, 2))
		return;
	set.def.tag = TAG_DEFAULT;
	set.def.flags = SLUICE_KEY_SRC_DPORT << SLUICE_POLICY_KEY_SHIFT;
	sluice_penalty_set(&set.def, 20);
	if (bpfrun_configure(r, &set))
		return;
	expect(r, false, &a, "PPD", "penalty: tcp/443 over its limit");
	expect(r, false, &b, "D", "penalty: the source is boxed, tcp/80 too");
	expect(r, false, &c, "PP", "penalty: another source is not");
}

int main(void)
{
	struct bpfrun r;
	struct bpfrun_opts o = { .max_flows = 4096 };

	bpfrun_one_cpu();
	if (!bpfrun_load(&r, &o))
		return tap_done();
	src_dport(&r, false);
	flow(&r);
	by_source(&r);
	new_keys(&r);
	dry_run(&r);
	penalty(&r);
	bpfrun_close(&r);

	/* The shaper's program keys the same way. */
	o.tc = true;
	if (bpfrun_load(&r, &o)) {
		src_dport(&r, true);
		bpfrun_close(&r);
	}
	return tap_done();
}
