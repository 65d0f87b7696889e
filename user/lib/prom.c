// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The counters of one interface in the Prometheus text format (version
 * 0.0.4), for `sluicectl stats --prometheus` and `sluice run --metrics`:
 * one renderer, so a dashboard reads the same names from either. Besides
 * what libsluice.h lists: sluice_policy_{would_drop,would_drop_bytes}_total
 * per policy, when the state has sluice_rwould (a state pinned by an older
 * sluice has none until the next attach adds it).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libsluice.h"

/* The label every sample carries. */
#define IFACE_LABEL "interface"

/* Escape a label value: backslash, quote and newline. */
static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else
			fputc(*s, f);
	}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample: name{interface="IFACE"[,policy="POLICY"]} value */
static void sample(FILE *f, const char *name, const char *ifname, const char *policy, __u64 v)
{
	fprintf(f, "%s{" IFACE_LABEL "=\"", name);
	put_label(f, ifname);
	if (policy) {
		fputs("\",policy=\"", f);
		put_label(f, policy);
	}
	fprintf(f, "\"} %llu\n", (unsigned long long)v);
}

static void gauge(FILE *f, const char *name, const char *help, const char *ifname, __u64 v)
{
	family(f, name, "gauge", help);
	sample(f, name, ifname, NULL, v);
}

static void gauge_f(FILE *f, const char *name, const char *help, const char *ifname, double v)
{
	family(f, name, "gauge", help);
	fprintf(f, "%s{" IFACE_LABEL "=\"", name);
	put_label(f, ifname);
	fprintf(f, "\"} %.6f\n", v);
}

static void counter(FILE *f, const char *name, const char *help, const char *ifname, __u64 v)
{
	family(f, name, "counter", help);
	sample(f, name, ifname, NULL, v);
}

/* sluice_key_table{interface="IFACE",table="sets",chosen_by="default"} 1:
 * which key table the state has and why (sluice_keys_view()), an info-style
 * gauge. */
static void table_info(FILE *f, const char *ifname, const struct sluice_keys_view *v)
{
	family(f, "sluice_key_table", "gauge",
	       "The key table of the state, in the table label (lru or sets), and why, in "
	       "chosen_by (default, option or older_default) (always 1).");
	fprintf(f, "sluice_key_table{" IFACE_LABEL "=\"");
	put_label(f, ifname);
	fprintf(f, "\",table=\"%s\",chosen_by=\"%s\"} 1\n", v->sets ? "sets" : "lru",
		sluice_table_from_word(v));
}

/*
 * What the key table holds and can hold, per family: a set table's families
 * fill apart (a full IPv4 half evicts whatever the IPv6 half holds), the
 * LRU's share its capacity (max_keys is then the table's for both).
 */
static void family_samples(FILE *f, const char *ifname, const struct sluice_keys_view *v)
{
	static const char *const fam[] = { "ipv4", "ipv6" };
	int k, i;

	for (k = 0; k < 2; k++) {
		const char *name = k ? "sluice_key_table_max_keys" : "sluice_key_table_keys";

		family(f, name, "gauge",
		       k ? "Keys the key table can hold per family (the lru "
			   "table's families share one capacity, the sets table's have their own)." :
			   "Keys in the key table now, per family (not the sliding logs).");
		for (i = 0; i < 2; i++) {
			fprintf(f, "%s{" IFACE_LABEL "=\"", name);
			put_label(f, ifname);
			fprintf(f, "\",family=\"%s\"} %llu\n", fam[i],
				(unsigned long long)(k ? v->max_family[i] : v->used[i]));
		}
	}
}

/* The fleet agent's state (fleet.c), when the state has sluice_fleet. */
static void fleet_samples(FILE *f, const struct sluice_handle *h)
{
	struct sluice_fleet_view v;

	if (sluice_fleet_view(h, &v))
		return;
	gauge(f, "sluice_fleet_state",
	      "Fleet agent: 0 off (no agent ever), 1 synced, 2 outage (rate/N), 3 stopped "
	      "(rate/N), 4 stale (not synced in time: rate/N).",
	      h->ifname, (__u64)v.state_code);
	gauge(f, "sluice_fleet_outage_share",
	      "Whether fleet policies admit their outage share, "
	      "rate/N, now (1), or the whole rate, shared through Redis (0).",
	      h->ifname, v.shared);
	gauge(f, "sluice_fleet_boxes",
	      "N: the boxes of the fleet at the last sync, silent ones "
	      "too.",
	      h->ifname, v.n);
	gauge(f, "sluice_fleet_silent_boxes",
	      "Boxes of the fleet that have not synced within "
	      "their horizon: their shares are held in reserve.",
	      h->ifname, v.f.silent);
	gauge_f(f, "sluice_fleet_last_sync_age_seconds",
		"Seconds since the last successful sync with Redis (-1: never).", h->ifname,
		v.last_ok_age_s);
	counter(f, "sluice_fleet_syncs_total", "Successful syncs with Redis.", h->ifname,
		v.f.syncs);
	counter(f, "sluice_fleet_sync_errors_total", "Failed syncs with Redis.", h->ifname,
		v.f.sync_errors);
	counter(f, "sluice_fleet_outages_total", "Times the agent fell back to rate/N.", h->ifname,
		v.f.outages);
	counter(f, "sluice_fleet_keys_pushed_total", "Keys pushed to Redis.", h->ifname,
		v.f.keys_pushed);
	counter(f, "sluice_fleet_keys_skipped_total",
		"Active keys left for a later sync (over --sync-keys).", h->ifname,
		v.f.keys_skipped);
	gauge(f, "sluice_fleet_shards",
	      "Redis Cluster: the primaries of the slot map at the last sync (0: no "
	      "cluster).",
	      h->ifname, v.f.shards);
	gauge(f, "sluice_fleet_shards_down",
	      "Redis Cluster: shards that failed the last sync; their keys admit rate/N.",
	      h->ifname, v.f.shards_down);
	counter(f, "sluice_fleet_shard_faults_total",
		"Redis Cluster: times shards went down (none down before).", h->ifname,
		v.f.shard_faults);
	counter(f, "sluice_fleet_moved_total", "Redis Cluster: MOVED redirections followed.",
		h->ifname, v.f.moved);
	counter(f, "sluice_fleet_asked_total", "Redis Cluster: ASK redirections followed.",
		h->ifname, v.f.asked);
	gauge_f(f, "sluice_fleet_rtt_seconds",
		"How long the last successful exchange with Redis "
		"took.",
		h->ifname, (double)v.f.last_rtt_ns / 1e9);
}

/*
 * A shaper counts in the same sluice_stats at tc egress: a packet is sent
 * (TC_ACT_OK, at once or at its departure time) or dropped (TC_ACT_SHOT),
 * never XDP_PASS or XDP_DROP. The fields whose words differ.
 */
static const struct {
	const char *name, *help;
} shape_help[] = {
	{ "rx", "Packets the tc egress program of the shaper saw." },
	{ "rx_bytes", "Bytes of the packets the tc egress program of the shaper saw." },
	{ "passed", "Packets sent (TC_ACT_OK: at once or at their departure time), for any "
		    "reason." },
	{ "dropped", "Packets dropped (TC_ACT_SHOT), for any reason." },
	{ "dropped_bytes", "Bytes of the packets dropped." },
	{ "non_ip", "Packets sent untouched because they are neither IPv4 nor IPv6." },
	{ "malformed", "Packets sent untouched because their headers are too short or bad." },
	{ "limited", "Packets dropped because their key's queue was full (beyond --burst)." },
	{ "would_drop", "Packets sent under dry-run that the queue would have dropped." },
	{ "exempt", "Packets sent untouched by an --exempt rule." },
	{ "update_failed", "Packets whose key the key table refused (sent, fail-open)." },
	{ "contended", "Packets dropped because other CPUs kept updating their key's queue." },
};

const char *sluice_stats_help(const struct sluice_field *fl, bool shape)
{
	size_t i;

	for (i = 0; shape && i < sizeof(shape_help) / sizeof(shape_help[0]); i++)
		if (!strcmp(shape_help[i].name, fl->name))
			return shape_help[i].help;
	return fl->help;
}

void sluice_prometheus_shape(FILE *f, const char *name, const struct sluice_shape_stats *s)
{
	static const char hist[] = "sluice_shape_delay_seconds";
	__u64 cum = 0, total;
	unsigned int i;

	counter(f, "sluice_shape_shaped_total",
		"Packets a bucket policy of the shaper gave a departure time.", name, s->shaped);
	counter(f, "sluice_shape_delayed_total",
		"Of those, packets whose departure time was later than when they came.", name,
		s->delayed);
	counter(f, "sluice_shape_restamped_total",
		"Packets left untouched whose foreign timestamp (not a monotonic "
		"departure time) was cleared.",
		name, s->restamped);
	counter(f, "sluice_shape_horizon_dropped_total",
		"Packets dropped because their delay would reach the fq horizon.", name,
		s->horizon_dropped);
	gauge_f(f, "sluice_shape_max_delay_seconds",
		"The longest delay the shaper gave a packet (the largest of every CPU's).", name,
		(double)s->max_delay_ns / 1e9);
	for (i = 0; i < SLUICE_DELAY_BUCKETS; i++)
		cum += s->hist[i];
	/* +Inf is every delayed packet; should a CPU's counters have been read
	 * between its histogram and its total, the larger keeps it cumulative. */
	total = s->delayed > cum ? s->delayed : cum;
	family(f, hist, "histogram",
	       "Delays the shaper gave packets (departure time minus arrival), by delay.");
	cum = 0;
	for (i = 0; i + 1 < SLUICE_DELAY_BUCKETS; i++) {
		cum += s->hist[i];
		fprintf(f, "%s_bucket{" IFACE_LABEL "=\"", hist);
		put_label(f, name);
		fprintf(f, "\",le=\"%.9g\"} %llu\n", (double)sluice_delay_bucket_le_ns(i) / 1e9,
			(unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{" IFACE_LABEL "=\"", hist);
	put_label(f, name);
	fprintf(f, "\",le=\"+Inf\"} %llu\n", (unsigned long long)total);
	fprintf(f, "%s_sum{" IFACE_LABEL "=\"", hist);
	put_label(f, name);
	fprintf(f, "\"} %.9f\n", (double)s->delay_ns / 1e9);
	fprintf(f, "%s_count{" IFACE_LABEL "=\"", hist);
	put_label(f, name);
	fprintf(f, "\"} %llu\n", (unsigned long long)total);
}

/*
 * One sample per policy: policy="default", the rule's CIDR, or for a rule on
 * the transport header the rule as rule list names it ("198.18.0.0/15
 * --proto udp --dport 53"); rules that share a counter slot (slots.c) have
 * one sample together, policy="slot:N", so that a list of 100,000 rules is
 * a few series, not 100,000. rows: the CIDR rules' and the default's,
 * l4rows the L4 rules', of `size` bytes each.
 */
static void policy_samples(FILE *f, const char *name, const char *ifname,
			   const struct sluice_policies *pol, const void *rows, const void *l4rows,
			   size_t size, const struct sluice_field *fl)
{
	unsigned char *done = calloc(SLUICE_MAX_RULES, 1);
	char policy[160];
	size_t i;

	for (i = 0; i <= pol->nr_l4 + pol->nr_rules; i++) {
		const struct sluice_policy *p;
		const void *row;
		__u32 slot;

		if (i < pol->nr_l4) {
			p = &pol->l4[i].policy;
			sluice_l4_name(&pol->l4[i].r, policy, sizeof(policy));
			row = (const char *)l4rows + i * size;
		} else {
			p = sluice_policy_at(pol, i - pol->nr_l4, policy, sizeof(policy), NULL);
			row = (const char *)rows + (i - pol->nr_l4) * size;
		}
		slot = SLUICE_TAG_SLOT(p->tag) & (SLUICE_MAX_RULES - 1);
		if (pol->slot_users[slot] > 1) {
			if (!done || done[slot])
				continue;
			done[slot] = 1;
			snprintf(policy, sizeof(policy), "slot:%u", slot);
		}
		sample(f, name, ifname, policy, sluice_field_get(row, fl));
	}
	free(done);
}

int sluice_prometheus(FILE *f, struct sluice_handle *h, char *err, size_t errlen)
{
	static const struct sluice_field per_policy[] = {
#define F(x, help) { #x, offsetof(struct sluice_rstats, x), help }
		F(passed, "Packets passed under each policy (the default or a rule)."),
		F(dropped, "Packets dropped under each policy."),
		F(passed_bytes, "Bytes passed under each policy."),
		F(dropped_bytes, "Bytes dropped under each policy."),
#undef F
	};
	static const struct sluice_field per_policy_would[] = {
#define F(x, help) { #x, offsetof(struct sluice_rwould, x), help }
		F(would_drop, "Packets passed under dry-run that each policy would have dropped."),
		F(would_drop_bytes, "Bytes of the packets each policy would have dropped under "
				    "dry-run."),
#undef F
	};
	struct sluice_counters c;
	struct sluice_policies pol;
	struct sluice_shape_stats ss;
	struct sluice_keys_view kv;
	/* A shaper is labelled by its state's name (shape:IFACE), so that the
	 * limiter and the shaper of one interface keep apart. */
	const char *label = h->shape && h->name[0] ? h->name : h->ifname;
	char name[128];
	bool have_ss = false;
	size_t i;
	int ret;

	ret = sluice_read_counters(h, &c);
	if (ret)
		return sluice_err(err, errlen, ret, "Couldn't read the counters of %s: %s",
				  h->ifname, strerror(-ret));
	if (h->shape) {
		ret = sluice_read_shape_stats(h, &ss);
		if (ret && ret != -ENOENT)
			return sluice_err(err, errlen, ret,
					  "Couldn't read the shaper's counters of %s: %s", label,
					  strerror(-ret));
		have_ss = !ret;
	}
	ret = sluice_read_policies(h, &pol, true, err, errlen);
	if (ret)
		return ret;

	for (i = 0; i < sluice_stats_nfields; i++) {
		const struct sluice_field *fl = &sluice_stats_fields[i];

		snprintf(name, sizeof(name), "sluice_%s_total", fl->name);
		family(f, name, "counter", sluice_stats_help(fl, h->shape));
		sample(f, name, label, NULL, sluice_field_get(&c, fl));
	}
	for (i = 0; i < sizeof(per_policy) / sizeof(per_policy[0]); i++) {
		snprintf(name, sizeof(name), "sluice_policy_%s_total", per_policy[i].name);
		family(f, name, "counter", per_policy[i].help);
		policy_samples(f, name, label, &pol, pol.rstats, pol.l4_rstats, sizeof(*pol.rstats),
			       &per_policy[i]);
	}
	/* A state pinned by an older sluice has no would-drop counters per
	 * policy (until the next attach adds them): no such samples then. */
	for (i = 0; pol.rwould && i < sizeof(per_policy_would) / sizeof(per_policy_would[0]); i++) {
		snprintf(name, sizeof(name), "sluice_policy_%s_total", per_policy_would[i].name);
		family(f, name, "counter", per_policy_would[i].help);
		policy_samples(f, name, label, &pol, pol.rwould, pol.l4_rwould, sizeof(*pol.rwould),
			       &per_policy_would[i]);
	}
	/* keys and evicted_estimate close the table of fields: gauges. */
	for (i = sluice_stats_nfields; i < sluice_counters_nfields; i++) {
		const struct sluice_field *fl = &sluice_stats_fields[i];

		snprintf(name, sizeof(name), "sluice_%s", fl->name);
		gauge(f, name, fl->help, label, sluice_field_get(&c, fl));
	}
	gauge(f, "sluice_log_keys", "Keys in the sliding-log table now (part of sluice_keys).",
	      label, c.log_keys);
	gauge(f, "sluice_max_keys",
	      "Keys the key table holds (the sets table: IPv4 and IPv6 keys together).", label,
	      sluice_keytab_capacity(&h->keys));
	gauge(f, "sluice_key_table_bytes", "Memory of the key table.", label,
	      sluice_keytab_bytes(&h->keys));
	sluice_keys_view(h, &c, &kv);
	family_samples(f, label, &kv);
	table_info(f, label, &kv);
	gauge(f, "sluice_max_log_keys", "Size of the sliding-log table (sluice_logs).", label,
	      sluice_map_max_entries(h->logs_fd));
	gauge(f, "sluice_wide_keys",
	      "Wide keys (--key src,dport or flow) now (part of sluice_keys; 0 while off).", label,
	      kv.wide_used);
	gauge(f, "sluice_max_wide_keys",
	      "Wide keys the table holds (sluice attach --max-flows; 0: wide keys off).", label,
	      kv.wide_max);
	gauge(f, "sluice_rules", "Rules in force.", label, pol.nr_rules + pol.nr_l4);
	gauge(f, "sluice_dry_run", "Whether dry-run is on for every policy (1) or not (0).", label,
	      pol.set.flags & SLUICE_DRY_RUN ? 1 : 0);
	if (have_ss)
		sluice_prometheus_shape(f, label, &ss);
	fleet_samples(f, h);
	sluice_free_policies(&pol);
	if (fflush(f) || ferror(f))
		return sluice_err(err, errlen, -EIO, "Couldn't write the metrics of %s: %s",
				  h->ifname, strerror(EIO));
	return 0;
}
