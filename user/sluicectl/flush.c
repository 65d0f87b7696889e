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
	fprintf(f, "Usage: sluicectl [-i IFACE] [-j] flush [ADDR|CIDR]\n"
		   "\n"
		   "Delete the buckets and sliding logs of the keys that overlap ADDR or CIDR\n"
		   "(every key when none is given), and say how many. Their sources start again\n"
		   "with full buckets and zero drop counts, out of the penalty box (--penalty).\n"
		   "Policies, rules and the counters of 'stats' and 'rule list' are not\n"
		   "touched.\n"
		   "\n"
		   "Examples:\n"
		   "  sluicectl flush 198.18.0.5\n"
		   "  sluicectl flush 2001:2::/48\n"
		   "  sluicectl flush\n");
}

struct flush {
	const struct sluice_cidr *match; /* NULL: all */
	struct sluice_key *keys;
	size_t n, cap;
	__u64 seen;
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

static int pick(const void *key, const void *val, void *ctx)
{
	struct flush *f = ctx;

	f->seen++;
	if (f->match && !overlaps(key, f->match))
		return 0;
	if (f->box_now && ((const struct sluice_box *)val)->until > *f->box_now)
		f->boxed++;
	if (sluice_array_room(f->keys, f->n, f->cap, 1024))
		return -ENOMEM;
	memcpy(&f->keys[f->n++], key, sizeof(*f->keys));
	return 0;
}

/* Collect first, delete after: deleting while walking a hash map restarts
 * or skips buckets. The key table (either kind) when keys is non-NULL, else
 * the map fd. Returns how many were deleted, or -errno. */
static long flush_map(struct sluice_keytab *keys, int fd, struct flush *f)
{
	long deleted = 0, ret;
	size_t i;

	f->n = 0;
	ret = keys ? sluice_keytab_walk(keys, pick, f) : sluice_map_walk(fd, pick, f);
	if (ret < 0)
		return ret;
	for (i = 0; i < f->n; i++) {
		int err = keys ? sluice_keytab_delete(keys, &f->keys[i]) :
				 (bpf_map_delete_elem(fd, &f->keys[i]) ? -errno : 0);

		if (!err)
			deleted++;
		else if (err != -ENOENT) /* ENOENT: evicted meanwhile */
			return err;
	}
	return deleted;
}

int do_flush(int argc, char **argv)
{
	char err[SLUICE_ERR_LEN], what[64] = "every source";
	struct sluice_handle h;
	struct sluice_cidr c;
	struct flush f = {};
	struct sluice_json j;
	long buckets, logs, boxes = 0;
	int st;

	if (argc >= 1 && sluice_is_help(argv[0])) {
		flush_help(stdout);
		return SLUICE_EXIT_OK;
	}
	if (argc > 1)
		return sluice_cli_usage(
			"flush", "flush takes at most one address or CIDR, not '%s'", argv[1]);
	if (argc == 1) {
		if (sluice_parse_cidr(argv[0], &c, err, sizeof(err)))
			return sluice_cli_usage("flush", "%s", err);
		f.match = &c;
		sluice_format_cidr(&c, true, what, sizeof(what));
	}

	st = ctl_open_write(&h);
	if (st)
		return st;
	buckets = flush_map(&h.keys, -1, &f);
	logs = buckets < 0 ? 0 : flush_map(NULL, h.logs_fd, &f);
	/* The box last: a key let out while its bucket stays empty would only
	 * be boxed again. (f.seen counts the tables' keys, not the box's.) */
	if (buckets >= 0 && logs >= 0 && h.penalty_fd >= 0) {
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
		json_u64(&j, "logs", (__u64)logs);
		json_u64(&j, "penalties", (__u64)f.boxed);
		json_u64(&j, "keys", f.seen);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("flushed %ld bucket%s and %ld sliding log%s of %s "
		       "(%llu keys were tracked)%s",
		       buckets, buckets == 1 ? "" : "s", logs, logs == 1 ? "" : "s", what,
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
