// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * One loaded sluice datapath for BPF_PROG_TEST_RUN, configured through its
 * config map exactly as the loader configures an attached one.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/mman.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"
#include <sys/random.h>
#include <sluice/sets.h>

#include "sluice.skel.h"

int bench_obj_load(struct bench_obj *o, const struct bench_obj_opts *opts)
{
	struct sluice_settings set;
	int ret;

	memset(o, 0, sizeof(*o));
	o->cfg = MAP_FAILED;
	o->ncpus = libbpf_num_possible_cpus();
	if (o->ncpus <= 0)
		return o->ncpus ? o->ncpus : -EINVAL;
	o->skel = sluice_bpf__open();
	if (!o->skel)
		return -errno;
	o->skel->rodata->bench_parse_only = opts->parse_only;
	o->skel->rodata->bench_vary_keys = opts->vary_keys;
	if (opts->max_keys)
		bpf_map__set_max_entries(o->skel->maps.sluice_buckets, opts->max_keys);
	if (opts->max_log_keys)
		bpf_map__set_max_entries(o->skel->maps.sluice_logs, opts->max_log_keys);
	if (opts->sets) {
		/* What the loader does for --table sets (tests/lib/bpfrun.c too). */
		int f;

		o->table_sets = true;
		o->skel->rodata->table_sets = 1;
		for (f = 0; f < 2; f++) {
			o->nsets[f] = sluice_sets_for(opts->sets_keys[f]);
			o->skel->rodata->sets_n[f] = o->nsets[f];
		}
		ret = bpf_map__set_max_entries(o->skel->maps.sluice_sets4, o->nsets[0]);
		if (!ret)
			ret = bpf_map__set_max_entries(o->skel->maps.sluice_sets6, o->nsets[1]);
		if (ret)
			goto err;
		if (getrandom(&o->seed, sizeof(o->seed), 0) != sizeof(o->seed))
			o->seed = bench_now_ns() * 0x9e3779b97f4a7c15ULL;
	}
	ret = sluice_bpf__load(o->skel);
	if (ret)
		goto err;
	o->prog_fd = bpf_program__fd(o->skel->progs.sluice_xdp);
	o->stats_fd = bpf_map__fd(o->skel->maps.sluice_stats);
	o->rstats_fd = bpf_map__fd(o->skel->maps.sluice_rstats);
	o->rules_fd = bpf_map__fd(o->skel->maps.sluice_rules);
	o->buckets_fd = bpf_map__fd(o->skel->maps.sluice_buckets);
	o->logs_fd = bpf_map__fd(o->skel->maps.sluice_logs);
	o->sets_fd[0] = bpf_map__fd(o->skel->maps.sluice_sets4);
	o->sets_fd[1] = bpf_map__fd(o->skel->maps.sluice_sets6);
	o->cfg = mmap(NULL, sizeof(*o->cfg), PROT_READ | PROT_WRITE, MAP_SHARED,
		      bpf_map__fd(o->skel->maps.sluice_config), 0);
	if (o->cfg == MAP_FAILED) {
		ret = -errno;
		goto err;
	}
	o->cfg->layout = SLUICE_LAYOUT_VERSION;
	if (o->table_sets) {
		o->cfg->kind |= SLUICE_KIND_SETS;
		o->cfg->set_seed = o->seed;
	}
	sluice_settings_init(&set);
	bench_obj_set(o, &set);
	return 0;
err:
	bench_obj_close(o);
	return ret;
}

void bench_obj_close(struct bench_obj *o)
{
	if (o->cfg && o->cfg != MAP_FAILED)
		munmap(o->cfg, sizeof(*o->cfg));
	o->cfg = NULL;
	sluice_bpf__destroy(o->skel);
	o->skel = NULL;
}

void bench_obj_set(struct bench_obj *o, const struct sluice_settings *s)
{
	__u32 idle = !(__atomic_load_n(&o->cfg->active, __ATOMIC_ACQUIRE) & 1);

	/* The idle half first, then the flip, then the other half: both halves
	 * end up equal, as after a loader's commit. */
	o->cfg->settings[idle] = *s;
	__atomic_store_n(&o->cfg->active, idle, __ATOMIC_RELEASE);
	o->cfg->settings[!idle] = *s;
	o->cfg->seq++;
}

static int sum_percpu(int fd, __u32 key, int ncpus, __u64 *out, size_t nwords)
{
	__u64 *vals = calloc((size_t)ncpus, nwords * sizeof(__u64));
	int cpu, ret = 0;
	size_t i;

	if (!vals)
		return -ENOMEM;
	memset(out, 0, nwords * sizeof(__u64));
	if (bpf_map_lookup_elem(fd, &key, vals)) {
		ret = -errno;
		goto out;
	}
	for (cpu = 0; cpu < ncpus; cpu++)
		for (i = 0; i < nwords; i++)
			out[i] += vals[(size_t)cpu * nwords + i];
out:
	free(vals);
	return ret;
}

int bench_obj_stats(const struct bench_obj *o, struct sluice_stats *out)
{
	return sum_percpu(o->stats_fd, 0, o->ncpus, (__u64 *)out, sizeof(*out) / sizeof(__u64));
}

int bench_obj_rstats(const struct bench_obj *o, __u32 slot, struct sluice_rstats *out)
{
	return sum_percpu(o->rstats_fd, slot, o->ncpus, (__u64 *)out, sizeof(*out) / 8);
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

int bench_rule_add(struct bench_obj *o, const char *cidr, __u8 gen,
		   const struct sluice_policy *p)
{
	struct sluice_rule_key key;
	struct sluice_rule rule = { .policy = *p };
	struct sluice_cidr c;
	char err[SLUICE_ERR_LEN];

	if (sluice_parse_cidr(cidr, &c, err, sizeof(err))) {
		fprintf(stderr, "sluice-bench: %s\n", err);
		return -EINVAL;
	}
	rule.family = c.family;
	rule.prefixlen = c.prefixlen;
	sluice_rule_key_init(&key, gen, c.family, c.addr, c.prefixlen);
	return bpf_map_update_elem(o->rules_fd, &key, &rule, BPF_ANY) ? -errno : 0;
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

int bench_sets_prefill(struct bench_obj *o, __u32 tag, __u8 family, __u8 prefixlen,
		       const __u8 *src, __u32 first, __u32 n, __u64 s0_base, __u64 s0_step,
		       __u32 meta, __u32 *placed)
{
	int v6 = family == 6;
	size_t setsz = v6 ? sizeof(struct sluice_set6) : sizeof(struct sluice_set4);
	size_t len = (size_t)o->nsets[v6] * setsz, pg = (size_t)sysconf(_SC_PAGESIZE);
	__u8 *base;
	__u32 i;

	*placed = 0;
	if (!o->table_sets)
		return -EINVAL;
	len = (len + pg - 1) / pg * pg;
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, o->sets_fd[v6], 0);
	if (base == MAP_FAILED)
		return -errno;
	for (i = 0; i < n; i++) {
		struct sluice_key k;
		__u32 r = first + i;
		__u64 h;
		__u8 *set;
		int w;

		/* What the datapath builds under bench_vary_keys. */
		memset(&k, 0, sizeof(k));
		k.tag = tag;
		k.family = family;
		k.prefixlen = prefixlen;
		memcpy(k.addr, src, 16);
		memcpy(&k.addr[v6 ? 12 : 0], &r, 4);
		sluice_mask(k.addr, prefixlen);
		h = sluice_key_hash(o->seed, &k);
		set = base + (size_t)sluice_set_index(h, o->nsets[v6]) * setsz;
		for (w = 0; w < SLUICE_SET_WAYS; w++) {
			struct sluice_way *way = &((struct sluice_way *)set)[w];
			struct sluice_way_aux *x;

			if (way->ident)
				continue;
			if (v6) {
				struct sluice_way_aux6 *x6 = &((struct sluice_set6 *)set)->x[w];

				memcpy(x6->addr, k.addr, 16);
				x = &x6->a;
			} else {
				x = &((struct sluice_set4 *)set)->x[w];
			}
			x->s1 = 0;
			x->dropped = 0;
			x->meta = meta;
			way->s0 = s0_base + (__u64)r * s0_step;
			way->ident = sluice_way_ident(&k, h);
			(*placed)++;
			break;
		}
	}
	munmap(base, len);
	return 0;
}

int bench_sets_count(struct bench_obj *o, __u8 family, __u64 now_ticks, __u32 *live,
		     __u32 *held)
{
	int v6 = family == 6;
	size_t setsz = v6 ? sizeof(struct sluice_set6) : sizeof(struct sluice_set4);
	size_t len = (size_t)o->nsets[v6] * setsz, pg = (size_t)sysconf(_SC_PAGESIZE);
	const __u8 *base;
	__u32 i;
	int w;

	*live = *held = 0;
	if (!o->table_sets)
		return -EINVAL;
	len = (len + pg - 1) / pg * pg;
	base = mmap(NULL, len, PROT_READ, MAP_SHARED, o->sets_fd[v6], 0);
	if (base == MAP_FAILED)
		return -errno;
	for (i = 0; i < o->nsets[v6]; i++) {
		const __u8 *set = base + (size_t)i * setsz;

		for (w = 0; w < SLUICE_SET_WAYS; w++) {
			const struct sluice_way *way = &((const struct sluice_way *)set)[w];
			const struct sluice_way_aux *x =
				v6 ? &((const struct sluice_set6 *)set)->x[w].a
				   : &((const struct sluice_set4 *)set)->x[w];

			if (!(way->ident >> 32 & SLUICE_WAY_LIVE))
				continue;
			(*live)++;
			if (sluice_way_free_at(way->ident, way->s0,
					       way->ident >> 32 & SLUICE_WAY_AUX ? x->s1 : 0,
					       x->meta) > now_ticks)
				(*held)++;
		}
	}
	munmap((void *)base, len);
	return 0;
}

__u64 bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

int bench_test_run(int prog_fd, const struct bench_frame *f, __u32 repeat, double *ns,
		   __u32 *kns, __u32 *retval)
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
