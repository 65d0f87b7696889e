// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The bench's side of the sluice datapath under BPF_PROG_TEST_RUN: the bpf
 * suite's harness (tests/lib/bpfrun.c) loads and configures it; here are the
 * policies, the prefills of a full table, timing, and the spare devices.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <sluice/sets.h>

#include "bench.h"

/* The harness's notes, as the bench's other messages. */
static void note(const char *line)
{
	fprintf(stderr, "sluice-bench: %s\n", line);
}

int bench_open(struct bpfrun *r, const struct bpfrun_opts *opts)
{
	struct bpfrun_opts o = *opts;
	struct sluice_settings set;
	int ret;

	bpfrun_notes(note);
	o.real_clock = true;
	o.tc = true;
	if (o.table != BPFRUN_SETS)
		o.table = BPFRUN_LRU;
	if (!o.max_keys)
		o.max_keys = SLUICE_DEFAULT_MAX_KEYS;
	if (!o.max_log_keys)
		o.max_log_keys = SLUICE_DEFAULT_MAX_LOG_KEYS;
	ret = bpfrun_open(r, &o);
	if (ret)
		return ret;
	sluice_settings_init(&set);
	ret = bpfrun_configure(r, &set);
	if (ret)
		bpfrun_close(r);
	return ret;
}

int bench_map_memory(int map_fd, __u64 *bytes, __u32 *max_entries)
{
	/* The library's figure: the same on every kernel (libsluice.h). */
	*max_entries = sluice_map_max_entries(map_fd);
	*bytes = sluice_map_bytes(map_fd);
	return *max_entries ? 0 : -ENOENT;
}

int bench_policy(struct sluice_policy *p, unsigned int algo, __u64 count, __u64 period_ns,
		 __u64 burst, __u64 window_ns, char *err, size_t errlen)
{
	int ret;

	memset(p, 0, sizeof(*p));
	p->algo = (__u8)algo;
	p->action = SLUICE_ACT_LIMIT;
	p->prefix4 = 32;
	p->prefix6 = 64;
	if (algo == SLUICE_ALGO_TOKEN_BUCKET || algo == SLUICE_ALGO_LEAKY_BUCKET) {
		if (!burst)
			burst = sluice_default_burst(count, period_ns);
		ret = sluice_limit_set(&p->pkt, count, period_ns, burst, err, errlen);
	} else {
		p->window = window_ns << SLUICE_TICK_SHIFT;
		ret = sluice_window_set(p, count, period_ns, err, errlen);
	}
	return ret ? ret : sluice_policy_check(p, err, errlen);
}

int bench_prefill(int map_fd, size_t value_size, __u32 tag, __u8 family, __u8 prefixlen,
		  const __u8 *src, __u32 first, __u32 n)
{
	const __u32 chunk = 65536;
	struct sluice_key *keys;
	void *vals;
	__u32 done = 0;
	int ret = 0;

	keys = calloc(chunk, sizeof(*keys));
	vals = calloc(chunk, value_size);
	if (!keys || !vals) {
		ret = -ENOMEM;
		goto out;
	}
	while (done < n) {
		__u32 cnt = n - done < chunk ? n - done : chunk, i;
		LIBBPF_OPTS(bpf_map_batch_opts, opts);

		for (i = 0; i < cnt; i++) {
			struct sluice_key *k = &keys[i];
			__u32 r = first + done + i;

			/* What the datapath builds under bench_vary_keys. */
			memset(k, 0, sizeof(*k));
			k->tag = tag;
			k->family = family;
			k->prefixlen = prefixlen;
			memcpy(k->addr, src, 16);
			memcpy(&k->addr[family == 4 ? 0 : 4], &r, 4);
			sluice_mask(k->addr, prefixlen);
		}
		if (bpf_map_update_batch(map_fd, keys, vals, &cnt, &opts)) {
			ret = -errno;
			goto out;
		}
		done += cnt;
	}
out:
	free(keys);
	free(vals);
	return ret;
}

/* Way w (of SLUICE_GROUP_WAYS) of the group whose first set is base_set,
 * and its set in *set: NULL when its set is past the table's nsets. An
 * empty way reads as a way of ident 0 for the count (set NULL). */
static struct sluice_way *way_of(__u8 *base, size_t setsz, __u32 nsets, __u32 base_set, int w,
				 __u8 **set)
{
	__u32 i = base_set + (__u32)w / SLUICE_SET_WAYS;
	__u8 *s;

	if (i >= nsets)
		return NULL;
	s = base + (size_t)i * setsz;
	if (set)
		*set = s;
	return &((struct sluice_way *)s)[w % SLUICE_SET_WAYS];
}

int bench_sets_prefill(struct bpfrun *o, __u32 tag, __u8 family, __u8 prefixlen, const __u8 *src,
		       __u32 first, __u32 n, __u64 s0_base, __u64 s0_step, __u32 meta,
		       __u32 *placed)
{
	int v6 = family == 6;
	size_t setsz = v6 ? sizeof(struct sluice_set6) : sizeof(struct sluice_set4);
	__u8 *base = o->keys.mem[v6];
	__u32 i;

	*placed = 0;
	if (!o->table_sets)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct sluice_key k;
		__u32 r = first + i, idx[2], empty[2];
		__u64 h, want;
		__u8 *set;
		int w, c, nset;

		/* What the datapath builds under bench_vary_keys. */
		memset(&k, 0, sizeof(k));
		k.tag = tag;
		k.family = family;
		k.prefixlen = prefixlen;
		memcpy(k.addr, src, 16);
		memcpy(&k.addr[v6 ? 12 : 0], &r, 4);
		sluice_mask(k.addr, prefixlen);
		h = sluice_key_hash(o->seed, &k);
		want = sluice_way_ident(&k, h);
		/* As a claim places it with nothing to evict: in the group of
		 * the two with more empty ways, its own on a tie, at the
		 * group's first empty way. */
		nset = sluice_set_pair(h, want, o->keys.nsets[v6], idx);
		for (c = 0; c < 2; c++) {
			empty[c] = 0;
			for (w = 0; w < SLUICE_GROUP_WAYS; w++) {
				struct sluice_way *e =
					way_of(base, setsz, o->keys.nsets[v6], idx[c], w, NULL);

				empty[c] += e && !e->ident;
			}
		}
		c = nset == 2 && empty[1] > empty[0];
		for (w = 0; w < SLUICE_GROUP_WAYS; w++) {
			struct sluice_way *way =
				way_of(base, setsz, o->keys.nsets[v6], idx[c], w, &set);
			struct sluice_way_aux *x;

			if (!way || way->ident)
				continue;
			if (v6) {
				struct sluice_way_aux6 *x6 =
					&((struct sluice_set6 *)set)->x[w % SLUICE_SET_WAYS];

				memcpy(x6->addr, k.addr, 16);
				x = &x6->a;
			} else {
				x = &((struct sluice_set4 *)set)->x[w % SLUICE_SET_WAYS];
			}
			x->s1 = 0;
			x->dropped = 0;
			x->meta = meta;
			way->s0 = s0_base + (__u64)r * s0_step;
			way->ident = want;
			(*placed)++;
			break;
		}
	}
	return 0;
}

int bench_sets_count(const struct bpfrun *o, __u8 family, __u64 now_ticks, __u32 *live, __u32 *held)
{
	int v6 = family == 6;
	size_t setsz = v6 ? sizeof(struct sluice_set6) : sizeof(struct sluice_set4);
	const __u8 *base = o->keys.mem[v6];
	__u32 i;
	int w;

	*live = *held = 0;
	if (!o->table_sets)
		return -EINVAL;
	for (i = 0; i < o->keys.nsets[v6]; i++) {
		const __u8 *set = base + (size_t)i * setsz;

		for (w = 0; w < SLUICE_SET_WAYS; w++) {
			const struct sluice_way *way = &((const struct sluice_way *)set)[w];
			const struct sluice_way_aux *x =
				v6 ? &((const struct sluice_set6 *)set)->x[w].a :
				     &((const struct sluice_set4 *)set)->x[w];

			if (!(way->ident >> 32 & SLUICE_WAY_LIVE))
				continue;
			(*live)++;
			if (sluice_way_free_at(way->ident, way->s0,
					       way->ident >> 32 & SLUICE_WAY_AUX ? x->s1 : 0,
					       x->meta) > now_ticks)
				(*held)++;
		}
	}
	return 0;
}

__u64 bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

int bench_test_run(int prog_fd, const struct bench_frame *f, __u32 repeat, double *ns, __u32 *kns,
		   __u32 *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = f->data, .data_size_in = f->len,
		    .repeat = repeat);
	__u64 t0, t1;

	t0 = bench_now_ns();
	if (bpf_prog_test_run_opts(prog_fd, &opts))
		return -errno;
	t1 = bench_now_ns();
	if (ns)
		*ns = (double)(t1 - t0) / repeat;
	if (kns)
		*kns = opts.duration;
	if (retval)
		*retval = opts.retval;
	return 0;
}

int bench_prog_runtime(int prog_fd, __u64 *run_time_ns, __u64 *run_cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	*run_time_ns = info.run_time_ns;
	*run_cnt = info.run_cnt;
	return 0;
}

int bench_pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

int bench_ncpus_online(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_min(const double *v, int n)
{
	double m = v[0];
	int i;

	for (i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

double bench_max(const double *v, int n)
{
	double m = v[0];
	int i;

	for (i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

#define MAX_HOLD 32
static int hold_ifindex[MAX_HOLD];
static int hold_n, hold_used;

int bench_hold_devices(const char *list)
{
	char buf[512], *tok, *save = NULL;

	if (strlen(list) >= sizeof(buf))
		return -E2BIG;
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int ifindex = (int)if_nametoindex(tok);

		if (!ifindex) {
			fprintf(stderr, "sluice-bench: there is no interface '%s' here\n", tok);
			return -ENODEV;
		}
		if (hold_n == MAX_HOLD)
			return -E2BIG;
		hold_ifindex[hold_n++] = ifindex;
	}
	return 0;
}

bool bench_held(void)
{
	return hold_n > 0;
}

int bench_hold(int prog_fd)
{
	int ret;

	if (hold_used == hold_n)
		return -ENOSPC;
	ret = bpf_xdp_attach(hold_ifindex[hold_used], prog_fd, XDP_FLAGS_DRV_MODE, NULL);
	if (ret)
		return ret;
	hold_used++;
	return 0;
}

void bench_hold_release(void)
{
	while (hold_used > 0)
		bpf_xdp_detach(hold_ifindex[--hold_used], XDP_FLAGS_DRV_MODE, NULL);
}
