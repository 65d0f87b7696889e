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
		__u64 ts = log->ts[i], n1 = SLUICE_LOG_STAMP(now);

		if (!ts)
			continue;
		s->full = false;
		if (!sluice_log_held(ts, n1, p->window))
			continue;
		/* stamps are tick + 1 (algo.h): frees at ts - 1 + window */
		s->used++;
		if (ts + p->window - n1 < soonest)
			soonest = ts + p->window - n1;
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

/*
 * What a set or a rule add made live, with both values of every limit (the
 * rate and its burst), so that no burst changes unsaid: "default policy of
 * eth0: limit token-bucket 500/s burst 500 (one second's worth: no --burst),
 * keyed by ...; buckets kept". rule del and rule flush say nothing.
 */
static void print_done(struct sluice_handle *h, struct sluice_txn *t,
		       const struct sluice_cmd_done *d)
{
	const struct sluice_policy *p = NULL;
	const struct sluice_txn_rule *r;
	char line[320], what[64], set[96], note[96] = "";
	struct sluice_json j;
	int family = 0;

	if (d->op == SLUICE_CMD_SET && d->policy_changed) {
		p = &t->set.def;
		snprintf(what, sizeof(what), "default");
	} else if (d->op == SLUICE_CMD_RULE_ADD) {
		r = sluice_txn_find_rule(t, &d->cidr);
		if (!r)
			return;
		p = &r->rule.policy;
		family = d->cidr.family;
		sluice_format_cidr(&d->cidr, true, what, sizeof(what));
	} else if (d->op != SLUICE_CMD_SET || !d->settings_given) {
		return;
	}
	if (p && (d->burst_default[0] || d->burst_default[1]) && !sluice_algo_is_window(p->algo))
		snprintf(note, sizeof(note),
			 "; the burst%s one second's worth of the rate (no --burst given)",
			 d->burst_default[0] && d->burst_default[1] ? "s are" : " is");
	if (ctl.json) {
		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		if (p) {
			json_obj_begin(&j, "policy");
			json_str(&j, "match", what);
			sluice_policy_json(&j, p, family, ctl.shape, t->set.flags & SLUICE_DRY_RUN);
			json_obj_end(&j);
			json_bool(&j, "replaced", d->replaced);
			json_bool(&j, "buckets_kept", d->buckets_kept);
			json_bool(&j, "default_burst", *note != 0);
		}
		sluice_settings_json(&j, &t->set);
		json_obj_end(&j);
		json_end(&j);
		return;
	}
	sluice_settings_text(&t->set, set, sizeof(set));
	if (d->settings_given)
		printf("settings of %s: %s\n", h->name, set);
	if (!p)
		return;
	sluice_policy_text(p, family, ctl.shape, line, sizeof(line));
	if (d->op == SLUICE_CMD_SET)
		printf("default policy of %s: %s%s; %s\n", h->name, line, note,
		       d->buckets_kept ? "buckets kept" :
		       "every source starts with a fresh, full bucket (a new algorithm, window "
		       "or key prefix)");
	else
		printf("rule %s of %s %s: %s%s; %s\n", what, h->name,
		       d->replaced ? "replaced" : "added", line, note,
		       !d->replaced ? "its sources start with full buckets" :
		       d->buckets_kept ? "buckets kept" :
		       "its sources start with fresh, full buckets (a new algorithm, window or "
		       "key prefix)");
}

int ctl_edit(const char *object, const char *verb, int argc, char **argv,
	     void (*help)(FILE *f))
{
	char *words[argc + 3], err[SLUICE_ERR_LEN];
	struct sluice_cmd_done done;
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
		ret = sluice_cmd_edit_done(&t, argc, argv, &done, err, sizeof(err));
		if (!ret)
			ret = sluice_txn_commit(&t, err, sizeof(err));
		if (!ret)
			print_done(&h, &t, &done);
		sluice_txn_end(&t);
	}
	sluice_close(&h);
	return ret ? ctl_err(ret, "%s", err) : SLUICE_EXIT_OK;
}
