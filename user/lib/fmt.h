/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What sluice writes (fmt.c): values as the options read them back, and a
 * policy, its settings and its key table in words and in JSON.
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_FMT_H
#define SLUICE_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

#include "json.h"
#include "keyspec.h"
#include "parse.h"
#include "state.h"

const char *sluice_algo_name(unsigned int algo);
/* "198.18.0.0/15", "2001:2::/48"; with_len false prints the address alone. */
void sluice_format_cidr(const struct sluice_cidr *c, bool with_len, char *buf, size_t len);
/* A human rate: "100/s", "10mbit" style, as the user would write it. */
void sluice_format_rate(const struct sluice_limit *l, bool is_bytes, char *buf, size_t len);
/* A duration in the largest unit it is a whole number of ("1h", "10s",
 * "1500ms"), else rounded: "1.234s", "2.5ms", "3.1us", "7ns". */
void sluice_format_duration(__u64 ns, char *buf, size_t len);

/*
 * One writer for each: every command that prints a policy calls these (the
 * JSON fields are listed in sluicectl(8), JSON OUTPUT).
 *
 * The pieces, for tables: "100/s+10mbit", "200+1514B", "1s", "5+3000B" (a
 * shaper's delay; "nodelay"); "-" where they do not apply.
 */
const char *sluice_action_name(unsigned int action); /* limit, exempt, deny */
void sluice_fmt_rate(const struct sluice_policy *p, char *buf, size_t len);
void sluice_fmt_burst(const struct sluice_policy *p, char *buf, size_t len);
void sluice_fmt_window(const struct sluice_policy *p, char *buf, size_t len);
void sluice_fmt_delay(const struct sluice_policy *p, char *buf, size_t len);
/* One line with both values of every limit: "limit token-bucket 100/s burst
 * 100, keyed by /32 (IPv4) and /64 (IPv6)", "shape token-bucket 6/m burst 20
 * delay 5, keyed by /32", "deny (dry-run)". family 4 or 6: one family's key
 * prefix; 0: both. shape: a shaper's policy. */
void sluice_policy_text(const struct sluice_policy *p, const struct sluice_also *also, int family,
			bool shape, char *buf, size_t len);
/* The policy's fields into the open JSON object: action, dry_run,
 * effective_dry_run (its own or global_dry), fleet, prefix4, prefix6, slot,
 * tag, key (src, src,dport or flow); for a limit algo and packets, bytes ({rate, count, period_ns,
 * per_second, burst}, a shaper's with nodelay and delay), or for a window
 * algorithm window_ns and window_limit. */
void sluice_policy_json(struct sluice_json *j, const struct sluice_policy *p,
			const struct sluice_also *also, int family, bool shape, bool global_dry);
/* also: the policy's second key (SLUICE_POLICY_ALSO(), sluice_also; NULL:
 * none), ", and 1000/s burst 1000 per /24 (IPv4) and /48 (IPv6)" in the
 * text, "also": {prefix4, prefix6, packets} in JSON. */
/* The settings of the interface, not of a policy: "dry-run off, fail-open,
 * new keys off"; "settings": {dry_run, fail_closed, new_keys}. */
void sluice_settings_text(const struct sluice_settings *s, char *buf, size_t len);
void sluice_settings_json(struct sluice_json *j, const struct sluice_settings *s);

/* Why a state has its key table (config.kind's SLUICE_KIND_TABLE_ASKED). */
enum sluice_table_from {
	SLUICE_TABLE_DEFAULT, /* a sets state made without --table */
	SLUICE_TABLE_ASKED, /* made with --table */
	SLUICE_TABLE_KEPT, /* an lru state made without --table: an older
			    * sluice's default, kept by every upgrade since */
};

/* What the key table holds and can hold, per family ([0] IPv4, [1] IPv6). */

struct sluice_keys_view {
	bool sets; /* the set table; else the LRU, whose families share max */
	enum sluice_table_from from;
	__u64 used[2]; /* keys now */
	__u64 max_family[2]; /* what each family can hold (the LRU: max) */
	__u64 max; /* both families */
	__u64 bytes; /* memory (the wide keys' table's included while they are on) */
	/* wide keys (--key src,dport|flow): on (sluice attach --max-flows), how
	 * many now, how many the table holds */
	bool wide;
	__u64 wide_used, wide_max;
};
/* From a handle and its counters (sluice_read_counters()). */
void sluice_keys_view(const struct sluice_handle *h, const struct sluice_counters *c,
		      struct sluice_keys_view *v);
/* "sets table (the default): IPv4 64 of 64 (full), IPv6 1 of 64 keys
 * (12.0 KiB)", or "lru table (--table lru): 3 of 100 keys, IPv4 2 and IPv6 1
 * share it (11.4 KiB)", and "; wide keys: 3 of 4096" or "; wide keys off" */
void sluice_keys_text(const struct sluice_keys_view *v, char *buf, size_t len);
/* b bytes as "%.1f GiB", "MiB" or "KiB". */
void sluice_human_bytes(__u64 b, char *buf, size_t len);
/* The why of sluice_keys_text(): "the default", "--table sets", ... */
const char *sluice_table_from_text(const struct sluice_keys_view *v);
/* ... as one word, for JSON and metrics: "default", "option", "older_default" */
const char *sluice_table_from_word(const struct sluice_keys_view *v);
/* "key_table": {table, chosen_by, used, max, families_share_max, memlock, ipv4: {used, max,
 * full}, ipv6: {...}, wide: {on, used, max}} */
void sluice_keys_out(struct sluice_rec *r, const struct sluice_keys_view *v);
/* A shaper's counters: "shape": {shaped, delayed, delay_ns, mean_delay_ns,
 * max_delay_ns, restamped, horizon_dropped, delay_histogram: {lt_1us, ...,
 * ge_Nus}} (text: the histogram's buckets that hold some). */
void sluice_shape_stats_out(struct sluice_rec *r, const struct sluice_shape_stats *s);

#endif /* SLUICE_FMT_H */
