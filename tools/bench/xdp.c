// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-bench xdp: the receiving end of the end-to-end benchmark, run inside
 * the receiver's namespace (nsenter --net=...).
 *
 *   xdp attach IF drop        attach the bare XDP_DROP program (native mode)
 *   xdp attach IF floor       attach the floor (floor.bpf.c's floor_drop): the
 *                             least an exact per-source limiter does, then drop
 *   xdp attach IF sluice [--rate N] [--burst N] [--algo A] [--prefix6 LEN]
 *                             attach the datapath this binary was built with,
 *                             configured as the loader would, without pins:
 *                             to profile a changed datapath end to end by
 *                             building sluice-bench against its skeleton
 *   xdp read IF               the attached program's run_cnt and run_time_ns,
 *                             its maps' memory and, if it is sluice, its
 *                             summed counters; in libxdp's dispatcher (6.1
 *                             runs sluice there), the dispatcher's run time
 *                             (sluice's included) and the counters and maps
 *                             of the program it runs that has sluice_stats
 *   xdp detach IF
 *
 * An attachment made here outlives the process (netlink XDP): it goes with
 * `xdp detach` or with the namespace.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "bench.h"
#include "drop.skel.h"
#include "floor.skel.h"

static int attach_fd(int ifindex, int prog_fd)
{
	int ret = bpf_xdp_attach(ifindex, prog_fd, XDP_FLAGS_DRV_MODE, NULL);

	return ret < 0 ? ret : 0;
}

static int attach_sluice(int ifindex, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rate", required_argument, NULL, 'r' },
		{ "burst", required_argument, NULL, 'b' },
		{ "algo", required_argument, NULL, 'a' },
		{ "prefix6", required_argument, NULL, '6' },
		{ "max-keys", required_argument, NULL, 'k' },
		{},
	};
	struct bpfrun_opts oo = {};
	struct sluice_settings set;
	struct sluice_rate rate = { .count = 100, .period_ns = SLUICE_NS_PER_SEC };
	char err[SLUICE_ERR_LEN] = "";
	__u64 burst = 0, v;
	int algo = SLUICE_ALGO_TOKEN_BUCKET, prefix6 = 64, opt, ret;
	struct bpfrun o;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			if (sluice_parse_rate(optarg, &rate, err, sizeof(err)) || rate.is_bytes)
				goto usage;
			break;
		case 'b':
			if (sluice_parse_uint("--burst", optarg, 0xffffffffULL, &burst, err,
					      sizeof(err)))
				goto usage;
			break;
		case 'a':
			algo = sluice_parse_algo(optarg, err, sizeof(err));
			if (algo < 0)
				goto usage;
			break;
		case '6':
			if (sluice_parse_uint("--prefix6", optarg, 128, &v, err, sizeof(err)))
				goto usage;
			prefix6 = (int)v;
			break;
		case 'k':
			if (sluice_parse_uint("--max-keys", optarg, 1U << 26, &v, err, sizeof(err)))
				goto usage;
			oo.max_keys = (__u32)v;
			break;
		default:
			goto usage;
		}
	}
	ret = bench_open(&o, &oo);
	if (ret) {
		fprintf(stderr, "sluice-bench: Couldn't load the sluice datapath: %s\n",
			strerror(-ret));
		return SLUICE_EXIT_RUNTIME;
	}
	sluice_settings_init(&set);
	ret = bench_policy(&set.def, (unsigned)algo, rate.count, rate.period_ns, burst, 0, err,
			   sizeof(err));
	set.def.tag = SLUICE_TAG(0, algo, 1);
	set.def.prefix6 = (__u8)prefix6;
	if (!ret) {
		ret = bpfrun_configure(&o, &set);
		if (ret)
			snprintf(err, sizeof(err), "Couldn't configure the sluice datapath: %s",
				 strerror(-ret));
	}
	if (!ret) {
		ret = attach_fd(ifindex, o.prog_fd);
		if (ret)
			snprintf(err, sizeof(err), "Couldn't attach to ifindex %d: %s", ifindex,
				 strerror(-ret));
	}
	bpfrun_close(&o);
	if (ret) {
		fprintf(stderr, "sluice-bench: %s\n", err);
		return SLUICE_EXIT_RUNTIME;
	}
	return SLUICE_EXIT_OK;
usage:
	fprintf(stderr, "sluice-bench: %s\n", err[0] ? err : "bad option to xdp attach sluice");
	return SLUICE_EXIT_USAGE;
}

/*
 * The sluice_stats map of a program, if it has one: a new fd, or -ENOENT.
 * Prints the kernel memory of the program's maps on the way (memory per key).
 */
static int find_stats_map(int prog_fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), ids[64], i;
	__u64 total = 0;
	int stats_fd = -ENOENT;

	info.nr_map_ids = 64;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	for (i = 0; i < info.nr_map_ids && i < 64; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi), entries;
		__u64 bytes;
		int fd = bpf_map_get_fd_by_id(ids[i]);

		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &mi, &mlen)) {
			close(fd);
			continue;
		}
		if (!bench_map_memory(fd, &bytes, &entries)) {
			total += bytes;
			if (!strcmp(mi.name, SLUICE_MAP_BUCKETS))
				printf("buckets_memlock=%llu\nbuckets_max=%u\n",
				       (unsigned long long)bytes, entries);
			/* --table sets: keys = sets x ways */
			if (!strcmp(mi.name, SLUICE_MAP_SETS4) ||
			    !strcmp(mi.name, SLUICE_MAP_SETS6))
				printf("%s_memlock=%llu\n%s_keys=%llu\n", mi.name + 7,
				       (unsigned long long)bytes, mi.name + 7,
				       (unsigned long long)entries * 4);
		}
		if (stats_fd < 0 && !strcmp(mi.name, SLUICE_MAP_STATS) &&
		    mi.value_size == sizeof(struct sluice_stats)) {
			stats_fd = fd;
			continue;
		}
		close(fd);
	}
	printf("maps_memlock=%llu\n", (unsigned long long)total);
	return stats_fd;
}

static int read_counters(int ifindex, const char *ifname)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int prog_fd, map_fd, ncpu, cpu;
	size_t f, words = sizeof(struct sluice_stats) / sizeof(__u64);
	__u64 *vals, sum[sizeof(struct sluice_stats) / sizeof(__u64)] = {};
	__u32 key = 0;

	if (bpf_xdp_query(ifindex, 0, &q)) {
		fprintf(stderr, "sluice-bench: Couldn't query XDP on %s: %s\n", ifname,
			strerror(errno));
		return SLUICE_EXIT_RUNTIME;
	}
	printf("prog_id=%u\nmode=%s\n", q.prog_id,
	       q.attach_mode == XDP_ATTACHED_DRV   ? "native" :
	       q.attach_mode == XDP_ATTACHED_SKB   ? "skb" :
	       q.attach_mode == XDP_ATTACHED_MULTI ? "multi" :
						     "none");
	if (!q.prog_id)
		return SLUICE_EXIT_OK;
	prog_fd = bpf_prog_get_fd_by_id(q.prog_id);
	if (prog_fd < 0 || bpf_obj_get_info_by_fd(prog_fd, &info, &len)) {
		fprintf(stderr, "sluice-bench: Couldn't read program %u: %s\n", q.prog_id,
			strerror(errno));
		return SLUICE_EXIT_RUNTIME;
	}
	printf("prog_name=%s\nrun_cnt=%llu\nrun_time_ns=%llu\n", info.name,
	       (unsigned long long)info.run_cnt, (unsigned long long)info.run_time_ns);
	if (!strcmp(info.name, "xdp_dispatcher")) {
		/* The dispatcher has no maps of its own: sluice is one of the
		 * programs it calls. */
		struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
		struct xdp_program *p = NULL;

		if (!libxdp_get_error(mp))
			p = xdp_multiprog__next_prog(NULL, mp);
		map_fd = -1;
		if (p) {
			printf("dispatched=%s\n", xdp_program__name(p));
			map_fd = find_stats_map(xdp_program__fd(p));
		}
		if (!libxdp_get_error(mp))
			xdp_multiprog__close(mp);
	} else {
		map_fd = find_stats_map(prog_fd);
	}
	close(prog_fd);
	if (map_fd < 0)
		return SLUICE_EXIT_OK;
	ncpu = libbpf_num_possible_cpus();
	vals = calloc((size_t)(ncpu > 0 ? ncpu : 1), sizeof(struct sluice_stats));
	if (!vals || ncpu <= 0 || bpf_map_lookup_elem(map_fd, &key, vals)) {
		fprintf(stderr, "sluice-bench: Couldn't read sluice_stats of %s\n", ifname);
		free(vals);
		close(map_fd);
		return SLUICE_EXIT_RUNTIME;
	}
	for (cpu = 0; cpu < ncpu; cpu++)
		for (f = 0; f < words; f++)
			sum[f] += vals[(size_t)cpu * words + f];
	for (f = 0; f < sluice_stats_nfields; f++)
		if (sluice_stats_fields[f].offset < sizeof(struct sluice_stats))
			printf("%s=%llu\n", sluice_stats_fields[f].name,
			       (unsigned long long)
				       sum[sluice_stats_fields[f].offset / sizeof(__u64)]);
	free(vals);
	close(map_fd);
	return SLUICE_EXIT_OK;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: sluice-bench xdp attach IF drop|floor\n"
		   "       sluice-bench xdp attach IF sluice [--rate RATE] [--burst N]\n"
		   "                [--algo ALGO] [--prefix6 LEN] [--max-keys N]\n"
		   "       sluice-bench xdp read IF\n"
		   "       sluice-bench xdp detach IF\n");
}

int cmd_xdp(int argc, char **argv)
{
	int ifindex, ret;

	if (argc < 3) {
		usage(stderr);
		return SLUICE_EXIT_USAGE;
	}
	ifindex = (int)if_nametoindex(argv[2]);
	if (!ifindex) {
		fprintf(stderr, "sluice-bench: there is no interface '%s' here (see 'ip link')\n",
			argv[2]);
		return SLUICE_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "read"))
		return read_counters(ifindex, argv[2]);
	if (!strcmp(argv[1], "detach")) {
		ret = bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
		if (ret)
			fprintf(stderr, "sluice-bench: Couldn't detach from %s: %s\n", argv[2],
				strerror(-ret));
		return ret ? SLUICE_EXIT_RUNTIME : SLUICE_EXIT_OK;
	}
	if (strcmp(argv[1], "attach") || argc < 4) {
		usage(stderr);
		return SLUICE_EXIT_USAGE;
	}
	if (!strcmp(argv[3], "sluice"))
		return attach_sluice(ifindex, argc - 3, argv + 3);
	if (!strcmp(argv[3], "drop") && argc == 4) {
		struct drop_bpf *d = drop_bpf__open_and_load();

		if (!d) {
			fprintf(stderr, "sluice-bench: Couldn't load the drop program: %s\n",
				strerror(errno));
			return SLUICE_EXIT_RUNTIME;
		}
		ret = attach_fd(ifindex, bpf_program__fd(d->progs.bench_drop));
		drop_bpf__destroy(d);
		if (ret)
			fprintf(stderr, "sluice-bench: Couldn't attach to %s: %s\n", argv[2],
				strerror(-ret));
		return ret ? SLUICE_EXIT_RUNTIME : SLUICE_EXIT_OK;
	}
	if (!strcmp(argv[3], "floor") && argc == 4) {
		struct floor_bpf *fl = floor_bpf__open_and_load();

		if (!fl) {
			fprintf(stderr, "sluice-bench: Couldn't load the floor program: %s\n",
				strerror(errno));
			return SLUICE_EXIT_RUNTIME;
		}
		ret = attach_fd(ifindex, bpf_program__fd(fl->progs.floor_drop));
		floor_bpf__destroy(fl);
		if (ret)
			fprintf(stderr, "sluice-bench: Couldn't attach to %s: %s\n", argv[2],
				strerror(-ret));
		return ret ? SLUICE_EXIT_RUNTIME : SLUICE_EXIT_OK;
	}
	usage(stderr);
	return SLUICE_EXIT_USAGE;
}
