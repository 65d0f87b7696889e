// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The counters of a state: the datapath's, each policy's, the keys its
 * tables hold, by name for text, JSON and Prometheus alike. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libsluice.h"

const struct sluice_field sluice_stats_fields[] = {
/* clang-format off */
#define F(x, help) { #x, offsetof(struct sluice_counters, stats.x), help }
	/* clang-format on */
	F(rx, "Packets the XDP program saw."),
	F(rx_bytes, "Bytes of the packets the XDP program saw."),
	F(passed, "Packets passed (XDP_PASS), for any reason."),
	F(dropped, "Packets dropped (XDP_DROP), for any reason."),
	F(dropped_bytes, "Bytes of the packets dropped."),
	F(non_ip, "Packets passed because they are neither IPv4 nor IPv6."),
	F(malformed, "Packets passed because their headers are too short or bad."),
	F(limited, "Packets dropped because their source was over its limit."),
	F(would_drop, "Packets passed under dry-run that the limit would have dropped."),
	F(exempt, "Packets passed by an --exempt rule."),
	F(denied, "Packets dropped by a --deny rule."),
	F(new_keys, "Keys (buckets and sliding logs) created for sources seen for the first "
		    "time."),
	F(aggregated, "New sources charged to their prefix's aggregate bucket."),
	F(update_failed, "Packets whose source the key table refused (passed, fail-open)."),
	F(contended, "Packets dropped because other CPUs kept updating their bucket."),
	F(events_lost, "Drop events the ring buffer had no room for."),
#undef F
/* clang-format off */
#define F(x, help) { #x, offsetof(struct sluice_counters, xstats.x), help }
	/* clang-format on */
	F(penalized, "Packets refused because their key was in the penalty box (--penalty): "
		     "dropped (part of limited), or passed under dry-run (part of would_drop)."),
	F(penalties, "Keys put in the penalty box for going over their limit."),
	F(fragments, "Packets that rules with a match read as non-first fragments: no ports "
		     "or flags, so only rules that name neither could take them."),
	F(l4_short, "Packets that rules with a match read whose transport or extension "
		    "header ran past the frame: no ports or flags either."),
	F(l4_opaque, "IPv6 packets that rules with a match read as ESP, or with more "
		     "extension headers than are walked: no ports or flags either."),
	F(also_limited, "Packets their own key admitted that the policy's second key refused "
			"(--also-rate): dropped (part of limited), or passed under dry-run (part "
			"of would_drop)."),
#undef F
/* clang-format off */
#define F(x, help) { #x, offsetof(struct sluice_counters, x), help }
	/* clang-format on */
	F(keys, "Keys in the tables now (the key table, lru or sets, and sluice_logs)."),
	F(evicted_estimate, "Keys created but no longer in the tables: new_keys - keys, an "
			    "estimate of the evictions of either table (a flush lowers keys too)."),
#undef F
};
#define NR_XSTATS 6 /* the named words of struct sluice_xstats */
const size_t sluice_stats_nfields = sizeof(struct sluice_stats) / sizeof(__u64) + NR_XSTATS;
const size_t sluice_counters_nfields = sizeof(sluice_stats_fields) / sizeof(sluice_stats_fields[0]);
_Static_assert(sizeof(sluice_stats_fields) / sizeof(sluice_stats_fields[0]) ==
		       sizeof(struct sluice_stats) / sizeof(__u64) + NR_XSTATS + 2,
	       "every field of sluice_stats is named, then those of sluice_xstats, then keys and "
	       "evicted_estimate");
_Static_assert(NR_XSTATS == sizeof(struct sluice_xstats) / sizeof(__u64) -
				    sizeof(((struct sluice_xstats *)0)->spare) / sizeof(__u64),
	       "every word of sluice_xstats but the spare ones is named");

__u64 sluice_field_get(const void *base, const struct sluice_field *f)
{
	return *(const __u64 *)((const char *)base + f->offset);
}

int sluice_percpu_sum(int fd, __u32 key, __u64 *out, size_t nr)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;
	int i, ret = 0;
	size_t f;

	if (ncpu <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpu, nr * sizeof(__u64));
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, vals)) {
		ret = -errno;
		goto out;
	}
	memset(out, 0, nr * sizeof(__u64));
	for (i = 0; i < ncpu; i++)
		for (f = 0; f < nr; f++)
			out[f] += vals[(size_t)i * nr + f];
out:
	free(vals);
	return ret;
}

int sluice_read_stats(const struct sluice_handle *h, struct sluice_stats *out)
{
	return sluice_percpu_sum(h->stats_fd, 0, (__u64 *)out, sizeof(*out) / sizeof(__u64));
}

int sluice_read_rstats(const struct sluice_handle *h, __u32 slot, struct sluice_rstats *out)
{
	return sluice_percpu_sum(h->rstats_fd, slot, (__u64 *)out, sizeof(*out) / sizeof(__u64));
}

int sluice_read_counters(const struct sluice_handle *h, struct sluice_counters *c)
{
	long keys, log_keys;
	int ret;

	memset(c, 0, sizeof(*c));
	ret = sluice_read_stats(h, &c->stats);
	if (!ret && h->xstats_fd >= 0)
		ret = sluice_percpu_sum(h->xstats_fd, 0, (__u64 *)&c->xstats,
					sizeof(c->xstats) / sizeof(__u64));
	if (ret)
		return ret;
	keys = sluice_keytab_count_families(&h->keys, c->table_keys);
	log_keys = keys < 0 ? keys : sluice_count_keys(h->logs_fd);
	if (keys < 0 || log_keys < 0)
		return keys < 0 ? (int)keys : (int)log_keys;
	c->log_keys = (__u64)log_keys;
	if (sluice_keytab_wide_on(&h->keys)) {
		long wide = sluice_keytab_count_wide(&h->keys);

		if (wide < 0)
			return (int)wide;
		c->wide_keys = (__u64)wide;
	}
	c->keys = (__u64)keys + c->log_keys + c->wide_keys;
	c->evicted_estimate = c->stats.new_keys > c->keys ? c->stats.new_keys - c->keys : 0;
	return 0;
}

int sluice_read_rwould(const struct sluice_handle *h, __u32 slot, struct sluice_rwould *out)
{
	memset(out, 0, sizeof(*out));
	if (h->rwould_fd < 0)
		return -ENOENT;
	return sluice_percpu_sum(h->rwould_fd, slot, (__u64 *)out, sizeof(*out) / sizeof(__u64));
}

int sluice_clear_rstats(const struct sluice_handle *h, __u32 slot)
{
	int ncpu = libbpf_num_possible_cpus();
	void *zero;
	int ret = 0;

	if (ncpu <= 0)
		return -EINVAL;
	/* Room for the larger value: zeroes for either map. */
	zero = calloc((size_t)ncpu, sizeof(struct sluice_rstats) > sizeof(struct sluice_rwould) ?
					    sizeof(struct sluice_rstats) :
					    sizeof(struct sluice_rwould));
	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(h->rstats_fd, &slot, zero, BPF_ANY))
		ret = -errno;
	/* A state without sluice_rwould has no would-drops to clear. */
	if (!ret && h->rwould_fd >= 0 && bpf_map_update_elem(h->rwould_fd, &slot, zero, BPF_ANY))
		ret = -errno;
	free(zero);
	return ret;
}

__u64 sluice_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * SLUICE_NS_PER_SEC + (__u64)ts.tv_nsec;
}

__u64 sluice_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * SLUICE_NS_PER_SEC + (__u64)ts.tv_nsec;
}

__u64 sluice_now_ticks(void)
{
	return sluice_now_ns() << SLUICE_TICK_SHIFT;
}
