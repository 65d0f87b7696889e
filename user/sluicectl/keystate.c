// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl: a key in words, the policy that owns it, and its state in its
 * algorithm's terms (mirroring the datapath's, include/sluice/algo.h). */
#include <stdio.h>
#include <string.h>

#include <sluice/algo.h>
#include "sluicectl.h"

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

const struct sluice_also *ctl_also(const struct sluice_policies *pol, const struct sluice_policy *p)
{
	__u32 id = SLUICE_POLICY_ALSO(p);

	return id && pol->also[id].pkt.period_ns ? &pol->also[id] : NULL;
}

void ctl_also_policy(const struct sluice_policy *p, const struct sluice_also *a,
		     struct sluice_policy *out)
{
	memset(out, 0, sizeof(*out));
	out->tag = SLUICE_ALSO_TAG(p->tag);
	out->algo = SLUICE_ALGO_TOKEN_BUCKET;
	out->action = SLUICE_ACT_LIMIT;
	out->flags = p->flags & SLUICE_POLICY_DRY_RUN;
	out->prefix4 = a->prefix4;
	out->prefix6 = a->prefix6;
	out->pkt = a->pkt;
}

const struct sluice_policy *ctl_policy_of_key(const struct sluice_policies *pol,
					      const struct sluice_key *k, char *match, size_t len,
					      struct sluice_policy *buf)
{
	__u32 tag = k->tag & ~SLUICE_TAG_AGGREGATE;
	long first = -1;
	size_t i;

	if (SLUICE_TAG_IS_ALSO(tag)) {
		struct sluice_key own = *k;
		const struct sluice_policy *p = NULL;
		char m[160];
		size_t n;

		/* the policy of the tag the second key was made from: any
		 * algorithm's (the tag's own field says which) */
		for (i = 0; i < SLUICE_ALGO_MAX && !p; i++) {
			own.tag = (tag & ~(7U << 13)) | ((__u32)i << 13);
			p = ctl_policy_of_key(pol, &own, m, sizeof(m), NULL);
			if (p && SLUICE_ALSO_TAG(p->tag) != tag)
				p = NULL;
		}
		if (!p || !ctl_also(pol, p) || !buf) {
			snprintf(match, len, "(replaced)");
			return NULL;
		}
		ctl_also_policy(p, ctl_also(pol, p), buf);
		n = strlen(m);
		snprintf(match, len, "%.*s (also)", (int)(n < len - 8 ? n : len - 8), m);
		return buf;
	}

	if (pol->set.def.tag == tag) {
		snprintf(match, len, "default");
		return &pol->set.def;
	}
	/* A rule on the transport header: its own tag (the first of a shared
	 * slot's that holds the key). */
	for (i = 0; i < pol->nr_l4; i++) {
		struct sluice_key a = *k;

		if (pol->l4[i].policy.tag != tag ||
		    (k->family == pol->l4[i].r.family &&
		     !sluice_l4rule_holds(&pol->l4[i].r, k->family, a.addr)))
			continue;
		sluice_l4_name(&pol->l4[i].r, match, len);
		return &pol->l4[i].policy;
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

void ctl_fmt_key(const struct sluice_key *k, char *buf, size_t len)
{
	struct sluice_cidr c;

	memset(&c, 0, sizeof(c));
	c.family = k->family;
	c.prefixlen = k->prefixlen;
	memcpy(c.addr, k->addr, 16);
	sluice_format_cidr(&c, true, buf, len);
}

void ctl_fmt_fkey(const struct sluice_fkey *k, char *buf, size_t len)
{
	sluice_fkey_text(k, buf, len);
}

void ctl_json_fkey(struct sluice_json *j, const struct sluice_fkey *k)
{
	bool wide = k->mode == SLUICE_KEY_SRC_DPORT || k->mode == SLUICE_KEY_FLOW;
	const char *name = sluice_proto_name(k->proto);
	struct sluice_cidr c;
	char v[64];

	json_str(j, "key_mode", sluice_key_mode_name(wide ? k->mode : SLUICE_KEY_SRC));
	if (!wide)
		return;
	if (name)
		json_str(j, "proto", name);
	else
		json_u64(j, "proto", k->proto);
	json_u64(j, "dport", k->dport);
	if (k->mode != SLUICE_KEY_FLOW)
		return;
	json_u64(j, "sport", k->sport);
	memset(&c, 0, sizeof(c));
	c.family = k->k.family;
	c.prefixlen = k->k.family == 4 ? 32 : 128;
	memcpy(c.addr, k->dst, 16);
	sluice_format_cidr(&c, false, v, sizeof(v));
	json_str(j, "dst", v);
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
				 !s->admits ? "dropped" :
				 d          ? "waits " :
					      "goes now",
				 s->admits && d ? wait : "");
		else
			snprintf(buf, len, "%s queued, next %s%s", b,
				 !s->admits ? "dropped" :
				 d          ? "waits " :
					      "goes now",
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
			json_u64(j, "next_delay_ns",
				 s->pkt_q.delay_ns > s->bytes_q.delay_ns ? s->pkt_q.delay_ns :
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
