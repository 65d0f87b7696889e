// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl show ADDR|KEY: the policy of one source (or of one key, as top
 * prints it) and its state right now. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "array.h"
#include "sluicectl.h"

void show_help(FILE *f)
{
	fprintf(f, "Usage: sluicectl [-i IFACE] [-j] show ADDR|KEY [KEYSPEC]\n"
		   "\n"
		   "Which policy a source gets (the longest matching rule, or the default), the\n"
		   "key its packets are counted under, and that key's state now in its\n"
		   "algorithm's terms: tokens left and when the next packet is allowed (token\n"
		   "and leaky bucket), the current and previous window counts (window\n"
		   "algorithms), or the log fill (sliding-log); and how many packets it lost,\n"
		   "or under dry-run how many it would have lost ('would drop': passed).\n"
		   "Under a policy with --penalty, whether the key is in the penalty box, how\n"
		   "long it has left there and how many packets the box refused.\n"
		   "A KEY is a masked source as 'top' prints it (2001:2:0:72::/64): it must be\n"
		   "keyed by that length, the policy's key prefix or its new-key aggregate.\n"
		   "On a shaper (-i shape:IFACE) a token or leaky bucket key shows its queue:\n"
		   "the packets (bytes) queued ahead, how long they take to drain at the rate,\n"
		   "and the delay the next packet would get (0 while it is among the --delay\n"
		   "that go at once), or that it would be dropped (the queue is full). A shaper\n"
		   "keyed by destination (--key dst) takes the destination address.\n"
		   "The rules that match on ports, flags or protocols and hold the address\n"
		   "follow ('l4 rule'), each with the key its matching packets count under:\n"
		   "they come first for the traffic they match.\n"
		   "Under a policy with --key src,dport or flow a source has a key per\n"
		   "service or flow: every one of them is listed ('198.18.0.5/32 tcp/443',\n"
		   "'198.18.0.5/32 > 198.18.1.1 tcp/40000>443'; a packet without ports has\n"
		   "port 0: '198.18.0.5/32 icmp'), and the penalty box, which boxes the\n"
		   "source. KEYSPEC narrows them: the words after the source as they are\n"
		   "printed (tcp/443, icmp, '> 198.18.1.1 tcp/40000>443'); a protocol alone\n"
		   "shows all its keys.\n"
		   "\n"
		   "Examples:\n"
		   "  sluicectl show 198.18.0.5\n"
		   "  sluicectl show 198.18.0.5 tcp/443\n"
		   "  sluicectl show 2001:2:0:72::/64\n"
		   "  sluicectl -j show 2001:2::1\n"
		   "  sluicectl -i shape:eth1 show 198.18.0.5\n");
}

/* The rule a packet from c gets, as the datapath finds it: one LPM lookup
 * with the whole address in the live generation. */
static const struct sluice_policy *find_policy(struct sluice_handle *h,
					       const struct sluice_settings *set,
					       const struct sluice_cidr *c,
					       struct sluice_rule *rule, char *match, size_t len)
{
	struct sluice_cidr rc;

	snprintf(match, len, "default");
	if (sluice_lookup_rule(h, set, c->family, c->addr, rule) <= 0)
		return &set->def;
	/* The value says which prefix matched; the key of a lookup does not. */
	memset(&rc, 0, sizeof(rc));
	rc.family = rule->family;
	rc.prefixlen = rule->prefixlen;
	memcpy(rc.addr, c->addr, rule->family == 4 ? 4 : 16);
	sluice_mask(rc.addr, rc.prefixlen);
	sluice_format_cidr(&rc, true, match, len);
	return &rule->policy;
}

struct found {
	bool ok;
	struct sluice_key key;
	struct sluice_fkey fk; /* the key as printed: key, or a wide key */
	struct ctl_state st;
	bool boxed; /* in the penalty box now */
	__u64 box_left_ns, box_dropped;
};

static bool dry_now(const struct sluice_policy *p);

/* Is f's key in the penalty box of its policy (--penalty)? */
static int lookup_box(struct sluice_handle *h, const struct sluice_policy *p, __u64 now,
		      struct found *f)
{
	struct sluice_box b;

	if (h->penalty_fd < 0 || !sluice_penalty_ds(p))
		return 0;
	if (bpf_map_lookup_elem(h->penalty_fd, &f->key, &b))
		return errno == ENOENT ? 0 : -errno;
	if (b.until <= now)
		return 0;
	f->boxed = true;
	f->box_left_ns = (b.until - now) >> SLUICE_TICK_SHIFT;
	f->box_dropped = b.dropped;
	return 0;
}

/* The box's line of show: how long the key stays refused. */
static void text_box(const struct found *f, const struct sluice_policy *p)
{
	char a[32];

	if (!sluice_penalty_ds(p))
		return;
	if (!f->boxed) {
		printf("%-9s not in the penalty box\n", "penalty");
		return;
	}
	sluice_format_duration(f->box_left_ns, a, sizeof(a));
	printf("%-9s in the penalty box for %s more: every packet refused (%llu so far%s)\n",
	       "penalty", a, (unsigned long long)f->box_dropped,
	       dry_now(p) ? ", dry-run: passed" : "");
}

static int lookup_key(struct sluice_handle *h, const struct sluice_policy *p,
		      const struct sluice_cidr *c, __u32 tag, __u8 prefixlen, __u64 now,
		      struct found *f)
{
	struct sluice_log log;
	struct sluice_bucket b;
	void *val;
	int ret;

	memset(f, 0, sizeof(*f));
	f->key.tag = tag;
	f->key.family = c->family;
	f->key.prefixlen = prefixlen;
	memcpy(f->key.addr, c->addr, 16);
	sluice_mask(f->key.addr, prefixlen);
	sluice_fkey_of_key(&f->fk, &f->key);
	ret = lookup_box(h, p, now, f);
	if (ret)
		return ret;
	if (p->algo == SLUICE_ALGO_SLIDING_LOG) {
		val = &log;
		if (bpf_map_lookup_elem(h->logs_fd, &f->key, val))
			return errno == ENOENT ? 0 : -errno;
	} else {
		ret = sluice_keytab_lookup(&h->keys, &f->key, &b);
		val = &b;
		if (ret)
			return ret == -ENOENT ? 0 : ret;
	}
	f->ok = true;
	ctl_state_of(p, val, now, &f->st);
	return 0;
}

/* The live settings, for how exact a key's drop count is. */
static const struct sluice_settings *live_set;

/* A key's count is of would-drops when its policy is in dry-run now. */
static bool dry_now(const struct sluice_policy *p)
{
	return (live_set->flags & SLUICE_DRY_RUN) || (p->flags & SLUICE_POLICY_DRY_RUN);
}

/* A shaper's key: its queue, and what the next packet gets. */
static void text_queue(const struct ctl_state *s)
{
	char a[32];
	const struct sluice_shape_queue *q[2] = { s->has_pkt ? &s->pkt_q : NULL,
						  s->has_bytes ? &s->bytes_q : NULL };
	__u64 d = s->pkt_q.delay_ns > s->bytes_q.delay_ns ? s->pkt_q.delay_ns : s->bytes_q.delay_ns;
	int i;

	for (i = 0; i < 2; i++) {
		if (!q[i])
			continue;
		sluice_format_duration(q[i]->ahead_ns, a, sizeof(a));
		printf("%-9s %llu %s queued ahead, %s to drain at the rate\n",
		       i == 0 || !q[0] ? "queue" : "", (unsigned long long)q[i]->ahead_units,
		       i == 0 ? "packets" : "bytes", a);
	}
	sluice_format_duration(d, a, sizeof(a));
	if (!s->admits)
		printf("%-9s the next packet is dropped: the queue is full (--burst)\n", "next");
	else if (d)
		printf("%-9s the next packet waits %s\n", "next", a);
	else
		printf("%-9s the next packet goes now\n", "next");
}

static void text_state(const char *label, const struct found *f, const struct sluice_policy *p)
{
	const struct ctl_state *s = &f->st;
	char key[160], a[32], b[32];

	ctl_fmt_fkey(&f->fk, key, sizeof(key));
	printf("%-9s %s\n", label, key);
	switch (s->algo) {
	case SLUICE_ALGO_TOKEN_BUCKET:
	case SLUICE_ALGO_LEAKY_BUCKET:
		if (s->shape) {
			text_queue(s);
			break;
		}
		if (s->has_pkt) {
			sluice_format_duration(s->pkt_wait_ns, a, sizeof(a));
			printf("%-9s %llu of %llu packets left; the next packet %s%s\n", "state",
			       (unsigned long long)s->pkt_left, (unsigned long long)s->pkt_cap,
			       s->pkt_wait_ns ? "is allowed in " : "is allowed now",
			       s->pkt_wait_ns ? a : "");
		}
		if (s->has_bytes) {
			sluice_format_duration(s->bytes_wait_ns, a, sizeof(a));
			printf("%-9s %llu of %llu bytes left%s%s\n", s->has_pkt ? "" : "state",
			       (unsigned long long)s->bytes_left, (unsigned long long)s->bytes_cap,
			       s->bytes_wait_ns ? "; one more byte is allowed in " : "",
			       s->bytes_wait_ns ? a : "");
		}
		break;
	case SLUICE_ALGO_SLIDING_WINDOW:
		sluice_format_duration(s->next_window_ns, a, sizeof(a));
		sluice_format_duration(p->window >> SLUICE_TICK_SHIFT, b, sizeof(b));
		printf("%-9s %llu in this %s window, %llu in the previous one; estimate %.1f of "
		       "%llu: the next packet %s\n",
		       "state", (unsigned long long)s->cur, b, (unsigned long long)s->prev,
		       s->estimate, (unsigned long long)s->limit,
		       s->admits ? "passes" : "is dropped");
		printf("%-9s the window turns in %s\n", "", a);
		break;
	case SLUICE_ALGO_FIXED_WINDOW:
		sluice_format_duration(s->next_window_ns, a, sizeof(a));
		printf("%-9s %llu of %llu in this window, which resets in %s\n", "state",
		       (unsigned long long)s->cur, (unsigned long long)s->limit, a);
		break;
	case SLUICE_ALGO_SLIDING_LOG:
		sluice_format_duration(s->free_in_ns, a, sizeof(a));
		sluice_format_duration(p->window >> SLUICE_TICK_SHIFT, b, sizeof(b));
		printf("%-9s %llu of %llu slots hold a packet of the last %s; "
		       "the next packet %s%s\n",
		       "state", (unsigned long long)s->used, (unsigned long long)s->limit, b,
		       s->admits ? "passes" : "is allowed in ", s->admits ? "" : a);
		break;
	}
	if (sluice_drops_exact(live_set, s->dropped))
		printf("%-9s %llu%s\n", dry_now(p) ? "would drop" : "dropped",
		       (unsigned long long)s->dropped, dry_now(p) ? " (dry-run: passed)" : "");
	else
		printf("%-9s about %llu%s (exact below %llu; past that each drop adds %llu with "
		       "chance 1/%llu)\n",
		       dry_now(p) ? "would drop" : "dropped", (unsigned long long)s->dropped,
		       dry_now(p) ? ", dry-run: passed" : "",
		       (unsigned long long)sluice_drop_sample(live_set),
		       (unsigned long long)sluice_drop_sample(live_set),
		       (unsigned long long)sluice_drop_sample(live_set));
}

static void json_found(struct sluice_json *j, const char *name, const struct found *f,
		       const struct sluice_policy *p)
{
	char key[160];

	json_obj_begin(j, name);
	ctl_fmt_fkey(&f->fk, key, sizeof(key));
	json_str(j, "key", key);
	ctl_json_fkey(j, &f->fk);
	json_bool(j, "found", f->ok);
	/* a wide key's box is its source's: said once, beside its keys */
	if (sluice_penalty_ds(p) && f->fk.mode == SLUICE_KEY_SRC) {
		json_obj_begin(j, "penalty");
		json_bool(j, "boxed", f->boxed);
		json_u64(j, "left_ns", f->box_left_ns);
		json_u64(j, "refused", f->box_dropped);
		json_obj_end(j);
	}
	if (f->ok) {
		ctl_json_state(j, &f->st);
		json_bool(j, "effective_dry_run", dry_now(p));
		json_u64(j, "dropped", dry_now(p) ? 0 : f->st.dropped);
		json_u64(j, "would_drop", dry_now(p) ? f->st.dropped : 0);
		json_bool(j, "dropped_exact", sluice_drops_exact(live_set, f->st.dropped));
	}
	json_obj_end(j);
}

/* ---- wide keys (--key src,dport|flow) ---- */

static bool policy_wide(const struct sluice_policy *p)
{
	return p->action == SLUICE_ACT_LIMIT && SLUICE_POLICY_KEY(p) != SLUICE_KEY_SRC;
}

/* The wide keys whose source holds what was asked, and their states. */
struct wide_found {
	struct sluice_fkey k;
	struct sluice_bucket b;
};
struct wide_keys {
	const struct sluice_cidr *c;
	const struct sluice_keyspec *spec;
	struct wide_found *v;
	size_t n, cap;
};

static int collect_wide(const struct sluice_fkey *k, bool wide, const struct sluice_bucket *b,
			void *ctx)
{
	struct wide_keys *w = ctx;
	__u8 a[16];

	(void)wide;
	if (k->k.family != w->c->family || k->k.prefixlen > w->c->prefixlen)
		return 0;
	memcpy(a, w->c->addr, 16);
	sluice_mask(a, k->k.prefixlen);
	if (memcmp(a, k->k.addr, 16) || !sluice_keyspec_match(w->spec, k))
		return 0;
	if (sluice_array_room(w->v, w->n, w->cap, 16))
		return -ENOMEM;
	w->v[w->n].k = *k;
	w->v[w->n++].b = *b;
	return 0;
}

/* The wide keys of p among w (own: its sources' keys; agg: its aggregate's),
 * each as a struct found; fn for each. How many. */
static size_t each_wide(const struct sluice_policy *p, const struct wide_keys *w, bool own,
			bool agg, __u64 now,
			void (*fn)(const struct found *f, const struct sluice_policy *p, void *ctx),
			void *ctx)
{
	size_t i, n = 0;

	for (i = 0; i < w->n; i++) {
		const struct sluice_fkey *k = &w->v[i].k;
		struct found f;

		if (!((own && k->k.tag == p->tag) ||
		      (agg && k->k.tag == (p->tag | SLUICE_TAG_AGGREGATE))))
			continue;
		memset(&f, 0, sizeof(f));
		f.ok = true;
		f.key = k->k;
		f.fk = *k;
		ctl_state_of(p, &w->v[i].b, now, &f.st);
		fn(&f, p, ctx);
		n++;
	}
	return n;
}

static void text_wide_one(const struct found *f, const struct sluice_policy *p, void *ctx)
{
	(void)ctx;
	text_state(f->key.tag & SLUICE_TAG_AGGREGATE ? "aggregate" : "key", f, p);
}

static void json_wide_one(const struct found *f, const struct sluice_policy *p, void *ctx)
{
	json_found(ctx, NULL, f, p);
}

/* A wide policy's keys of the source in c and its penalty box, as text or
 * (j) as the fields "keys" and "penalty" of the open object. */
static int show_wide(struct sluice_handle *h, const struct sluice_policy *p,
		     const struct wide_keys *w, const struct sluice_cidr *c, bool own, bool agg,
		     __u64 now, struct sluice_json *j)
{
	struct found box;
	char src[64];
	size_t n;
	int ret;

	memset(&box, 0, sizeof(box));
	box.key.tag = p->tag;
	box.key.family = c->family;
	box.key.prefixlen = c->family == 4 ? p->prefix4 : p->prefix6;
	memcpy(box.key.addr, c->addr, 16);
	sluice_mask(box.key.addr, box.key.prefixlen);
	ret = own ? lookup_box(h, p, now, &box) : 0;
	if (ret)
		return ret;
	if (j) {
		json_arr_begin(j, "keys");
		each_wide(p, w, own, agg, now, json_wide_one, j);
		json_arr_end(j);
		if (own && sluice_penalty_ds(p)) {
			json_obj_begin(j, "penalty");
			json_bool(j, "boxed", box.boxed);
			json_u64(j, "left_ns", box.box_left_ns);
			json_u64(j, "refused", box.box_dropped);
			json_obj_end(j);
		}
		return 0;
	}
	n = each_wide(p, w, own, agg, now, text_wide_one, NULL);
	ctl_fmt_key(&box.key, src, sizeof(src));
	if (!n)
		printf("%-9s no bucket of %s%s under --key %s: every one is full (never seen "
		       "or evicted)\n",
		       "key", src, w->spec->given ? " matches" : "",
		       sluice_key_mode_name(SLUICE_POLICY_KEY(p)));
	if (own)
		text_box(&box, p);
	return 0;
}

/*
 * Which keys of the policy to show for what was asked: an address shows its
 * own key and, past the new-key limit, its aggregate; a KEY (a CIDR, as top
 * prints it) shows the key of exactly that length, and no other. A key of
 * another length is refused, not looked up as something it is not.
 */
static int pick_keys(const struct sluice_policy *p, const struct sluice_settings *set,
		     const struct sluice_handle *h, const struct sluice_cidr *c, const char *match,
		     bool *own, bool *agg, bool *also)
{
	unsigned int full = c->family == 4 ? 32U : 128U, len = c->prefixlen;
	unsigned int own_len = c->family == 4 ? p->prefix4 : p->prefix6;
	unsigned int agg_len = c->family == 4 ? set->agg4 : set->agg6;
	struct sluice_also ab;
	const struct sluice_also *a = sluice_also_of(h, p, &ab);
	char key[64];

	*own = *agg = p->action == SLUICE_ACT_LIMIT;
	*also = false;
	if (len == full)
		return 0;
	/* the key of the second key (--also-rate) alone */
	*also = a && len == (c->family == 4 ? a->prefix4 : a->prefix6);
	sluice_format_cidr(c, true, key, sizeof(key));
	if (p->action != SLUICE_ACT_LIMIT)
		return sluice_cli_usage("show",
					"%s is not a key: its policy (%s) is %s, which keeps no "
					"state per source; show an address",
					key, match, sluice_action_name(p->action));
	*own = len == own_len;
	*agg = len == agg_len && !*also;
	if (*agg && !*own && !set->new_keys.period_ns && !policy_wide(p)) {
		/* No aggregate key is made while the new-key limit is off; one
		 * made before it went off may still be there. */
		struct found f;

		*agg = !lookup_key((struct sluice_handle *)h, p, c, p->tag | SLUICE_TAG_AGGREGATE,
				   (__u8)agg_len, 0, &f) &&
		       f.ok;
	}
	if (*own || *agg || *also)
		return 0;
	if (set->new_keys.period_ns)
		return sluice_cli_usage(
			"show",
			"%s is not a key of its policy (%s): its sources are "
			"keyed by /%u, past the new-key limit by /%u; show an address, or "
			"a key of one of those lengths",
			key, match, own_len, agg_len);
	return sluice_cli_usage(
		"show",
		"%s is not a key of its policy (%s): its sources are keyed by "
		"/%u (the new-key limit is off, so no /%u aggregate exists); show an "
		"address, or a key of that length",
		key, match, own_len, agg_len);
}

/*
 * The second key (--also-rate) of policy p that holds c: its state as a
 * token bucket of the second key's limit, as text ("also" and its key,
 * "198.18.0.0/24") or (j) the field "also" of the open object. Nothing for
 * a policy without one.
 */
static int show_also(struct sluice_handle *h, const struct sluice_policy *p,
		     const struct sluice_cidr *c, __u64 now, struct sluice_json *j)
{
	struct sluice_also buf;
	const struct sluice_also *a = p->action == SLUICE_ACT_LIMIT ? sluice_also_of(h, p, &buf) :
								      NULL;
	struct sluice_policy ap;
	struct found f;
	char key[160];
	int ret;

	if (!a)
		return 0;
	ctl_also_policy(p, a, &ap);
	ret = lookup_key(h, &ap, c, ap.tag, c->family == 4 ? a->prefix4 : a->prefix6, now, &f);
	if (ret)
		return ret;
	if (j) {
		json_found(j, "also", &f, &ap);
		return 0;
	}
	if (f.ok) {
		text_state("also", &f, &ap);
		return 0;
	}
	ctl_fmt_key(&f.key, key, sizeof(key));
	printf("%-9s %s\n", "also", key);
	printf("%-9s no bucket for the prefix: it is full (never seen or evicted)\n", "");
	return 0;
}

/* The rules on the transport header that hold c, and the state of c's key
 * under each that keeps one (l4[0..nr), read with the settings). */
static int show_l4(struct sluice_handle *h, const struct sluice_txn_l4 *l4, size_t nr,
		   const struct sluice_cidr *c, const struct wide_keys *w, __u64 now,
		   struct sluice_json *j)
{
	char name[160], line[480];
	struct sluice_also ab;
	struct found f;
	size_t i;
	int ret;

	if (j)
		json_arr_begin(j, "l4_rules");
	for (i = 0; i < nr; i++) {
		const struct sluice_policy *p = &l4[i].policy;
		__u8 len = c->family == 4 ? p->prefix4 : p->prefix6;

		if (!sluice_l4rule_holds(&l4[i].r, c->family, c->addr))
			continue;
		memset(&f, 0, sizeof(f));
		ret = p->action == SLUICE_ACT_LIMIT && !policy_wide(p) ?
			      lookup_key(h, p, c, p->tag, len, now, &f) :
			      0;
		if (ret)
			return ret;
		sluice_l4_name(&l4[i].r, name, sizeof(name));
		if (j) {
			json_obj_begin(j, NULL);
			json_str(j, "match", name);
			json_obj_begin(j, "policy");
			sluice_policy_json(j, p, sluice_also_of(h, p, &ab), c->family, ctl.shape,
					   live_set->flags & SLUICE_DRY_RUN);
			json_obj_end(j);
			if (policy_wide(p))
				ret = show_wide(h, p, w, c, true, true, now, j);
			else if (p->action == SLUICE_ACT_LIMIT && !w->spec->given)
				json_found(j, "bucket", &f, p);
			if (!ret && !w->spec->given)
				ret = show_also(h, p, c, now, j);
			json_obj_end(j);
			if (ret)
				return ret;
			continue;
		}
		sluice_policy_text(p, sluice_also_of(h, p, &ab), c->family, ctl.shape, line,
				   sizeof(line));
		printf("%-9s %s: %s\n", "l4 rule", name, line);
		if (policy_wide(p)) {
			ret = show_wide(h, p, w, c, true, true, now, NULL);
			if (!ret && !w->spec->given)
				ret = show_also(h, p, c, now, NULL);
			if (ret)
				return ret;
			continue;
		}
		if (w->spec->given)
			continue; /* keyed by source: no key of the words asked */
		if (f.ok)
			text_state("key", &f, p);
		else if (p->action == SLUICE_ACT_LIMIT)
			printf("%-9s no bucket under it: full (never seen or evicted)\n", "");
		if (p->action == SLUICE_ACT_LIMIT)
			text_box(&f, p);
		ret = show_also(h, p, c, now, NULL);
		if (ret)
			return ret;
	}
	if (j)
		json_arr_end(j);
	return 0;
}

int do_show(int argc, char **argv)
{
	const struct sluice_policy *p;
	char err[SLUICE_ERR_LEN], match[64], line[480], addr[64];
	struct sluice_also ab;
	struct sluice_settings set;
	struct sluice_handle h;
	struct sluice_rule rule;
	struct sluice_cidr c;
	struct found own, agg;
	bool want_own, want_agg, want_also, dry;
	__u64 seq;
	struct sluice_json j;
	struct sluice_txn_l4 l4[SLUICE_L4_RULES_MAX];
	struct sluice_keyspec spec;
	struct wide_keys wk = { .c = &c, .spec = &spec };
	size_t nr_l4 = 0, i;
	bool full, any_wide, wide_main;
	int st, ret;
	__u64 now;

	if (argc >= 1 && sluice_is_help(argv[0])) {
		show_help(stdout);
		return SLUICE_EXIT_OK;
	}
	if (argc < 1)
		return sluice_cli_usage("show", "show needs an address: show 198.18.0.5");
	/* An address, or a key as top prints it (a CIDR). */
	if (sluice_parse_addr(argv[0], &c, err, sizeof(err)) &&
	    (!strchr(argv[0], '/') || sluice_parse_cidr(argv[0], &c, err, sizeof(err))))
		return sluice_cli_usage("show", "%s", err);
	/* The words after it: some of its wide keys (tcp/443); not another
	 * address (a flow's destination comes after '>'). */
	if (argc > 1 && argv[1][0] != '>' && (strchr(argv[1], '.') || strchr(argv[1], ':')))
		return sluice_cli_usage("show", "show takes one address, not '%s'", argv[1]);
	if (sluice_keyspec_parse(argc - 1, argv + 1, &spec, err, sizeof(err)))
		return sluice_cli_usage("show", "show %s: %s", argv[0], err);
	full = c.prefixlen == (c.family == 4 ? 32U : 128U);
	sluice_format_cidr(&c, !full, addr, sizeof(addr));

	st = ctl_open(&h);
	if (st)
		return st;
	/* Without the lock: the generation looked up must still be live when
	 * the lookup is done, else a change happened and we look again. */
	do {
		sluice_read_settings(&h, &set, &seq);
		live_set = &set;
		p = find_policy(&h, &set, &c, &rule, match, sizeof(match));
		sluice_read_l4(&h, &set, l4, &nr_l4);
	} while (sluice_settings_changed(&h, seq));
	now = sluice_now_ticks();
	memset(&own, 0, sizeof(own));
	memset(&agg, 0, sizeof(agg));
	st = pick_keys(p, &set, &h, &c, match, &want_own, &want_agg, &want_also);
	if (st)
		goto out_close;
	/* Policies keyed by more than the source: their keys of it. */
	wide_main = policy_wide(p);
	any_wide = wide_main;
	for (i = 0; full && i < nr_l4; i++)
		any_wide |= policy_wide(&l4[i].policy) &&
			    sluice_l4rule_holds(&l4[i].r, c.family, c.addr);
	if (spec.given && !any_wide) {
		st = sluice_cli_usage("show",
				      "show %s %s: %s is keyed by source alone (--key src) by "
				      "every policy that holds it, so it has no such key: show %s",
				      argv[0], argv[1], addr, argv[0]);
		goto out_close;
	}
	ret = any_wide ? (int)sluice_keytab_walk_wide(&h.keys, collect_wide, &wk) : 0;
	if (ret < 0) {
		st = sluice_cli_err(ret, "Couldn't read the wide keys of %s: %s", h.name,
				    strerror(-ret));
		goto out_close;
	}
	/* Narrowed to wide keys, or keyed by them: no key of the source's own. */
	if (spec.given || wide_main) {
		want_own = want_own && wide_main;
		want_agg = want_agg && wide_main;
	}
	ret = 0;
	if (want_own && !wide_main)
		ret = lookup_key(&h, p, &c, p->tag, c.family == 4 ? p->prefix4 : p->prefix6, now,
				 &own);
	/* Past the new-key limit a source is charged to its prefix. */
	if (!ret && want_agg && !wide_main)
		ret = lookup_key(&h, p, &c, p->tag | SLUICE_TAG_AGGREGATE,
				 c.family == 4 ? set.agg4 : set.agg6, now, &agg);
	if (ret) {
		st = sluice_cli_err(ret, "Couldn't look up the state of %s: %s", addr,
				    strerror(-ret));
		goto out_close;
	}
	dry = dry_now(p);

	sluice_policy_text(p, sluice_also_of(&h, p, &ab), c.family, ctl.shape, line, sizeof(line));
	if (ctl.json) {
		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "address", addr);
		json_obj_begin(&j, "policy");
		json_str(&j, "match", match);
		/* The policy as rule list writes it: the default's both prefixes,
		 * a rule's (of one family) its own. */
		sluice_policy_json(&j, p, sluice_also_of(&h, p, &ab),
				   strcmp(match, "default") ? c.family : 0, ctl.shape,
				   set.flags & SLUICE_DRY_RUN);
		json_obj_end(&j);
		sluice_settings_json(&j, &set);
		/* What a packet of it gets when its policy keeps no state. */
		if (p->action == SLUICE_ACT_EXEMPT)
			json_str(&j, "verdict", "pass");
		else if (p->action == SLUICE_ACT_DENY)
			json_str(&j, "verdict", dry ? "would_drop" : "drop");
		ret = 0;
		if (wide_main)
			ret = show_wide(&h, p, &wk, &c, want_own, want_agg, now, &j);
		else if (want_own)
			json_found(&j, "bucket", &own, p);
		if (agg.ok)
			json_found(&j, "aggregate", &agg, p);
		if (!ret && (want_own || want_also) && !spec.given)
			ret = show_also(&h, p, &c, now, &j);
		if (!ret && full)
			ret = show_l4(&h, l4, nr_l4, &c, &wk, now, &j);
		json_obj_end(&j);
		json_end(&j);
		if (ret)
			st = sluice_cli_err(ret, "Couldn't look up the state of %s: %s", addr,
					    strerror(-ret));
		goto out_close;
	}
	printf("%-9s %s\n", full ? "address" : "key", addr);
	printf("%-9s %s: %s\n", "policy", match, line);
	if (set.flags & SLUICE_DRY_RUN)
		printf("%-9s on for every policy: drops are only counted (as 'would drop')\n",
		       "dry-run");
	if (p->action == SLUICE_ACT_EXEMPT) {
		printf("%-9s exempt: its packets are never limited\n", "state");
	} else if (p->action == SLUICE_ACT_DENY && dry) {
		/* dry-run: the deny only counts, every packet passes */
		printf("%-9s would drop (dry-run): every packet passes, counted as a would-drop\n",
		       "state");
	} else if (p->action == SLUICE_ACT_DENY) {
		printf("%-9s denied: every packet is dropped\n", "state");
	} else if (wide_main) {
		ret = show_wide(&h, p, &wk, &c, want_own, want_agg, now, NULL);
		if (ret) {
			st = sluice_cli_err(ret, "Couldn't look up the state of %s: %s", addr,
					    strerror(-ret));
			goto out_close;
		}
	} else if (own.ok) {
		text_state("key", &own, p);
		text_box(&own, p);
	} else if (want_own) {
		ctl_fmt_key(&own.key, line, sizeof(line));
		printf("%-9s %s\n", "key", line);
		if (ctl.shape && !sluice_algo_is_window(p->algo))
			printf("no queue for %s: it is idle (never seen or evicted), the next "
			       "packet goes now\n",
			       addr);
		else
			printf("no bucket for %s: it is full (never seen or evicted)\n", addr);
		text_box(&own, p);
	}
	if (agg.ok)
		text_state("aggregate", &agg, p);
	else if (want_agg && !want_own && !wide_main)
		printf("no aggregate bucket for %s: it is full (never made or evicted)\n", addr);
	if ((want_own || want_also) && !spec.given) {
		ret = show_also(&h, p, &c, now, NULL);
		if (ret) {
			st = sluice_cli_err(ret, "Couldn't look up the state of %s: %s", addr,
					    strerror(-ret));
			goto out_close;
		}
	}
	if (full) {
		ret = show_l4(&h, l4, nr_l4, &c, &wk, now, NULL);
		if (ret)
			st = sluice_cli_err(ret, "Couldn't look up the state of %s: %s", addr,
					    strerror(-ret));
	}
out_close:
	free(wk.v);
	sluice_close(&h);
	return st;
}
