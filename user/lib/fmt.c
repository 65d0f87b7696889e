// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What sluice writes about a value (a rate, a duration, a CIDR, an
 * algorithm's name), a policy, its settings and its key table, once: values
 * as the options read them back (parse.c), the rest as text and as JSON, for `sluice status`, `sluice attach` and reload's
 * summaries, and every sluicectl command that prints a policy. A field has
 * one name everywhere (sluicectl(8) and sluice(8), JSON OUTPUT, list them);
 * a text line of `name value` pairs uses the JSON name, its objects joined
 * by '_' (fleet.sync_errors is fleet_sync_errors).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "libsluice.h"
#include <sluice/sets.h>

static const char *const algo_names[SLUICE_ALGO_MAX] = {
	[SLUICE_ALGO_TOKEN_BUCKET] = "token-bucket",
	[SLUICE_ALGO_LEAKY_BUCKET] = "leaky-bucket",
	[SLUICE_ALGO_SLIDING_WINDOW] = "sliding-window",
	[SLUICE_ALGO_FIXED_WINDOW] = "fixed-window",
	[SLUICE_ALGO_SLIDING_LOG] = "sliding-log",
};

const char *sluice_algo_name(unsigned int algo)
{
	return algo < SLUICE_ALGO_MAX ? algo_names[algo] : "unknown";
}

void sluice_format_cidr(const struct sluice_cidr *c, bool with_len, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	inet_ntop(c->family == 4 ? AF_INET : AF_INET6, c->addr, a, sizeof(a));
	if (with_len)
		snprintf(buf, len, "%s/%u", a, c->prefixlen);
	else
		snprintf(buf, len, "%s", a);
}

/* n scaled by 1000 while whole, with the unit names for each step. */
static void print_scaled(unsigned __int128 n, const char *const *units, int nunits, char *buf,
			 size_t len)
{
	int i = 0;

	while (i < nunits - 1 && n >= 1000 && n % 1000 == 0) {
		n /= 1000;
		i++;
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)n, units[i]);
}

void sluice_format_rate(const struct sluice_limit *l, bool is_bytes, char *buf, size_t len)
{
	static const char *const bit_units[] = { "bit", "kbit", "mbit", "gbit", "tbit" };
	static const char *const byte_units[] = { "bps", "kbps", "mbps", "gbps", "tbps" };
	static const struct {
		const char *unit;
		__u64 ns;
	} pkt_units[] = {
		{ "/s", SLUICE_NS_PER_SEC },
		{ "/m", 60 * SLUICE_NS_PER_SEC },
		{ "/h", 3600 * SLUICE_NS_PER_SEC },
	};
	__u64 p = l->period_ns;
	unsigned __int128 n;
	size_t i;

	if (!p) {
		snprintf(buf, len, "none");
		return;
	}
	if (is_bytes) {
		/* Whole bits per second in bit units, else whole bytes in bps units. */
		n = (unsigned __int128)l->rate * 8 * SLUICE_NS_PER_SEC;
		if (n % p == 0 && (n / p) % 8 != 0) {
			print_scaled(n / p, bit_units, 5, buf, len);
			return;
		}
		n = (unsigned __int128)l->rate * SLUICE_NS_PER_SEC;
		if (n % p == 0) {
			/* Whole bytes: prefer bits when they scale as far (10mbit). */
			unsigned __int128 bits = n / p * 8;

			if (bits % 1000 == 0)
				print_scaled(bits, bit_units, 5, buf, len);
			else
				print_scaled(n / p, byte_units, 5, buf, len);
			return;
		}
		snprintf(buf, len, "%.3fbps", (double)l->rate * SLUICE_NS_PER_SEC / (double)p);
		return;
	}
	/* Packets: the largest rate unit that keeps the count whole (30/m). */
	for (i = 0; i < sizeof(pkt_units) / sizeof(pkt_units[0]); i++) {
		n = (unsigned __int128)l->rate * pkt_units[i].ns;
		if (n % p == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(n / p),
				 pkt_units[i].unit);
			return;
		}
	}
	snprintf(buf, len, "%.6g/s", (double)l->rate * SLUICE_NS_PER_SEC / (double)p);
}

/*
 * The largest unit that holds ns whole, as sluice_parse_duration() reads it
 * back (1h, 10s, 1500ms); only what no option can be given in (a wait of
 * 1.2345 ms) gets a fraction.
 */
void sluice_format_duration(__u64 ns, char *buf, size_t len)
{
	static const struct {
		const char *unit;
		__u64 ns;
	} units[] = {
		{ "d", 86400 * SLUICE_NS_PER_SEC },
		{ "h", 3600 * SLUICE_NS_PER_SEC },
		{ "m", 60 * SLUICE_NS_PER_SEC },
		{ "s", SLUICE_NS_PER_SEC },
		{ "ms", 1000000ULL },
	};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]) && ns; i++) {
		if (ns % units[i].ns == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].ns),
				 units[i].unit);
			return;
		}
	}
	if (ns >= SLUICE_NS_PER_SEC)
		snprintf(buf, len, "%.3fs", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, len, "%.1fms", (double)ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, len, "%.1fus", (double)ns / 1e3);
	else
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

const char *sluice_action_name(unsigned int action)
{
	switch (action) {
	case SLUICE_ACT_LIMIT:
		return "limit";
	case SLUICE_ACT_EXEMPT:
		return "exempt";
	case SLUICE_ACT_DENY:
		return "deny";
	}
	return "unknown";
}

void sluice_fmt_rate(const struct sluice_policy *p, char *buf, size_t len)
{
	char a[48] = "", b[48] = "";

	if (p->action != SLUICE_ACT_LIMIT) {
		snprintf(buf, len, "-");
		return;
	}
	if (p->pkt.period_ns)
		sluice_format_rate(&p->pkt, false, a, sizeof(a));
	if (p->bytes.period_ns && !sluice_algo_is_window(p->algo))
		sluice_format_rate(&p->bytes, true, b, sizeof(b));
	snprintf(buf, len, "%s%s%s", a, *a && *b ? "+" : "", b);
}

void sluice_fmt_burst(const struct sluice_policy *p, char *buf, size_t len)
{
	char a[24] = "", b[24] = "";

	if (p->action != SLUICE_ACT_LIMIT || sluice_algo_is_window(p->algo)) {
		snprintf(buf, len, "-");
		return;
	}
	if (p->pkt.period_ns)
		snprintf(a, sizeof(a), "%u", p->pkt.burst);
	if (p->bytes.period_ns)
		snprintf(b, sizeof(b), "%uB", p->bytes.burst);
	snprintf(buf, len, "%s%s%s", a, *a && *b ? "+" : "", b);
}

void sluice_fmt_window(const struct sluice_policy *p, char *buf, size_t len)
{
	if (p->action != SLUICE_ACT_LIMIT || !sluice_algo_is_window(p->algo)) {
		snprintf(buf, len, "-");
		return;
	}
	sluice_format_duration(p->window >> SLUICE_TICK_SHIFT, buf, len);
}

static void fmt_one_delay(__u32 d, const char *unit, char *buf, size_t len)
{
	if (d == SLUICE_NODELAY)
		snprintf(buf, len, "nodelay%s", *unit ? "(bytes)" : "");
	else
		snprintf(buf, len, "%u%s", d, unit);
}

void sluice_fmt_delay(const struct sluice_policy *p, char *buf, size_t len)
{
	char a[32] = "", b[32] = "";

	if (p->action != SLUICE_ACT_LIMIT || sluice_algo_is_window(p->algo)) {
		snprintf(buf, len, "-");
		return;
	}
	if (p->pkt.period_ns)
		fmt_one_delay(p->pkt_delay, "", a, sizeof(a));
	if (p->bytes.period_ns)
		fmt_one_delay(p->byte_delay, "B", b, sizeof(b));
	/* one --nodelay for both reads as one */
	if (*a && *b && p->pkt_delay == SLUICE_NODELAY && p->byte_delay == SLUICE_NODELAY)
		*b = 0;
	snprintf(buf, len, "%s%s%s", a, *a && *b ? "+" : "", b);
}

/* "/32 (IPv4) and /64 (IPv6)", or one family's "/24"; then what else a
 * key holds, by its mode (--key): " with protocol and destination port
 * (--key src,dport)" */
static void fmt_keyed(const struct sluice_policy *p, int family, char *buf, size_t len)
{
	size_t n;

	if (family == 4)
		snprintf(buf, len, "/%u", p->prefix4);
	else if (family == 6)
		snprintf(buf, len, "/%u", p->prefix6);
	else
		snprintf(buf, len, "/%u (IPv4) and /%u (IPv6)", p->prefix4, p->prefix6);
	n = strlen(buf);
	if (SLUICE_POLICY_KEY(p) == SLUICE_KEY_SRC_DPORT)
		snprintf(buf + n, len - n, " with protocol and destination port (--key src,dport)");
	else if (SLUICE_POLICY_KEY(p) == SLUICE_KEY_FLOW)
		snprintf(buf + n, len - n, " with destination, protocol and ports (--key flow)");
}

/* "100/s burst 100" (a shaper's: "delay 5" or "nodelay" after it); a byte
 * limit's burst and delay count bytes, and say so. */
static void fmt_limit(const struct sluice_limit *l, bool bytes, bool shape, __u32 delay, char *buf,
		      size_t len)
{
	char r[48], d[48] = "";

	sluice_format_rate(l, bytes, r, sizeof(r));
	if (shape && delay == SLUICE_NODELAY)
		snprintf(d, sizeof(d), " nodelay");
	else if (shape)
		snprintf(d, sizeof(d), " delay %u%s", delay, bytes ? " bytes" : "");
	snprintf(buf, len, "%s burst %u%s%s", r, l->burst, bytes ? " bytes" : "", d);
}

/* ", and 1000/s burst 1000 per /24 (IPv4) and /48 (IPv6)": the second key */
static void fmt_also(const struct sluice_also *al, int family, char *buf, size_t len)
{
	char l[96];

	buf[0] = '\0';
	if (!al)
		return;
	fmt_limit(&al->pkt, false, false, 0, l, sizeof(l));
	if (family == 4)
		snprintf(buf, len, ", and %s per /%u", l, al->prefix4);
	else if (family == 6)
		snprintf(buf, len, ", and %s per /%u", l, al->prefix6);
	else
		snprintf(buf, len, ", and %s per /%u (IPv4) and /%u (IPv6)", l, al->prefix4,
			 al->prefix6);
}

void sluice_policy_text(const struct sluice_policy *p, const struct sluice_also *also, int family,
			bool shape, char *buf, size_t len)
{
	const char *dry = p->flags & SLUICE_POLICY_DRY_RUN ? " (dry-run)" : "";
	char rate[96], win[32], key[128], a[96] = "", b[96] = "", pen[48] = "", al[160];

	fmt_keyed(p, family, key, sizeof(key));
	if (sluice_penalty_ds(p)) {
		char d[32];

		sluice_format_duration(sluice_penalty_ds(p) * SLUICE_PENALTY_NS_PER_DS, d,
				       sizeof(d));
		snprintf(pen, sizeof(pen), ", penalty %s", d);
	}
	if (p->action != SLUICE_ACT_LIMIT) {
		snprintf(buf, len, "%s%s", sluice_action_name(p->action), dry);
		return;
	}
	if (sluice_algo_is_window(p->algo)) {
		sluice_fmt_rate(p, rate, sizeof(rate));
		sluice_fmt_window(p, win, sizeof(win));
		snprintf(buf, len, "%s %s %s: %u per %s window, keyed by %s%s%s%s",
			 shape ? "meter" : "limit", sluice_algo_name(p->algo), rate,
			 p->window_limit, win, key, pen,
			 shape ? " (a meter: the excess is dropped, nothing waits)" : "", dry);
		return;
	}
	/* Both values of every limit: the rate and its burst. */
	if (p->pkt.period_ns)
		fmt_limit(&p->pkt, false, shape, p->pkt_delay, a, sizeof(a));
	if (p->bytes.period_ns)
		fmt_limit(&p->bytes, true, shape, p->byte_delay, b, sizeof(b));
	fmt_also(also, family, al, sizeof(al));
	snprintf(buf, len, "%s %s %s%s%s, keyed by %s%s%s%s%s", shape ? "shape" : "limit",
		 sluice_algo_name(p->algo), a, *a && *b ? " and " : "", b, key,
		 p->flags & SLUICE_POLICY_FLEET ? ", fleet-wide" : "", al, pen, dry);
}

static void json_limit(struct sluice_json *j, const char *key, const struct sluice_limit *l,
		       bool is_bytes, bool with_burst, const __u32 *delay)
{
	char text[48];

	sluice_format_rate(l, is_bytes, text, sizeof(text));
	json_obj_begin(j, key);
	json_str(j, "rate", text);
	json_u64(j, "count", l->rate);
	json_u64(j, "period_ns", l->period_ns);
	json_f64(j, "per_second", (double)l->rate * 1e9 / (double)l->period_ns);
	if (with_burst)
		json_u64(j, "burst", l->burst);
	/* A shaper's: the excess that goes at once, or every packet. */
	if (delay) {
		json_bool(j, "nodelay", *delay == SLUICE_NODELAY);
		if (*delay != SLUICE_NODELAY)
			json_u64(j, "delay", *delay);
	}
	json_obj_end(j);
}

void sluice_policy_json(struct sluice_json *j, const struct sluice_policy *p,
			const struct sluice_also *also, int family, bool shape, bool global_dry)
{
	json_str(j, "action", sluice_action_name(p->action));
	json_bool(j, "dry_run", p->flags & SLUICE_POLICY_DRY_RUN);
	json_bool(j, "effective_dry_run", global_dry || (p->flags & SLUICE_POLICY_DRY_RUN));
	json_bool(j, "fleet", p->flags & SLUICE_POLICY_FLEET);
	if (family != 6)
		json_u64(j, "prefix4", p->prefix4);
	if (family != 4)
		json_u64(j, "prefix6", p->prefix6);
	json_u64(j, "slot", p->tag >> 16);
	json_u64(j, "tag", p->tag);
	/* --key: src, src,dport or flow (an exempt or deny policy: src) */
	json_str(j, "key", sluice_key_mode_name(SLUICE_POLICY_KEY(p)));
	if (p->action != SLUICE_ACT_LIMIT)
		return;
	json_str(j, "algo", sluice_algo_name(p->algo));
	if (sluice_penalty_ds(p))
		json_u64(j, "penalty_ns", sluice_penalty_ds(p) * SLUICE_PENALTY_NS_PER_DS);
	if (sluice_algo_is_window(p->algo)) {
		json_limit(j, "packets", &p->pkt, false, false, NULL);
		json_u64(j, "window_ns", p->window >> SLUICE_TICK_SHIFT);
		json_u64(j, "window_limit", p->window_limit);
		if (shape)
			json_bool(j, "meter", true);
		return;
	}
	if (p->pkt.period_ns)
		json_limit(j, "packets", &p->pkt, false, true, shape ? &p->pkt_delay : NULL);
	if (p->bytes.period_ns)
		json_limit(j, "bytes", &p->bytes, true, true, shape ? &p->byte_delay : NULL);
	if (also) {
		json_obj_begin(j, "also");
		if (family != 6)
			json_u64(j, "prefix4", also->prefix4);
		if (family != 4)
			json_u64(j, "prefix6", also->prefix6);
		json_limit(j, "packets", &also->pkt, false, true, NULL);
		json_obj_end(j);
	}
}

void sluice_settings_text(const struct sluice_settings *s, char *buf, size_t len)
{
	char nk[48] = "off";

	if (s->new_keys.period_ns)
		sluice_format_rate(&s->new_keys, false, nk, sizeof(nk));
	snprintf(buf, len, "dry-run %s, fail-%s, new keys %s",
		 s->flags & SLUICE_DRY_RUN ? "on" : "off",
		 s->flags & SLUICE_FAIL_CLOSED ? "closed" : "open", nk);
}

void sluice_settings_json(struct sluice_json *j, const struct sluice_settings *s)
{
	char nk[48] = "off";

	if (s->new_keys.period_ns)
		sluice_format_rate(&s->new_keys, false, nk, sizeof(nk));
	json_obj_begin(j, "settings");
	json_bool(j, "dry_run", s->flags & SLUICE_DRY_RUN);
	json_bool(j, "fail_closed", s->flags & SLUICE_FAIL_CLOSED);
	json_str(j, "new_keys", nk);
	json_obj_end(j);
}

/* ---- the key table ---- */

void sluice_keys_view(const struct sluice_handle *h, const struct sluice_counters *c,
		      struct sluice_keys_view *v)
{
	int f;

	memset(v, 0, sizeof(*v));
	v->sets = h->keys.sets;
	if (h->cfg->kind & SLUICE_KIND_TABLE_ASKED)
		v->from = SLUICE_TABLE_ASKED;
	else
		v->from = v->sets ? SLUICE_TABLE_DEFAULT : SLUICE_TABLE_KEPT;
	v->bytes = sluice_keytab_bytes(&h->keys);
	v->max = sluice_keytab_capacity(&h->keys);
	for (f = 0; f < 2; f++) {
		v->used[f] = c->table_keys[f];
		/* the LRU's families share its capacity; a set table's each
		 * have sets of their own */
		v->max_family[f] = v->sets ? (__u64)h->keys.nsets[f] * SLUICE_SET_WAYS : v->max;
	}
	v->wide = sluice_keytab_wide_on(&h->keys);
	if (v->wide) {
		v->wide_used = c->wide_keys;
		v->wide_max = sluice_keytab_wide_capacity(&h->keys);
	}
}

/* "; wide keys: 3 of 4096" (full), or "; wide keys off" */
static void wide_text(const struct sluice_keys_view *v, char *buf, size_t len)
{
	size_t n = strlen(buf);

	if (!v->wide)
		snprintf(buf + n, len - n, "; wide keys off");
	else
		snprintf(buf + n, len - n, "; wide keys: %llu of %llu%s",
			 (unsigned long long)v->wide_used, (unsigned long long)v->wide_max,
			 v->wide_used >= v->wide_max ? " (full)" : "");
}

void sluice_human_bytes(__u64 b, char *buf, size_t len)
{
	if (b >= 1ULL << 30)
		snprintf(buf, len, "%.1f GiB", (double)b / (1ULL << 30));
	else if (b >= 1ULL << 20)
		snprintf(buf, len, "%.1f MiB", (double)b / (1ULL << 20));
	else
		snprintf(buf, len, "%.1f KiB", (double)b / 1024);
}

const char *sluice_table_from_text(const struct sluice_keys_view *v)
{
	switch (v->from) {
	case SLUICE_TABLE_ASKED:
		return v->sets ? "--table sets" : "--table lru";
	case SLUICE_TABLE_KEPT:
		return "an older sluice's default, kept";
	default:
		return "the default";
	}
}

const char *sluice_table_from_word(const struct sluice_keys_view *v)
{
	static const char *const words[] = {
		[SLUICE_TABLE_DEFAULT] = "default",
		[SLUICE_TABLE_ASKED] = "option",
		[SLUICE_TABLE_KEPT] = "older_default",
	};

	return words[v->from];
}

void sluice_keys_text(const struct sluice_keys_view *v, char *buf, size_t len)
{
	char mem[32];
	int f;

	sluice_human_bytes(v->bytes, mem, sizeof(mem));
	if (!v->sets) {
		snprintf(buf, len,
			 "lru table (%s): %llu of %llu keys, IPv4 %llu and IPv6 %llu "
			 "share it (%s)",
			 sluice_table_from_text(v), (unsigned long long)(v->used[0] + v->used[1]),
			 (unsigned long long)v->max, (unsigned long long)v->used[0],
			 (unsigned long long)v->used[1], mem);
		wide_text(v, buf, len);
		return;
	}
	/* A set table's families fill apart: a full IPv4 half is full
	 * whatever the IPv6 half holds, so each is said on its own. */
	snprintf(buf, len, "sets table (%s):", sluice_table_from_text(v));
	for (f = 0; f < 2; f++) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "%s IPv%d %llu of %llu%s", f ? "," : "", f ? 6 : 4,
			 (unsigned long long)v->used[f], (unsigned long long)v->max_family[f],
			 v->used[f] >= v->max_family[f] ? " (full)" : "");
	}
	snprintf(buf + strlen(buf), len - strlen(buf), " keys (%s)", mem);
	wide_text(v, buf, len);
}

void sluice_keys_out(struct sluice_rec *r, const struct sluice_keys_view *v)
{
	static const char *const fam[] = { "ipv4", "ipv6" };
	int f;

	sluice_rec_begin(r, "key_table");
	sluice_rec_str(r, "table", v->sets ? "sets" : "lru");
	sluice_rec_str(r, "chosen_by", sluice_table_from_word(v));
	sluice_rec_u64(r, "used", v->used[0] + v->used[1]);
	sluice_rec_u64(r, "max", v->max);
	sluice_rec_bool(r, "families_share_max", !v->sets);
	sluice_rec_u64(r, "memlock", v->bytes);
	for (f = 0; f < 2; f++) {
		sluice_rec_begin(r, fam[f]);
		sluice_rec_u64(r, "used", v->used[f]);
		sluice_rec_u64(r, "max", v->max_family[f]);
		sluice_rec_bool(r, "full", v->used[f] >= v->max_family[f]);
		sluice_rec_end(r);
	}
	sluice_rec_begin(r, "wide");
	sluice_rec_bool(r, "on", v->wide);
	sluice_rec_u64(r, "used", v->wide_used);
	sluice_rec_u64(r, "max", v->wide_max);
	sluice_rec_end(r);
	sluice_rec_end(r);
}

void sluice_shape_stats_out(struct sluice_rec *r, const struct sluice_shape_stats *s)
{
	char name[48];
	unsigned int i;

	sluice_rec_begin(r, "shape");
	sluice_rec_u64(r, "shaped", s->shaped);
	sluice_rec_u64(r, "delayed", s->delayed);
	sluice_rec_u64(r, "delay_ns", s->delay_ns);
	sluice_rec_u64(r, "mean_delay_ns", s->delayed ? s->delay_ns / s->delayed : 0);
	sluice_rec_u64(r, "max_delay_ns", s->max_delay_ns);
	sluice_rec_u64(r, "restamped", s->restamped);
	sluice_rec_u64(r, "horizon_dropped", s->horizon_dropped);
	/* lt_Nus: delayed packets whose delay was under N us (exact bounds,
	 * 2^i us: a rounded 1.0ms would hide that the bucket ends at 1024us);
	 * the last, ge_Nus, every longer one */
	sluice_rec_begin(r, "delay_histogram");
	for (i = 0; i < SLUICE_DELAY_BUCKETS; i++) {
		if (i + 1 < SLUICE_DELAY_BUCKETS)
			snprintf(name, sizeof(name), "lt_%lluus",
				 (unsigned long long)(sluice_delay_bucket_le_ns(i) / 1000));
		else
			snprintf(name, sizeof(name), "ge_%lluus",
				 (unsigned long long)(sluice_delay_bucket_le_ns(i - 1) / 1000));
		/* text: only the buckets that hold some; JSON: all */
		if (r->j || s->hist[i])
			sluice_rec_u64(r, name, s->hist[i]);
	}
	sluice_rec_end(r);
	sluice_rec_end(r);
}
