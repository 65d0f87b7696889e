// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The shaper's part of sluice status: its fq qdisc, with fq's own counters,
 * and its delay counters (sluice_shape_stats). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "shape.h"

struct shape_view {
	bool has_qdisc; /* the root could be read */
	struct sluice_qdisc q;
	bool has_stats; /* the state has sluice_shape_stats */
	struct sluice_shape_stats st;
	__u32 key_dst;
	__u32 horizon_us; /* as the config records it */
	__u32 recorded_qdisc;
};

/* Sum the per-CPU counters; max_delay_ns is the largest of any CPU. */
static int read_shape_stats(int fd, struct sluice_shape_stats *out)
{
	int nr = libbpf_num_possible_cpus(), i;
	struct sluice_shape_stats *v;
	__u32 zero = 0;
	size_t k;

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return -ENOENT;
	if (nr <= 0)
		return nr ? nr : -EINVAL;
	v = calloc((size_t)nr, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &zero, v)) {
		int ret = -errno;

		free(v);
		return ret;
	}
	for (i = 0; i < nr; i++) {
		__u64 *dst = (__u64 *)out, *src = (__u64 *)&v[i];

		for (k = 0; k < sizeof(*out) / sizeof(__u64); k++)
			if (&dst[k] != &out->max_delay_ns)
				dst[k] += src[k];
		if (v[i].max_delay_ns > out->max_delay_ns)
			out->max_delay_ns = v[i].max_delay_ns;
	}
	free(v);
	return 0;
}

static void read_view(unsigned int ifindex, const struct sluice_handle *h, struct shape_view *v)
{
	memset(v, 0, sizeof(*v));
	v->has_qdisc = ifindex && sluice_qdisc_root(ifindex, &v->q, NULL, NULL, 0) == 0;
	v->has_stats = read_shape_stats(h->shape_stats_fd, &v->st) == 0;
	v->key_dst = h->cfg->kind & SLUICE_KIND_KEY_DST;
	v->horizon_us = h->cfg->shape_horizon_us;
	v->recorded_qdisc = h->cfg->shape_qdisc;
}

void shape_fmt_ns(__u64 ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < SLUICE_NS_PER_SEC)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
}

void shape_status_text(unsigned int ifindex, const struct sluice_handle *h)
{
	struct shape_view v;
	char a[32], b[32];

	read_view(ifindex, h, &v);
	printf("  key:      the %s address\n", v.key_dst ? "destination" : "source");
	if (!v.has_qdisc) {
		printf("  qdisc:    unknown (the interface is gone, or its qdiscs unreadable)\n");
	} else if (sluice_qdisc_is_ours(&v.q)) {
		shape_fmt_ns((__u64)v.q.horizon_us * 1000ULL, a, sizeof(a));
		printf("  qdisc:    fq 51ce: root, limit %u, flow_limit %u, horizon %s%s; %u "
		       "queued, %u dropped\n",
		       v.q.plimit, v.q.flow_plimit, a,
		       v.q.horizon_drop ? " (drop beyond)" : " (cap beyond)", v.q.qlen, v.q.drops);
		if (v.q.has_fq_stats)
			printf("  fq:       flows %u (%u throttled, %u inactive), throttled %llu, "
			       "horizon drops %llu, flow limit drops %llu, too long %llu, "
			       "allocation errors %llu\n",
			       v.q.fq.flows, v.q.fq.throttled_flows, v.q.fq.inactive_flows,
			       (unsigned long long)v.q.fq.throttled,
			       (unsigned long long)v.q.fq.horizon_drops,
			       (unsigned long long)v.q.fq.flows_plimit,
			       (unsigned long long)v.q.fq.pkts_too_long,
			       (unsigned long long)v.q.fq.allocation_errors);
	} else {
		printf("  qdisc:    %s %x: root, not sluice's fq: packets leave when sent, not at "
		       "their departure time ('sluice shape attach' installs it again)\n",
		       v.q.present ? v.q.kind : "none", v.q.handle >> 16);
	}
	if (!v.has_stats) {
		printf("  shaping:  unknown (the state has no %s: the next attach adds it)\n",
		       SLUICE_MAP_SHAPE_STATS);
		return;
	}
	shape_fmt_ns(v.st.delayed ? v.st.delay_ns / v.st.delayed : 0, a, sizeof(a));
	shape_fmt_ns(v.st.max_delay_ns, b, sizeof(b));
	printf("  shaping:  shaped %llu, delayed %llu, mean delay %s, max delay %s, "
	       "restamped %llu, horizon_dropped %llu\n",
	       (unsigned long long)v.st.shaped, (unsigned long long)v.st.delayed, a, b,
	       (unsigned long long)v.st.restamped, (unsigned long long)v.st.horizon_dropped);
}

void shape_status_json(struct sluice_json *j, unsigned int ifindex, const struct sluice_handle *h)
{
	struct shape_view v;
	struct sluice_rec r;

	read_view(ifindex, h, &v);
	json_str(j, "key", v.key_dst ? "dst" : "src");
	json_u64(j, "horizon_us", v.horizon_us);
	json_obj_begin(j, "qdisc");
	json_bool(j, "known", v.has_qdisc);
	json_bool(j, "ours", v.has_qdisc && sluice_qdisc_is_ours(&v.q));
	json_str(j, "kind", v.has_qdisc && v.q.present ? v.q.kind : "");
	json_u64(j, "handle", v.q.handle);
	json_u64(j, "recorded_handle", v.recorded_qdisc);
	if (v.has_qdisc && sluice_qdisc_is_ours(&v.q)) {
		json_u64(j, "limit", v.q.plimit);
		json_u64(j, "flow_limit", v.q.flow_plimit);
		json_u64(j, "horizon_us", v.q.horizon_us);
		json_bool(j, "horizon_drop", v.q.horizon_drop);
		json_u64(j, "qlen", v.q.qlen);
		json_u64(j, "drops", v.q.drops);
		if (v.q.has_fq_stats) {
			json_obj_begin(j, "fq");
			json_u64(j, "flows", v.q.fq.flows);
			json_u64(j, "inactive_flows", v.q.fq.inactive_flows);
			json_u64(j, "throttled_flows", v.q.fq.throttled_flows);
			json_u64(j, "throttled", v.q.fq.throttled);
			json_u64(j, "horizon_drops", v.q.fq.horizon_drops);
			json_u64(j, "horizon_caps", v.q.fq.horizon_caps);
			json_u64(j, "flows_plimit", v.q.fq.flows_plimit);
			json_u64(j, "pkts_too_long", v.q.fq.pkts_too_long);
			json_u64(j, "allocation_errors", v.q.fq.allocation_errors);
			json_u64(j, "gc_flows", v.q.fq.gc_flows);
			json_obj_end(j);
		}
	}
	json_obj_end(j);
	json_bool(j, "has_shape_stats", v.has_stats);
	if (!v.has_stats)
		return;
	/* The same object as sluicectl stats -j writes (fmt.c). */
	sluice_rec_init(&r, j, NULL, 0);
	sluice_shape_stats_out(&r, &v.st);
}
