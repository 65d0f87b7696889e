// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Walking the entries of a map, and what the kernel says about a map. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libsluice.h"

#ifndef ENOTSUPP
#define ENOTSUPP 524 /* the kernel's own "not supported": maps without batch ops */
#endif

/* Entries per batched lookup: a million keys in 256 calls. */
#define WALK_BATCH 4096

static int map_info(int fd, struct bpf_map_info *info)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	return bpf_obj_get_info_by_fd(fd, info, &len) ? -errno : 0;
}

__u32 sluice_map_max_entries(int fd)
{
	struct bpf_map_info info;

	return map_info(fd, &info) ? 0 : info.max_entries;
}

/* What the kernel says a map holds (/proc/self/fdinfo's memlock); 0 when unknown. */
static __u64 fdinfo_memlock(int fd)
{
	unsigned long long v = 0;
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static __u64 round8(__u64 n)
{
	return (n + 7) & ~7ULL;
}

static __u64 pow2_at_least(__u64 n)
{
	__u64 p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

__u64 sluice_map_bytes(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int ncpu;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	if (info.map_flags & BPF_F_NO_PREALLOC)
		return fdinfo_memlock(fd); /* grows with what it holds */
	switch (info.type) {
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_LRU_HASH:
		/* struct htab_elem (48 bytes) with the key and value, and a
		 * 16-byte bucket per entry rounded up to a power of two. */
		return (__u64)info.max_entries *
			       (48 + round8(info.key_size) + round8(info.value_size)) +
		       pow2_at_least(info.max_entries) * 16;
	case BPF_MAP_TYPE_ARRAY:
		return (__u64)info.max_entries * round8(info.value_size);
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		ncpu = libbpf_num_possible_cpus();
		return (__u64)info.max_entries * round8(info.value_size) *
		       (__u64)(ncpu > 0 ? ncpu : 1);
	default:
		return fdinfo_memlock(fd);
	}
}

/* One key at a time: maps without batch lookups (LPM tries, old kernels).
 * A key removed under us makes the kernel start again from the first key:
 * some entries may then be seen twice, as a live table allows. */
static long walk_one_by_one(int fd, const struct bpf_map_info *info, sluice_walk_fn fn, void *ctx)
{
	char *key = calloc(2, info->key_size), *val = NULL;
	void *prev = NULL;
	long n = 0;
	int ret = 0;

	if (fn)
		val = malloc(info->value_size);
	if (!key || (fn && !val)) {
		n = -ENOMEM;
		goto out;
	}
	while (!bpf_map_get_next_key(fd, prev, key + info->key_size)) {
		memcpy(key, key + info->key_size, info->key_size);
		prev = key;
		if (fn) {
			if (bpf_map_lookup_elem(fd, key, val))
				continue; /* removed meanwhile */
			ret = fn(key, val, ctx);
			if (ret) {
				n = ret;
				goto out;
			}
		}
		n++;
	}
	if (errno != ENOENT)
		n = -errno;
out:
	free(key);
	free(val);
	return n;
}

long sluice_map_walk(int fd, sluice_walk_fn fn, void *ctx)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	struct bpf_map_info info;
	__u32 batch = WALK_BATCH, i, count;
	char *keys = NULL, *vals = NULL;
	/* The batch cursor of a hash map is a bucket index (4 bytes); other
	 * kinds may use a key: room for either. */
	__u64 in[8], out[8];
	bool first = true;
	long n = 0;
	int ret;

	ret = map_info(fd, &info);
	if (ret)
		return ret;
	if (info.key_size > sizeof(in))
		return walk_one_by_one(fd, &info, fn, ctx);
	for (;;) {
		if (!keys) {
			keys = calloc(batch, info.key_size);
			vals = calloc(batch, info.value_size);
			if (!keys || !vals) {
				n = -ENOMEM;
				break;
			}
		}
		count = batch;
		ret = bpf_map_lookup_batch(fd, first ? NULL : in, out, keys, vals, &count, &opts);
		if (ret && errno == ENOSPC && !count) {
			/* One hash bucket holds more keys than a batch. */
			free(keys);
			free(vals);
			keys = vals = NULL;
			batch *= 4;
			continue;
		}
		if (ret && errno != ENOENT) {
			if (first && (errno == EINVAL || errno == ENOTSUPP || errno == EOPNOTSUPP))
				n = walk_one_by_one(fd, &info, fn, ctx);
			else
				n = -errno;
			break;
		}
		for (i = 0; fn && i < count; i++) {
			int stop = fn(keys + (size_t)i * info.key_size,
				      vals + (size_t)i * info.value_size, ctx);

			if (stop) {
				n = stop;
				goto out;
			}
		}
		n += count;
		if (ret) /* ENOENT: that was the last batch */
			break;
		memcpy(in, out, sizeof(in));
		first = false;
	}
out:
	free(keys);
	free(vals);
	return n;
}

long sluice_count_keys(int fd)
{
	return sluice_map_walk(fd, NULL, NULL);
}

/*
 * A shaper's counters (sluice_shape_stats, per CPU): every field summed
 * over the CPUs but max_delay_ns, the largest of theirs.
 */
void sluice_shape_stats_add(struct sluice_shape_stats *sum, const struct sluice_shape_stats *cpu)
{
	size_t i;

	sum->shaped += cpu->shaped;
	sum->delayed += cpu->delayed;
	sum->delay_ns += cpu->delay_ns;
	if (cpu->max_delay_ns > sum->max_delay_ns)
		sum->max_delay_ns = cpu->max_delay_ns;
	sum->horizon_dropped += cpu->horizon_dropped;
	sum->restamped += cpu->restamped;
	for (i = 0; i < SLUICE_DELAY_BUCKETS; i++)
		sum->hist[i] += cpu->hist[i];
}

int sluice_read_shape_stats(const struct sluice_handle *h, struct sluice_shape_stats *out)
{
	int ncpu = libbpf_num_possible_cpus(), i, ret = 0;
	struct sluice_shape_stats *vals;
	__u32 key = 0;

	memset(out, 0, sizeof(*out));
	if (h->shape_stats_fd < 0)
		return -ENOENT;
	if (ncpu <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(h->shape_stats_fd, &key, vals))
		ret = -errno;
	for (i = 0; !ret && i < ncpu; i++)
		sluice_shape_stats_add(out, &vals[i]);
	free(vals);
	return ret;
}

/* The upper bound of delay histogram bucket i in ns ([0] < 1 us, [i] < 2^i
 * us); ~0 for the last one, every longer delay. */
__u64 sluice_delay_bucket_le_ns(unsigned int i)
{
	if (i >= SLUICE_DELAY_BUCKETS - 1)
		return ~0ULL;
	return 1000ULL << i;
}
