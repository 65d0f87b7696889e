// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-bench sizing: how many sources a set table (--table sets) holds,
 * for the sizing advice of docs/keys-and-tables.md. For each load (sources
 * offered against the table's capacity: 50%, 90%, 100%, 200%), a table of
 * -k keys a family (1M):
 *
 *  - fill: the offered sources are placed as the datapath's claims would
 *    place them with nothing to evict (bench_sets_prefill(): an empty way
 *    of the one of the key's two groups with more of them, else left out),
 *    each held (a TAT two hours ahead and more, a different debt each): how
 *    many the table took;
 *  - flood: then -f new sources (4M by default), one packet each, through
 *    the program (BPF_PROG_TEST_RUN, bench_vary_keys: a random source per
 *    packet) under a policy that frees their way at once (1e9/s): how many
 *    of the held sources are still there, held, after it. A new source
 *    evicts a held one only where its two groups have no free way.
 *
 * IPv4 (32 bytes a key). Prints a markdown table; -o FILE writes it there
 * too. About 10 s a load here.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sluice/sets.h>

#include "bench.h"

#define HOUR_NS 3600000000000ULL
#define VARY_KEYS (16U << 20)
#define CHUNK (1U << 20)

static const unsigned int loads[] = { 50, 90, 100, 200 };

struct sizing_row {
	unsigned int load; /* % of capacity offered */
	__u32 cap, offered, placed, held_before, held_after;
};

/* One load: fill a fresh table, then flood it. */
static int one_load(struct bpfrun *o, unsigned int load, __u32 keys, __u32 flood,
		    struct sizing_row *row, char *err, size_t errlen)
{
	__u8 src[16] = { 198, 18, 9, 0 };
	/* A generation the flood's policy does not use. */
	__u32 tag = SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 0x1fff), live, sent, retval;
	__u64 ahead = (bench_now_ns() + 2 * HOUR_NS) << SLUICE_TICK_SHIFT;
	struct sluice_settings set;
	struct bench_frame f;
	int ret;

	memset(row, 0, sizeof(*row));
	row->load = load;
	row->cap = o->keys.nsets[0] * SLUICE_SET_WAYS;
	row->offered = (__u32)((__u64)keys * load / 100);
	if (sluice_keytab_flush(&o->keys, NULL, NULL) < 0)
		return -EIO;
	ret = bench_sets_prefill(o, tag, 4, 32, src, VARY_KEYS, row->offered, ahead, 16,
				 SLUICE_WAY_META(32, 0), &row->placed);
	if (ret)
		return ret;
	/* held: a TAT at least an hour ahead (the flood's keys are free) */
	ret = bench_sets_count(o, 4, (bench_now_ns() + HOUR_NS) << SLUICE_TICK_SHIFT, &live,
			       &row->held_before);
	if (ret)
		return ret;
	sluice_settings_init(&set);
	ret = bench_policy(&set.def, SLUICE_ALGO_TOKEN_BUCKET, 1000000000ULL, SLUICE_NS_PER_SEC, 0,
			   0, err, errlen);
	if (!ret)
		ret = bpfrun_configure(o, &set);
	if (!ret)
		ret = bench_frame_build(&f, "198.18.0.2", "198.19.0.1");
	for (sent = 0; !ret && sent < flood; sent += CHUNK) {
		ret = bench_test_run(o->prog_fd, &f, flood - sent < CHUNK ? flood - sent : CHUNK,
				     NULL, NULL, &retval);
	}
	if (ret)
		return ret;
	return bench_sets_count(o, 4, (bench_now_ns() + HOUR_NS) << SLUICE_TICK_SHIFT, &live,
				&row->held_after);
}

static void print_rows(FILE *out, const struct sizing_row *rows, int n, __u32 flood)
{
	int i;

	fprintf(out,
		"| offered | sources | placed | placed / offered | placed / capacity | "
		"held after %u new sources | kept |\n|---|---|---|---|---|---|---|\n",
		flood);
	for (i = 0; i < n; i++) {
		const struct sizing_row *r = &rows[i];

		fprintf(out, "| %u%% | %u | %u | %.1f%% | %.1f%% | %u | %.1f%% |\n", r->load,
			r->offered, r->placed, 100.0 * r->placed / r->offered,
			100.0 * r->placed / r->cap, r->held_after,
			r->held_before ? 100.0 * r->held_after / r->held_before : 0.0);
	}
	fprintf(out,
		"\nIPv4, %u keys of capacity (%u sets of %d ways, in groups of %d); held: a debt "
		"of 2 h or more.\n",
		rows[0].cap, rows[0].cap / SLUICE_SET_WAYS, SLUICE_SET_WAYS, SLUICE_SET_GROUP);
}

int cmd_sizing(int argc, char **argv)
{
	struct sizing_row rows[sizeof(loads) / sizeof(loads[0])];
	struct bpfrun_opts oo = {
		.table = BPFRUN_SETS, .max_keys = 1024, .max_log_keys = 1024, .vary_keys = VARY_KEYS
	};
	__u32 keys = 1U << 20, flood = 4U << 20;
	const char *outpath = NULL;
	struct bpfrun o;
	char err[160] = "";
	unsigned int i;
	int opt, ret;

	while ((opt = getopt(argc, argv, "k:f:o:h")) != -1) {
		switch (opt) {
		case 'k':
			keys = (__u32)strtoul(optarg, NULL, 0);
			break;
		case 'f':
			flood = (__u32)strtoul(optarg, NULL, 0);
			break;
		case 'o':
			outpath = optarg;
			break;
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: sluice-bench sizing [-k KEYS] [-f FLOOD] [-o FILE]\n");
			return opt == 'h' ? SLUICE_EXIT_OK : SLUICE_EXIT_USAGE;
		}
	}
	if (!keys || !flood) {
		fprintf(stderr, "sluice-bench sizing: -k and -f want a number above 0\n");
		return SLUICE_EXIT_USAGE;
	}
	oo.sets_keys[0] = oo.sets_keys[1] = keys;
	ret = bench_open(&o, &oo);
	if (ret) {
		fprintf(stderr, "sluice-bench sizing: Couldn't load the set table's program: %s\n",
			strerror(-ret));
		return SLUICE_EXIT_RUNTIME;
	}
	for (i = 0; i < sizeof(loads) / sizeof(loads[0]) && !ret; i++)
		ret = one_load(&o, loads[i], keys, flood, &rows[i], err, sizeof(err));
	bpfrun_close(&o);
	if (ret) {
		fprintf(stderr, "sluice-bench sizing: %s\n", err[0] ? err : strerror(-ret));
		return SLUICE_EXIT_RUNTIME;
	}
	print_rows(stdout, rows, (int)i, flood);
	if (outpath) {
		FILE *f = fopen(outpath, "w");

		if (!f) {
			fprintf(stderr, "sluice-bench sizing: Couldn't write %s: %s\n", outpath,
				strerror(errno));
			return SLUICE_EXIT_RUNTIME;
		}
		print_rows(f, rows, (int)i, flood);
		fclose(f);
	}
	return SLUICE_EXIT_OK;
}
