// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* BPF_PROG_TEST_RUN harness for the sluice datapath (see bpfrun.h). */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <sluice/algo.h>
#include <sluice/sets.h>
#include "frame.h"
#include "libsluice.h"
#include "sluice.skel.h"
#include "bpfrun.h"
#include "tap.h"

static void (*note_fn)(const char *line);

void bpfrun_notes(void (*fn)(const char *line))
{
	note_fn = fn;
}

/* One note of the harness: a TAP note, or a line to note_fn. */
static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (note_fn)
		note_fn(line);
	else
		tap_diag("%s", line);
}

/* libbpf's warnings become TAP notes; its chatter is dropped. A verifier
 * log comes whole in one warning: its head, and its tail, which says why. */
static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512], *all = NULL;
	size_t n;

	if (level != LIBBPF_WARN)
		return 0;
	if (vasprintf(&all, fmt, ap) < 0)
		return 0;
	snprintf(line, sizeof(line), "%s", all);
	n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	tap_diag("libbpf: %s", line);
	n = strlen(all);
	if (n > 2048) {
		char *tail = all + n - 1536, *nl = strchr(tail, '\n');

		for (tail = nl ? nl + 1 : tail; (nl = strchr(tail, '\n')); tail = nl + 1) {
			*nl = '\0';
			tap_diag("libbpf: ... %s", tail);
		}
	}
	free(all);
	return 0;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct bpfrun *r = ctx;

	if (size < sizeof(struct sluice_event))
		return 0;
	if (r->nr_events == r->cap_events) {
		size_t cap = r->cap_events ? 2 * r->cap_events : 64;
		struct sluice_event *ev = realloc(r->events, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		r->events = ev;
		r->cap_events = cap;
	}
	memcpy(&r->events[r->nr_events++], data, sizeof(struct sluice_event));
	return 0;
}

bool bpfrun_load(struct bpfrun *r, const struct bpfrun_opts *opts)
{
	if (!bpfrun_open(r, opts))
		return true;
	tap_ok(false, "load the sluice program with the %s clock",
	       opts && opts->real_clock ? "real" : "test");
	return false;
}

void bpfrun_one_cpu(void)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

/* The program asked which table the run is for: its behaviour depends on
 * SLUICE_TEST_TABLE. With SLUICE_TEST_TABLE_USERS=FILE (tests/run.sh's first
 * bpf pass) its name is added to FILE, once: the pass on the sets table runs
 * only the programs listed there (the others fix their tables themselves and
 * would repeat every line). */
static void note_table_user(void)
{
	static bool noted;
	const char *path = getenv("SLUICE_TEST_TABLE_USERS");
	FILE *f;

	if (noted || !path || !*path)
		return;
	noted = true;
	f = fopen(path, "a");
	if (!f) {
		note("Couldn't open %s: %s", path, strerror(errno));
		return;
	}
	/* One short line in append mode: one write, whole, beside the other
	 * programs of the pass. */
	fprintf(f, "%s\n", program_invocation_short_name);
	fclose(f);
}

const char *bpfrun_default_table(void)
{
	const char *e = getenv("SLUICE_TEST_TABLE");

	note_table_user();
	return e && !strcmp(e, "sets") ? "sets" : "lru";
}

/* The set-associative table of an opened skeleton: its sets per family, its
 * kind and seed. */
static int open_sets(struct bpfrun *r, struct sluice_bpf *skel, const struct bpfrun_opts *opts)
{
	const char *e = getenv("SLUICE_TEST_SEED");
	__u32 n[2];
	int v6, err;

	for (v6 = 0; v6 < 2; v6++) {
		__u32 keys = opts->sets_keys[v6] ? opts->sets_keys[v6] : opts->max_keys;

		n[v6] = opts->sets_n[v6] ? opts->sets_n[v6] : sluice_sets_for(keys ? keys : 4096);
		skel->rodata->sets_n[v6] = n[v6];
	}
	skel->rodata->table_sets = 1;
	skel->rodata->sets_n[2] = sluice_sets_for(opts->max_flows ? opts->max_flows : 4096);
	err = bpf_map__set_max_entries(skel->maps.sluice_sets4, n[0]);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.sluice_sets6, n[1]);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.sluice_setsf, skel->rodata->sets_n[2]);
	if (err)
		return err;
	r->kind |= SLUICE_KIND_SETS;
	if (e)
		r->seed = strtoull(e, NULL, 0);
	else if (getrandom(&r->seed, sizeof(r->seed), 0) != sizeof(r->seed))
		r->seed = (__u64)time(NULL) * 0x9e3779b97f4a7c15ULL;
	return 0;
}

int bpfrun_open(struct bpfrun *r, const struct bpfrun_opts *opts)
{
	struct bpfrun_opts none = { 0 };
	struct sluice_bpf *skel;
	int err;

	if (!opts)
		opts = &none;
	memset(r, 0, sizeof(*r));
	if (!note_fn)
		libbpf_set_print(print_libbpf);
	r->ncpus = libbpf_num_possible_cpus();
	if (r->ncpus <= 0) {
		note("Couldn't count the possible CPUs: %s", strerror(-r->ncpus));
		return r->ncpus;
	}
	skel = sluice_bpf__open();
	if (!skel) {
		err = -errno;
		note("Couldn't open the sluice skeleton: %s", strerror(-err));
		return err;
	}
	bpf_program__set_autoload(skel->progs.sluice_tc, opts->tc);
	skel->rodata->test_clock = !opts->real_clock;
	skel->rodata->bench_vary_keys = opts->vary_keys;
	skel->rodata->bench_parse_only = opts->parse_only;
	skel->rodata->wide_keys = opts->max_flows != 0;
	r->table_sets = opts->table ? opts->table == BPFRUN_SETS :
				      !strcmp(bpfrun_default_table(), "sets");
	if (r->table_sets) {
		err = open_sets(r, skel, opts);
		if (err) {
			sluice_bpf__destroy(skel);
			return err;
		}
	}
	/* Small tables: preallocating a million LRU entries per test costs
	 * seconds and hundreds of MB for nothing. */
	err = bpf_map__set_max_entries(skel->maps.sluice_buckets,
				       opts->max_keys ? opts->max_keys : 4096);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.sluice_logs,
					       opts->max_log_keys ? opts->max_log_keys : 1024);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.sluice_flows,
					       opts->max_flows ? opts->max_flows : 4096);
	if (!err && opts->buckets_type)
		err = bpf_map__set_type(skel->maps.sluice_buckets, opts->buckets_type);
	if (!err && opts->buckets_flags)
		err = bpf_map__set_map_flags(skel->maps.sluice_buckets,
					     bpf_map__map_flags(skel->maps.sluice_buckets) |
						     opts->buckets_flags);
	if (!err)
		err = sluice_bpf__load(skel);
	if (err) {
		note("Couldn't load the sluice program: %s", strerror(-err));
		sluice_bpf__destroy(skel);
		return err;
	}
	r->skel = skel;
	r->prog_fd = bpf_program__fd(skel->progs.sluice_xdp);
	r->config_fd = bpf_map__fd(skel->maps.sluice_config);
	r->buckets_fd = bpf_map__fd(skel->maps.sluice_buckets);
	r->logs_fd = bpf_map__fd(skel->maps.sluice_logs);
	r->rules_fd = bpf_map__fd(skel->maps.sluice_rules);
	r->hash_fd = bpf_map__fd(skel->maps.sluice_rulehash);
	r->stats_fd = bpf_map__fd(skel->maps.sluice_stats);
	r->rstats_fd = bpf_map__fd(skel->maps.sluice_rstats);
	r->events_fd = bpf_map__fd(skel->maps.sluice_events);
	r->tc_fd = opts->tc ? bpf_program__fd(skel->progs.sluice_tc) : -1;
	r->shape_stats_fd = bpf_map__fd(skel->maps.sluice_shape_stats);
	r->penalty_fd = bpf_map__fd(skel->maps.sluice_penalty);
	r->flows_fd = bpf_map__fd(skel->maps.sluice_flows);
	r->setsf_fd = bpf_map__fd(skel->maps.sluice_setsf);
	r->also_fd = bpf_map__fd(skel->maps.sluice_also);
	r->xstats_fd = bpf_map__fd(skel->maps.sluice_xstats);
	r->sets_fd[0] = bpf_map__fd(skel->maps.sluice_sets4);
	r->sets_fd[1] = bpf_map__fd(skel->maps.sluice_sets6);
	err = sluice_keytab_open(&r->keys, r->table_sets, r->seed, r->buckets_fd, r->sets_fd[0],
				 r->sets_fd[1]);
	if (err) {
		note("Couldn't map the key table: %s", strerror(-err));
		sluice_bpf__destroy(skel);
		r->skel = NULL;
		return err;
	}
	r->rb = ring_buffer__new(r->events_fd, on_event, r, NULL);
	if (!r->rb) {
		err = -errno;
		note("Couldn't open the event ring buffer: %s", strerror(-err));
		bpfrun_close(r);
		return err;
	}
	return 0;
}

void bpfrun_close(struct bpfrun *r)
{
	sluice_keytab_close(&r->keys);
	ring_buffer__free(r->rb);
	sluice_bpf__destroy(r->skel);
	free(r->events);
	memset(r, 0, sizeof(*r));
}

int bpfrun_configure(struct bpfrun *r, const struct sluice_settings *set)
{
	struct sluice_config cfg;
	__u32 zero = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.layout = SLUICE_LAYOUT_VERSION;
	cfg.active = 0;
	cfg.seq = 1;
	cfg.settings[0] = *set;
	cfg.settings[1] = *set;
	memcpy(cfg.hash_lens, r->hash_lens, sizeof(cfg.hash_lens));
	cfg.kind = r->kind;
	cfg.set_seed = r->seed;
	cfg.shape_horizon_us = r->horizon_us;
	if (bpf_map_update_elem(r->config_fd, &zero, &cfg, BPF_ANY)) {
		int err = -errno;

		note("Couldn't write sluice_config: %s", strerror(-err));
		return err;
	}
	return bpfrun_put_policy(r, &set->def);
}

int bpfrun_put_policy(struct bpfrun *r, const struct sluice_policy *p)
{
	int fd = bpf_map__fd(r->skel->maps.sluice_policies), half;

	for (half = 0; half < 2; half++) {
		__u32 k = SLUICE_POLICY_AT(half, SLUICE_TAG_SLOT(p->tag));

		if (bpf_map_update_elem(fd, &k, p, BPF_ANY)) {
			int err = -errno;

			note("Couldn't write sluice_policies: %s", strerror(-err));
			return err;
		}
	}
	return 0;
}

/* Delete every key of a hash-like map. */
static int empty_map(int fd, size_t key_size)
{
	__u8 key[64];

	if (key_size > sizeof(key))
		return -EINVAL;
	while (!bpf_map_get_next_key(fd, NULL, key))
		if (bpf_map_delete_elem(fd, key))
			return -errno;
	return errno == ENOENT ? 0 : -errno;
}

static int zero_percpu(int fd, __u32 nr, size_t value_size, int ncpus)
{
	void *zero = calloc((size_t)ncpus, value_size);
	int err = 0;
	__u32 k;

	if (!zero)
		return -ENOMEM;
	for (k = 0; k < nr && !err; k++)
		if (bpf_map_update_elem(fd, &k, zero, BPF_ANY))
			err = -errno;
	free(zero);
	return err;
}

/* Every entry of an array map to zeros. */
static int zero_array(int fd, size_t value_size)
{
	static const __u8 zero[512];
	__u32 i, n = sluice_map_max_entries(fd);

	if (value_size > sizeof(zero))
		return -E2BIG;
	for (i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, &i, zero, BPF_ANY))
			return -errno;
	return 0;
}

int bpfrun_reset(struct bpfrun *r)
{
	int err;

	err = empty_map(r->buckets_fd, sizeof(struct sluice_key));
	if (!err && r->table_sets) {
		int v6;

		for (v6 = 0; v6 < 2; v6++)
			memset(r->keys.mem[v6], 0, r->keys.len[v6]);
	}
	if (!err)
		err = empty_map(r->logs_fd, sizeof(struct sluice_key));
	if (!err)
		err = empty_map(r->rules_fd, sizeof(struct sluice_rule_key));
	if (!err)
		err = empty_map(r->hash_fd, sizeof(struct sluice_rule_key));
	if (!err)
		err = zero_percpu(r->stats_fd, 1, sizeof(struct sluice_stats), r->ncpus);
	if (!err)
		err = zero_percpu(r->rstats_fd, SLUICE_MAX_RULES, sizeof(struct sluice_rstats),
				  r->ncpus);
	if (!err)
		err = zero_percpu(r->shape_stats_fd, 1, sizeof(struct sluice_shape_stats),
				  r->ncpus);
	if (!err)
		err = empty_map(r->penalty_fd, sizeof(struct sluice_key));
	if (!err)
		err = empty_map(r->flows_fd, sizeof(struct sluice_fkey));
	if (!err)
		err = zero_array(r->setsf_fd, sizeof(struct sluice_setf));
	if (!err)
		err = zero_percpu(r->xstats_fd, 1, sizeof(struct sluice_xstats), r->ncpus);
	if (err) {
		note("Couldn't reset the sluice maps: %s", strerror(-err));
		return err;
	}
	ring_buffer__consume(r->rb);
	r->nr_events = 0;
	return 0;
}

void bpfrun_clock(struct bpfrun *r, __u64 ns)
{
	/* .bss is mmapped: the next run reads it. */
	r->skel->bss->test_now_ns = ns;
}

int bpfrun_run(struct bpfrun *r, const void *frame, __u32 len, __u32 *action)
{
	return bpfrun_run_repeat(r, frame, len, 1, action);
}

int bpfrun_run_repeat(struct bpfrun *r, const void *frame, __u32 len, __u32 repeat, __u32 *action)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .repeat = repeat);
	int err;

	err = bpf_prog_test_run_opts(r->prog_fd, &o);
	if (err) {
		err = -errno;
		if (err != -EINVAL)
			note("Couldn't run the program on a %u-byte frame: %s", len,
			     strerror(-err));
		return err;
	}
	*action = o.retval;
	return 0;
}

int bpfrun_run_tc(struct bpfrun *r, const void *frame, __u32 len, struct __sk_buff *ctx,
		  __u32 *retval)
{
	struct __sk_buff none;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .repeat = 1);
	int err;

	if (!ctx) {
		memset(&none, 0, sizeof(none));
		ctx = &none;
	}
	o.ctx_in = ctx;
	o.ctx_size_in = sizeof(*ctx);
	o.ctx_out = ctx;
	o.ctx_size_out = sizeof(*ctx);
	err = bpf_prog_test_run_opts(r->tc_fd, &o);
	if (err) {
		err = -errno;
		if (err != -EINVAL)
			note("Couldn't run the tc program on a %u-byte frame: %s", len,
			     strerror(-err));
		return err;
	}
	*retval = o.retval;
	return 0;
}

int bpfrun_shape_stats(struct bpfrun *r, struct sluice_shape_stats *out)
{
	size_t n = sizeof(*out) / sizeof(__u64);
	__u64 *v = calloc((size_t)r->ncpus, sizeof(*out));
	__u32 zero = 0;
	int c;
	size_t i;

	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(r->shape_stats_fd, &zero, v)) {
		int err = -errno;

		free(v);
		return err;
	}
	memset(out, 0, sizeof(*out));
	for (c = 0; c < r->ncpus; c++) {
		const __u64 *cpu = v + (size_t)c * n;

		for (i = 0; i < n; i++) {
			__u64 *o = (__u64 *)out + i;

			if (i == offsetof(struct sluice_shape_stats, max_delay_ns) / sizeof(__u64))
				*o = cpu[i] > *o ? cpu[i] : *o;
			else
				*o += cpu[i];
		}
	}
	free(v);
	return 0;
}

int bpfrun_send(struct bpfrun *r, const char *src, __u32 len)
{
	__u8 frame[FRAME_MAX];
	__u32 action;
	int err;

	if (!frame_ip(frame, src, len, NULL)) {
		note("Couldn't build a %u-byte frame from %s", len, src);
		return -EINVAL;
	}
	err = bpfrun_run(r, frame, len, &action);
	return err ? err : (int)action;
}

const char *bpfrun_sendn(struct bpfrun *r, const char *src, __u32 len, unsigned int n, char *out)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		int a = bpfrun_send(r, src, len);

		out[i] = a == XDP_PASS ? 'P' : a == XDP_DROP ? 'D' : '?';
	}
	out[n] = '\0';
	return out;
}

/* The key of src under tag, masked to prefixlen: 0, or -EINVAL. */
int bpfrun_key(__u32 tag, const char *src, __u8 prefixlen, struct sluice_key *key)
{
	struct sluice_cidr c;

	if (sluice_parse_addr(src, &c, NULL, 0))
		return -EINVAL;
	memset(key, 0, sizeof(*key));
	key->tag = tag;
	key->family = c.family;
	key->prefixlen = prefixlen;
	memcpy(key->addr, c.addr, 16);
	sluice_mask(key->addr, prefixlen);
	return 0;
}

int bpfrun_lookup(struct bpfrun *r, bool logs, __u32 tag, const char *src, __u8 prefixlen,
		  void *value)
{
	struct sluice_key key;

	if (bpfrun_key(tag, src, prefixlen, &key))
		return -EINVAL;
	if (!logs)
		return sluice_keytab_lookup(&r->keys, &key, value);
	if (bpf_map_lookup_elem(r->logs_fd, &key, value))
		return -errno;
	return 0;
}

int bpfrun_box(struct bpfrun *r, __u32 tag, const char *src, __u8 prefixlen, struct sluice_box *out)
{
	struct sluice_key key;

	if (bpfrun_key(tag, src, prefixlen, &key))
		return -EINVAL;
	if (bpf_map_lookup_elem(r->penalty_fd, &key, out))
		return -errno;
	return 0;
}

int bpfrun_stats(struct bpfrun *r, struct sluice_stats *out)
{
	return sluice_percpu_sum(r->stats_fd, 0, (__u64 *)out, sizeof(*out) / sizeof(__u64));
}

int bpfrun_xstats(struct bpfrun *r, struct sluice_xstats *out)
{
	return sluice_percpu_sum(r->xstats_fd, 0, (__u64 *)out, sizeof(*out) / sizeof(__u64));
}

int bpfrun_rstats(struct bpfrun *r, __u32 slot, struct sluice_rstats *out)
{
	return sluice_percpu_sum(r->rstats_fd, slot, (__u64 *)out, sizeof(*out) / sizeof(__u64));
}

int bpfrun_count_keys(struct bpfrun *r, bool logs)
{
	return (int)(logs ? sluice_count_keys(r->logs_fd) : sluice_keytab_count(&r->keys));
}

int bpfrun_events(struct bpfrun *r)
{
	return ring_buffer__consume(r->rb);
}

bool bpfrun_stats_eq(const struct sluice_stats *got, const struct sluice_stats *want,
		     const char *fmt, ...)
{
	char name[256];
	va_list ap;
	bool same;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	same = !memcmp(got, want, sizeof(*got));
	tap_ok(same, "%s", name);
	if (same)
		return true;
	for (i = 0; i < sluice_stats_nfields; i++) {
		size_t off = sluice_stats_fields[i].offset;
		__u64 g, w;

		if (off >= sizeof(*got))
			continue; /* a field of sluice_xstats, not of these */
		g = *(const __u64 *)((const char *)got + off);
		w = *(const __u64 *)((const char *)want + off);
		if (g != w)
			tap_diag("  stats.%s: got %llu, want %llu", sluice_stats_fields[i].name,
				 (unsigned long long)g, (unsigned long long)w);
	}
	return false;
}

static int put_rule(struct bpfrun *r, int fd, __u8 gen, const char *cidr,
		    const struct sluice_policy *p, __u32 slot)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_rule_key key;
	struct sluice_rule rule;
	struct sluice_cidr c;
	int ret;

	ret = sluice_parse_cidr(cidr, &c, err, sizeof(err));
	if (ret) {
		note("Couldn't parse rule %s: %s", cidr, err);
		return ret;
	}
	memset(&rule, 0, sizeof(rule));
	sluice_rule_key_init(&key, gen, c.family, c.addr, c.prefixlen);
	rule.policy = *p;
	rule.policy.tag = SLUICE_TAG(slot, p->algo, 1);
	rule.family = c.family;
	rule.prefixlen = c.prefixlen;
	if (bpf_map_update_elem(fd, &key, &rule, BPF_ANY)) {
		ret = -errno;
		note("Couldn't insert rule %s: %s", cidr, strerror(-ret));
		return ret;
	}
	return bpfrun_put_policy(r, &rule.policy);
}

int bpfrun_rule(struct bpfrun *r, __u8 gen, const char *cidr, const struct sluice_policy *p,
		__u32 slot)
{
	return put_rule(r, r->rules_fd, gen, cidr, p, slot);
}

int bpfrun_hash_rule(struct bpfrun *r, __u8 gen, const char *cidr, const struct sluice_policy *p,
		     __u32 slot)
{
	return put_rule(r, r->hash_fd, gen, cidr, p, slot);
}

bool bpfrun_setup(struct bpfrun *r, struct sluice_settings *set, __u64 burst)
{
	if (bpfrun_reset(r))
		return false;
	sluice_settings_init(set);
	if (sluice_limit_set(&set->def.pkt, 1, BPFRUN_HOUR, burst, NULL, 0))
		return false;
	bpfrun_clock(r, SCN_T0);
	return !bpfrun_configure(r, set);
}

void bpfrun_policy(struct sluice_policy *p, __u8 action, __u64 burst)
{
	memset(p, 0, sizeof(*p));
	p->action = action;
	p->algo = SLUICE_ALGO_TOKEN_BUCKET;
	p->prefix4 = 32;
	p->prefix6 = 64;
	if (action == SLUICE_ACT_LIMIT)
		sluice_limit_set(&p->pkt, 1, BPFRUN_HOUR, burst, NULL, 0);
}

bool bpfrun_expect(struct bpfrun *r, const char *src, __u32 len, const char *want, const char *fmt,
		   ...)
{
	char got[256], name[256];
	size_t n = strlen(want);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	if (n >= sizeof(got))
		return tap_ok(false, "%s: at most %zu frames at once", name, sizeof(got) - 1);
	bpfrun_sendn(r, src, len, (unsigned int)n, got);
	if (tap_ok(!strcmp(got, want), "%s", name))
		return true;
	tap_diag("  got %s", got);
	return false;
}

int bpfrun_scenario(struct bpfrun *r, const struct sluice_policy *p, const char *rule_cidr,
		    const char *src, const struct scn_pkt *pkts, size_t nr, int *verdicts)
{
	struct sluice_settings set;
	__u8 frame[FRAME_MAX];
	size_t i;
	int err;

	err = bpfrun_reset(r);
	if (err)
		return err;
	sluice_settings_init(&set);
	if (rule_cidr) {
		set.nr_rules = 1;
		err = bpfrun_rule(r, 0, rule_cidr, p, BPFRUN_RULE_SLOT);
		if (err)
			return err;
	} else {
		set.def = *p;
	}
	err = bpfrun_configure(r, &set);
	if (err)
		return err;
	for (i = 0; i < nr; i++) {
		size_t len = frame_ip(frame, src, pkts[i].len, NULL);
		__u32 action;

		if (!len) {
			note("Couldn't build a %u-byte frame from %s", pkts[i].len, src);
			return -EINVAL;
		}
		bpfrun_clock(r, pkts[i].t_ns);
		err = bpfrun_run(r, frame, (__u32)len, &action);
		if (err)
			return err;
		verdicts[i] = action == XDP_PASS ? SLUICE_PASS :
			      action == XDP_DROP ? SLUICE_DROP :
						   -1;
	}
	return 0;
}

/* ---- frames ---- */

size_t frame_ip(__u8 *buf, const char *src, __u32 len, const struct frame_opts *o)
{
	struct sluice_frame f = {
		.dst_mac = { 0x02, 0, 0, 0, 0, 0x02 },
		.src_mac = { 0x02, 0, 0, 0, 0, 0x01 },
		.sport = 1234,
		.dport = 9, /* discard */
		.len = len,
	};
	int i;

	if (len > FRAME_MAX || sluice_parse_addr(src, &f.src, NULL, 0))
		return 0;
	sluice_parse_addr(f.src.family == 6 ? "2001:2::fe" : "198.19.255.254", &f.dst, NULL, 0);
	if (o) {
		f.nr_vlans = o->vlans;
		for (i = 0; i < o->vlans && i < SLUICE_FRAME_MAX_VLANS; i++)
			f.vlan[i] = (__u16)(100 + i);
		f.ihl = o->ihl;
	}
	return sluice_frame_build(&f, buf, NULL, 0) ? 0 : len;
}

size_t frame_arp(__u8 *buf)
{
	static const __u8 arp[] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0,  0,    0,    0, 0x01,
		0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 6,    4,  0x00, 0x01, /* request, Ethernet/IPv4 */
		0x02, 0,    0,    0,    0,    0x01, 198,  18, 0,    1, /* sender */
		0,    0,    0,    0,    0,    0,    198,  18, 0,    2, /* target */
	};

	memset(buf, 0, 60);
	memcpy(buf, arp, sizeof(arp));
	return 60;
}

/* ---- a twin: a second instance of the program on r's maps (tests/bpf/flood.c) ---- */

int bpfrun_twin_open(struct bpfrun_twin *t, const struct bpfrun *r, __u32 vary_keys)
{
	struct bpf_map *m;
	int err = 0;

	memset(t, 0, sizeof(*t));
	t->skel = sluice_bpf__open();
	if (!t->skel) {
		err = -errno;
		note("Couldn't open the twin's sluice skeleton: %s", strerror(-err));
		return err;
	}
	*t->skel->rodata = *r->skel->rodata;
	t->skel->rodata->bench_vary_keys = vary_keys;
	bpf_program__set_autoload(t->skel->progs.sluice_tc, false);
	bpf_object__for_each_map(m, t->skel->obj) {
		const struct bpf_map *mine;

		if (m == t->skel->maps.rodata || m == t->skel->maps.bss)
			continue;
		mine = bpf_object__find_map_by_name(r->skel->obj, bpf_map__name(m));
		err = mine ? bpf_map__reuse_fd(m, bpf_map__fd(mine)) : -ENOENT;
		if (err) {
			note("Couldn't share map %s with the twin: %s", bpf_map__name(m),
			     strerror(-err));
			break;
		}
	}
	if (!err)
		err = sluice_bpf__load(t->skel);
	if (err) {
		note("Couldn't load the twin sluice program: %s", strerror(-err));
		sluice_bpf__destroy(t->skel);
		t->skel = NULL;
		return err;
	}
	t->prog_fd = bpf_program__fd(t->skel->progs.sluice_xdp);
	return 0;
}

void bpfrun_twin_close(struct bpfrun_twin *t)
{
	sluice_bpf__destroy(t->skel);
	memset(t, 0, sizeof(*t));
}

void bpfrun_twin_clock(struct bpfrun_twin *t, __u64 ns)
{
	t->skel->bss->test_now_ns = ns;
}

int bpfrun_twin_run(struct bpfrun_twin *t, const void *frame, __u32 len, __u32 repeat,
		    __u32 *action)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .repeat = repeat);

	if (bpf_prog_test_run_opts(t->prog_fd, &o)) {
		int err = -errno;

		note("Couldn't run the twin on a %u-byte frame: %s", len, strerror(-err));
		return err;
	}
	*action = o.retval;
	return 0;
}
