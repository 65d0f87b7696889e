// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl rule: per-prefix policies (add, del, flush) and their counters (list). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluicectl.h"

void rule_help(FILE *f)
{
	fprintf(f,
		"Usage: sluicectl [-i IFACE] rule add CIDR [MATCH] ((--rate RATE [--burst N]\n"
		"                 [--delay N|--nodelay])... [--algo ALGO] [--window DUR]\n"
		"                 [--prefix LEN] [--key MODE] [--penalty DUR|off]\n"
		"                 [--also-rate RATE [--also-burst N] [--also-prefix LEN]\n"
		"                 [--also-prefix4 LEN] [--also-prefix6 LEN]] | --exempt |\n"
		"                 --deny) [--fleet [on|off]] [--dry-run [on|off]]\n"
		"       sluicectl [-i IFACE] rule del CIDR [MATCH]\n"
		"       sluicectl [-i IFACE] rule flush\n"
		"       sluicectl [-i IFACE] [-j] rule list\n"
		"\n"
		"A rule gives the sources in CIDR their own policy; the longest matching\n"
		"prefix wins, sources no rule matches get the default policy ('set').\n"
		"\n"
		"MATCH makes a rule for some of the sources' traffic only (at most %d such\n"
		"rules; they are evaluated before every rule of a CIDR alone, the one whose\n"
		"match names more fields first, then narrower ports, then the longer prefix;\n"
		"'rule list' shows them in that order):\n"
		"  --proto P          tcp, udp, udplite, sctp, icmp, icmpv6 or a number\n"
		"  --sport P[-Q]      source ports (tcp, udp, udplite, sctp)\n"
		"  --dport P[-Q]      destination ports (the same)\n"
		"  --tcp-flags F      syn (SYN without ACK), or MASK/VALUE: lists of fin, syn,\n"
		"                     rst, psh, ack, urg, ece, cwr joined by ','\n"
		"  --icmp-type T[/C]  a type (a number or a name: echo-request, ...) and code\n"
		"  --dst CIDR         the destination: one service address of several\n"
		"A fragment after the first carries no ports or flags: only a match of at\n"
		"most --proto and --dst holds it. rule del of such a rule gives the same MATCH.\n"
		"\n"
		"  add   add a rule, or replace the rule of the same CIDR; prints the rule's\n"
		"        policy (both values of every limit) and whether buckets were kept\n"
		"        --rate, --burst, --delay, --nodelay, --algo, --window: as for\n"
		"                      'set' (see 'sluicectl set help'): a --rate without\n"
		"                      --burst gets one second's worth; --delay and\n"
		"                      --nodelay only on a shaper (-i shape:IFACE)\n"
		"        --prefix LEN  sources of the rule share a bucket per /LEN (default: the\n"
		"                      default policy's prefix for the CIDR's family)\n"
		"        --key MODE    what a key holds besides the source masked to /LEN: src\n"
		"                      (the default; a rule's, whatever the default policy's),\n"
		"                      src,dport (one bucket per protocol and destination\n"
		"                      port) or flow (destination, protocol and both ports);\n"
		"                      as for 'set'\n"
		"        --penalty DUR a source over the rule's limit is refused whole for DUR\n"
		"                      (100ms to 19d; as for 'set'); a rule has none unless\n"
		"                      given, whatever the default policy's\n"
		"        --also-rate RATE, --also-burst N  a second key (as for 'set'): each\n"
		"                      source's prefix is charged too, and held to RATE\n"
		"        --also-prefix LEN  that prefix for the CIDR's family (default /24,\n"
		"                      /48; --also-prefix4 and --also-prefix6 as for 'set')\n"
		"        --exempt      never limit these sources (still counted)\n"
		"        --deny        drop every packet of these sources\n"
		"        --fleet       one limit for the sources across every box of the fleet\n"
		"                      (token-bucket, leaky-bucket; see 'sluicectl set help')\n"
		"        --dry-run     only count what the rule would drop\n"
		"  del   delete the rule of exactly this CIDR (and MATCH)\n"
		"  flush delete every rule in one change: a packet sees all the rules or\n"
		"        none; their sources fall back to the default policy\n"
		"  list  every rule with its effective policy and its own passed/dropped\n"
		"        counters, the default policy last; WOULD-DROP counts what it passed\n"
		"        under dry-run but would have dropped ('-': unknown, the state was\n"
		"        pinned by an older sluice; the next 'sluice attach' adds it); on a\n"
		"        shaper a DELAY column: the excess that goes at once ('nodelay':\n"
		"        all; '-': a window algorithm, a meter); ALSO the second key: its\n"
		"        prefix, rate and burst ('-': none)\n"
		"\n"
		"Examples:\n"
		"  sluicectl rule add 198.18.0.0/24 --rate 10/s --burst 20\n"
		"  sluicectl rule add 198.18.2.0/24 --rate 10/s --penalty 30s\n"
		"  sluicectl rule add 198.18.0.0/16 --rate 10/s --also-prefix 24 --also-rate 200/s\n"
		"  sluicectl rule add 0.0.0.0/0 --proto udp --dport 53 --rate 50/s --key src,dport\n"
		"  sluicectl rule add 198.18.4.0/22 --rate 1000/s --rate 50mbit --prefix 24\n"
		"  sluicectl rule add 198.18.8.0/22 --rate 100/s --burst 300 --fleet\n"
		"  sluicectl rule add 2001:2::/48 --algo sliding-log --rate 30/m --dry-run\n"
		"  sluicectl rule add 198.19.0.0/16 --exempt\n"
		"  sluicectl rule add 0.0.0.0/0 --proto tcp --tcp-flags syn --rate 20/s\n"
		"  sluicectl rule add 198.18.0.0/15 --proto udp --dport 53 --rate 50/s\n"
		"  sluicectl rule add 0.0.0.0/0 --proto tcp --dport 443 --dst 198.18.0.2 --rate 100/s\n"
		"  sluicectl -i shape:eth1 rule add 198.18.0.0/24 --rate 100/s --burst 50 --delay 10\n"
		"  sluicectl rule del 198.18.0.0/24\n"
		"  sluicectl rule flush\n",
		SLUICE_L4_RULES_MAX);
}

static int do_add(int argc, char **argv)
{
	return ctl_edit("rule", "add", argc, argv, rule_help);
}

static int do_del(int argc, char **argv)
{
	return ctl_edit("rule", "del", argc, argv, rule_help);
}

static int do_flush_rules(int argc, char **argv)
{
	return ctl_edit("rule", "flush", argc, argv, rule_help);
}

static void json_row(struct sluice_json *j, const struct sluice_also *also, const char *match,
		     int family, const struct sluice_l4rule *l4, const struct sluice_policy *p,
		     const struct sluice_rstats *rs, const struct sluice_rwould *rw,
		     bool global_dry, __u32 shared)
{
	json_obj_begin(j, NULL);
	json_str(j, "match", match);
	if (l4) { /* a rule on the transport header: its CIDR and match apart */
		struct sluice_cidr c;
		struct sluice_rec r;
		char cidr[64];

		sluice_l4_cidr(l4, &c);
		sluice_format_cidr(&c, true, cidr, sizeof(cidr));
		json_str(j, "cidr", cidr);
		json_obj_begin(j, "l4");
		sluice_rec_init(&r, j, NULL, 0);
		sluice_match_rec(&r, &l4->m);
		json_obj_end(j);
	}
	sluice_policy_json(j, p, also, family, ctl.shape, global_dry);
	/* The counters below are those of every rule on the slot. */
	if (shared > 1)
		json_u64(j, "counters_shared_by", shared);
	json_u64(j, "passed", rs->passed);
	json_u64(j, "dropped", rs->dropped);
	json_u64(j, "passed_bytes", rs->passed_bytes);
	json_u64(j, "dropped_bytes", rs->dropped_bytes);
	if (rw) { /* absent: unknown */
		json_u64(j, "would_drop", rw->would_drop);
		json_u64(j, "would_drop_bytes", rw->would_drop_bytes);
	}
	json_obj_end(j);
}

static int text_row(struct ctl_table *t, const struct sluice_also *also, const char *match,
		    int family, const struct sluice_policy *p, const struct sluice_rstats *rs,
		    const struct sluice_rwould *rw, bool global_dry, __u32 shared)
{
	const char *mark = shared > 1 ? "*" : "";
	char rate[96], burst[64], win[32], key[40], passed[24], dropped[24], would[24] = "-";
	char delay[64], pen[32] = "-", al[96] = "-";
	size_t n;
	bool limit = p->action == SLUICE_ACT_LIMIT;

	sluice_fmt_rate(p, rate, sizeof(rate));
	sluice_fmt_burst(p, burst, sizeof(burst));
	sluice_fmt_window(p, win, sizeof(win));
	sluice_fmt_delay(p, delay, sizeof(delay));
	if (limit && sluice_penalty_ds(p))
		sluice_format_duration(sluice_penalty_ds(p) * SLUICE_PENALTY_NS_PER_DS, pen,
				       sizeof(pen));
	if (!limit)
		snprintf(key, sizeof(key), "-");
	else if (family == 4)
		snprintf(key, sizeof(key), "/%u", p->prefix4);
	else if (family == 6)
		snprintf(key, sizeof(key), "/%u", p->prefix6);
	else
		snprintf(key, sizeof(key), "/%u /%u", p->prefix4, p->prefix6);
	/* and what else the keys hold (--key): "/32 src,dport", "/24 flow" */
	n = strlen(key);
	if (limit && SLUICE_POLICY_KEY(p) != SLUICE_KEY_SRC)
		snprintf(key + n, sizeof(key) - n, " %s",
			 sluice_key_mode_name(SLUICE_POLICY_KEY(p)));
	/* the second key: "/24 1000/s burst 1000", "/24 /48 1000/s burst 1000" */
	if (limit && also) {
		char r[48];

		sluice_format_rate(&also->pkt, false, r, sizeof(r));
		if (family == 4 || family == 6)
			snprintf(al, sizeof(al), "/%u %s burst %u",
				 family == 4 ? also->prefix4 : also->prefix6, r, also->pkt.burst);
		else
			snprintf(al, sizeof(al), "/%u /%u %s burst %u", also->prefix4,
				 also->prefix6, r, also->pkt.burst);
	}
	snprintf(passed, sizeof(passed), "%llu%s", (unsigned long long)rs->passed, mark);
	snprintf(dropped, sizeof(dropped), "%llu%s", (unsigned long long)rs->dropped, mark);
	if (rw)
		snprintf(would, sizeof(would), "%llu%s", (unsigned long long)rw->would_drop, mark);
	const char *dry = p->flags & SLUICE_POLICY_DRY_RUN ? "yes" : global_dry ? "global" : "no";

	if (ctl.shape)
		return ctl_table_row(t, match, sluice_action_name(p->action),
				     limit ? sluice_algo_name(p->algo) : "-", rate, burst, delay,
				     win, key, p->flags & SLUICE_POLICY_FLEET ? "yes" : "no", pen,
				     dry, passed, dropped, would);
	return ctl_table_row(t, match, sluice_action_name(p->action),
			     limit ? sluice_algo_name(p->algo) : "-", rate, burst, win, key,
			     p->flags & SLUICE_POLICY_FLEET ? "yes" : "no", pen, al, dry, passed,
			     dropped, would);
}

static int do_list(int argc, char **argv)
{
	/* ALSO: the second key (--also-rate) */
	static const char *const head[] = { "MATCH",   "ACTION", "ALGO",    "RATE",       "BURST",
					    "WINDOW",  "KEY",    "FLEET",   "PENALTY",    "ALSO",
					    "DRY-RUN", "PASSED", "DROPPED", "WOULD-DROP", NULL };
	/* A shaper's: its delay after the burst (PASSED: sent, at once or later). */
	static const char *const shape_head[] = { "MATCH",   "ACTION",     "ALGO",    "RATE",
						  "BURST",   "DELAY",      "WINDOW",  "KEY",
						  "FLEET",   "PENALTY",    "DRY-RUN", "PASSED",
						  "DROPPED", "WOULD-DROP", NULL };
	char err[SLUICE_ERR_LEN];
	bool any_shared = false;
	struct sluice_policies pol;
	struct sluice_handle h;
	struct sluice_json j;
	struct ctl_table t;
	bool global_dry;
	size_t i;
	int st, ret = 0;

	if (argc >= 1 && sluice_is_help(argv[0])) {
		rule_help(stdout);
		return SLUICE_EXIT_OK;
	}
	if (argc >= 1)
		return sluice_cli_usage("rule", "rule list takes no arguments, not '%s'", argv[0]);
	st = ctl_open(&h);
	if (st)
		return st;
	/* NULL pol.rwould: the state has no sluice_rwould, would-drops unknown. */
	ret = sluice_read_policies(&h, &pol, true, err, sizeof(err));
	if (ret) {
		st = sluice_cli_err(ret, "%s", err);
		goto out_close;
	}
	global_dry = pol.set.flags & SLUICE_DRY_RUN;

	/* Rows: every rule, then the default policy. */
	json_init(&j, stdout);
	if (ctl.shape)
		ctl_table_init(&t, shape_head, "          rrr");
	else
		ctl_table_init(&t, head, "          rrr");
	if (ctl.json)
		json_arr_begin(&j, NULL);
	/* In the order the datapath evaluates them: the rules on the
	 * transport header first, then the longest prefix of the others. */
	for (i = 0; i <= pol.nr_l4 + pol.nr_rules && !ret; i++) {
		const struct sluice_l4rule *l4 = i < pol.nr_l4 ? &pol.l4[i].r : NULL;
		const struct sluice_policy *p;
		const struct sluice_rwould *rw;
		const struct sluice_rstats *rs;
		size_t k = i - pol.nr_l4;
		char match[160];
		int family;
		__u32 shared;

		if (l4) {
			p = &pol.l4[i].policy;
			sluice_l4_name(l4, match, sizeof(match));
			family = l4->family;
			rs = &pol.l4_rstats[i];
			rw = pol.rwould ? &pol.l4_rwould[i] : NULL;
		} else {
			p = sluice_policy_at(&pol, k, match, sizeof(match), &family);
			rs = &pol.rstats[k];
			rw = pol.rwould ? &pol.rwould[k] : NULL;
		}
		shared = pol.slot_users[SLUICE_TAG_SLOT(p->tag) & (SLUICE_MAX_RULES - 1)];
		any_shared |= shared > 1;
		if (ctl.json)
			json_row(&j, ctl_also(&pol, p), match, family, l4, p, rs, rw, global_dry,
				 shared);
		else
			ret = text_row(&t, ctl_also(&pol, p), match, family, p, rs, rw, global_dry,
				       shared);
	}
	if (ctl.json) {
		json_arr_end(&j);
		json_end(&j);
	} else if (!ret) {
		ctl_table_print(&t, stdout);
		if (any_shared)
			printf("* counters of a slot that rules of one policy share: past %d "
			       "slots rules of one policy share one (see sluicectl(8))\n",
			       SLUICE_OWN_SLOTS);
	} else {
		st = sluice_cli_err(ret, "out of memory");
	}
	ctl_table_free(&t);
	sluice_free_policies(&pol);
out_close:
	sluice_close(&h);
	return st;
}

/* clang-format off */
static const struct ctl_cmd cmds[] = {
	{ "add", do_add, true },
	{ "del", do_del, true },
	{ "flush", do_flush_rules, true },
	{ "list", do_list, false },
	{ NULL, NULL, false },
};
/* clang-format on */

int do_rule(int argc, char **argv)
{
	return ctl_dispatch("rule", cmds, argc, argv, rule_help);
}
