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

/*
 * The policy a limit edit asks for, on top of base. For `set`, whatever the
 * command does not give is kept from base, but for the burst: a new rate
 * without --burst gets its own default burst.
 */
static int build_policy(const struct edit *e, const struct sluice_policy *base,
			struct sluice_policy *np, char *err, size_t errlen)
{
	struct rate_arg pkt = e->pkt, bytes = e->bytes;
	int algo = e->algo >= 0 ? e->algo : base->algo;
	bool inherited = false;
	char inner[SLUICE_ERR_LEN];
	__u64 window_ns = e->window_ns;

	*np = *base;
	if (!pkt.given && !bytes.given) {
		/* keep the rates; their bursts only if they still mean a burst */
		bool keep_burst = !sluice_algo_is_window(base->algo);

		inherited = true;
		if (base->pkt.period_ns) {
			pkt.given = true;
			pkt.rate.count = base->pkt.rate;
			pkt.rate.period_ns = base->pkt.period_ns;
			pkt.burst = keep_burst ? base->pkt.burst : 0;
		}
		if (base->bytes.period_ns) {
			bytes.given = true;
			bytes.rate.count = base->bytes.rate;
			bytes.rate.period_ns = base->bytes.period_ns;
			bytes.rate.is_bytes = true;
			bytes.burst = keep_burst ? base->bytes.burst : 0;
		}
		if (e->burst) {
			struct rate_arg *r = pkt.given ? &pkt : &bytes;

			if (!r->given)
				return usage(err, errlen,
					     "--burst needs a --rate: the policy has none");
			if (r == &bytes && e->burst < MIN_BYTE_BURST)
				return usage(err, errlen,
					     "--burst %llu is for the byte rate, and is smaller "
					     "than one full %llu-byte frame: use at least %llu",
					     (unsigned long long)e->burst, MIN_BYTE_BURST,
					     MIN_BYTE_BURST);
			r->burst = e->burst;
		}
	}
	/* A window is kept like any setting: a new rate alone must not move
	 * the window, which would start every source afresh. */
	if (!window_ns && sluice_algo_is_window(base->algo))
		window_ns = base->window >> SLUICE_TICK_SHIFT;

	np->algo = (__u8)algo;
	if (sluice_algo_is_window(algo)) {
		if (bytes.given && inherited)
			return usage(err, errlen,
				     "%s counts packets, and the policy has a byte rate: give the "
				     "packet rate alone (e.g. --algo %s --rate 100/s)",
				     sluice_algo_name(algo), sluice_algo_name(algo));
		if (bytes.given)
			return usage(err, errlen,
				     "%s counts packets: a byte rate needs token-bucket or "
				     "leaky-bucket", sluice_algo_name(algo));
		if (!pkt.given)
			return usage(err, errlen, "%s needs a packet --rate",
				     sluice_algo_name(algo));
		if (sluice_edit_burst_given(e))
			return usage(err, errlen,
				     "%s has no --burst: it admits the rate's count per --window "
				     "(leave --burst out, or use token-bucket)",
				     sluice_algo_name(algo));
		if (!window_ns)
			window_ns = sluice_edit_period_ns(&pkt);
		np->window = window_ns << SLUICE_TICK_SHIFT;
		if (sluice_window_set(np, pkt.rate.count, pkt.rate.period_ns, inner,
				      sizeof(inner)))
			return usage(err, errlen, "%s", inner);
		/* The rate is kept in pkt too, for display and for a later
		 * change of algorithm; the window algorithms never read it. */
		if (sluice_limit_set(&np->pkt, pkt.rate.count, pkt.rate.period_ns,
				     np->window_limit, inner, sizeof(inner)))
			return usage(err, errlen, "%s", inner);
		memset(&np->bytes, 0, sizeof(np->bytes));
	} else {
		if (e->window_ns)
			return usage(err, errlen,
				     "--window applies to sliding-window, fixed-window and "
				     "sliding-log, not to %s (whose burst is --burst)",
				     sluice_algo_name(algo));
		np->window = 0;
		np->window_limit = 0;
		memset(&np->pkt, 0, sizeof(np->pkt));
		memset(&np->bytes, 0, sizeof(np->bytes));
		if (pkt.given) {
			__u64 b = pkt.burst ?: sluice_default_burst(pkt.rate.count,
								    pkt.rate.period_ns);

			if (sluice_limit_set(&np->pkt, pkt.rate.count, pkt.rate.period_ns, b,
					     inner, sizeof(inner)))
				return usage(err, errlen, "packet rate: %s", inner);
		}
		if (bytes.given) {
			__u64 b = bytes.burst;

			if (!b) {
				b = sluice_default_burst(bytes.rate.count, bytes.rate.period_ns);
				if (b < MIN_BYTE_BURST)
					b = MIN_BYTE_BURST;
			}
			if (sluice_limit_set_bytes(&np->bytes, bytes.rate.count,
						   bytes.rate.period_ns, b, inner, sizeof(inner)))
				return usage(err, errlen, "byte rate: %s", inner);
		}
	}
	if (e->prefix4 >= 0)
		np->prefix4 = (__u8)e->prefix4;
	if (e->prefix6 >= 0)
		np->prefix6 = (__u8)e->prefix6;
	if (e->fleet == 1)
		np->flags |= SLUICE_POLICY_FLEET;
	else if (e->fleet == 0)
		np->flags &= ~SLUICE_POLICY_FLEET;
	if (sluice_policy_check(np, inner, sizeof(inner)))
		return usage(err, errlen, "%s", inner);
	return 0;
}

/* A rule's policy: a fresh one, keyed like the default policy unless --prefix. */
static int build_rule_policy(const struct edit *e, const struct sluice_policy *def,
			     struct sluice_policy *np, char *err, size_t errlen)
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
		ret = build_policy(e, &base, np, err, errlen);
		if (ret)
			return ret;
	}
	if (e->dry_run > 0)
		np->flags |= SLUICE_POLICY_DRY_RUN;
	if (sluice_policy_check(np, inner, sizeof(inner)))
		return usage(err, errlen, "%s", inner);
	return 0;
}


static int apply_edit(struct sluice_txn *t, const struct edit *e, char *err, size_t errlen)
{
	struct sluice_policy np;
	int ret;

	switch (e->op) {
	case EDIT_SET:
		if (e->nr_policy_opts) {
			ret = build_policy(e, &t->set.def, &np, err, errlen);
			if (ret)
				return ret;
			/* New state format: fresh, full buckets rather than old
			 * state read the wrong way. A rate or burst change keeps
			 * every bucket (GCRA state stays meaningful). */
			if (!sluice_same_state_format(&t->set.def, &np))
				sluice_txn_retag(t, &np);
			t->set.def = np;
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
		ret = build_rule_policy(e, &t->set.def, &np, err, errlen);
		if (ret)
			return ret;
		ret = sluice_txn_put_rule(t, &e->cidr, &np, err, errlen);
		/* policy_check already passed: what is left is runtime */
		return ret == -ERANGE ? -EINVAL : ret;
	case EDIT_RULE_DEL:
		/* A CIDR with no rule is a mistake in what was written, like a
		 * bad value (exit status 2), from every caller alike. */
		ret = sluice_txn_del_rule(t, &e->cidr, err, errlen);
		return ret == -ENOENT ? -EINVAL : ret;
	case EDIT_RULE_FLUSH:
		if (t->nr_rules)
			t->rules_changed = true;
		t->nr_rules = 0;
		return 0;
	}
	return -EINVAL;
}

int sluice_cmd_edit(struct sluice_txn *t, int argc, char **argv, char *err, size_t errlen)
{
	struct edit e;
	int ret;

	ret = sluice_edit_parse(argc, argv, &e, err, errlen);
	if (ret)
		return ret;
	return apply_edit(t, &e, err, errlen);
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

int sluice_cmd_check(int argc, char **argv, char *err, size_t errlen)
{
	struct sluice_settings s;
	struct sluice_policy np;
	struct edit e;
	int ret;

	ret = sluice_edit_parse(argc, argv, &e, err, errlen);
	if (ret)
		return ret;
	sluice_settings_init(&s);
	if (e.op == EDIT_RULE_ADD)
		return build_rule_policy(&e, &s.def, &np, err, errlen);
	/* A set that gives both the algorithm and the rate does not depend
	 * on the live policy: check it whole. But for a window algorithm
	 * without --window: the live window is kept, and how many packets a
	 * window holds is only known against it (sluice_cmd_edit). */
	if (e.op == EDIT_SET && e.algo >= 0 && (e.pkt.given || e.bytes.given) &&
	    (e.window_ns || !sluice_algo_is_window(e.algo)))
		return build_policy(&e, &s.def, &np, err, errlen);
	return 0;
}
