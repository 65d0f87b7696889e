// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Rules that match on the transport header, through the whole datapath
 * (sluice_xdp and sluice_tc, BPF_PROG_TEST_RUN), on both key tables: the
 * policy each packet gets must be the one the host's reference gives.
 *
 * Ten rules with a match (two with a --dst), each on a slot of its own, and a rule of a CIDR
 * alone (198.18.0.0/16, slot 20) behind them. For every frame of a table
 * (TCP with each flag combination that matters, UDP to and from port 53,
 * ICMP and ICMPv6 echo, IPv4 and IPv6 fragments, IPv6 extension headers,
 * headers cut short, VLAN tags) and every source (inside and outside each
 * CIDR, both families), the host parses the frame (sluice_l4_parse()) and
 * scans the rules in order (sluice_l4rules_scan()): the slot whose counter
 * moved must be that rule's, else the CIDR rule's or the default's, and
 * the verdict its action's. Then: the rules are in two generations and
 * SLUICE_L4_GEN picks one; without SLUICE_L4_ON the tables are not
 * consulted; a limit on a rule keys its sources under the rule's own tag
 * (on sluice_tc a shaper's: its burst is a queue); dry-run only counts.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/libbpf.h>

#include "libsluice.h"
#include "sluice.skel.h"
#include "../lib/bpfrun.h"
#include "../lib/l4frame.h"
#include "../lib/tap.h"

#define CIDR_SLOT 20
#define NR_L4 10

static __u64 *bm;
static struct sluice_l4rule *maprules;
static struct sluice_policy *mappol;
static struct bpfrun *mapped; /* whose maps these are */

static size_t pages(size_t n)
{
	size_t page = 4096;

	return (n + page - 1) / page * page;
}

static int map_l4(struct bpfrun *r)
{
	mapped = r;
	bm = mmap(NULL, pages(2 * SLUICE_L4BM_WORDS * sizeof(__u64)), PROT_READ | PROT_WRITE,
		  MAP_SHARED, bpf_map__fd(r->skel->maps.sluice_l4bm), 0);
	maprules = mmap(NULL, pages(2 * SLUICE_L4_RULES_MAX * sizeof(*maprules)),
			PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(r->skel->maps.sluice_l4rules), 0);
	mappol = mmap(NULL, pages(2 * SLUICE_L4_RULES_MAX * sizeof(*mappol)),
		      PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(r->skel->maps.sluice_l4pol),
		      0);
	return bm != MAP_FAILED && maprules != MAP_FAILED && mappol != MAP_FAILED ? 0 : -errno;
}

static void unmap_l4(void)
{
	munmap(bm, pages(2 * SLUICE_L4BM_WORDS * sizeof(__u64)));
	munmap(maprules, pages(2 * SLUICE_L4_RULES_MAX * sizeof(*maprules)));
	munmap(mappol, pages(2 * SLUICE_L4_RULES_MAX * sizeof(*mappol)));
}

/* Generation gen: rules[0..n) in evaluation order, with their policies. */
static int install(__u8 gen, const struct sluice_l4rule *rules, const struct sluice_policy *pol,
		   size_t n)
{
	memset(maprules + gen * SLUICE_L4_RULES_MAX, 0, SLUICE_L4_RULES_MAX * sizeof(*maprules));
	memcpy(maprules + gen * SLUICE_L4_RULES_MAX, rules, n * sizeof(*rules));
	memcpy(mappol + gen * SLUICE_L4_RULES_MAX, pol, n * sizeof(*pol));
	/* what the datapath applies: the policy of each rule's slot */
	for (size_t i = 0; i < n; i++)
		if (bpfrun_put_policy(mapped, &pol[i]))
			return -EIO;
	return sluice_l4bm_build(rules, n, bm + (size_t)gen * SLUICE_L4BM_WORDS);
}

static struct sluice_l4rule rules[NR_L4];
static struct sluice_policy pols[NR_L4];
static __u8 actions[NR_L4];

/* The rules, sorted by precedence, each with its slot (1 + its index as
 * written) and an action that tells a pass from a drop. */
static int make_rules(void)
{
	static const struct {
		const char *cidr, *opts;
		__u8 action;
	} w[NR_L4] = {
		{ "198.18.0.0/15", "--proto tcp --tcp-flags syn", SLUICE_ACT_DENY },
		{ "198.18.0.0/15", "--proto udp --dport 53", SLUICE_ACT_EXEMPT },
		{ "198.18.0.0/24", "--proto udp --sport 53", SLUICE_ACT_DENY },
		{ "0.0.0.0/0", "--proto icmp --icmp-type echo-request", SLUICE_ACT_DENY },
		{ "2001:2::/64", "--proto icmpv6 --icmp-type 128", SLUICE_ACT_DENY },
		{ "198.18.0.0/15", "--proto udp", SLUICE_ACT_EXEMPT },
		{ "2001:2::/48", "--proto tcp --dport 443", SLUICE_ACT_DENY },
		{ "198.18.1.0/24", "--proto tcp --dport 1000-2000 --tcp-flags syn",
		  SLUICE_ACT_EXEMPT },
		/* every frame goes to 198.18.0.2 or 2001:2::2 */
		{ "198.18.0.0/15", "--proto udp --dport 9 --dst 198.18.0.3", SLUICE_ACT_DENY },
		{ "2001:2::/48", "--proto udp --dst 2001:2::2/127", SLUICE_ACT_DENY },
	};
	struct sluice_l4rule r[NR_L4];
	size_t order[NR_L4], i;

	for (i = 0; i < NR_L4; i++)
		r[i] = l4f_rule(w[i].cidr, w[i].opts);
	if (sluice_l4rules_sort(r, NR_L4, order))
		return -1;
	for (i = 0; i < NR_L4; i++) {
		rules[i] = r[i];
		actions[i] = w[order[i]].action;
		bpfrun_policy(&pols[i], actions[i], 1);
		pols[i].tag = SLUICE_TAG(order[i] + 1, SLUICE_ALGO_TOKEN_BUCKET, 1);
	}
	return 0;
}

/* Every counter slot's packets, summed. */
static void slot_counts(struct bpfrun *r, __u64 *out)
{
	struct sluice_rstats rs;
	__u32 s;

	for (s = 0; s <= CIDR_SLOT; s++)
		out[s] = bpfrun_rstats(r, s, &rs) ? 0 : rs.passed + rs.dropped;
}

/* Run one frame: the slot that counted it (-1: none, or several), its verdict. */
static int run_one(struct bpfrun *r, bool tc, const struct l4frame *f, bool *dropped)
{
	__u64 before[CIDR_SLOT + 1], after[CIDR_SLOT + 1];
	__u32 v = 0;
	int s, slot = -1, err;

	slot_counts(r, before);
	err = tc ? bpfrun_run_tc(r, f->b, f->len, NULL, &v) : bpfrun_run(r, f->b, f->len, &v);
	if (err)
		return -2;
	slot_counts(r, after);
	for (s = 0; s <= CIDR_SLOT; s++) {
		if (after[s] == before[s])
			continue;
		if (slot >= 0 || after[s] != before[s] + 1)
			return -1;
		slot = s;
	}
	*dropped = tc ? v == TC_ACT_SHOT : v == XDP_DROP;
	return slot;
}

/*
 * A frame kind: a whole header of proto (the ports and flags, or for ICMP
 * the type: IPv6's ICMPv6 echo types for an echo), behind vlans VLAN tags
 * and an IPv4 header of ihl words; or, with build, a frame of its own shape.
 */
struct frame_kind {
	const char *name;
	void (*build)(struct l4frame *f, int v6);
	__u8 proto;
	__u16 sport, dport;
	__u8 flags; /* TCP flags; ICMP: 1 an echo request, 0 a reply */
	int vlans, ihl;
};

static void k_plain(const struct frame_kind *k, struct l4frame *f, int v6)
{
	__u8 proto = v6 && k->proto == 1 ? 58 : k->proto;

	v6 ? l4f_ip6(f, proto) : l4f_ip4(f, k->vlans, k->ihl ? k->ihl : 5, proto, 0);
	if (proto == 6)
		l4f_tcp(f, k->sport, k->dport, k->flags);
	else if (proto == 17)
		l4f_udp(f, k->sport, k->dport);
	else
		l4f_icmp(f, k->flags ? (v6 ? 128 : 8) : (v6 ? 129 : 0), 0);
	l4f_pad(f);
}

static void k_syn(struct l4frame *f, int v6)
{
	v6 ? l4f_ip6(f, 6) : l4f_ip4(f, 0, 5, 6, 0);
	l4f_tcp(f, 40000, 443, SLUICE_TCP_SYN);
	l4f_pad(f);
}

static void k_dns(struct l4frame *f, int v6)
{
	v6 ? l4f_ip6(f, 17) : l4f_ip4(f, 2, 5, 17, 0);
	l4f_udp(f, 5353, 53);
	l4f_pad(f);
}

/* A fragment after the first: the protocol and no ports. */
static void k_udpfrag(struct l4frame *f, int v6)
{
	if (v6) {
		l4f_ip6(f, 44);
		l4f_frag6(f, 17, 185, 0);
	} else {
		l4f_ip4(f, 0, 5, 17, 185);
	}
	l4f_udp(f, 4242, 53); /* payload that looks like a header: not one */
	l4f_pad(f);
}

static void k_tcpfrag(struct l4frame *f, int v6)
{
	if (v6) {
		l4f_ip6(f, 44);
		l4f_frag6(f, 6, 185, 1);
	} else {
		l4f_ip4(f, 0, 5, 6, 0x2000 | 185);
	}
	l4f_tcp(f, 40000, 443, SLUICE_TCP_SYN);
	l4f_pad(f);
}

/* The first fragment: a whole header. */
static void k_synfrag0(struct l4frame *f, int v6)
{
	if (v6) {
		l4f_ip6(f, 44);
		l4f_frag6(f, 6, 0, 1);
	} else {
		l4f_ip4(f, 0, 5, 6, 0x2000);
	}
	l4f_tcp(f, 40000, 443, SLUICE_TCP_SYN);
}

static void k_ext6dns(struct l4frame *f, int v6)
{
	if (!v6) {
		l4f_ip4(f, 0, 15, 17, 0);
	} else {
		l4f_ip6(f, 0);
		l4f_ext6(f, 0, 60, 8);
		l4f_ext6(f, 60, 17, 24);
	}
	l4f_udp(f, 5353, 53);
	l4f_pad(f);
}

/* A TCP header cut short: the protocol is known, no ports or flags. */
static void k_shorttcp(struct l4frame *f, int v6)
{
	v6 ? l4f_ip6(f, 6) : l4f_ip4(f, 0, 5, 6, 0);
	l4f_tcp(f, 40000, 443, SLUICE_TCP_SYN);
	f->len -= 8;
}

static const struct frame_kind kinds[] = {
	{ "TCP SYN to 443", k_syn },
	{ "TCP SYN to 1500", NULL, 6, 40000, 1500, SLUICE_TCP_SYN },
	{ "TCP SYN+ACK, a VLAN tag", NULL, 6, 443, 40000, SLUICE_TCP_SYN | SLUICE_TCP_ACK, 1 },
	{ "TCP ACK to 443, IPv4 options", NULL, 6, 40000, 443, SLUICE_TCP_ACK, 0, 7 },
	{ "UDP to 53, 2 VLAN tags", k_dns },
	{ "UDP from 53", NULL, 17, 53, 40000 },
	{ "UDP to 9", NULL, 17, 4242, 9 },
	{ "ICMP echo request", NULL, 1, 0, 0, 1 },
	{ "ICMP echo reply", NULL, 1, 0, 0, 0 },
	{ "UDP, a later fragment", k_udpfrag },
	{ "TCP, a later fragment", k_tcpfrag },
	{ "TCP SYN, the first fragment", k_synfrag0 },
	{ "UDP to 53 behind IPv6 extension headers (IPv4: 40 bytes of options)", k_ext6dns },
	{ "TCP header cut short", k_shorttcp },
};

/* Build frame kind k of family v6. */
static void build(const struct frame_kind *k, struct l4frame *f, int v6)
{
	if (k->build)
		k->build(f, v6);
	else
		k_plain(k, f, v6);
}

static const struct frame_kind *kind(const char *name)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return &kinds[0];
}

static const char *const sources[] = {
	"198.18.0.7", "198.18.1.9", "198.19.3.4", "2001:2::7", "2001:2:0:1::9",
};

/* The slot and verdict the reference gives the frame from its source. */
static int expect(const struct l4frame *f, bool *drop)
{
	struct sluice_l4 l4;
	struct sluice_cidr c;
	__u8 addr[16] __attribute__((aligned(8))) = { 0 };
	int i;

	memcpy(addr, f->b + f->l3 + (f->family == 4 ? 12 : 8), f->family == 4 ? 4 : 16);
	sluice_l4_parse(f->b + f->l3, f->b + f->len, f->family, &l4);
	i = sluice_l4rules_scan(rules, NR_L4, f->family, addr, &l4);
	if (i >= 0) {
		*drop = actions[i] == SLUICE_ACT_DENY;
		return (int)SLUICE_TAG_SLOT(pols[i].tag);
	}
	/* The rule of a CIDR alone: 198.18.0.0/16, deny. */
	sluice_parse_cidr("198.18.0.0/16", &c, NULL, 0);
	*drop = f->family == 4 && !memcmp(addr, c.addr, 2);
	return *drop ? CIDR_SLOT : 0;
}

static void test_table(struct bpfrun *r, bool tc, const char *table)
{
	unsigned int bad = 0, n = 0;
	size_t k, s;

	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (s = 0; s < sizeof(sources) / sizeof(sources[0]); s++) {
			struct l4frame f;
			bool want_drop, drop = false;
			int want, got;

			build(&kinds[k], &f, strchr(sources[s], ':') != NULL);
			l4f_src(&f, sources[s]);
			want = expect(&f, &want_drop);
			got = run_one(r, tc, &f, &drop);
			n++;
			if (got != want || drop != want_drop) {
				if (bad++ < 8)
					tap_diag("%s from %s: slot %d %s, the reference %d %s",
						 kinds[k].name, sources[s], got,
						 drop ? "dropped" : "passed", want,
						 want_drop ? "dropped" : "passed");
			}
		}
	}
	tap_ok(!bad,
	       "%s, %s table: %u frames x sources get the policy of the host's reference "
	       "(%u differ)",
	       tc ? "sluice_tc" : "sluice_xdp", table, n, bad);
}

static bool configure(struct bpfrun *r, __u32 l4flags)
{
	struct sluice_settings set;
	struct sluice_policy deny;

	if (!bpfrun_setup(r, &set, 1000))
		return false;
	bpfrun_policy(&deny, SLUICE_ACT_DENY, 0);
	if (bpfrun_rule(r, 0, "198.18.0.0/16", &deny, CIDR_SLOT))
		return false;
	set.nr_rules = 1;
	set.rules_gen = 0;
	set.flags |= l4flags;
	return !bpfrun_configure(r, &set);
}

static void test_generations(struct bpfrun *r, bool tc)
{
	struct sluice_l4rule one = l4f_rule("198.18.0.0/15", "--proto udp");
	struct sluice_policy deny;
	struct l4frame f;
	bool drop = false, want_drop;
	int slot, want;

	bpfrun_policy(&deny, SLUICE_ACT_DENY, 0);
	deny.tag = SLUICE_TAG(9, SLUICE_ALGO_TOKEN_BUCKET, 1);
	install(1, &one, &deny, 1);
	k_dns(&f, 0);
	l4f_src(&f, "198.19.3.4");
	if (!configure(r, SLUICE_L4_ON | SLUICE_L4_GEN))
		tap_ok(0, "configure generation 1");
	slot = run_one(r, tc, &f, &drop);
	tap_ok(slot == 9 && drop, "%s: generation 1 is read when SLUICE_L4_GEN says so (slot %d)",
	       tc ? "sluice_tc" : "sluice_xdp", slot);
	configure(r, SLUICE_L4_ON);
	slot = run_one(r, tc, &f, &drop);
	want = expect(&f, &want_drop);
	tap_ok(slot == want && drop == want_drop,
	       "%s: generation 0 when it does not (slot %d, the reference's %d)",
	       tc ? "sluice_tc" : "sluice_xdp", slot, want);
	configure(r, 0);
	l4f_src(&f, "198.18.0.7");
	slot = run_one(r, tc, &f, &drop);
	tap_ok(slot == CIDR_SLOT && drop,
	       "%s: without SLUICE_L4_ON the tables are not read: the CIDR rule (slot %d)",
	       tc ? "sluice_tc" : "sluice_xdp", slot);
}

/* A limit on a rule: its sources are keyed under the rule's own tag, one
 * bucket each; a dry-run rule only counts. */
static void test_limit(struct bpfrun *r, bool tc)
{
	struct sluice_l4rule syn = l4f_rule("198.18.0.0/15", "--proto tcp --tcp-flags syn");
	struct sluice_policy lim, dry;
	struct sluice_stats st;
	struct sluice_bucket b;
	struct l4frame f;
	char got[8] = "";
	bool drop = false;
	int i;

	bpfrun_policy(&lim, SLUICE_ACT_LIMIT, 2);
	lim.tag = SLUICE_TAG(11, SLUICE_ALGO_TOKEN_BUCKET, 1);
	install(0, &syn, &lim, 1);
	configure(r, SLUICE_L4_ON);
	k_syn(&f, 0);
	l4f_src(&f, "198.19.3.4");
	for (i = 0; i < 4; i++)
		got[i] = run_one(r, tc, &f, &drop) == 11 ? (drop ? 'D' : 'P') : '?';
	/* A shaper's burst is its queue: the third SYN waits its turn there. */
	tap_ok(!strcmp(got, tc ? "PPPD" : "PPDD"), "%s: 4 SYNs under --rate 1/h --burst 2: %s (%s)",
	       tc ? "sluice_tc" : "sluice_xdp", got, tc ? "PPPD" : "PPDD");
	tap_ok(!bpfrun_lookup(r, false, lim.tag, "198.19.3.4", 32, &b),
	       "%s: the source's key carries the rule's tag", tc ? "sluice_tc" : "sluice_xdp");
	build(kind("TCP ACK to 443, IPv4 options"), &f, 0);
	l4f_src(&f, "198.19.3.4");
	tap_ok(run_one(r, tc, &f, &drop) == 0 && !drop,
	       "%s: the same source's ACK is the default policy's",
	       tc ? "sluice_tc" : "sluice_xdp");

	bpfrun_policy(&dry, SLUICE_ACT_DENY, 0);
	dry.flags |= SLUICE_POLICY_DRY_RUN;
	dry.tag = SLUICE_TAG(12, SLUICE_ALGO_TOKEN_BUCKET, 1);
	install(0, &syn, &dry, 1);
	configure(r, SLUICE_L4_ON);
	k_syn(&f, 0);
	l4f_src(&f, "198.18.0.7");
	i = run_one(r, tc, &f, &drop);
	bpfrun_stats(r, &st);
	tap_ok(i == 12 && !drop && st.would_drop == 1 && !st.denied,
	       "%s: a dry-run deny on the rule passes the SYN, counted as a would-drop "
	       "(slot %d, would_drop %llu)",
	       tc ? "sluice_tc" : "sluice_xdp", i, (unsigned long long)st.would_drop);
}

static void run_all(int table, const char *name)
{
	struct bpfrun_opts o = { .table = table, .tc = true };
	struct bpfrun r;

	if (!bpfrun_load(&r, &o))
		return;
	if (!tap_ok(!map_l4(&r), "%s table: map the L4 rule maps", name)) {
		bpfrun_close(&r);
		return;
	}
	for (int tc = 0; tc < 2; tc++) {
		tap_ok(!install(0, rules, pols, NR_L4) && configure(&r, SLUICE_L4_ON),
		       "%s table: install %d rules with a match", name, NR_L4);
		test_table(&r, tc, name);
		test_generations(&r, tc);
		test_limit(&r, tc);
	}
	unmap_l4();
	bpfrun_close(&r);
}

int main(void)
{
	if (!strcmp(bpfrun_default_table(), "sets")) {
		tap_skip("runs both tables itself, in the lru run",
			 "rules on the transport header");
		return tap_done();
	}
	if (!tap_ok(!make_rules(), "the rules, sorted by precedence"))
		return tap_done();
	run_all(BPFRUN_LRU, "lru");
	run_all(BPFRUN_SETS, "sets");
	return tap_done();
}
