// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Which sources share a bucket: every source its own by default (/32), IPv6
 * aggregated by /64 by default, and the key prefixes a policy sets. The
 * default policy here is 1/h burst 2, so a bucket never refills during a
 * test: "PPD" is two passes and a drop from one bucket.
 */
#include <string.h>

#include "libsluice.h"
#include "../lib/bpfrun.h"
#include "../lib/tap.h"

/* The tag sluice_settings_init() gives the default policy. */
#define TAG_DEFAULT SLUICE_TAG(0, SLUICE_ALGO_TOKEN_BUCKET, 1)

/* bpfrun_setup() (1/h burst 2) with keys of /prefix4 and /prefix6. */
static bool setup(struct bpfrun *r, __u8 prefix4, __u8 prefix6)
{
	struct sluice_settings set;

	if (!bpfrun_setup(r, &set, 2))
		return false;
	set.def.prefix4 = prefix4;
	set.def.prefix6 = prefix6;
	return !bpfrun_configure(r, &set);
}

/* Frames from src, n of them: the verdict letters must be `want`. */
static void expect(struct bpfrun *r, const char *src, const char *want, const char *what)
{
	bpfrun_expect(r, src, 60, want, "%s: %s sends %zu, %s", what, src, strlen(want), want);
}

static void expect_keys(struct bpfrun *r, int n, const char *what)
{
	struct sluice_stats st;

	TAP_EQ(bpfrun_count_keys(r, false), n, "%s: %d buckets in sluice_buckets", what, n);
	if (!bpfrun_stats(r, &st))
		TAP_EQ(st.new_keys, n, "%s: stats.new_keys %d", what, n);
	else
		tap_ok(false, "%s: read stats", what);
}

static void test_ipv4_independent(struct bpfrun *r)
{
	const char *t = "IPv4 /32";
	struct sluice_bucket b;

	if (!setup(r, 32, 64)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	expect(r, "198.18.0.1", "PPD", t);
	expect(r, "198.18.0.2", "PPD", t);
	expect(r, "198.18.0.1", "D", t);
	expect_keys(r, 2, t);
	TAP_TRUE(!bpfrun_lookup(r, false, TAG_DEFAULT, "198.18.0.1", 32, &b) && b.dropped == 2,
		 "%s: the bucket of 198.18.0.1 counts its 2 drops", t);
}

static void test_ipv6_64(struct bpfrun *r)
{
	const char *t = "IPv6 /64 (default)";

	if (!setup(r, 32, 64)) {
		tap_ok(false, "%s: setup", t);
		return;
	}
	expect(r, "2001:2::1", "P", t);
	expect(r, "2001:2::ffff:ffff:ffff:ffff", "PD", t); /* same /64 */
	expect(r, "2001:2:0:1::1", "PPD", t); /* the next /64 */
	expect(r, "2001:2:1::1", "PPD", t);
	expect_keys(r, 3, t);
	TAP_TRUE(!bpfrun_lookup(r, false, TAG_DEFAULT, "2001:2::", 64,
				&(struct sluice_bucket){ 0 }),
		 "%s: the key is 2001:2::/64", t);
}

static void test_prefixes(struct bpfrun *r)
{
	const char *t4 = "IPv4 prefix4 24", *t6 = "IPv6 prefix6 128", *t8 = "IPv4 prefix4 8";

	if (!setup(r, 24, 128)) {
		tap_ok(false, "%s: setup", t4);
		return;
	}
	expect(r, "198.18.0.1", "P", t4);
	expect(r, "198.18.0.200", "PD", t4); /* same /24 */
	expect(r, "198.18.1.1", "PPD", t4);
	expect(r, "2001:2::1", "PPD", t6);
	expect(r, "2001:2::2", "PPD", t6);
	expect_keys(r, 4, "prefix4 24, prefix6 128");
	TAP_TRUE(!bpfrun_lookup(r, false, TAG_DEFAULT, "198.18.1.0", 24,
				&(struct sluice_bucket){ 0 }),
		 "%s: the key is 198.18.1.0/24", t4);

	if (!setup(r, 8, 64)) {
		tap_ok(false, "%s: setup", t8);
		return;
	}
	expect(r, "198.18.0.1", "P", t8);
	expect(r, "198.19.255.255", "PD", t8);
	expect_keys(r, 1, t8);
}

int main(void)
{
	struct bpfrun r;

	if (!bpfrun_load(&r, NULL))
		return tap_done();
	test_ipv4_independent(&r);
	test_ipv6_64(&r);
	test_prefixes(&r);
	bpfrun_close(&r);
	return tap_done();
}
