// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * How the fleet agent folds a key's fleet-wide debt into this box's bucket
 * (user/sluice/fleet.c): the debt Redis answers is the fleet bucket's, whose
 * tolerance is the whole burst, while a box's bucket holds burst/N of it. A
 * box that took the whole debt would leave the fleet burst/N, not one burst
 * (issue 20, B7); one that took none of it before the fleet's burst was gone
 * would let N boxes spend the room the fleet has left N times over. So each
 * box takes its share of that room, and once the burst is gone the whole
 * debt beyond it (sluice_fold_debt()).
 *
 * The tolerances come from the policies, by tag (a key's tag names the
 * policy it was admitted under), read again whenever the settings change.
 * A policy's second key (--also-rate) is a limit of its own on keys of
 * their own, tagged SLUICE_ALSO_TAG() of the policy's: its tolerance is
 * the second key's, and the fold and the threshold hold it as they hold
 * the policy's own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/algo.h>

#include "libsluice.h"

struct sluice_fleet_tol {
	__u32 tag;
	__u64 tol[2]; /* ticks: [0] packets, [1] bytes; 0: no such limit */
	__u64 cost; /* ticks of one packet */
};

__u64 sluice_fold_debt(__u64 d, __u64 tol, __u64 lt)
{
	if (!tol || lt >= tol)
		return d;
	if (d > tol)
		return d - (tol - lt);
	return (__u64)(((unsigned __int128)d * lt + tol - 1) / tol);
}

static int cmp_tag(const void *x, const void *y)
{
	const struct sluice_fleet_tol *a = x, *b = y;

	return a->tag < b->tag ? -1 : a->tag > b->tag;
}

/* The tolerance of limit l in t (none: l has no interval). */
static void tol_set(struct sluice_fleet_tol *t, int lane, const struct sluice_limit *l)
{
	if (!(l->interval | l->interval_frac))
		return;
	t->tol[lane] = l->tolerance;
	if (!lane)
		t->cost = sluice_limit_cost(l, 1);
}

int sluice_fleet_tols_set(struct sluice_fleet_tols *t, const struct sluice_policies *pol)
{
	struct sluice_fleet_tol *v;
	size_t i, n = 0;

	/* Two a policy at most: its own key's, its second key's. */
	v = calloc(2 * (pol->nr_rules + 1 + pol->nr_l4), sizeof(*v));
	if (!v)
		return -ENOMEM;
	/* the rules of a CIDR alone, the default, the rules on L4 */
	for (i = 0; i <= pol->nr_rules + pol->nr_l4; i++) {
		const struct sluice_policy *p =
			i < pol->nr_rules  ? &pol->rules[i].rule.policy :
			i == pol->nr_rules ? &pol->set.def :
					     &pol->l4[i - pol->nr_rules - 1].policy;
		__u32 id = SLUICE_POLICY_ALSO(p);

		if (!(p->flags & SLUICE_POLICY_FLEET) || p->algo > SLUICE_ALGO_LEAKY_BUCKET)
			continue;
		v[n].tag = p->tag;
		tol_set(&v[n], 0, &p->pkt);
		tol_set(&v[n], 1, &p->bytes);
		n++;
		/* The second key's keys (tagged SLUICE_ALSO_TAG()) are shared
		 * as the policy's own are (bpf/sluice.bpf.c): the same share
		 * of their one limit, of packets only. */
		if (!id || id >= SLUICE_ALSO_IDS)
			continue;
		v[n].tag = SLUICE_ALSO_TAG(p->tag);
		tol_set(&v[n], 0, &pol->also[id].pkt);
		n += v[n].tol[0] != 0;
	}
	qsort(v, n, sizeof(*v), cmp_tag);
	free(t->v);
	t->v = v;
	t->n = n;
	return 0;
}

void sluice_fleet_tols_refresh(struct sluice_fleet_tols *t, struct sluice_handle *h)
{
	struct sluice_policies pol;
	struct sluice_settings set;
	__u64 seq;
	int ret;

	sluice_read_settings(h, &set, &seq);
	if (t->read && seq == t->seq)
		return;
	if (sluice_read_policies(h, &pol, false, NULL, 0))
		return;
	ret = sluice_fleet_tols_set(t, &pol);
	sluice_free_policies(&pol);
	if (ret)
		return;
	/* The version read before the policies: if they changed meanwhile,
	 * the next call reads them again. */
	t->seq = seq;
	t->read = true;
}

void sluice_fleet_tols_free(struct sluice_fleet_tols *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static const struct sluice_fleet_tol *tol_of(const struct sluice_fleet_tols *t,
					     const struct sluice_key *k)
{
	struct sluice_fleet_tol want = { .tag = k->tag };

	return t->n ? bsearch(&want, t->v, t->n, sizeof(want), cmp_tag) : NULL;
}

/* The box's share as the datapath's (sluice_share_tolerance(): the whole
 * rate, 1/n of the burst, at least one unit). A byte limit's least share is
 * one packet's bytes, which only a burst of a few packets a box reaches:
 * the fold is then short by less than one. */
static __u64 share_of(const struct sluice_fleet_tol *p, int lane, __u32 n)
{
	return lane ? sluice_share_tolerance(p->tol[1], 0, 1, n) :
		      sluice_share_tolerance(p->tol[0], p->cost, 1, n);
}

__u64 sluice_fleet_fold(const struct sluice_fleet_tols *t, const struct sluice_key *k, int lane,
			__u32 n, __u64 debt)
{
	const struct sluice_fleet_tol *p = tol_of(t, k);

	if (!p || !p->tol[lane & 1])
		return debt;
	return sluice_fold_debt(debt, p->tol[lane & 1], share_of(p, lane & 1, n));
}

__u64 sluice_fleet_share_tol(const struct sluice_fleet_tols *t, const struct sluice_key *k,
			     int lane, __u32 n)
{
	const struct sluice_fleet_tol *p = tol_of(t, k);

	if (!p || !p->tol[lane & 1])
		return 0;
	return share_of(p, lane & 1, n);
}
