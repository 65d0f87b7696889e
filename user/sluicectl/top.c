// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl top: the sources that lost the most packets (live: top_watch.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "top.h"

#define TOP_DEFAULT 10
#define TOP_MAX 100000

void top_help(FILE *f)
{
	fprintf(f,
		"Usage: sluicectl [-i IFACE] [-j] top [-n N] [--watch [DUR] [--count N]]\n"
		"\n"
		"The N keys (sources, or source prefixes) with the most dropped packets,\n"
		"from every bucket and sliding log of the interface: the key, the policy it\n"
		"is counted under, its drops and its state now. A policy's wide keys\n"
		"(--key src,dport or flow) are listed as 'show' takes them:\n"
		"'198.18.0.7/32 tcp/443', '198.18.0.7/32 > 198.18.1.1 udp/40000>53'. A key's drop count lives as\n"
		"long as its bucket: a flushed or evicted key starts again from 0. It is\n"
		"exact below 64 drops; past that each drop adds 64 with chance 1/64 (shown\n"
		"as ~N: unbiased, off by about 8 x sqrt(N) either way): a write on every\n"
		"drop would slow the CPUs refusing the same flood.\n"
		"Under dry-run a key counts the packets its policy would have dropped (and\n"
		"passed): VERDICT says 'would drop' for a key whose policy is in dry-run now,\n"
		"'dropped' otherwise (a key whose policy changed mode while it lived counts\n"
		"both; one of a replaced policy follows the global dry-run).\n"
		"\n"
		"  -n N         how many keys (default %d, at most %d)\n"
		"  --watch [DUR]  a live view, as top(1): the keys again every DUR (default\n"
		"               1s; a bare number is seconds: 2, 0.5; 100ms to 1h) until\n"
		"               interrupted (Ctrl-C, SIGTERM: exit status 0), under a header\n"
		"               line with the interface, the time and the interval, and a\n"
		"               line with the totals rx, passed and dropped and their rates\n"
		"               per second (from the second refresh on). On a terminal the\n"
		"               screen is redrawn in place (rows beyond its height are left\n"
		"               out); otherwise each refresh is a block of plain lines after\n"
		"               the last, its header first, a blank line after it; under -j\n"
		"               one JSON object a line per refresh, with time, interface,\n"
		"               rx, passed, dropped, interval_s and per_second added\n"
		"  --count N    with --watch: stop after N refreshes (default: never)\n"
		"\n"
		"Examples:\n"
		"  sluicectl top\n"
		"  sluicectl -j top -n 100\n"
		"  sluicectl top --watch\n"
		"  sluicectl -i eth0 top -n 20 --watch 5\n"
		"  sluicectl -j top --watch 10 --count 6 >> top.jsonl\n",
		TOP_DEFAULT, TOP_MAX);
}

static void sift_down(struct top *t, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct entry tmp;

		if (l < t->n && t->heap[l].dropped < t->heap[m].dropped)
			m = l;
		if (r < t->n && t->heap[r].dropped < t->heap[m].dropped)
			m = r;
		if (m == i)
			return;
		tmp = t->heap[i];
		t->heap[i] = t->heap[m];
		t->heap[m] = tmp;
		i = m;
	}
}

static void sift_up(struct top *t, size_t i)
{
	while (i) {
		size_t parent = (i - 1) / 2;
		struct entry tmp;

		if (t->heap[parent].dropped <= t->heap[i].dropped)
			return;
		tmp = t->heap[i];
		t->heap[i] = t->heap[parent];
		t->heap[parent] = tmp;
		i = parent;
	}
}

static int collect_one(struct top *t, const struct sluice_fkey *key, bool wide, const void *val)
{
	__u64 dropped = t->is_log ? ((const struct sluice_log *)val)->dropped :
				    ((const struct sluice_bucket *)val)->dropped;
	struct entry *e;

	t->keys++;
	if (!dropped)
		return 0;
	t->with_drops++;
	if (t->n == t->max) {
		if (dropped <= t->heap[0].dropped)
			return 0;
		e = &t->heap[0];
	} else {
		e = &t->heap[t->n++];
	}
	e->key = *key;
	e->wide = wide;
	e->is_log = t->is_log;
	e->dropped = dropped;
	if (t->is_log)
		e->val.log = *(const struct sluice_log *)val;
	else
		e->val.b = *(const struct sluice_bucket *)val;
	if (e == &t->heap[0] && t->n == t->max)
		sift_down(t, 0);
	else
		sift_up(t, t->n - 1);
	return 0;
}

/* A key of the key tables: plain or wide. */
static int collect(const struct sluice_fkey *k, bool wide, const struct sluice_bucket *b, void *ctx)
{
	return collect_one(ctx, k, wide, b);
}

/* A sliding log's (a plain key). */
static int collect_log(const void *key, const void *val, void *ctx)
{
	struct sluice_fkey f;

	sluice_fkey_of_key(&f, key);
	return collect_one(ctx, &f, false, val);
}

static int cmp_dropped(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return x->dropped < y->dropped ? 1 : x->dropped > y->dropped ? -1 : 0;
}

static void print_top(FILE *f, const struct top *t, const struct sluice_policies *pol,
		      const struct top_frame *fr)
{
	static const char *const head[] = { "KEY",     "POLICY", "ALGO", "DROPPED",
					    "VERDICT", "STATE",  NULL };
	bool global_dry = pol->set.flags & SLUICE_DRY_RUN, any_dry = global_dry;
	__u64 now = sluice_now_ticks();
	struct sluice_json j;
	struct ctl_table tab;
	size_t i;

	for (i = 0; i < pol->nr_rules; i++)
		any_dry |= pol->rules[i].rule.policy.flags & SLUICE_POLICY_DRY_RUN;
	json_init(&j, f);
	if (ctl.json) {
		json_obj_begin(&j, NULL);
		if (fr)
			top_frame_json(&j, fr);
		json_u64(&j, "keys", t->keys);
		json_u64(&j, "keys_with_drops", t->with_drops);
		json_arr_begin(&j, "top");
	} else {
		if (fr)
			top_frame_text(f, fr);
		ctl_table_init(&tab, head, "   r");
	}
	for (i = 0; i < t->n; i++) {
		const struct entry *e = &t->heap[i];
		const struct sluice_policy *p;
		struct sluice_policy also_p;
		char key[160], match[64], state[128] = "-", dropped[24];
		struct ctl_state st;
		bool agg = e->key.k.tag & SLUICE_TAG_AGGREGATE;
		bool also = SLUICE_TAG_IS_ALSO(e->key.k.tag);
		bool live, dry;

		p = ctl_policy_of_key(pol, &e->key.k, match, sizeof(match), &also_p);
		/* The count is of would-drops when the key's policy is in
		 * dry-run now (a replaced policy: the global mode). */
		dry = global_dry || (p && (p->flags & SLUICE_POLICY_DRY_RUN));
		/* State is only readable under the policy that wrote it. */
		live = p && p->action == SLUICE_ACT_LIMIT &&
		       (p->algo == SLUICE_ALGO_SLIDING_LOG) == e->is_log;
		if (live)
			ctl_state_of(p, &e->val, now, &st);
		ctl_fmt_fkey(&e->key, key, sizeof(key));
		if (agg)
			strncat(key, " (aggregate)", sizeof(key) - strlen(key) - 1);
		if (also)
			strncat(key, " (also)", sizeof(key) - strlen(key) - 1);
		if (ctl.json) {
			json_obj_begin(&j, NULL);
			json_str(&j, "key", key);
			json_bool(&j, "aggregate", agg);
			json_bool(&j, "also", also);
			ctl_json_fkey(&j, &e->key);
			/* the names of rule list and show: "match" the
			 * policy's, effective_dry_run its mode now */
			json_str(&j, "match", match);
			json_bool(&j, "effective_dry_run", dry);
			json_u64(&j, "dropped", dry ? 0 : e->dropped);
			json_u64(&j, "would_drop", dry ? e->dropped : 0);
			json_bool(&j, "dropped_exact", sluice_drops_exact(&pol->set, e->dropped));
			if (live)
				ctl_json_state(&j, &st);
			json_obj_end(&j);
			continue;
		}
		if (live)
			ctl_fmt_state(&st, state, sizeof(state));
		snprintf(dropped, sizeof(dropped), "%s%llu",
			 sluice_drops_exact(&pol->set, e->dropped) ? "" : "~",
			 (unsigned long long)e->dropped);
		ctl_table_row(&tab, key, match,
			      live      ? sluice_algo_name(p->algo) :
			      e->is_log ? "sliding-log" :
					  "-",
			      dropped, dry ? "would drop" : "dropped", state);
	}
	if (ctl.json) {
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
		return;
	}
	if (!t->n) {
		fprintf(f, "no source has lost a packet%s (%llu keys tracked)\n",
			any_dry ? ", nor would have under dry-run" : "",
			(unsigned long long)t->keys);
	} else {
		ctl_table_print(&tab, f);
		fprintf(f, "%llu keys tracked, %llu with drops%s\n", (unsigned long long)t->keys,
			(unsigned long long)t->with_drops, any_dry ? " or would-drops" : "");
	}
	ctl_table_free(&tab);
}

/* One view: the policies now, every key walked, the N with most drops
 * printed to f (after fr's header under --watch). */
int top_view(struct sluice_handle *h, struct top *t, FILE *f, const struct top_frame *fr)
{
	struct sluice_policies pol;
	long ret;
	int st;

	st = ctl_read_policies(h, &pol, false);
	if (st)
		return st;
	t->n = 0;
	t->keys = 0;
	t->with_drops = 0;
	t->is_log = false;
	/* both key tables: the sources' keys and the wide keys */
	ret = sluice_keytab_walk_all(&h->keys, collect, t);
	if (ret >= 0) {
		t->is_log = true;
		ret = sluice_map_walk(h->logs_fd, collect_log, t);
	}
	if (ret < 0) {
		st = sluice_cli_err((int)ret, "Couldn't read the keys of %s: %s", h->name,
				    strerror((int)-ret));
		goto out;
	}
	qsort(t->heap, t->n, sizeof(*t->heap), cmp_dropped);
	print_top(f, t, &pol, fr);
out:
	sluice_free_policies(&pol);
	return st;
}

#define COUNT_MAX 1000000000ULL

int do_top(int argc, char **argv)
{
	const char *n_given = NULL, *watch_given = NULL, *count_given = NULL;
	__u64 n = TOP_DEFAULT, every_ns = 0, count = 0;
	char err[SLUICE_ERR_LEN];
	struct sluice_handle h;
	struct top t = {};
	int i, ret, st;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (sluice_is_help(a)) {
			top_help(stdout);
			return SLUICE_EXIT_OK;
		} else if (!strcmp(a, "-n")) {
			if (i + 1 >= argc)
				return sluice_cli_usage("top", "-n needs a number: top -n 20");
			if (n_given)
				return sluice_cli_usage("top",
							"-n is given twice ('%s' and '%s'): give "
							"it once",
							n_given, argv[i + 1]);
			n_given = argv[i + 1];
			if (sluice_parse_uint("-n", argv[++i], TOP_MAX, &n, err, sizeof(err)))
				return sluice_cli_usage("top", "%s", err);
		} else if (!strcmp(a, "--watch") || !strncmp(a, "--watch=", 8)) {
			const char *v = NULL;

			/* DUR is optional: the next word is it unless it is
			 * an option (top takes no other word). */
			if (a[7] == '=')
				v = a + 8;
			else if (i + 1 < argc && argv[i + 1][0] != '-' &&
				 !sluice_is_help(argv[i + 1]))
				v = argv[++i];
			if (watch_given)
				return sluice_cli_usage("top",
							"--watch is given twice: give it once "
							"(--watch 2 refreshes every 2 seconds)");
			watch_given = a;
			every_ns = SLUICE_NS_PER_SEC;
			if (!v)
				continue;
			ret = ctl_parse_watch("top", v, true, &every_ns);
			if (ret)
				return ret;
		} else if (!strcmp(a, "--count") || !strncmp(a, "--count=", 8)) {
			const char *v = a[7] == '=' ? a + 8 : i + 1 < argc ? argv[++i] : NULL;

			if (!v)
				return sluice_cli_usage("top",
							"--count needs a number of refreshes: "
							"--watch --count 5");
			if (count_given)
				return sluice_cli_usage("top",
							"--count is given twice ('%s' and '%s'): "
							"give it once",
							count_given, v);
			count_given = v;
			if (sluice_parse_uint("--count", v, COUNT_MAX, &count, err, sizeof(err)))
				return sluice_cli_usage("top", "%s", err);
		} else {
			return sluice_cli_usage("top", "unknown argument '%s' to top", a);
		}
	}
	if (count_given && !watch_given)
		return sluice_cli_usage("top",
					"--count counts the refreshes of --watch: give --watch "
					"too (top --watch --count %s)",
					count_given);

	st = ctl_open(&h);
	if (st)
		return st;
	t.max = n;
	t.heap = calloc(n, sizeof(*t.heap));
	if (!t.heap) {
		st = sluice_cli_err(-ENOMEM,
				    "out of memory for %llu entries: ask for fewer with -n",
				    (unsigned long long)n);
		goto out;
	}
	if (every_ns)
		st = top_watch(&h, &t, every_ns, count);
	else
		st = top_view(&h, &t, stdout, NULL);
out:
	free(t.heap);
	sluice_close(&h);
	return st;
}
