// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The most debt Redis can rightly answer for a fleet key: see fleetbound.h.
 *
 * Why debt <= n x (w + S + 2 T). Redis's TAT for a key moves only by the
 * usage the boxes push, and the debt (TAT - now) falls as time passes. A
 * box's agent collects its usage every interval (S, or a sync's length
 * when one runs longer, at most T), pushes it, and within T of the collect
 * folds the debt Redis answers into the local bucket (TAT = max(TAT, now +
 * debt)). Its datapath admits only while the bucket stays within its
 * share's tolerance of now, at most w ahead, so a box that has folded a
 * debt D admits nothing until D has drained to w. Take the debt where it
 * peaks, at some push: every usage in it that no box had folded yet was
 * admitted after that box's last apply, which came at most one gap between
 * collects (at most S + T) and one sync (T) before, and its bucket let
 * through at most w + S + 2 T in that time; what the boxes had folded
 * before has drained to w or less. So the debt is at most n x (w + S + 2 T).
 * With every box on the same N their shares of the burst add up to one
 * tolerance, and the debt stays under tolerance + n x (S + 2 T); w is one
 * box's share taken the widest way, since a box that does not know N yet
 * holds the whole burst.
 *
 * n is the most boxes the agent has seen Redis count, never fewer than
 * --fleet-size (user/sluice/fleet.c). A box whose agent stalls longer than
 * S + T (stopped, starved of CPU) pushes more than this once; what the
 * bound cuts of it is not charged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/algo.h>

#include "libsluice.h"
#include "fleetbound.h"

/* The largest unit a packet can cost a limit: a 64 KB packet's bytes; one
 * packet at XDP, a 64-segment GSO packet at a shaper (tc). */
#define UNIT_BYTES 65535
#define UNIT_PKTS_SHAPE 64
#define TICKS_PER_US (1000ULL << SLUICE_TICK_SHIFT)

struct sluice_fleet_bound {
	bool read; /* the policies were read once */
	bool shape; /* of a shaper's state: GSO packets */
	__u64 seq; /* of the settings they were read at */
	__u32 tag[SLUICE_MAX_RULES]; /* the fleet policy of each slot; 0: none */
	__u64 w[SLUICE_MAX_RULES][2];
	__u64 also_w[SLUICE_MAX_RULES]; /* its second key's packets; 0: none */
	__u64 widest[2];
};

__u64 sluice_fleet_debt_bound_us(__u64 w_ticks, __u32 n, __u64 sync_ns, __u64 timeout_ns)
{
	unsigned __int128 per_box, b;

	if (!n)
		n = 1;
	per_box = (unsigned __int128)w_ticks +
		  (((unsigned __int128)sync_ns + 2 * timeout_ns) << SLUICE_TICK_SHIFT);
	b = (per_box * n + TICKS_PER_US - 1) / TICKS_PER_US;
	/* in ticks again (x TICKS_PER_US), still at most SLUICE_MAX_TOLERANCE */
	if (b > SLUICE_MAX_TOLERANCE / TICKS_PER_US)
		b = SLUICE_MAX_TOLERANCE / TICKS_PER_US;
	return b ? (__u64)b : 1;
}

int sluice_fleet_bound_new(struct sluice_fleet_bound **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void sluice_fleet_bound_free(struct sluice_fleet_bound *b)
{
	free(b);
}

static __u64 limit_w(const struct sluice_limit *l, __u64 unit)
{
	__u64 c;

	if (!(l->interval | l->interval_frac))
		return 0;
	c = sluice_limit_cost_wide(l, unit);
	return l->tolerance > c ? l->tolerance : c;
}

void sluice_fleet_bound_set(struct sluice_fleet_bound *b, const struct sluice_policy *p,
			    const struct sluice_also *al)
{
	__u32 slot = SLUICE_TAG_SLOT(p->tag) & (SLUICE_MAX_RULES - 1);
	__u64 unit = b->shape ? UNIT_PKTS_SHAPE : 1;
	int j;

	if (!(p->flags & SLUICE_POLICY_FLEET) || p->action != SLUICE_ACT_LIMIT ||
	    p->algo > SLUICE_ALGO_LEAKY_BUCKET)
		return;
	b->tag[slot] = p->tag;
	b->w[slot][0] = limit_w(&p->pkt, unit);
	b->w[slot][1] = limit_w(&p->bytes, UNIT_BYTES);
	/* A second key's keys are shared as the policy's own (their share
	 * of the second key's limit, at most w ahead of now on each box), so
	 * the same bound holds them with the second key's w. */
	b->also_w[slot] = al ? limit_w(&al->pkt, unit) : 0;
	for (j = 0; j < 2; j++)
		if (b->w[slot][j] > b->widest[j])
			b->widest[j] = b->w[slot][j];
	/* The widest is for a key of a tag no current policy has (its policy
	 * changed since it was collected): it may be a second key's as well
	 * as a policy's own, so the widest holds the second keys' too. */
	if (b->also_w[slot] > b->widest[0])
		b->widest[0] = b->also_w[slot];
}

int sluice_fleet_bound_refresh(struct sluice_fleet_bound *b, struct sluice_handle *h)
{
	struct sluice_policies pol;
	__u64 seq;
	int ret;

	if (b->read && !sluice_settings_changed(h, b->seq))
		return 0;
	/* The seq first: a change while the policies are read is read again
	 * at the next refresh. */
	sluice_read_settings(h, &pol.set, &seq);
	ret = sluice_read_policies(h, &pol, false, NULL, 0);
	if (ret)
		return ret;
	sluice_fleet_bound_set_all(b, &pol, h->cfg->kind & SLUICE_KIND_SHAPE);
	b->read = true;
	b->seq = seq;
	sluice_free_policies(&pol);
	return 0;
}

void sluice_fleet_bound_set_all(struct sluice_fleet_bound *b, const struct sluice_policies *pol,
				bool shape)
{
	size_t i;

	memset(b, 0, sizeof(*b));
	b->shape = shape;
	/* the rules of a CIDR alone, the default, the rules on L4 */
	for (i = 0; i <= pol->nr_rules + pol->nr_l4; i++) {
		const struct sluice_policy *p =
			i < pol->nr_rules  ? &pol->rules[i].rule.policy :
			i == pol->nr_rules ? &pol->set.def :
					     &pol->l4[i - pol->nr_rules - 1].policy;
		__u32 id = SLUICE_POLICY_ALSO(p);

		sluice_fleet_bound_set(b, p, id && id < SLUICE_ALSO_IDS ? &pol->also[id] : NULL);
	}
}

__u64 sluice_fleet_bound_w(const struct sluice_fleet_bound *b, const struct sluice_key *k, int lane)
{
	__u32 slot = SLUICE_TAG_SLOT(k->tag) & (SLUICE_MAX_RULES - 1);

	lane = lane ? 1 : 0;
	/* A second key's: of packets only (no byte limit: the widest). */
	if (SLUICE_TAG_IS_ALSO(k->tag)) {
		if (b->tag[slot] && SLUICE_ALSO_TAG(b->tag[slot]) == k->tag && !lane &&
		    b->also_w[slot])
			return b->also_w[slot];
		return b->widest[lane];
	}
	if (b->tag[slot] && b->tag[slot] == (k->tag & ~SLUICE_TAG_AGGREGATE) && b->w[slot][lane])
		return b->w[slot][lane];
	return b->widest[lane];
}
