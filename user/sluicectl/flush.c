// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl flush: forget the state of some or all sources (full buckets again). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "array.h"
#include "sluicectl.h"

void flush_help(FILE *f)
{
	fprintf(f, "Usage: sluicectl [-i IFACE] [-j] flush [ADDR|CIDR [KEYSPEC]]\n"
		   "\n"
		   "Delete the buckets and sliding logs of the keys that overlap ADDR or CIDR\n"
		   "(every key when none is given), and say how many. Their sources start again\n"
		   "with full buckets and zero drop counts, out of the penalty box (--penalty).\n"
		   "A source's keys are all of them: its own, the wide keys of policies with\n"
		   "--key src,dport or flow ('198.18.0.7/32 tcp/443'), and the keys that hold\n"
		   "it: its aggregate, its prefix's second key (--also-rate: the whole prefix's\n"
		   "bucket starts full again). KEYSPEC narrows\n"
		   "to those wide keys, as 'show' prints them after the source (tcp/443,\n"
		   "icmp, a flow's '> 198.18.1.1 tcp/40000>443'; a protocol alone: all its\n"
		   "keys); it leaves the source's own key, its sliding logs and its penalty\n"
		   "box alone. Policies, rules and the counters of 'stats' and 'rule list'\n"
		   "are not touched.\n"
		   "\n"
		   "Examples:\n"
		   "  sluicectl flush 198.18.0.5\n"
		   "  sluicectl flush 198.18.0.5 tcp/443\n"
		   "  sluicectl flush 2001:2::/48\n"
		   "  sluicectl flush\n");
}

/* A key to delete, and its table. */
struct doomed {
	struct sluice_fkey k;
	bool wide;
};

struct flush {
	const struct sluice_cidr *match; /* NULL: all */
	const struct sluice_keyspec *spec; /* what of the sources' keys */
	struct doomed *keys;
	size_t n, cap;
	__u64 seen;
	long wide; /* of the keys deleted, wide keys */
	/* walking the penalty box: now (ticks), and its matched keys whose
	 * box had not run out (the keys it lets out; the rest is cleanup) */
	const __u64 *box_now;
	long boxed;
};

/* A key covers key.addr/key.prefixlen; it matches if that and the CIDR overlap. */
static bool overlaps(const struct sluice_key *k, const struct sluice_cidr *c)
{
	unsigned int len = k->prefixlen < c->prefixlen ? k->prefixlen : c->prefixlen;
	__u8 a[16], b[16];

	if (k->family != c->family)
		return false;
	memcpy(a, k->addr, 16);
	memcpy(b, c->addr, 16);
	sluice_mask(a, len);
	sluice_mask(b, len);
	return !memcmp(a, b, 16);
}

/* A key of the key tables (plain or wide), or of a map of plain keys (the
 * logs, the penalty box: val is a box when f->box_now is set). */
static int pick_key(struct flush *f, const struct sluice_fkey *k, bool wide, const void *val)
{
	f->seen++;
	if ((f->match && !overlaps(&k->k, f->match)) || !sluice_keyspec_match(f->spec, k))
		return 0;
	if (f->box_now && ((const struct sluice_box *)val)->until > *f->box_now)
		f->boxed++;
	if (sluice_array_room(f->keys, f->n, f->cap, 1024))
		return -ENOMEM;
	f->keys[f->n].k = *k;
	f->keys[f->n++].wide = wide;
	return 0;
}

static int pick_table(const struct sluice_fkey *k, bool wide, const struct sluice_bucket *b,
		      void *ctx)
{
	return pick_key(ctx, k, wide, b);
}

static int pick_map(const void *key, const void *val, void *ctx)
{
	struct sluice_fkey k;

	sluice_fkey_of_key(&k, key);
	return pick_key(ctx, &k, false, val);
}

/* Collect first, delete after: deleting while walking a hash map restarts
 * or skips buckets. Both key tables (either kind) when keys is non-NULL,
 * else the map fd. Returns how many were deleted, or -errno. */
static long flush_map(struct sluice_keytab *keys, int fd, struct flush *f)
{
	long deleted = 0, ret;
	size_t i;

	f->n = 0;
	ret = keys ? sluice_keytab_walk_all(keys, pick_table, f) : sluice_map_walk(fd, pick_map, f);
	if (ret < 0)
		return ret;
	for (i = 0; i < f->n; i++) {
		const struct doomed *d = &f->keys[i];
		int err = keys ? sluice_keytab_delete_any(keys, &d->k, d->wide) :
				 (bpf_map_delete_elem(fd, &d->k.k) ? -errno : 0);

		if (!err) {
			deleted++;
			f->wide += d->wide;
		} else if (err != -ENOENT) { /* ENOENT: evicted meanwhile */
			return err;
		}
	}
	return deleted;
}

int do_flush(int argc, char **argv)
{
	char err[SLUICE_ERR_LEN], what[160] = "every source";
	struct sluice_handle h;
	struct sluice_keyspec spec;
	struct sluice_cidr c;
	struct flush f = { .spec = &spec };
	struct sluice_json j;
	long buckets, logs = 0, boxes = 0;
	int st;

	if (argc >= 1 && sluice_is_help(argv[0])) {
		flush_help(stdout);
		return SLUICE_EXIT_OK;
	}
	if (argc >= 1) {
		if (sluice_parse_cidr(argv[0], &c, err, sizeof(err)))
			return sluice_cli_usage("flush", "%s", err);
		f.match = &c;
		sluice_format_cidr(&c, true, what, sizeof(what));
	}
	/* The words after it: some of its wide keys (tcp/443); not another
	 * address (a flow's destination comes after '>'). */
	if (argc > 1 && argv[1][0] != '>' && (strchr(argv[1], '.') || strchr(argv[1], ':')))
		return sluice_cli_usage(
			"flush", "flush takes at most one address or CIDR, not '%s'", argv[1]);
	if (sluice_keyspec_parse(argc - 1, argv + 1, &spec, err, sizeof(err)))
		return sluice_cli_usage("flush", "flush %s: %s", argv[0], err);
	if (spec.given) {
		size_t n = strlen(what);

		snprintf(what + n, sizeof(what) - n, " ");
		for (int i = 1; i < argc; i++) {
			n = strlen(what);
			snprintf(what + n, sizeof(what) - n, "%s%s", i > 1 ? " " : "", argv[i]);
		}
	}

	st = ctl_open_write(&h);
	if (st)
		return st;
	buckets = flush_map(&h.keys, -1, &f);
	/* A key spec names wide keys: no log nor box is one. */
	if (!spec.given)
		logs = buckets < 0 ? 0 : flush_map(NULL, h.logs_fd, &f);
	/* The box last: a key let out while its bucket stays empty would only
	 * be boxed again. (f.seen counts the tables' keys, not the box's.) */
	if (buckets >= 0 && logs >= 0 && h.penalty_fd >= 0 && !spec.given) {
		__u64 seen = f.seen, now = sluice_now_ticks();

		f.box_now = &now;
		boxes = flush_map(NULL, h.penalty_fd, &f);
		f.box_now = NULL;
		f.seen = seen;
	}
	if (buckets < 0 || logs < 0 || boxes < 0) {
		int ret = buckets < 0 ? (int)buckets : logs < 0 ? (int)logs : (int)boxes;

		st = sluice_cli_err(ret, "Couldn't flush the keys of %s: %s", h.ifname,
				    strerror(-ret));
		goto out;
	}
	if (ctl.json) {
		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "match", what);
		json_u64(&j, "buckets", (__u64)buckets);
		json_u64(&j, "wide_buckets", (__u64)f.wide);
		json_u64(&j, "logs", (__u64)logs);
		json_u64(&j, "penalties", (__u64)f.boxed);
		json_u64(&j, "keys", f.seen);
		json_obj_end(&j);
		json_end(&j);
	} else {
		char wide[48] = "";

		if (f.wide)
			snprintf(wide, sizeof(wide), " (%ld of wide keys)", f.wide);
		printf("flushed %ld bucket%s%s and %ld sliding log%s of %s "
		       "(%llu keys were tracked)%s",
		       buckets, buckets == 1 ? "" : "s", wide, logs, logs == 1 ? "" : "s", what,
		       (unsigned long long)f.seen, f.boxed ? "; " : "\n");
		if (f.boxed)
			printf("%ld key%s let out of the penalty box\n", f.boxed,
			       f.boxed == 1 ? "" : "s");
	}
out:
	free(f.keys);
	sluice_close(&h);
	return st;
}
