// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl: dispatch, errors, policies and key state in words, tables. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/algo.h>
#include "sluicectl.h"
#include "cmd.h"

int ctl_err(int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sluice_report("sluicectl", ctl.json, fmt, ap);
	va_end(ap);
	return ret == -EINVAL ? SLUICE_EXIT_USAGE : SLUICE_EXIT_RUNTIME;
}

int ctl_usage(const char *object, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = sluice_report_usage("sluicectl", ctl.json, object, fmt, ap);
	va_end(ap);
	return ret;
}

int ctl_dispatch(const char *object, const struct ctl_cmd *cmds, int argc, char **argv,
		 void (*help)(FILE *f))
{
	const struct ctl_cmd *found = NULL;
	const char *what = object ? "command" : "object";
	bool exact = false;
	size_t len;
	int i, nr = 0;

	if (argc < 1) {
		help(stderr);
		return SLUICE_EXIT_USAGE;
	}
	/* "sluicectl help rule" is the help object's business */
	if (sluice_is_help(argv[0]) && (object || argc == 1)) {
		help(stdout);
		return SLUICE_EXIT_OK;
	}
	/* An exact name, or a prefix of exactly one: "sluicectl rule l". */
	len = strlen(argv[0]);
	for (i = 0; cmds[i].name; i++) {
		if (!strcmp(cmds[i].name, argv[0])) {
			found = &cmds[i];
			nr = 1;
			exact = true;
			break;
		}
		if (!strncmp(cmds[i].name, argv[0], len)) {
			found = &cmds[i];
			nr++;
		}
	}
	if (nr == 1 && len > 0 && !exact && found->changes)
		return ctl_usage(object, "'%s' is short for '%s%s%s', which changes state: only "
				 "commands that read may be shortened; write it in full, "
				 "'sluicectl %s%s%s'", argv[0], object ? object : "",
				 object ? " " : "", found->name, object ? object : "",
				 object ? " " : "", found->name);
	if (nr == 1 && len > 0)
		return found->func(argc - 1, argv + 1);
	if (nr > 1 && len > 0)
		return ctl_usage(object, "%s '%s' is ambiguous", what, argv[0]);
	if (object)
		return ctl_usage(object, "unknown command '%s %s'", object, argv[0]);
	return ctl_usage(NULL, "unknown object '%s'", argv[0]);
}

static int open_iface(struct sluice_handle *h, bool for_write)
{
	char ifname[SLUICE_STATE_NAME_MAX], err[SLUICE_ERR_LEN];
	int ret;

	ret = sluice_pick_iface(ctl.iface, ifname, err, sizeof(err));
	if (!ret)
		ret = sluice_open(ifname, h, err, sizeof(err));
	/* An interface that does not exist is a wrong -i, as for sluice(8):
	 * exit status 2; one without sluice attached is runtime (1). */
	if (ret)
		return ctl_err(ret == -ENODEV ? -EINVAL : ret, "%s", err);
	ctl.shape = h->shape;
	ret = sluice_check_standing(h, for_write, err, sizeof(err));
	if (ret && for_write) {
		sluice_close(h);
		return ctl_err(ret, "%s", err);
	}
	/* A reader still shows what is there, and says whose it is. */
	if (ret)
		fprintf(stderr, "sluicectl: warning: %s\n", err);
	return 0;
}

int ctl_open(struct sluice_handle *h)
{
	return open_iface(h, false);
}

int ctl_open_write(struct sluice_handle *h)
{
	return open_iface(h, true);
}

/* ---- policies ---- */

int ctl_read_policies(struct sluice_handle *h, struct sluice_policies *pol, bool with_stats)
{
	char err[SLUICE_ERR_LEN];
	int ret;

	ret = sluice_read_policies(h, pol, with_stats, err, sizeof(err));
	return ret ? ctl_err(ret, "%s", err) : 0;
}

/* Does the CIDR of rule r hold the key k? */
static bool rule_holds(const struct sluice_txn_rule *r, const struct sluice_key *k)
{
	__u8 a[16];

	if (r->rule.family != k->family || k->prefixlen < r->rule.prefixlen)
		return false;
	memcpy(a, k->addr, 16);
	sluice_mask(a, r->rule.prefixlen);
	return !memcmp(a, r->key.addr, k->family == 4 ? 4 : 16);
}

const struct sluice_policy *ctl_policy_of_key(const struct sluice_policies *pol,
					      const struct sluice_key *k, char *match, size_t len)
{
	__u32 tag = k->tag & ~SLUICE_TAG_AGGREGATE;
	long first = -1;
	size_t i;

	if (pol->set.def.tag == tag) {
		snprintf(match, len, "default");
		return &pol->set.def;
	}
	/* Rules that share a slot share its tag: the key's own is the one
	 * whose CIDR holds it (an aggregate may be wider: then the first). */
	for (i = 0; i < pol->nr_rules; i++) {
		if (pol->rules[i].rule.policy.tag != tag)
			continue;
		if (rule_holds(&pol->rules[i], k))
			return sluice_policy_at(pol, i, match, len, NULL);
		if (first < 0)
			first = (long)i;
	}
	if (first >= 0)
		return sluice_policy_at(pol, (size_t)first, match, len, NULL);
	snprintf(match, len, "(replaced)");
	return NULL;
}

const char *ctl_action_name(unsigned int action)
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

void ctl_fmt_rate(const struct sluice_policy *p, char *buf, size_t len)
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

void ctl_fmt_burst(const struct sluice_policy *p, char *buf, size_t len)
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

void ctl_fmt_window(const struct sluice_policy *p, char *buf, size_t len)
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

void ctl_fmt_delay(const struct sluice_policy *p, char *buf, size_t len)
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

void ctl_fmt_policy(const struct sluice_policy *p, int family, char *buf, size_t len)
{
	char rate[96], burst[64], win[32], key[24], delay[64];
	const char *verb = ctl.shape ? "shape" : "limit";

	if (family == 4)
		snprintf(key, sizeof(key), "/%u", p->prefix4);
	else if (family == 6)
		snprintf(key, sizeof(key), "/%u", p->prefix6);
	else
		snprintf(key, sizeof(key), "/%u and /%u", p->prefix4, p->prefix6);
	if (p->action != SLUICE_ACT_LIMIT) {
		snprintf(buf, len, "%s%s", ctl_action_name(p->action),
			 p->flags & SLUICE_POLICY_DRY_RUN ? " (dry-run)" : "");
		return;
	}
	ctl_fmt_rate(p, rate, sizeof(rate));
	if (sluice_algo_is_window(p->algo)) {
		ctl_fmt_window(p, win, sizeof(win));
		snprintf(buf, len, "%s %s %s: %u per %s window, keyed by %s%s%s",
			 ctl.shape ? "meter" : "limit", sluice_algo_name(p->algo), rate,
			 p->window_limit, win, key,
			 ctl.shape ? " (a meter: the excess is dropped, nothing waits)" : "",
			 p->flags & SLUICE_POLICY_DRY_RUN ? " (dry-run)" : "");
		return;
	}
	ctl_fmt_burst(p, burst, sizeof(burst));
	ctl_fmt_delay(p, delay, sizeof(delay));
	snprintf(buf, len, "%s %s %s burst %s%s%s, keyed by %s%s%s", verb,
		 sluice_algo_name(p->algo), rate, burst, ctl.shape ? " delay " : "",
		 ctl.shape ? delay : "", key, p->flags & SLUICE_POLICY_FLEET ? ", fleet-wide" : "",
		 p->flags & SLUICE_POLICY_DRY_RUN ? " (dry-run)" : "");
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

void ctl_json_policy(struct sluice_json *j, const struct sluice_policy *p, int family)
{
	json_str(j, "action", ctl_action_name(p->action));
	json_bool(j, "dry_run", p->flags & SLUICE_POLICY_DRY_RUN);
	json_bool(j, "fleet", p->flags & SLUICE_POLICY_FLEET);
	if (family != 6)
		json_u64(j, "prefix4", p->prefix4);
	if (family != 4)
		json_u64(j, "prefix6", p->prefix6);
	json_u64(j, "slot", p->tag >> 16);
	json_u64(j, "tag", p->tag);
	if (p->action != SLUICE_ACT_LIMIT)
		return;
	json_str(j, "algo", sluice_algo_name(p->algo));
	if (sluice_algo_is_window(p->algo)) {
		json_limit(j, "packets", &p->pkt, false, false, NULL);
		json_u64(j, "window_ns", p->window >> SLUICE_TICK_SHIFT);
		json_u64(j, "window_limit", p->window_limit);
		if (ctl.shape)
			json_bool(j, "meter", true);
		return;
	}
	if (p->pkt.period_ns)
		json_limit(j, "packets", &p->pkt, false, true, ctl.shape ? &p->pkt_delay : NULL);
	if (p->bytes.period_ns)
		json_limit(j, "bytes", &p->bytes, true, true, ctl.shape ? &p->byte_delay : NULL);
}

/* ---- key state ---- */

void ctl_fmt_key(const struct sluice_key *k, char *buf, size_t len)
{
	struct sluice_cidr c;

	memset(&c, 0, sizeof(c));
	c.family = k->family;
	c.prefixlen = k->prefixlen;
	memcpy(c.addr, k->addr, 16);
	sluice_format_cidr(&c, true, buf, len);
}

static __u64 ticks_to_ns(__u64 t)
{
	return (t + SLUICE_TICKS_PER_NS - 1) >> SLUICE_TICK_SHIFT;
}

static void bucket_state(const struct sluice_policy *p, const __u64 *st, __u64 now,
			 struct ctl_state *s)
{
	s->full = !st[0] && !st[1];
	s->admits = true;
	if (p->pkt.interval | p->pkt.interval_frac) {
		s->has_pkt = true;
		s->pkt_cap = p->pkt.burst;
		s->pkt_left = sluice_gcra_left(&p->pkt, st[0], now);
		s->pkt_wait_ns = ticks_to_ns(sluice_gcra_wait(&p->pkt, st[0], now));
		s->admits = !s->pkt_wait_ns;
		if (s->shape) {
			sluice_shape_queue(&p->pkt, p->pkt_delay, st[0], now, &s->pkt_q);
			s->admits = s->pkt_q.accepts;
		}
	}
	if (p->bytes.interval | p->bytes.interval_frac) {
		s->has_bytes = true;
		s->bytes_cap = p->bytes.burst;
		s->bytes_left = sluice_gcra_left(&p->bytes, st[1], now);
		s->bytes_wait_ns = ticks_to_ns(sluice_gcra_wait(&p->bytes, st[1], now));
		if (s->shape) {
			sluice_shape_queue(&p->bytes, p->byte_delay, st[1], now, &s->bytes_q);
			s->admits = s->admits && s->bytes_q.accepts;
		}
	}
}

/* Mirrors sluice_sliding_window() and sluice_fixed_window() without the CAS. */
static void window_state(const struct sluice_policy *p, const __u64 *st, __u64 now,
			 struct ctl_state *s)
{
	__u64 window = p->window, w64 = now / window, elapsed = now - w64 * window;
	__u32 win = (__u32)w64;
	__u64 cur = st[0], weight = sluice_prev_weight(elapsed, window);
	__s32 d = sluice_window_delta(cur, win);

	s->full = !cur;
	s->limit = p->window_limit;
	s->next_window_ns = ticks_to_ns(window - elapsed);
	s->cur = d <= 0 ? SLUICE_WIN_COUNT(cur) : 0;
	if (p->algo == SLUICE_ALGO_FIXED_WINDOW) {
		s->prev = d == 1 ? SLUICE_WIN_COUNT(cur) : 0;
		s->estimate = (double)s->cur;
		s->admits = s->cur < s->limit;
		return;
	}
	if (d <= 0) {
		__u64 prev = st[1];

		if (SLUICE_WIN_ID(prev) == SLUICE_WIN_ID(cur) - 1)
			s->prev = SLUICE_WIN_COUNT(prev);
		if (d < 0)
			weight = 1 << 16;
	} else if (d == 1) {
		s->prev = SLUICE_WIN_COUNT(cur);
	}
	s->estimate = (double)(s->prev * weight) / 65536.0 + (double)s->cur;
	s->admits = s->prev * weight + ((s->cur + 1) << 16) <= (__u64)s->limit << 16;
}

static void log_state(const struct sluice_policy *p, const struct sluice_log *log, __u64 now,
		      struct ctl_state *s)
{
	__u32 i, limit = p->window_limit > SLUICE_LOG_MAX ? SLUICE_LOG_MAX : p->window_limit;
	__u64 soonest = ~0ULL;

	s->limit = limit;
	s->full = true;
	for (i = 0; i < limit; i++) {
		__u64 ts = log->ts[i];

		if (!ts)
			continue;
		s->full = false;
		if (ts <= now && now - ts >= p->window)
			continue;
		s->used++;
		if (ts + p->window - now < soonest)
			soonest = ts + p->window - now;
	}
	s->admits = s->used < limit;
	s->free_in_ns = s->admits ? 0 : ticks_to_ns(soonest);
}

void ctl_state_of(const struct sluice_policy *p, const void *val, __u64 now, struct ctl_state *s)
{
	memset(s, 0, sizeof(*s));
	s->algo = p->algo;
	s->shape = ctl.shape && !sluice_algo_is_window(p->algo);
	if (p->algo == SLUICE_ALGO_SLIDING_LOG) {
		const struct sluice_log *log = val;

		s->dropped = log->dropped;
		log_state(p, log, now, s);
		return;
	}
	s->dropped = ((const struct sluice_bucket *)val)->dropped;
	if (sluice_algo_is_window(p->algo))
		window_state(p, ((const struct sluice_bucket *)val)->s, now, s);
	else
		bucket_state(p, ((const struct sluice_bucket *)val)->s, now, s);
}

void ctl_fmt_state(const struct ctl_state *s, char *buf, size_t len)
{
	char wait[32], b[64] = "";

	if (s->shape) {
		/* a shaper's key: its queue, and what the next packet gets */
		const struct sluice_shape_queue *q = s->has_pkt ? &s->pkt_q : &s->bytes_q;
		__u64 d = s->pkt_q.delay_ns > s->bytes_q.delay_ns ? s->pkt_q.delay_ns :
								     s->bytes_q.delay_ns;

		if (s->has_bytes)
			snprintf(b, sizeof(b), "%s%llu bytes", s->has_pkt ? "+" : "",
				 (unsigned long long)s->bytes_q.ahead_units);
		sluice_format_duration(d, wait, sizeof(wait));
		if (s->has_pkt)
			snprintf(buf, len, "%llu pkts%s queued, next %s%s",
				 (unsigned long long)q->ahead_units, b,
				 !s->admits ? "dropped" : d ? "waits " : "goes now",
				 s->admits && d ? wait : "");
		else
			snprintf(buf, len, "%s queued, next %s%s", b,
				 !s->admits ? "dropped" : d ? "waits " : "goes now",
				 s->admits && d ? wait : "");
		return;
	}
	switch (s->algo) {
	case SLUICE_ALGO_TOKEN_BUCKET:
	case SLUICE_ALGO_LEAKY_BUCKET:
		if (s->has_bytes)
			snprintf(b, sizeof(b), "%s%llu/%llu bytes", s->has_pkt ? ", " : "",
				 (unsigned long long)s->bytes_left,
				 (unsigned long long)s->bytes_cap);
		if (s->has_pkt && s->pkt_wait_ns) {
			sluice_format_duration(s->pkt_wait_ns, wait, sizeof(wait));
			snprintf(buf, len, "%llu/%llu pkts%s, next in %s",
				 (unsigned long long)s->pkt_left, (unsigned long long)s->pkt_cap, b,
				 wait);
		} else if (s->has_pkt) {
			snprintf(buf, len, "%llu/%llu pkts%s", (unsigned long long)s->pkt_left,
				 (unsigned long long)s->pkt_cap, b);
		} else {
			snprintf(buf, len, "%s", b);
		}
		return;
	case SLUICE_ALGO_SLIDING_WINDOW:
		snprintf(buf, len, "%.1f/%llu (prev %llu, cur %llu)", s->estimate,
			 (unsigned long long)s->limit, (unsigned long long)s->prev,
			 (unsigned long long)s->cur);
		return;
	case SLUICE_ALGO_FIXED_WINDOW:
		sluice_format_duration(s->next_window_ns, wait, sizeof(wait));
		snprintf(buf, len, "%llu/%llu, resets in %s", (unsigned long long)s->cur,
			 (unsigned long long)s->limit, wait);
		return;
	case SLUICE_ALGO_SLIDING_LOG:
		if (s->free_in_ns) {
			sluice_format_duration(s->free_in_ns, wait, sizeof(wait));
			snprintf(buf, len, "%llu/%llu, next in %s", (unsigned long long)s->used,
				 (unsigned long long)s->limit, wait);
		} else {
			snprintf(buf, len, "%llu/%llu", (unsigned long long)s->used,
				 (unsigned long long)s->limit);
		}
		return;
	}
	snprintf(buf, len, "-");
}

void ctl_json_state(struct sluice_json *j, const struct ctl_state *s)
{
	json_obj_begin(j, "state");
	json_str(j, "algo", sluice_algo_name(s->algo));
	json_bool(j, "admits_now", s->admits);
	switch (s->algo) {
	case SLUICE_ALGO_TOKEN_BUCKET:
	case SLUICE_ALGO_LEAKY_BUCKET:
		if (s->has_pkt) {
			json_u64(j, "packets_left", s->pkt_left);
			json_u64(j, "packets_burst", s->pkt_cap);
			json_u64(j, "packets_wait_ns", s->pkt_wait_ns);
		}
		if (s->has_bytes) {
			json_u64(j, "bytes_left", s->bytes_left);
			json_u64(j, "bytes_burst", s->bytes_cap);
			json_u64(j, "bytes_wait_ns", s->bytes_wait_ns);
		}
		if (s->shape) {
			/* a shaper's key: its queue now (sluice_shape_queue()) */
			json_obj_begin(j, "queue");
			if (s->has_pkt) {
				json_u64(j, "packets_ahead", s->pkt_q.ahead_units);
				json_u64(j, "packets_ahead_ns", s->pkt_q.ahead_ns);
			}
			if (s->has_bytes) {
				json_u64(j, "bytes_ahead", s->bytes_q.ahead_units);
				json_u64(j, "bytes_ahead_ns", s->bytes_q.ahead_ns);
			}
			json_bool(j, "next_accepted", s->admits);
			json_u64(j, "next_delay_ns", s->pkt_q.delay_ns > s->bytes_q.delay_ns ?
							     s->pkt_q.delay_ns :
							     s->bytes_q.delay_ns);
			json_obj_end(j);
		}
		break;
	case SLUICE_ALGO_SLIDING_WINDOW:
	case SLUICE_ALGO_FIXED_WINDOW:
		json_u64(j, "current", s->cur);
		json_u64(j, "previous", s->prev);
		json_f64(j, "estimate", s->estimate);
		json_u64(j, "limit", s->limit);
		json_u64(j, "next_window_ns", s->next_window_ns);
		break;
	case SLUICE_ALGO_SLIDING_LOG:
		json_u64(j, "used", s->used);
		json_u64(j, "limit", s->limit);
		json_u64(j, "free_in_ns", s->free_in_ns);
		break;
	}
	json_obj_end(j);
}

/* ---- tables ---- */

void ctl_table_init(struct ctl_table *t, const char *const *head, const char *align)
{
	memset(t, 0, sizeof(*t));
	while (t->ncols < CTL_MAX_COLS && head[t->ncols]) {
		t->head[t->ncols] = head[t->ncols];
		t->right[t->ncols] = align && align[t->ncols] == 'r';
		t->ncols++;
	}
}

int ctl_table_row(struct ctl_table *t, ...)
{
	va_list ap;
	int c;

	if (t->nrows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		char **cells = realloc(t->cells, cap * t->ncols * sizeof(*cells));

		if (!cells)
			return -ENOMEM;
		t->cells = cells;
		t->cap = cap;
	}
	va_start(ap, t);
	for (c = 0; c < t->ncols; c++) {
		const char *s = va_arg(ap, const char *);

		t->cells[t->nrows * t->ncols + c] = strdup(s ? s : "");
	}
	va_end(ap);
	t->nrows++;
	return 0;
}

void ctl_table_print(const struct ctl_table *t, FILE *f)
{
	size_t w[CTL_MAX_COLS], r;
	int c;

	for (c = 0; c < t->ncols; c++) {
		w[c] = strlen(t->head[c]);
		for (r = 0; r < t->nrows; r++) {
			const char *s = t->cells[r * t->ncols + c];
			size_t l = s ? strlen(s) : 0;

			if (l > w[c])
				w[c] = l;
		}
	}
	for (r = 0; r <= t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *s = r ? t->cells[(r - 1) * t->ncols + c] : t->head[c];
			bool last = c == t->ncols - 1;

			if (!s)
				s = "?";
			if (t->right[c])
				fprintf(f, "%*s%s", (int)w[c], s, last ? "" : "  ");
			else if (last)
				fputs(s, f);
			else
				fprintf(f, "%-*s  ", (int)w[c], s);
		}
		fputc('\n', f);
	}
}

void ctl_table_free(struct ctl_table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

/* ---- one editing command, one transaction ---- */

int ctl_edit(const char *object, const char *verb, int argc, char **argv,
	     void (*help)(FILE *f))
{
	char *words[argc + 3], err[SLUICE_ERR_LEN];
	struct sluice_handle h;
	struct sluice_txn t;
	int i, n = 0, ret, st;

	if (argc >= 1 && sluice_is_help(argv[0])) {
		help(stdout);
		return SLUICE_EXIT_OK;
	}
	words[n++] = (char *)object;
	if (verb)
		words[n++] = (char *)verb;
	for (i = 0; i < argc; i++)
		words[n++] = argv[i];
	words[n] = NULL;
	argc = n;
	argv = words;
	/* Bad words are a usage error whether or not sluice is attached; the
	 * state -i names (or the only one) says whose rules hold, a shaper's
	 * or a limiter's. */
	{
		char name[SLUICE_STATE_NAME_MAX], ifname[IF_NAMESIZE];
		bool shape;

		if (!sluice_pick_iface(ctl.iface, name, NULL, 0) &&
		    !sluice_state_name(name, ifname, &shape, NULL, 0))
			ret = sluice_cmd_check_kind(argc, argv, shape, err, sizeof(err));
		else
			ret = sluice_cmd_check(argc, argv, err, sizeof(err));
	}
	if (ret)
		return ctl_err(ret, "%s", err);
	st = ctl_open_write(&h);
	if (st)
		return st;
	ret = sluice_txn_begin(&h, &t, err, sizeof(err));
	if (!ret) {
		ret = sluice_cmd_edit(&t, argc, argv, err, sizeof(err));
		if (!ret)
			ret = sluice_txn_commit(&t, err, sizeof(err));
		sluice_txn_end(&t);
	}
	sluice_close(&h);
	return ret ? ctl_err(ret, "%s", err) : SLUICE_EXIT_OK;
}
