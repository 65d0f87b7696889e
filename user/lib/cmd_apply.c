// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The editing commands, second step: an edit that cmd.c parsed, merged into
 * the live policy of a transaction and checked (sluice_cmd_edit()), or
 * checked on the defaults alone (sluice_cmd_check()).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd_edit.h"

/* Set a limit for a shaper or a limiter: a shaper's burst may be 0 (no
 * queue beyond the packet being sent: a tolerance of 0). */
static int limit_set(struct sluice_limit *l, const struct rate_arg *r, __u64 burst, bool bytes,
		     char *err, size_t errlen)
{
	int ret;

	if (bytes)
		ret = sluice_limit_set_bytes(l, r->rate.count, r->rate.period_ns, burst ?: 1, err,
					     errlen);
	else
		ret = sluice_limit_set(l, r->rate.count, r->rate.period_ns, burst ?: 1, err,
				       errlen);
	if (!ret && !burst) {
		l->burst = 0;
		l->tolerance = 0;
	}
	return ret;
}

/*
 * A shaper's queue of `longest` ns (sluice_shape_longest_ns()) short of the
 * fq horizon its qdisc has (cfg->shape_horizon_us; 0: not known, nothing to
 * check): 0, or the refusal, which names what makes the queue (`what`) and
 * how to shorten it (`lower`).
 */
static int check_horizon(const struct sluice_handle *h, __u64 longest, const char *what,
			 const char *lower, char *err, size_t errlen)
{
	__u64 horizon_ns = h && h->cfg ? (__u64)h->cfg->shape_horizon_us * 1000ULL : 0;
	char wait[32], hz[32];

	if (!horizon_ns || longest < horizon_ns)
		return 0;
	sluice_format_duration(longest, wait, sizeof(wait));
	sluice_format_duration(horizon_ns, hz, sizeof(hz));
	return sluice_err(err, errlen, -EINVAL,
			  "%s delays a packet up to %s, which reaches the fq horizon of %s of %s "
			  "(fq would drop it): %s, or raise the horizon: sluice shape attach %s "
			  "--horizon DUR",
			  what, wait, hz, h->name[0] ? h->name : h->ifname, lower, h->ifname);
}

/* A shaper's delay for one limit: at most its burst, and its queue within
 * the fq horizon (check_horizon()). */
static int check_delay(const struct sluice_handle *h, const struct sluice_limit *l, __u32 d,
		       bool bytes, const char *rate, char *err, size_t errlen)
{
	char dw[32], what[160];

	if (d != SLUICE_NODELAY && d > l->burst)
		return sluice_err(err, errlen, -EINVAL,
				  "%s is more than --burst %u of the %s rate %s: at most the queue "
				  "(--burst) can go at once; to send every accepted packet at once "
				  "use --nodelay",
				  sluice_delay_words(d, dw, sizeof(dw)), l->burst,
				  bytes ? "byte" : "packet", rate);
	snprintf(what, sizeof(what), "the %s rate %s with --burst %u and %s",
		 bytes ? "byte" : "packet", rate, l->burst, sluice_delay_words(d, dw, sizeof(dw)));
	return check_horizon(h, sluice_shape_longest_ns(l, d), what,
			     "lower --burst, raise --delay (or --nodelay)", err, errlen);
}

/*
 * The policy a limit edit asks for, on top of base. For `set`, whatever the
 * command does not give is kept from base, but for the burst and a
 * shaper's delay: a new rate without --burst gets its own default burst,
 * and without --delay the default delay, 0.
 *
 * h is the state the edit is for (NULL: a check with no state); shape says
 * whether it is a shaper's, whose token and leaky buckets take a delay.
 */
/* No rate given: the policy's own, their bursts (and a shaper's delays)
 * where they still mean one, and a --burst or --delay given for them. */
static int inherit_rates(const struct edit *e, const struct sluice_policy *base,
			 struct rate_arg *pkt, struct rate_arg *bytes, char *err, size_t errlen)
{
	/* keep the rates; their bursts (and a shaper's delays) only if
	 * they still mean a burst: the window algorithms hold their
	 * window where the delays are (a union) */
	bool keep_burst = !sluice_algo_is_window(base->algo);

	if (base->pkt.period_ns) {
		pkt->given = true;
		pkt->rate.count = base->pkt.rate;
		pkt->rate.period_ns = base->pkt.period_ns;
		pkt->burst = keep_burst ? base->pkt.burst : 0;
		pkt->burst_given = keep_burst;
		pkt->delay = keep_burst ? base->pkt_delay : 0;
		pkt->delay_given = false;
	}
	if (base->bytes.period_ns) {
		bytes->given = true;
		bytes->rate.count = base->bytes.rate;
		bytes->rate.period_ns = base->bytes.period_ns;
		bytes->rate.is_bytes = true;
		bytes->burst = keep_burst ? base->bytes.burst : 0;
		bytes->burst_given = keep_burst;
		bytes->delay = keep_burst ? base->byte_delay : 0;
		bytes->delay_given = false;
	}
	if (e->burst_given || e->delay_given) {
		struct rate_arg *r = pkt->given ? pkt : bytes;

		if (!r->given)
			return sluice_err(err, errlen, -EINVAL,
					  "%s needs a --rate: the policy has none",
					  e->burst_given ? "--burst" : e->delay_text);
	}
	if (e->burst_size || e->delay_size) {
		struct rate_arg *r = pkt->given ? pkt : bytes;
		char rt[48];

		sluice_format_rate(&base->pkt, false, rt, sizeof(rt));
		if (sluice_edit_size_for_rate("--burst", e->burst_size, r, rt, err, errlen) ||
		    sluice_edit_size_for_rate("--delay", e->delay_size, r, rt, err, errlen))
			return -EINVAL;
	}
	if (e->burst_given) {
		struct rate_arg *r = pkt->given ? pkt : bytes;

		if (r == bytes && e->burst && e->burst < MIN_BYTE_BURST)
			return sluice_err(err, errlen, -EINVAL,
					  "--burst %llu is for the byte rate, and is smaller "
					  "than one full %llu-byte frame: use at least %llu",
					  (unsigned long long)e->burst, MIN_BYTE_BURST,
					  MIN_BYTE_BURST);
		r->burst = e->burst;
		r->burst_given = true;
	}
	if (e->delay_given) {
		struct rate_arg *r = pkt->given ? pkt : bytes;

		r->delay = e->delay;
		r->delay_given = true;
	}
	return 0;
}

/* np as a window algorithm's (algo) from the packet rate and the window. */
static int window_policy(const struct edit *e, int algo, bool inherited, const struct rate_arg *pkt,
			 const struct rate_arg *bytes, __u64 window_ns, struct sluice_policy *np,
			 char *err, size_t errlen)
{
	char inner[SLUICE_ERR_LEN];

	if (bytes->given && inherited)
		return sluice_err(err, errlen, -EINVAL,
				  "%s counts packets, and the policy has a byte rate: give the "
				  "packet rate alone (e.g. --algo %s --rate 100/s)",
				  sluice_algo_name(algo), sluice_algo_name(algo));
	if (bytes->given)
		return sluice_err(err, errlen, -EINVAL,
				  "%s counts packets: a byte rate needs token-bucket or "
				  "leaky-bucket",
				  sluice_algo_name(algo));
	if (!pkt->given)
		return sluice_err(err, errlen, -EINVAL, "%s needs a packet --rate",
				  sluice_algo_name(algo));
	if (sluice_edit_burst_given(e))
		return sluice_err(err, errlen, -EINVAL,
				  "%s has no --burst: it admits the rate's count per --window "
				  "(leave --burst out, or use token-bucket)",
				  sluice_algo_name(algo));
	if (sluice_edit_delay_given(e))
		return sluice_err(err, errlen, -EINVAL,
				  "%s on a shaper is a meter (its excess is dropped, nothing "
				  "waits), so it takes no %s: use token-bucket or leaky-bucket "
				  "to delay",
				  sluice_algo_name(algo), e->delay_text);
	if (!window_ns)
		window_ns = sluice_edit_period_ns(pkt);
	np->window = window_ns << SLUICE_TICK_SHIFT;
	if (sluice_window_set(np, pkt->rate.count, pkt->rate.period_ns, inner, sizeof(inner)))
		return sluice_err(err, errlen, -EINVAL, "%s", inner);
	/* The rate is kept in pkt too, for display and for a later
	 * change of algorithm; the window algorithms never read it. */
	if (sluice_limit_set(&np->pkt, pkt->rate.count, pkt->rate.period_ns, np->window_limit,
			     inner, sizeof(inner)))
		return sluice_err(err, errlen, -EINVAL, "%s", inner);
	memset(&np->bytes, 0, sizeof(np->bytes));
	return 0;
}

/* np as a bucket algorithm's from the rates, their bursts and (shape) a
 * shaper's delays. */
static int bucket_policy(const struct edit *e, int algo, const struct rate_arg *pkt,
			 const struct rate_arg *bytes, const struct sluice_handle *h, bool shape,
			 struct sluice_policy *np, char *err, size_t errlen)
{
	char inner[SLUICE_ERR_LEN];

	if (e->window_ns)
		return sluice_err(err, errlen, -EINVAL,
				  "--window applies to sliding-window, fixed-window and "
				  "sliding-log, not to %s (whose burst is --burst)",
				  sluice_algo_name(algo));
	/* The delays share their place with the window (a union):
	 * each is set here, a limiter's to 0, never left to chance. */
	np->pkt_delay = 0;
	np->byte_delay = 0;
	np->window_limit = 0;
	memset(&np->pkt, 0, sizeof(np->pkt));
	memset(&np->bytes, 0, sizeof(np->bytes));
	if (pkt->given) {
		__u64 b = pkt->burst_given ?
				  pkt->burst :
				  sluice_default_burst(pkt->rate.count, pkt->rate.period_ns);

		if (limit_set(&np->pkt, pkt, b, false, inner, sizeof(inner)))
			return sluice_err(err, errlen, -EINVAL, "packet rate: %s", inner);
	}
	if (bytes->given) {
		__u64 b = bytes->burst;

		if (!bytes->burst_given) {
			b = sluice_default_burst(bytes->rate.count, bytes->rate.period_ns);
			if (b < MIN_BYTE_BURST)
				b = MIN_BYTE_BURST;
		}
		if (limit_set(&np->bytes, bytes, b, true, inner, sizeof(inner)))
			return sluice_err(err, errlen, -EINVAL, "byte rate: %s", inner);
	}
	if (shape) {
		char rt[48];
		int ret;

		if (pkt->given) {
			np->pkt_delay = pkt->delay;
			sluice_format_rate(&np->pkt, false, rt, sizeof(rt));
			ret = check_delay(h, &np->pkt, np->pkt_delay, false, rt, err, errlen);
			if (ret)
				return ret;
		}
		if (bytes->given) {
			np->byte_delay = bytes->delay;
			sluice_format_rate(&np->bytes, true, rt, sizeof(rt));
			ret = check_delay(h, &np->bytes, np->byte_delay, true, rt, err, errlen);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static int build_policy(const struct edit *e, const struct sluice_policy *base,
			const struct sluice_handle *h, bool shape, struct sluice_policy *np,
			char *err, size_t errlen)
{
	struct rate_arg pkt = e->pkt, bytes = e->bytes;
	int algo = e->algo >= 0 ? e->algo : base->algo;
	bool inherited = false;
	char inner[SLUICE_ERR_LEN];
	__u64 window_ns = e->window_ns;
	int ret;

	*np = *base;
	if (!pkt.given && !bytes.given) {
		inherited = true;
		ret = inherit_rates(e, base, &pkt, &bytes, err, errlen);
		if (ret)
			return ret;
	}
	/* A window is kept like any setting: a new rate alone must not move
	 * the window, which would start every source afresh. */
	if (!window_ns && sluice_algo_is_window(base->algo))
		window_ns = base->window >> SLUICE_TICK_SHIFT;

	np->algo = (__u8)algo;
	if (sluice_algo_is_window(algo))
		ret = window_policy(e, algo, inherited, &pkt, &bytes, window_ns, np, err, errlen);
	else
		ret = bucket_policy(e, algo, &pkt, &bytes, h, shape, np, err, errlen);
	if (ret)
		return ret;
	if (e->prefix4 >= 0)
		np->prefix4 = (__u8)e->prefix4;
	if (e->prefix6 >= 0)
		np->prefix6 = (__u8)e->prefix6;
	if (e->penalty_ds >= 0)
		sluice_penalty_set(np, (__u32)e->penalty_ds);
	if (e->key_mode >= 0)
		sluice_policy_set_key_mode(np, (unsigned int)e->key_mode);
	if (e->fleet == 1)
		np->flags |= SLUICE_POLICY_FLEET;
	else if (e->fleet == 0)
		np->flags &= ~SLUICE_POLICY_FLEET;
	/* The fleet flag kept from the policy, not given now: name where it
	 * comes from and how to change it, not an option that was not given. */
	if (e->fleet < 0 && (np->flags & SLUICE_POLICY_FLEET) && sluice_algo_is_window(algo))
		return sluice_err(
			err, errlen, -EINVAL,
			"%s counts within one box, and this policy is fleet-wide (its fleet "
			"flag, set by an earlier --fleet on, is kept): give --fleet off with "
			"it (%s --algo %s --fleet off) to count per box, or keep "
			"token-bucket or leaky-bucket to share the limit",
			sluice_algo_name(algo), e->op == EDIT_SET ? "set" : "rule add CIDR",
			sluice_algo_name(algo));
	if (sluice_policy_check(np, inner, sizeof(inner)))
		return sluice_err(err, errlen, -EINVAL, "%s", inner);
	return 0;
}

/*
 * The second key an edit asks for, on top of ba (the policy's until now;
 * NULL: none), for np, the policy just built (family: a rule's; 0 for the
 * default policy, which keys both). 1 with *out, 0: none, <0 a refusal. A
 * second key is first given with --also-rate; its prefixes default to /24
 * and /48, its burst as --rate's does.
 */
static int build_also(const struct edit *e, const struct sluice_policy *np,
		      const struct sluice_also *ba, int family, struct sluice_also *out, char *err,
		      size_t errlen)
{
	char inner[SLUICE_ERR_LEN];
	struct sluice_also a;

	if (e->also_off)
		return 0;
	if (ba) {
		a = *ba;
	} else {
		memset(&a, 0, sizeof(a));
		a.prefix4 = SLUICE_ALSO_DEFAULT_PREFIX4;
		a.prefix6 = SLUICE_ALSO_DEFAULT_PREFIX6;
	}
	if (!sluice_edit_also_given(e) && !ba)
		return 0;
	if (e->also_prefix >= 0) {
		if (family == 6)
			a.prefix6 = (__u8)e->also_prefix;
		else
			a.prefix4 = (__u8)e->also_prefix;
	}
	if (e->also_prefix4 >= 0)
		a.prefix4 = (__u8)e->also_prefix4;
	if (e->also_prefix6 >= 0)
		a.prefix6 = (__u8)e->also_prefix6;
	if (e->also.given) {
		__u64 b = e->also.burst_given ?
				  e->also.burst :
				  sluice_default_burst(e->also.rate.count, e->also.rate.period_ns);

		if (sluice_limit_set(&a.pkt, e->also.rate.count, e->also.rate.period_ns, b, inner,
				     sizeof(inner)))
			return sluice_err(err, errlen, -EINVAL, "--also-rate %s: %s", e->also.text,
					  inner);
	} else if (!ba) {
		return sluice_err(err, errlen, -EINVAL,
				  "%s needs --also-rate: the policy has no second key yet "
				  "(e.g. --also-rate 1000/s --also-prefix4 24)",
				  e->also.burst_given ? "--also-burst" : "--also-prefix");
	} else if (e->also.burst_given && sluice_limit_set(&a.pkt, a.pkt.rate, a.pkt.period_ns,
							   e->also.burst, inner, sizeof(inner))) {
		return sluice_err(err, errlen, -EINVAL, "--also-burst %llu: %s",
				  (unsigned long long)e->also.burst, inner);
	}
	if (np->action != SLUICE_ACT_LIMIT || np->algo > SLUICE_ALGO_LEAKY_BUCKET)
		return sluice_err(err, errlen, -EINVAL,
				  "a second key (--also-rate) gives a packet's charge back when it "
				  "refuses it, which only token-bucket and leaky-bucket do: not "
				  "%s%s",
				  np->action != SLUICE_ACT_LIMIT ? sluice_action_name(np->action) :
								   sluice_algo_name(np->algo),
				  ba && !sluice_edit_also_given(e) ?
					  " (the policy's second key is kept: give --also-rate "
					  "off with it to remove it)" :
					  "");
	if (family != 6 && a.prefix4 >= np->prefix4)
		return sluice_err(err, errlen, -EINVAL,
				  "the second key's IPv4 prefix /%u is not shorter than the key's "
				  "own /%u: it would charge each source twice; give "
				  "--also-prefix4 below %u",
				  a.prefix4, np->prefix4, np->prefix4);
	if (family != 4 && a.prefix6 >= np->prefix6)
		return sluice_err(err, errlen, -EINVAL,
				  "the second key's IPv6 prefix /%u is not shorter than the key's "
				  "own /%u: it would charge each source twice; give "
				  "--also-prefix6 below %u",
				  a.prefix6, np->prefix6, np->prefix6);
	*out = a;
	return 1;
}

/* np's second key (build_also()) given an index of t's table (t NULL: a
 * check alone). */
static int put_also(struct sluice_txn *t, const struct edit *e, struct sluice_policy *np,
		    const struct sluice_also *ba, int family, char *err, size_t errlen)
{
	struct sluice_also a;
	int ret = build_also(e, np, ba, family, &a, err, errlen);
	const struct sluice_handle *h = t ? t->h : NULL;

	if (ret < 0 || !t)
		return ret < 0 ? ret : 0;
	if (ret && h && h->cfg && (h->cfg->kind & SLUICE_KIND_SHAPE)) {
		char what[64];
		int hr;

		if (SLUICE_POLICY_KEY(np) != SLUICE_KEY_SRC)
			return sluice_err(
				err, errlen, -EINVAL,
				"a shaper's second key (--also-rate) is for a policy keyed "
				"by the source (--key src): sluice_tc with both would pass "
				"what 6.1's verifier checks; a limiter takes both");
		/* A packet may wait the prefix's whole queue, which no --delay
		 * shortens: within the horizon as a policy's own queue. */
		snprintf(what, sizeof(what), "the second key's --also-burst %u", a.pkt.burst);
		hr = check_horizon(h, sluice_shape_longest_ns(&a.pkt, 0), what,
				   "lower --also-burst", err, errlen);
		if (hr)
			return hr;
	}
	return sluice_txn_also_put(t, ret ? &a : NULL, np, err, errlen);
}

/* A rule's policy: a fresh one, keyed like the default policy unless --prefix. */
static int build_rule_policy(const struct edit *e, const struct sluice_policy *def,
			     const struct sluice_handle *h, bool shape, struct sluice_policy *np,
			     char *err, size_t errlen)
{
	struct sluice_policy base;
	char inner[SLUICE_ERR_LEN];
	int ret;

	memset(&base, 0, sizeof(base));
	base.algo = SLUICE_ALGO_TOKEN_BUCKET;
	base.prefix4 = def->prefix4;
	base.prefix6 = def->prefix6;
	if (e->prefix >= 0) {
		if (e->cidr.family == 4)
			base.prefix4 = (__u8)e->prefix;
		else
			base.prefix6 = (__u8)e->prefix;
	}
	if (e->action >= 0) {
		*np = base;
		np->action = (__u8)e->action;
	} else {
		base.action = SLUICE_ACT_LIMIT;
		ret = build_policy(e, &base, h, shape, np, err, errlen);
		if (ret)
			return ret;
	}
	if (e->dry_run > 0)
		np->flags |= SLUICE_POLICY_DRY_RUN;
	if (sluice_policy_check(np, inner, sizeof(inner)))
		return sluice_err(err, errlen, -EINVAL, "%s", inner);
	return 0;
}

_Static_assert((int)SLUICE_CMD_SET == EDIT_SET && (int)SLUICE_CMD_RULE_ADD == EDIT_RULE_ADD &&
		       (int)SLUICE_CMD_RULE_DEL == EDIT_RULE_DEL &&
		       (int)SLUICE_CMD_RULE_FLUSH == EDIT_RULE_FLUSH,
	       "sluice_cmd_op names the edit ops");

/* Which of the edit's rates took the default burst (no --burst after it). */
static void burst_defaults(const struct edit *e, struct sluice_cmd_done *d)
{
	d->burst_default[0] = e->pkt.given && !e->pkt.burst_given;
	d->burst_default[1] = e->bytes.given && !e->bytes.burst_given;
}

/*
 * A shaper keyed by destination (sluice shape attach --key dst) keys by the
 * destination where a limiter keys by the source: a flow key would hold the
 * destination twice and the source nowhere, which is no flow. src,dport is
 * the destination's service there, and taken.
 */
static int check_key_kind(const struct sluice_handle *h, const struct edit *e, char *err,
			  size_t errlen)
{
	/* (a handle with no key table, a test's scratch one, has no say) */
	if (e->key_mode > SLUICE_KEY_SRC && h && (h->keys.flows_fd >= 0 || h->keys.setsf_fd >= 0) &&
	    !sluice_keytab_wide_on(&h->keys))
		return sluice_err(err, errlen, -EINVAL,
				  "--key %s: wide keys are off on %s; attach again with "
				  "--max-flows N (an upgrade in place: every key and rule is "
				  "kept), then give the policy its key",
				  e->key_mode == SLUICE_KEY_FLOW ? "flow" : "src,dport", h->name);
	if (e->key_mode != SLUICE_KEY_FLOW || !h || !h->cfg ||
	    !(h->cfg->kind & SLUICE_KIND_KEY_DST))
		return 0;
	return sluice_err(err, errlen, -EINVAL,
			  "--key flow on a shaper keyed by destination (sluice shape attach "
			  "--key dst): its keys are destinations, and a flow needs the source; "
			  "use --key src or src,dport");
}

static int apply_edit(struct sluice_txn *t, const struct edit *e, struct sluice_cmd_done *d,
		      char *err, size_t errlen)
{
	bool shape = sluice_edit_is_shaper(t->h);
	struct sluice_txn_rule *old;
	struct sluice_policy np;
	__u32 old_tag;
	int ret;

	ret = sluice_edit_check_kind(e, shape ? EDIT_FOR_SHAPER : EDIT_FOR_LIMITER, err, errlen);
	if (!ret)
		ret = check_key_kind(t->h, e, err, errlen);
	if (ret)
		return ret;
	memset(d, 0, sizeof(*d));
	d->op = (enum sluice_cmd_op)e->op;
	d->cidr = e->cidr;
	d->has_match = e->has_match;
	if (e->has_match)
		d->match = e->match.m;
	burst_defaults(e, d);
	switch (e->op) {
	case EDIT_SET:
		d->buckets_kept = true;
		d->settings_given = e->dry_run >= 0 || e->fail_closed >= 0 || e->new_keys_given;
		if (e->nr_policy_opts) {
			const struct sluice_also *ba = sluice_txn_also_of(t, &t->set.def);

			ret = build_policy(e, &t->set.def, t->h, shape, &np, err, errlen);
			if (!ret)
				ret = put_also(t, e, &np, ba, 0, err, errlen);
			if (ret)
				return ret;
			/* New state format: fresh, full buckets rather than old
			 * state read the wrong way. A rate or burst change keeps
			 * every bucket (GCRA state stays meaningful). */
			if (!sluice_txn_same_format(t, &t->set.def, &np)) {
				sluice_txn_retag(t, &np);
				d->buckets_kept = false;
			}
			t->set.def = np;
			d->policy_changed = true;
		}
		if (e->dry_run == 1)
			t->set.flags |= SLUICE_DRY_RUN;
		else if (e->dry_run == 0)
			t->set.flags &= ~SLUICE_DRY_RUN;
		if (e->fail_closed == 1)
			t->set.flags |= SLUICE_FAIL_CLOSED;
		else if (e->fail_closed == 0)
			t->set.flags &= ~SLUICE_FAIL_CLOSED;
		if (e->new_keys_off) {
			memset(&t->set.new_keys, 0, sizeof(t->set.new_keys));
		} else if (e->new_keys_given) {
			struct sluice_limit l;

			/* One second's worth at once, as `sluice attach --new-keys` */
			ret = sluice_limit_set(&l, e->new_keys.count, e->new_keys.period_ns,
					       sluice_default_burst(e->new_keys.count,
								    e->new_keys.period_ns),
					       err, errlen);
			if (ret)
				return ret;
			t->set.new_keys = l;
		}
		return 0;
	case EDIT_RULE_ADD:
		ret = build_rule_policy(e, &t->set.def, t->h, shape, &np, err, errlen);
		if (!ret)
			ret = put_also(t, e, &np, NULL, e->cidr.family, err, errlen);
		if (ret)
			return ret;
		if (e->has_match) {
			struct sluice_txn_l4 *o = sluice_txn_find_l4(t, &e->cidr, &e->match.m);

			d->replaced = o != NULL;
			old_tag = o ? o->policy.tag : 0;
			ret = sluice_txn_put_l4(t, &e->cidr, &e->match.m, &np, err, errlen);
			o = ret ? NULL : sluice_txn_find_l4(t, &e->cidr, &e->match.m);
			d->buckets_kept = d->replaced && o && o->policy.tag == old_tag;
			return ret == -ERANGE ? -EINVAL : ret;
		}
		old = sluice_txn_find_rule(t, &e->cidr);
		d->replaced = old != NULL;
		old_tag = old ? old->rule.policy.tag : 0;
		ret = sluice_txn_put_rule(t, &e->cidr, &np, err, errlen);
		if (!ret && d->replaced) {
			old = sluice_txn_find_rule(t, &e->cidr);
			d->buckets_kept = old && old->rule.policy.tag == old_tag;
		}
		/* policy_check already passed: what is left is runtime */
		return ret == -ERANGE ? -EINVAL : ret;
	case EDIT_RULE_DEL:
		/* A CIDR with no rule is a condition of the live state, not a
		 * mistake in what was written (exit status 1, -ENOENT), from
		 * every caller alike. */
		if (e->has_match)
			return sluice_txn_del_l4(t, &e->cidr, &e->match.m, err, errlen);
		return sluice_txn_del_rule(t, &e->cidr, err, errlen);
	case EDIT_RULE_FLUSH:
		sluice_txn_flush_rules(t);
		return 0;
	}
	return -EINVAL;
}

int sluice_cmd_edit_done(struct sluice_txn *t, int argc, char **argv, struct sluice_cmd_done *done,
			 char *err, size_t errlen)
{
	struct sluice_cmd_done scratch;
	struct edit e;
	int ret;

	ret = sluice_edit_parse(argc, argv, &e, err, errlen);
	if (ret)
		return ret;
	return apply_edit(t, &e, done ? done : &scratch, err, errlen);
}

int sluice_cmd_edit(struct sluice_txn *t, int argc, char **argv, char *err, size_t errlen)
{
	return sluice_cmd_edit_done(t, argc, argv, NULL, err, errlen);
}

bool sluice_cmd_file_err_is_usage(int ret)
{
	switch (ret) {
	case -EINVAL:
	case -ENOENT:
	case -ENOTDIR:
	case -EISDIR:
	case -EACCES:
	case -EPERM:
	case -ELOOP:
	case -ENAMETOOLONG:
	case -ENXIO:
		return true;
	}
	return false;
}

int sluice_cmd_check_for(int argc, char **argv, enum edit_kind kind, char *err, size_t errlen)
{
	struct sluice_settings s;
	struct sluice_policy np;
	struct edit e;
	bool shape;
	int ret;

	ret = sluice_edit_parse(argc, argv, &e, err, errlen);
	if (!ret)
		ret = sluice_edit_check_kind(&e, kind, err, errlen);
	if (ret)
		return ret;
	/* Without a state, a command with a shaper's option is a shaper's. */
	shape = kind == EDIT_FOR_SHAPER || kind == EDIT_FOR_EITHER ||
		(kind == EDIT_FOR_ANY && sluice_edit_delay_given(&e));
	sluice_settings_init(&s);
	if (e.op == EDIT_RULE_ADD) {
		ret = build_rule_policy(&e, &s.def, NULL, shape, &np, err, errlen);
		return ret ? ret : put_also(NULL, &e, &np, NULL, e.cidr.family, err, errlen);
	}
	/* A set that gives both the algorithm and the rate does not depend
	 * on the live policy: check it whole. But for a window algorithm
	 * without --window: the live window is kept, and how many packets a
	 * window holds is only known against it (sluice_cmd_edit). */
	if (e.op == EDIT_SET && e.algo >= 0 && (e.pkt.given || e.bytes.given) &&
	    (e.window_ns || !sluice_algo_is_window(e.algo))) {
		ret = build_policy(&e, &s.def, NULL, shape, &np, err, errlen);
		/* with --also-rate: the second key against that policy */
		if (!ret && e.also.given)
			ret = put_also(NULL, &e, &np, NULL, 0, err, errlen);
		return ret;
	}
	return 0;
}

int sluice_cmd_check(int argc, char **argv, char *err, size_t errlen)
{
	return sluice_cmd_check_for(argc, argv, EDIT_FOR_ANY, err, errlen);
}

int sluice_cmd_check_kind(int argc, char **argv, bool shape, char *err, size_t errlen)
{
	return sluice_cmd_check_for(argc, argv, shape ? EDIT_FOR_SHAPER : EDIT_FOR_LIMITER, err,
				    errlen);
}
