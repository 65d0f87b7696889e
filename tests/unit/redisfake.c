// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fleet agent's Redis client (user/lib/redis.c) against a fake Redis
 * (tests/lib/fakeredis.c) that answers what no real one would: aggregate
 * headers of a billion elements, nested arrays, strings and lines too long
 * for the replies asked, an extra reply in the same write and one that comes
 * late, counts of boxes of -1, 0 and 2^32 + 2, a negative debt, a debt of a
 * year, a hang; and a password that changes (WRONGPASS, then the new one
 * in the file). tests/unit/redis.c has the real server.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "libsluice.h"
#include "redis.h"
#include "../lib/fakeredis.h"
#include "../lib/tap.h"

#define MS (1000ULL * 1000)
#define DEADLINE_NS (500 * MS) /* --redis-timeout of the checks on time */
#define FLEET "fk"
#define YEAR_US (365LL * 86400 * 1000000)

/* What the fake answers now, set by the test between syncs. */
enum mode {
	SANE, /* fr_sane() with s */
	REPLY_RAW, /* raw instead of a sync call's reply (AUTH, SCRIPT LOAD sane) */
	CONNECT_RAW, /* raw instead of SCRIPT LOAD's reply */
	EXTRA_NOW, /* the sane reply, then raw in the same write */
	EXTRA_LATE, /* the sane reply, then raw 50 ms later */
	HANG, /* sync calls are never answered */
	CLOSE_ALL, /* every command closes its connection */
};

static struct {
	enum mode mode;
	struct fr_sane s;
	const char *raw;
	size_t raw_len;
} fx = { .s = { .live = 1, .debt = 0 } };

static char dir[64];
static char pwfile[128];

static enum fr_action handler(struct fakeredis *f, const struct fr_cmd *c, void *ctx)
{
	bool sync = fr_sync_keys(c) >= 0;

	(void)ctx;
	switch (fx.mode) {
	case SANE:
		break;
	case REPLY_RAW:
		if (!sync)
			break;
		fr_send(f, fx.raw, fx.raw_len);
		return FR_ANSWERED;
	case CONNECT_RAW:
		if (!fr_is(c, "SCRIPT"))
			break;
		fr_send(f, fx.raw, fx.raw_len);
		return FR_ANSWERED;
	case EXTRA_NOW:
	case EXTRA_LATE:
		if (!sync)
			break;
		/* EXTRA_NOW: the answer and the extra in one write, which the
		 * agent reads whole (two writes raced its read under load). */
		if (fx.mode == EXTRA_NOW)
			fr_cork(f);
		fr_sane(f, c, &fx.s);
		if (fx.mode == EXTRA_LATE) {
			struct timespec ts = { .tv_nsec = 50 * MS };

			nanosleep(&ts, NULL);
		}
		fr_send(f, fx.raw, fx.raw_len);
		if (fx.mode == EXTRA_NOW)
			fr_uncork(f);
		return FR_ANSWERED;
	case HANG:
		if (sync)
			return FR_HANG;
		break;
	case CLOSE_ALL:
		return FR_CLOSE;
	}
	return fr_sane(f, c, &fx.s);
}

static void set_raw(enum mode m, const char *raw)
{
	fx.raw = raw;
	fx.raw_len = strlen(raw);
	fx.mode = m;
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The process's peak address space (VmPeak), in kB. */
static long vm_peak_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPeak: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static struct sluice_redis *client(const struct fakeredis *fk, const char *pw, __u64 timeout_ns)
{
	struct sluice_redis_opts o = { .addr = fakeredis_addr(fk),
				       .password_file = pw,
				       .timeout_ns = timeout_ns };
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_redis *r = NULL;

	if (sluice_redis_open(&o, &r, err, sizeof(err)))
		tap_diag("  open %s: %s", o.addr, err);
	return r;
}

/* One sync of one key that used 1 ms. */
static int sync1(struct sluice_redis *r, __s64 *debt, __u32 *live, char *err)
{
	const char *keys[] = { "p:198.18.0.7/32" };
	double used = 1000;

	*debt = -99;
	*live = 0;
	return sluice_redis_sync(r, FLEET, "box-a", 60000, 1, keys, &used, 0, debt, live, NULL, err,
				 SLUICE_ERR_LEN);
}

static void write_pw(const char *text, mode_t mode)
{
	int fd = open(pwfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		tap_diag("  couldn't write %s", pwfile);
	if (fd >= 0)
		close(fd);
	chmod(pwfile, mode);
}

/* B9: a reply larger than asked is refused before hiredis allocates it,
 * at once, whatever the deadline. */
static void test_huge(struct fakeredis *fk)
{
	static const struct {
		const char *raw;
		enum mode mode;
		const char *why; /* in the error */
		const char *name;
	} cases[] = {
		{ "*1000000000\r\n", REPLY_RAW, "1000000000 elements", "an array of 10^9" },
		{ "*2147483647\r\n", REPLY_RAW, "2147483647 elements", "an array of 2^31 - 1" },
		{ "*3\r\n", REPLY_RAW, "3 elements", "an array of 3 to a call of 1 key" },
		{ "*99999999999999999999999\r\n", REPLY_RAW, "a '*' line longer",
		  "an array length of 23 digits" },
		{ "$1000000000\r\n", REPLY_RAW, "1000000000 bytes", "a bulk string of 10^9" },
		{ "*2\r\n:1\r\n$100000\r\n", REPLY_RAW, "100000 bytes in an array",
		  "a long string in the array" },
		{ "*2\r\n*1000000\r\n", REPLY_RAW, "an array inside an array", "a nested array" },
		{ "*2\r\n:1\r\n:-\r\n", REPLY_RAW, "with no number",
		  "an element '-' with no digits" },
		{ "*2\r\n:1\r\n+oooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooo"
		  "oooo\r\n",
		  REPLY_RAW, "'+' line longer than 64", "a long status in the array" },
		{ "*1000000000\r\n", CONNECT_RAW, "at most 0 were asked",
		  "an array where SCRIPT LOAD's SHA1 is due" },
		{ "$-7\r\n", REPLY_RAW, "a length of -7", "a bulk length of -7" },
		{ "!15\r\nhello\r\n", REPLY_RAW, "byte 0x21", "a RESP3 type" },
	};
	char err[SLUICE_ERR_LEN];
	__u32 live;
	__s64 debt;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sluice_redis *r = client(fk, NULL, DEADLINE_NS);
		long peak0 = vm_peak_kb(), peak;
		__u64 t0, took;
		int ret;

		if (!r)
			continue;
		set_raw(cases[i].mode, cases[i].raw);
		t0 = mono_ns();
		ret = sync1(r, &debt, &live, err);
		took = mono_ns() - t0;
		peak = vm_peak_kb();
		fx.mode = SANE;
		if (!tap_ok(ret == -EPROTO && strstr(err, cases[i].why) &&
				    strstr(err, fakeredis_addr(fk)) && !sluice_redis_connected(r),
			    "%s: refused (-EPROTO, saying what), the connection dropped",
			    cases[i].name))
			tap_diag("  ret %d after %.1f ms: %s", ret, took / 1e6, err);
		if (!tap_ok(took < DEADLINE_NS / 2 && peak - peak0 < 64 * 1024,
			    "%s: at once (%.1f ms, deadline %.0f ms), and %ld kB more address "
			    "space at most",
			    cases[i].name, took / 1e6, DEADLINE_NS / 1e6, peak - peak0))
			tap_diag("  VmPeak %ld kB -> %ld kB", peak0, peak);
		ret = sync1(r, &debt, &live, err);
		TAP_TRUE(ret == 0 && debt == 0 && live == 1,
			 "%s: the next sync reconnects and reads the sane reply", cases[i].name);
		sluice_redis_close(r);
	}
}

/* B10: bytes after the replies asked for are an error, and never become
 * the next call's answer. */
static void test_extra(struct fakeredis *fk)
{
	static const char thirty_s[] = "*2\r\n:1\r\n:30000000\r\n";
	char err[SLUICE_ERR_LEN];
	struct sluice_redis *r;
	unsigned int conns;
	__u32 live;
	__s64 debt;
	int ret;

	r = client(fk, NULL, DEADLINE_NS);
	if (!r)
		return;
	set_raw(EXTRA_NOW, thirty_s);
	ret = sync1(r, &debt, &live, err);
	fx.mode = SANE;
	if (!TAP_TRUE(ret == -EPROTO && strstr(err, "after the 1 reply asked for") &&
			      !sluice_redis_connected(r),
		      "an extra reply in the same write: -EPROTO, the connection dropped"))
		tap_diag("  ret %d: %s", ret, err);
	ret = sync1(r, &debt, &live, err);
	if (!TAP_TRUE(ret == 0 && debt == 0,
		      "then the next sync reads its own answer (debt 0), not the extra 30 s"))
		tap_diag("  ret %d, debt %lld: %s", ret, (long long)debt, err);

	set_raw(EXTRA_LATE, thirty_s);
	ret = sync1(r, &debt, &live, err);
	fx.mode = SANE;
	TAP_TRUE(ret == 0 && debt == 0, "an extra reply 50 ms late: the sync before it is whole");
	usleep(150 * 1000);
	conns = fakeredis_conns(fk);
	ret = sync1(r, &debt, &live, err);
	if (!TAP_TRUE(ret == -EPROTO && strstr(err, "reply to no call") && debt != 30000000 &&
			      !sluice_redis_connected(r),
		      "the next sync finds the late reply waiting: -EPROTO, not a 30 s debt"))
		tap_diag("  ret %d, debt %lld: %s", ret, (long long)debt, err);
	ret = sync1(r, &debt, &live, err);
	TAP_TRUE(ret == 0 && debt == 0 && fakeredis_conns(fk) == conns + 1,
		 "and the one after it reconnects and reads its own answer");
	sluice_redis_close(r);
}

/* B5 (the client's part): what the script cannot answer is refused. */
static void test_ranges(struct fakeredis *fk)
{
	static const struct {
		long long live, debt;
		const char *why;
		const char *name;
	} bad[] = {
		{ -1, 0, "counted -1 boxes", "a count of boxes of -1" },
		{ 0, 0, "counted 0 boxes", "a count of boxes of 0" },
		{ 4294967298LL, 0, "counted 4294967298 boxes", "a count of boxes of 2^32 + 2" },
		{ 1, -5, "a debt of -5 us", "a negative debt" },
	};
	char err[SLUICE_ERR_LEN];
	struct sluice_redis *r = client(fk, NULL, DEADLINE_NS);
	__u32 live;
	__s64 debt;
	size_t i;
	int ret;

	if (!r)
		return;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fx.s.live = bad[i].live;
		fx.s.debt = bad[i].debt;
		ret = sync1(r, &debt, &live, err);
		if (!tap_ok(ret == -EPROTO && strstr(err, bad[i].why) && strstr(err, FLEET) &&
				    !sluice_redis_connected(r),
			    "%s: refused as a failed sync (-EPROTO), saying what", bad[i].name))
			tap_diag("  ret %d, live %u: %s", ret, live, err);
	}
	fx.s.live = 2305843010LL;
	fx.s.debt = YEAR_US;
	ret = sync1(r, &debt, &live, err);
	TAP_TRUE(ret == 0 && live == 2305843010U && debt == YEAR_US,
		 "a count of 2305843010 and a debt of a year are in range for the client (the "
		 "agent bounds them)");
	set_raw(REPLY_RAW, "*2\r\n:1\r\n$2\r\n10\r\n");
	ret = sync1(r, &debt, &live, err);
	TAP_TRUE(ret == -EPROTO && strstr(err, "non-integer"), "a debt as a string: refused");
	set_raw(REPLY_RAW, "+OK\r\n");
	ret = sync1(r, &debt, &live, err);
	TAP_TRUE(ret == -EPROTO && strstr(err, "integers"), "a status for an array: refused");
	fx.mode = SANE;
	fx.s.live = 1;
	fx.s.debt = 0;
	sluice_redis_close(r);
}

/* A hang: the deadline holds. */
static void test_hang(struct fakeredis *fk)
{
	char err[SLUICE_ERR_LEN];
	struct sluice_redis *r = client(fk, NULL, DEADLINE_NS);
	__u64 t0, took;
	__u32 live;
	__s64 debt;
	int ret;

	if (!r)
		return;
	fx.mode = HANG;
	t0 = mono_ns();
	ret = sync1(r, &debt, &live, err);
	took = mono_ns() - t0;
	fx.mode = SANE;
	if (!TAP_TRUE(ret == -ETIMEDOUT && took >= DEADLINE_NS && took < 3 * DEADLINE_NS,
		      "a Redis that never answers: the sync gives up at its deadline"))
		tap_diag("  ret %d after %.1f ms: %s", ret, took / 1e6, err);
	ret = sync1(r, &debt, &live, err);
	TAP_TRUE(ret == 0, "and the next sync reconnects");
	sluice_redis_close(r);
}

/* B11: a rotated password needs no restart. */
static void test_rotation(struct fakeredis *fk)
{
	char err[SLUICE_ERR_LEN];
	struct sluice_redis *r;
	__u32 live;
	__s64 debt;
	int ret;

	fx.s.password = "first";
	write_pw("first\n", 0600);
	r = client(fk, pwfile, DEADLINE_NS);
	if (!r)
		return;
	ret = sync1(r, &debt, &live, err);
	TAP_TRUE(ret == 0, "password 'first' in the file and in Redis: the sync works");

	/* requirepass changed, and the connection dropped (a restart, a
	 * CLIENT KILL): WRONGPASS until the file has the new password. */
	fx.s.password = "second";
	fx.mode = CLOSE_ALL;
	ret = sync1(r, &debt, &live, err);
	fx.mode = SANE;
	TAP_TRUE(ret == -ECONNRESET, "the connection dropped");
	ret = sync1(r, &debt, &live, err);
	if (!TAP_TRUE(ret == -EACCES && strstr(err, "WRONGPASS") && strstr(err, pwfile) &&
			      strstr(err, "read again"),
		      "the new requirepass, the old file: WRONGPASS, naming the file"))
		tap_diag("  ret %d: %s", ret, err);
	write_pw("second\n", 0600);
	ret = sync1(r, &debt, &live, err);
	if (!TAP_TRUE(ret == 0, "the new password in the file: the next sync works, no restart"))
		tap_diag("  ret %d: %s", ret, err);

	/* The file is read at every connect, with its checks. */
	fx.mode = CLOSE_ALL;
	sync1(r, &debt, &live, err);
	fx.mode = SANE;
	write_pw("second\n", 0644);
	ret = sync1(r, &debt, &live, err);
	if (!TAP_TRUE(ret == -EACCES && strstr(err, "0644") && strstr(err, "chmod 600") &&
			      !sluice_redis_connected(r),
		      "a reconnect with the file made readable by others: refused, saying so"))
		tap_diag("  ret %d: %s", ret, err);
	write_pw("", 0600);
	ret = sync1(r, &debt, &live, err);
	TAP_TRUE(ret == -EINVAL && strstr(err, "empty"), "an emptied file: refused");
	unlink(pwfile);
	ret = sync1(r, &debt, &live, err);
	TAP_TRUE(ret == -ENOENT && strstr(err, pwfile), "a removed file: refused by path");
	write_pw("second\n", 0600);
	ret = sync1(r, &debt, &live, err);
	TAP_TRUE(ret == 0, "the file right again: the sync works");
	sluice_redis_close(r);

	/* No password file for a Redis that wants one: the option is named. */
	r = client(fk, NULL, DEADLINE_NS);
	ret = r ? sync1(r, &debt, &live, err) : -1;
	if (!TAP_TRUE(ret == -EACCES && strstr(err, "NOAUTH") &&
			      strstr(err, "--redis-password-file"),
		      "a password wanted and none given: names --redis-password-file"))
		tap_diag("  ret %d: %s", ret, err);
	sluice_redis_close(r);
	fx.s.password = NULL;
	unlink(pwfile);
}

int main(void)
{
	struct fakeredis *fk;
	int ret;

	signal(SIGPIPE, SIG_IGN);
	/* A parse that runs away must not hang the suite. */
	alarm(60);
	snprintf(dir, sizeof(dir), "/tmp/sluice-redisfake.XXXXXX");
	if (!tap_ok(mkdtemp(dir) != NULL, "a directory for the password file"))
		return tap_done();
	snprintf(pwfile, sizeof(pwfile), "%s/pw", dir);
	ret = fakeredis_start(&fk, handler, NULL);
	if (!tap_ok(!ret, "a fake Redis listens (%s)", ret ? strerror(-ret) : fakeredis_addr(fk)))
		return tap_done();
	/* One sane sync first: the fake's thread and the client's first
	 * allocations (a malloc arena each) are not what the checks measure. */
	{
		struct sluice_redis *r = client(fk, NULL, DEADLINE_NS);
		char err[SLUICE_ERR_LEN];
		__u32 live;
		__s64 debt;

		TAP_TRUE(r && sync1(r, &debt, &live, err) == 0 && debt == 0 && live == 1,
			 "a sync with the fake as a sane Redis: debt 0, 1 box");
		sluice_redis_close(r);
	}
	test_huge(fk);
	test_extra(fk);
	test_ranges(fk);
	test_hang(fk);
	test_rotation(fk);
	fakeredis_stop(fk);
	unlink(pwfile);
	rmdir(dir);
	return tap_done();
}
