// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fleet agent's Redis client (user/lib/redis.c) against a real
 * redis-server that this program starts on a unix socket in its own
 * temporary directory and kills on every way out: debts that add up exactly,
 * membership and its TTL, members' shares (kept, silent, reserved, gone),
 * 10,000 keys in one round trip, a flushed script
 * cache (NOSCRIPT), passwords right, wrong and missing, a stopped server
 * (SIGSTOP: the deadline holds), an error reply (OOM), a killed and
 * restarted one (no SIGPIPE), a password rotated while the client runs, and
 * the addresses, password files and fleet names refused. The fake Redis's
 * answers (tests/unit/redisfake.c) are what no real server sends.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <hiredis/hiredis.h>

#include "libsluice.h"
#include "redis.h"
#include "../lib/tap.h"

#define REDIS_SERVER "/usr/bin/redis-server"
/* The deadline under test (SIGSTOP); every other check gets a long one, so
 * that a slow machine (qemu without KVM, make test-kernels) passes it too. */
#define TIMEOUT_NS (300ULL * 1000 * 1000)
#define LONG_NS (10ULL * 1000 * 1000 * 1000)
#define FLEET "t1"

static char dir[64];
static char sock[128];
static char logfile[128];
static pid_t server = -1;
static const char *const files[] = { "redis.sock", "redis.log", "pw-good",
				     "pw-bad",     "pw-open",   "pw-empty" };

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* Async-signal-safe: kill the server (a stopped one too) and remove the
 * directory, for atexit() and for the signal handlers alike. */
static void cleanup(void)
{
	char p[192];
	size_t i;

	if (server > 0) {
		kill(server, SIGKILL);
		kill(server, SIGCONT);
		waitpid(server, NULL, 0);
		server = -1;
	}
	if (!dir[0])
		return;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		path_in(p, sizeof(p), files[i]);
		unlink(p);
	}
	rmdir(dir);
}

static void on_signal(int sig)
{
	static const char alrm[] = "not ok - the test did not finish within 60 s\n";
	static const char gone[] = "not ok - SIGPIPE: a send to a Redis that went away\n";
	static const char other[] = "not ok - the test was interrupted by a signal\n";
	const char *msg = sig == SIGALRM ? alrm : sig == SIGPIPE ? gone : other;

	if (write(1, msg, strlen(msg)) < 0)
		msg = NULL;
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A plain blocking hiredis connection to the server, for the test's own
 * setup and checks (SCRIPT FLUSH, CONFIG SET, PTTL). */
static redisContext *admin(void)
{
	struct timeval tv = { .tv_sec = 2 };
	redisContext *c = redisConnectUnixWithTimeout(sock, tv);

	if (c && !c->err && redisSetTimeout(c, tv) == REDIS_OK)
		return c;
	if (c)
		redisFree(c);
	return NULL;
}

/* Run one command on the server; its reply (free it), or NULL. */
static redisReply *cmd(const char *fmt, ...)
{
	redisContext *c = admin();
	redisReply *x = NULL;
	va_list ap;

	if (!c)
		return NULL;
	va_start(ap, fmt);
	x = redisvCommand(c, fmt, ap);
	va_end(ap);
	redisFree(c);
	return x;
}

static long long cmd_int(const char *fmt, const char *arg)
{
	redisReply *x = cmd(fmt, arg);
	long long v = x && x->type == REDIS_REPLY_INTEGER ? x->integer : -99;

	if (x)
		freeReplyObject(x);
	return v;
}

static bool cmd_ok(const char *fmt, const char *arg)
{
	redisReply *x = cmd(fmt, arg);
	bool ok = x && x->type == REDIS_REPLY_STATUS;

	if (!ok)
		tap_diag("  '%s' (%s): %s", fmt, arg, x ? x->str : "no reply");
	if (x)
		freeReplyObject(x);
	return ok;
}

/* Start redis-server on the socket; wait until it answers PING. */
static bool start_server(void)
{
	__u64 until = mono_ns() + 10ULL * 1000000000;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return false;
	if (!pid) {
		int fd = open("/dev/null", O_RDWR);

		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(REDIS_SERVER, REDIS_SERVER, "--port", "0", "--unixsocket", sock,
		      "--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir", dir,
		      "--logfile", logfile, "--daemonize", "no", (char *)NULL);
		_exit(127);
	}
	server = pid;
	while (mono_ns() < until) {
		redisReply *x;

		if (waitpid(pid, NULL, WNOHANG) == pid) {
			server = -1;
			tap_diag("redis-server exited at start: see %s", logfile);
			return false;
		}
		x = cmd("PING");
		if (x) {
			bool up = x->type == REDIS_REPLY_STATUS;

			freeReplyObject(x);
			if (up)
				return true;
		}
		sleep_ms(20);
	}
	tap_diag("redis-server did not answer in 10 s");
	return false;
}

static void kill_server(void)
{
	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	server = -1;
}

static struct sluice_redis *client_by(const char *addr, const char *pwfile, __u64 timeout_ns)
{
	struct sluice_redis_opts o = { .addr = addr,
				       .password_file = pwfile,
				       .timeout_ns = timeout_ns };
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_redis *r = NULL;

	if (sluice_redis_open(&o, &r, err, sizeof(err)))
		tap_diag("  open %s: %s", addr, err);
	return r;
}

static struct sluice_redis *client(const char *addr, const char *pwfile)
{
	return client_by(addr, pwfile, LONG_NS);
}

static void write_file(const char *name, const char *text, mode_t mode)
{
	char p[192];
	int fd;

	path_in(p, sizeof(p), name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		tap_diag("  couldn't write %s", p);
	if (fd >= 0)
		close(fd);
	chmod(p, mode);
}

/* ---- without a server ---- */

static void test_addresses(void)
{
	static const char *const bad[] = { "",      "host:", "host:0",    "host:65536", "host:6x",
					   "::1",   "[::1",  "[zz]:6379", "[::1]6379",  "unix:",
					   "ho st", ":6379", "a:1:2" };
	static const char *const good[] = { "localhost",
					    "127.0.0.1:6380",
					    "[::1]:6379",
					    "[::1]",
					    "/run/redis/redis.sock",
					    "unix:/tmp/r.sock",
					    "redis-1.example:7000" };
	char err[SLUICE_ERR_LEN], longpath[200];
	struct sluice_redis *r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sluice_redis_opts o = { .addr = bad[i], .timeout_ns = TIMEOUT_NS };
		int ret;

		err[0] = '\0';
		r = NULL;
		ret = sluice_redis_open(&o, &r, err, sizeof(err));
		if (!tap_ok(ret == -EINVAL && !r && strstr(err, bad[i]) &&
				    strstr(err, "unix:/path") && strstr(err, "[v6addr]:port"),
			    "address '%s' is refused with the accepted forms", bad[i]))
			tap_diag("  ret %d: %s", ret, err);
		sluice_redis_close(r);
	}
	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	{
		struct sluice_redis_opts o = { .addr = longpath, .timeout_ns = TIMEOUT_NS };
		int ret = sluice_redis_open(&o, &r, err, sizeof(err));

		TAP_TRUE(ret == -EINVAL && strstr(err, "shorter"),
			 "a socket path longer than sun_path is refused");
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		r = client(good[i], NULL);
		TAP_TRUE(r && !strcmp(sluice_redis_addr(r), good[i]) && !sluice_redis_connected(r),
			 "address '%s' is taken, not connected, and named as given", good[i]);
		sluice_redis_close(r);
	}
	{
		struct sluice_redis_opts o = { .addr = "localhost" };
		int ret = sluice_redis_open(&o, &r, err, sizeof(err));

		TAP_TRUE(ret == -EINVAL && strstr(err, "timeout"), "a timeout of 0 is refused");
	}
}

static void test_password_files(void)
{
	char p[192], err[SLUICE_ERR_LEN];
	struct sluice_redis_opts o = { .addr = "localhost", .timeout_ns = TIMEOUT_NS };
	struct sluice_redis *r = NULL;
	int ret;

	path_in(p, sizeof(p), "pw-missing");
	o.password_file = p;
	ret = sluice_redis_open(&o, &r, err, sizeof(err));
	TAP_TRUE(ret == -ENOENT && !r && strstr(err, p),
		 "a missing password file is refused by path");

	write_file("pw-open", "s3cret\n", 0644);
	path_in(p, sizeof(p), "pw-open");
	ret = sluice_redis_open(&o, &r, err, sizeof(err));
	if (!TAP_TRUE(ret == -EACCES && !r && strstr(err, p) && strstr(err, "0644") &&
			      strstr(err, "chmod 600"),
		      "a password file of mode 0644 is refused, saying so"))
		tap_diag("  ret %d: %s", ret, err);
	write_file("pw-open", "s3cret\n", 0640);
	ret = sluice_redis_open(&o, &r, err, sizeof(err));
	TAP_TRUE(ret == -EACCES && !r, "a password file its group can read is refused");

	write_file("pw-empty", "\n", 0600);
	path_in(p, sizeof(p), "pw-empty");
	ret = sluice_redis_open(&o, &r, err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && !r && strstr(err, p) && strstr(err, "empty"),
		 "an empty password file is refused");

	write_file("pw-good", "s3cret\nsecond line\n", 0600);
	path_in(p, sizeof(p), "pw-good");
	ret = sluice_redis_open(&o, &r, err, sizeof(err));
	TAP_TRUE(ret == 0 && r, "a password file of mode 0600 is taken");
	sluice_redis_close(r);
}

static void test_arguments(void)
{
	static const char *const fleets[] = {
		"",
		"a b",
		"a:b",
		"a{b}",
		"a}b",
		"a/b",
		"f12345678901234567890123456789012345678901234567890123456789012345"
	};
	const char *keys[] = { "boxes" };
	const char *one[] = { "k" };
	double used[] = { 10 }, zero[] = { 0 }, nan_[] = { NAN };
	char err[SLUICE_ERR_LEN], fleet64[65];
	struct sluice_redis *r = client(sock, NULL);
	__s64 debt[1];
	__u32 live;
	size_t i;

	for (i = 0; i < sizeof(fleets) / sizeof(fleets[0]); i++) {
		int ret = sluice_redis_sync(r, fleets[i], "m", 1000, 0, NULL, NULL, 0, NULL, &live,
					    NULL, err, sizeof(err));

		if (!TAP_TRUE(ret == -EINVAL && strstr(err, fleets[i]) && strstr(err, "1 to 64"),
			      "fleet name '%s' is refused", fleets[i]))
			tap_diag("  ret %d: %s", ret, err);
	}
	memset(fleet64, 'f', 64);
	fleet64[64] = '\0';
	TAP_TRUE(!sluice_redis_check_fleet(fleet64, err, sizeof(err)) &&
			 !sluice_redis_check_fleet("edge.eu-1_a", err, sizeof(err)),
		 "fleet names of 64 characters and of . _ - are taken");
	TAP_TRUE(sluice_redis_sync(r, FLEET, "m", 1000, 1, keys, used, 0, debt, &live, NULL, err,
				   sizeof(err)) == -EINVAL &&
			 strstr(err, "boxes"),
		 "the key 'boxes' (the members set) is refused");
	TAP_TRUE(sluice_redis_sync(r, FLEET, "m", 1000, 1, one, zero, 0, debt, &live, NULL, err,
				   sizeof(err)) == -EINVAL &&
			 sluice_redis_sync(r, FLEET, "m", 1000, 1, one, nan_, 0, debt, &live, NULL,
					   err, sizeof(err)) == -EINVAL,
		 "a usage of 0 or NaN is refused");
	TAP_TRUE(sluice_redis_sync(r, FLEET, "", 1000, 0, NULL, NULL, 0, NULL, &live, NULL, err,
				   sizeof(err)) == -EINVAL &&
			 sluice_redis_sync(r, FLEET, "m", 0, 0, NULL, NULL, 0, NULL, &live, NULL,
					   err, sizeof(err)) == -EINVAL,
		 "an empty member name or a TTL of 0 is refused");
	TAP_TRUE(!sluice_redis_connected(r), "refused arguments never connect");
	sluice_redis_close(r);
}

static void test_connect_errors(void)
{
	char err[SLUICE_ERR_LEN], p[192];
	struct sluice_redis *r;
	int ret;

	path_in(p, sizeof(p), "no-such.sock");
	r = client(p, NULL);
	ret = r ? sluice_redis_connect(r, err, sizeof(err)) : -1;
	TAP_TRUE(ret == -ENOENT && strstr(err, p), "a missing socket: -ENOENT, with the address");
	sluice_redis_close(r);

	r = client("127.0.0.1:1", NULL);
	ret = r ? sluice_redis_connect(r, err, sizeof(err)) : -1;
	if (!TAP_TRUE(ret == -ECONNREFUSED && strstr(err, "127.0.0.1:1"),
		      "a closed TCP port: -ECONNREFUSED, with the address"))
		tap_diag("  ret %d: %s", ret, err);
	sluice_redis_close(r);

	r = client("localhost:1", NULL);
	ret = r ? sluice_redis_connect(r, err, sizeof(err)) : -1;
	if (!TAP_TRUE(ret == -ECONNREFUSED && strstr(err, "localhost:1"),
		      "a name looked up, then a closed port: -ECONNREFUSED"))
		tap_diag("  ret %d: %s", ret, err);
	sluice_redis_close(r);
}

/* ---- against the server ---- */

static int sync_one(struct sluice_redis *r, const char *member, __u64 ttl_ms, const char *key,
		    double used, __s64 *debt, __u32 *live, char *err)
{
	const char *keys[] = { key };

	return sluice_redis_sync(r, FLEET, member, ttl_ms, 1, keys, &used, 0, debt, live, NULL, err,
				 SLUICE_ERR_LEN);
}

static void test_debts(void)
{
	const char *keys[] = { "p:198.18.0.7/32", "p:198.18.0.8/32", "p:2001:2::/64" };
	const char *same[] = { "same", "same", "same" };
	double used[] = { 100, 200.5, 300 }, used2[] = { 1000.25, 2000.25, 0.5 };
	struct sluice_redis_sync_stats st;
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_redis *r = client(sock, NULL);
	__s64 debt[3] = { -1, -1, -1 };
	__u32 live = 0;
	__u64 t0, t1;
	long long pttl;
	int ret;

	ret = sluice_redis_sync(r, FLEET, "box-a", 60000, 3, keys, used, 0, debt, &live, &st, err,
				sizeof(err));
	if (!TAP_TRUE(ret == 0 && debt[0] == 100 && debt[1] == 201 && debt[2] == 300 && live == 1,
		      "3 new keys: each debt is its usage (rounded up), live 1"))
		tap_diag("  ret %d (%s): %lld %lld %lld live %u", ret, err, (long long)debt[0],
			 (long long)debt[1], (long long)debt[2], live);
	TAP_TRUE(st.reconnected && st.calls == 1 && st.round_trips == 1 && st.bytes_out > 0 &&
			 st.bytes_in > 0 && st.duration_ns > 0 && sluice_redis_connected(r),
		 "the first sync connected, and counted one call and one round trip");

	/* One call runs at one Redis time: the same key thrice adds up exactly. */
	ret = sluice_redis_sync(r, FLEET, "box-a", 60000, 3, same, used2, 0, debt, &live, &st, err,
				sizeof(err));
	if (!TAP_TRUE(ret == 0 && debt[0] == 1001 && debt[1] == 3001 && debt[2] == 3001 &&
			      !st.reconnected,
		      "one key thrice in a call: debts 1000.25, 3000.5, 3001 (rounded up)"))
		tap_diag("  ret %d (%s): %lld %lld %lld", ret, err, (long long)debt[0],
			 (long long)debt[1], (long long)debt[2]);

	pttl = cmd_int("PTTL %s", "sluice:{" FLEET "}:p:198.18.0.7/32");
	TAP_TRUE(pttl > 0 && pttl <= 1001, "the key is sluice:{FLEET}:KEY, kept its debt plus 1 s");
	TAP_TRUE(cmd_int("ZCARD %s", "sluice:{" FLEET "}:boxes") == 1 &&
			 cmd_int("PTTL %s", "sluice:{" FLEET "}:boxes") > 0,
		 "the members are in sluice:{FLEET}:boxes, which expires");

	/* Two syncs of 1000 us: the second debt is 2000 minus the time between. */
	t0 = mono_ns();
	ret = sync_one(r, "box-a", 60000, "twice", 1000, &debt[0], &live, err);
	ret = ret ?: sync_one(r, "box-a", 60000, "twice", 1000, &debt[1], &live, err);
	t1 = mono_ns();
	if (!TAP_TRUE(ret == 0 && debt[0] == 1000 && debt[1] <= 2000 &&
			      debt[1] >= 2000 - (__s64)((t1 - t0) / 1000) - 1,
		      "two syncs of 1000 us on one key: 1000, then 2000 less the time between"))
		tap_diag("  ret %d (%s): %lld then %lld, %llu us apart", ret, err,
			 (long long)debt[0], (long long)debt[1],
			 (unsigned long long)((t1 - t0) / 1000));
	sluice_redis_close(r);
}

static void test_members(void)
{
	struct sluice_redis *a = client(sock, NULL), *b = client(sock, NULL);
	struct sluice_redis_sync_stats st;
	char err[SLUICE_ERR_LEN] = "";
	__u32 la = 0, lb = 0;
	int ret, i;

	/* A fleet of its own: no members from the other tests. */
	ret = sluice_redis_sync(a, "members", "box-a", 60000, 0, NULL, NULL, 0, NULL, &la, &st, err,
				sizeof(err));
	TAP_TRUE(ret == 0 && la == 1 && st.calls == 1, "a heartbeat (no keys): one call, live 1");
	ret = sluice_redis_sync(b, "members", "box-b", 60000, 0, NULL, NULL, 0, NULL, &lb, NULL,
				err, sizeof(err));
	TAP_TRUE(ret == 0 && lb == 2, "a second box: live 2");
	ret = sluice_redis_sync(a, "members", "box-a", 60000, 0, NULL, NULL, 0, NULL, &la, NULL,
				err, sizeof(err));
	TAP_TRUE(ret == 0 && la == 2, "the first box again: still live 2");
	/* Now with a TTL of 100 ms: b goes on (so the set itself does not
	 * expire) while a is silent for more than that, at least 5 x 30 ms. */
	for (i = 0; i < 6 && !ret; i++) {
		sleep_ms(30);
		ret = sluice_redis_sync(b, "members", "box-b", 100, 0, NULL, NULL, 0, NULL, &lb,
					NULL, err, sizeof(err));
	}
	if (!TAP_TRUE(ret == 0 && lb == 1, "a box not heard from for its TTL (100ms) drops out"))
		tap_diag("  ret %d (%s): live %u", ret, err, lb);
	sluice_redis_close(a);
	sluice_redis_close(b);
}

/* sluice:{shares}:share's entry for member m; -1 when there is none. */
static long long share_of(const char *m)
{
	redisReply *x = cmd("HGET sluice:{shares}:share %s", m);
	long long v = x && x->type == REDIS_REPLY_STRING ? atoll(x->str) : -1;

	if (x)
		freeReplyObject(x);
	return v;
}

/* One heartbeat (key NULL) or one key of `used` us, of member m of fleet
 * "shares" through r; st gets the answer's silent members and reserve. */
static int beat(struct sluice_redis *r, const char *m, const char *key, double used, __s64 *debt,
		__u32 *n, struct sluice_redis_sync_stats *st, char *err)
{
	const char *keys[] = { key };

	return sluice_redis_sync(r, "shares", m, 100, key ? 1 : 0, key ? keys : NULL,
				 key ? &used : NULL, 0, debt, n, st, err, SLUICE_ERR_LEN);
}

/*
 * Members that give their share (issue 20, B6): kept until they leave; past
 * its horizon a member is silent, its share reserved: every key is charged
 * used / (1 - the silent shares). A member without a share is dropped after
 * the ttl, never reserved.
 */
static void test_shares(void)
{
	struct sluice_redis *a = client(sock, NULL), *b = client(sock, NULL);
	struct sluice_redis *c = client(sock, NULL), *old = client(sock, NULL);
	struct sluice_redis_sync_stats st;
	char err[SLUICE_ERR_LEN] = "";
	__s64 debt = 0;
	__u32 n = 0;
	int ret;

	sluice_redis_set_member(a, 100, 3);
	sluice_redis_set_member(b, 60000, 3);
	sluice_redis_set_member(c, 60000, 3);
	ret = beat(a, "a", NULL, 0, NULL, &n, &st, err);
	TAP_TRUE(ret == 0 && n == 1 && share_of("a") == 1,
		 "shares: the first member alone holds the share of N = 1 (it gave 3)");
	ret = beat(b, "b", NULL, 0, NULL, &n, &st, err);
	ret = ret ?: beat(c, "c", NULL, 0, NULL, &n, &st, err);
	ret = ret ?: beat(a, "a", NULL, 0, NULL, &n, &st, err);
	if (!TAP_TRUE(ret == 0 && n == 3 && st.silent == 0 && st.reserve_ppm == 0 &&
			      share_of("a") == 3 && share_of("b") == 2 && share_of("c") == 3,
		      "shares: three members, none silent; each holds min(its share, N)"))
		tap_diag("  ret %d (%s): N %u silent %u reserve %u; a %lld b %lld c %lld", ret, err,
			 n, st.silent, st.reserve_ppm, share_of("a"), share_of("b"), share_of("c"));
	ret = beat(old, "old", NULL, 0, NULL, &n, &st, err);
	TAP_TRUE(ret == 0 && n == 4 && share_of("old") == -1,
		 "shares: a member that gives no share is a member, with no share");

	/* a and old silent for 150 ms: past a's horizon (100 ms) and the ttl
	 * (100 ms) that b's calls give. */
	sleep_ms(150);
	ret = beat(b, "b", "k", 1000, &debt, &n, &st, err);
	if (!TAP_TRUE(ret == 0 && n == 3 && st.silent == 1 && st.reserve_ppm == 333333 &&
			      debt == 1500,
		      "shares: a silent past its horizon stays, its third reserved: 1000 us cost "
		      "1500; old, silent past the ttl, is dropped"))
		tap_diag("  ret %d (%s): N %u silent %u reserve %u debt %lld", ret, err, n,
			 st.silent, st.reserve_ppm, (long long)debt);
	ret = beat(c, "c", "kc", 1000, &debt, &n, &st, err);
	if (!TAP_TRUE(ret == 0 && st.silent == 1 && debt == 1500,
		      "shares: every live member pays the reserve (c too: 1500)"))
		tap_diag("  ret %d (%s): silent %u debt %lld", ret, err, st.silent,
			 (long long)debt);

	/* a syncs again: live, nothing reserved. */
	ret = beat(a, "a", NULL, 0, NULL, &n, &st, err) ?:
		      beat(b, "b", "k2", 1000, &debt, &n, &st, err);
	TAP_TRUE(ret == 0 && n == 3 && st.silent == 0 && debt == 1000,
		 "shares: a silent member that syncs again is live, its share free again");

	/* a leaves, then goes silent: nothing is reserved for it. */
	ret = sluice_redis_leave(a, "shares", "a", err, sizeof(err));
	TAP_TRUE(ret == 0 && share_of("a") == -1 &&
			 cmd_int("ZSCORE sluice:{shares}:boxes %s", "a") == -99,
		 "shares: a member that leaves is gone from the members and their shares");
	sleep_ms(150);
	ret = beat(b, "b", "k3", 1000, &debt, &n, &st, err);
	TAP_TRUE(ret == 0 && n == 2 && st.silent == 0 && debt == 1000,
		 "shares: after it left, N 2, nothing reserved");
	TAP_TRUE(cmd_int("PTTL %s", "sluice:{shares}:boxes") == -1,
		 "shares: the members' set of members with shares never expires");

	/* A silent member whose datapath admits the whole limit (share 1):
	 * the live ones hold next to nothing (1/65536). */
	sluice_redis_set_member(a, 100, 1);
	ret = beat(a, "a", NULL, 0, NULL, &n, &st, err);
	sleep_ms(150);
	ret = ret ?: beat(b, "b", "k4", 10, &debt, &n, &st, err);
	if (!TAP_TRUE(ret == 0 && st.silent == 1 && st.reserve_ppm == 1000000 && debt == 10 * 65536,
		      "shares: a silent member of share 1 leaves 1/65536 to the others"))
		tap_diag("  ret %d (%s): silent %u reserve %u debt %lld", ret, err, st.silent,
			 st.reserve_ppm, (long long)debt);
	sluice_redis_close(a);
	sluice_redis_close(b);
	sluice_redis_close(c);
	sluice_redis_close(old);
}

static void test_many(void)
{
	enum { N = 10000 };
	static char names[N][24];
	static const char *keys[N];
	static double used[N];
	static __s64 debt[N];
	struct sluice_redis_sync_stats st;
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_redis *r = client(sock, NULL);
	size_t i, wrong = 0;
	__u32 live = 0;
	int ret;

	for (i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "many:%zu", i);
		keys[i] = names[i];
		used[i] = 1 + i % 7 + 0.5;
		debt[i] = -1;
	}
	ret = sluice_redis_sync(r, FLEET, "box-a", 60000, N, keys, used, 0, debt, &live, &st, err,
				sizeof(err));
	for (i = 0; i < N; i++)
		wrong += debt[i] != (__s64)ceil(used[i]);
	if (!TAP_TRUE(ret == 0 && !wrong, "10,000 keys in one sync: every debt is right"))
		tap_diag("  ret %d (%s), %zu wrong", ret, err, wrong);
	if (!TAP_TRUE(st.round_trips == 1 && st.calls == (N + 255) / 256,
		      "10,000 keys: one round trip, ceil(10000/256) = 40 calls"))
		tap_diag("  round trips %llu, calls %llu", (unsigned long long)st.round_trips,
			 (unsigned long long)st.calls);
	tap_diag("10,000 keys: %llu bytes out, %llu in, %.1f ms", (unsigned long long)st.bytes_out,
		 (unsigned long long)st.bytes_in, st.duration_ns / 1e6);
	ret = sluice_redis_sync(r, FLEET, "box-a", 60000, N, keys, used, 1000, debt, &live, &st,
				err, sizeof(err));
	wrong = 0;
	for (i = 0; i < N; i++)
		wrong += debt[i] < (__s64)ceil(used[i]) || debt[i] > (__s64)ceil(2 * used[i]);
	TAP_TRUE(ret == 0 && !wrong && st.calls == 10 && st.round_trips == 1,
		 "batch 1000: 10 calls, one round trip, debts grown by the second usage");
	/* One call of all 10,000: more keys than the script's unpack() can
	 * take at once (about 8000), so it must read them in parts. */
	ret = sluice_redis_sync(r, FLEET, "box-a", 60000, N, keys, used, N, debt, &live, &st, err,
				sizeof(err));
	wrong = 0;
	for (i = 0; i < N; i++)
		wrong += debt[i] < (__s64)ceil(used[i]) || debt[i] > (__s64)ceil(3 * used[i]);
	if (!TAP_TRUE(ret == 0 && !wrong && st.calls == 1,
		      "batch 10000: one call of 10,000 keys, every debt right"))
		tap_diag("  ret %d (%s), %zu wrong, %llu calls", ret, err, wrong,
			 (unsigned long long)st.calls);
	sluice_redis_close(r);
}

static void test_noscript(void)
{
	const char *keys[] = { "ns:a", "ns:b", "ns:c" };
	double used[] = { 1e6, 2e6, 3e6 }; /* 1 s, 2 s, 3 s: still owed at the next sync */
	struct sluice_redis_sync_stats st;
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_redis *r = client(sock, NULL);
	__s64 debt[3];
	__u32 live;
	int ret;

	ret = sluice_redis_sync(r, FLEET, "box-a", 60000, 0, NULL, NULL, 0, NULL, &live, NULL, err,
				sizeof(err));
	TAP_TRUE(ret == 0 && cmd_ok("SCRIPT %s", "FLUSH"), "connected, then SCRIPT FLUSH");
	ret = sluice_redis_sync(r, FLEET, "box-a", 60000, 3, keys, used, 2, debt, &live, &st, err,
				sizeof(err));
	if (!TAP_TRUE(ret == 0 && debt[0] == 1000000 && debt[1] == 2000000 && debt[2] == 3000000,
		      "after SCRIPT FLUSH the sync works, each key charged once"))
		tap_diag("  ret %d (%s): %lld %lld %lld", ret, err, (long long)debt[0],
			 (long long)debt[1], (long long)debt[2]);
	if (!TAP_TRUE(st.calls == 2 + 1 + 2 && st.round_trips == 2 && !st.reconnected,
		      "NOSCRIPT counted: 2 calls, SCRIPT LOAD and 2 again, in 2 round trips"))
		tap_diag("  calls %llu, round trips %llu", (unsigned long long)st.calls,
			 (unsigned long long)st.round_trips);
	ret = sluice_redis_sync(r, FLEET, "box-a", 60000, 3, keys, used, 2, debt, &live, &st, err,
				sizeof(err));
	if (!TAP_TRUE(ret == 0 && st.calls == 2 && st.round_trips == 1 && debt[0] > 1000000 &&
			      debt[0] <= 2000000,
		      "the next sync: the script is there again, 2 calls in 1 round trip"))
		tap_diag("  ret %d (%s): calls %llu, round trips %llu, debt %lld", ret, err,
			 (unsigned long long)st.calls, (unsigned long long)st.round_trips,
			 (long long)debt[0]);
	sluice_redis_close(r);
}

static void test_error_reply(void)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_redis *r = client(sock, NULL);
	__s64 debt = -1;
	__u32 live;
	int ret;

	ret = sync_one(r, "box-a", 60000, "oom", 5, &debt, &live, err);
	TAP_TRUE(ret == 0 && cmd_ok("CONFIG SET maxmemory %s", "1"), "connected, then maxmemory 1");
	ret = sync_one(r, "box-a", 60000, "oom", 5, &debt, &live, err);
	if (!TAP_TRUE(ret == -EPROTO && strstr(err, "OOM") && strstr(err, sock) &&
			      !sluice_redis_connected(r),
		      "an error reply (OOM): -EPROTO, quoted, and the connection dropped"))
		tap_diag("  ret %d: %s", ret, err);
	TAP_TRUE(cmd_ok("CONFIG SET maxmemory %s", "0"), "maxmemory 0 again");
	ret = sync_one(r, "box-a", 60000, "oom", 5, &debt, &live, err);
	TAP_TRUE(ret == 0 && sluice_redis_connected(r), "then the sync reconnects and works");
	sluice_redis_close(r);
}

static void test_auth(void)
{
	char good[192], bad[192], err[SLUICE_ERR_LEN] = "";
	struct sluice_redis *r;
	__s64 debt;
	__u32 live;
	int ret;

	write_file("pw-good", "s3cret\n", 0600);
	write_file("pw-bad", "guess\n", 0600);
	path_in(good, sizeof(good), "pw-good");
	path_in(bad, sizeof(bad), "pw-bad");
	if (!TAP_TRUE(cmd_ok("CONFIG SET requirepass %s", "s3cret"), "requirepass set"))
		return;

	r = client(sock, good);
	ret = r ? sync_one(r, "box-a", 60000, "auth", 5, &debt, &live, err) : -1;
	if (!TAP_TRUE(ret == 0 && debt == 5,
		      "requirepass and the right password file: the sync works"))
		tap_diag("  ret %d: %s", ret, err);
	sluice_redis_close(r);

	r = client(sock, bad);
	ret = r ? sluice_redis_connect(r, err, sizeof(err)) : -1;
	if (!TAP_TRUE(ret == -EACCES && strstr(err, sock) && strstr(err, bad) &&
			      strstr(err, "WRONGPASS") && !sluice_redis_connected(r),
		      "a wrong password: -EACCES naming the address, the file and Redis's error"))
		tap_diag("  ret %d: %s", ret, err);
	ret = r ? sync_one(r, "box-a", 60000, "auth", 5, &debt, &live, err) : -1;
	TAP_TRUE(ret == -EACCES, "a wrong password: the sync says -EACCES too");
	sluice_redis_close(r);

	r = client(sock, NULL);
	ret = r ? sluice_redis_connect(r, err, sizeof(err)) : -1;
	if (!TAP_TRUE(ret == -EACCES && strstr(err, sock) && strstr(err, "NOAUTH") &&
			      strstr(err, "--redis-password-file"),
		      "no password where one is needed: -EACCES, quoting NOAUTH, naming "
		      "--redis-password-file"))
		tap_diag("  ret %d: %s", ret, err);
	sluice_redis_close(r);

	/* The admin connection needs the password now. */
	{
		redisContext *c = admin();
		redisReply *x = c ? redisCommand(c, "AUTH s3cret") : NULL;

		if (x)
			freeReplyObject(x);
		x = c ? redisCommand(c, "CONFIG SET requirepass %s", "") : NULL;
		TAP_TRUE(x && x->type == REDIS_REPLY_STATUS, "requirepass cleared");
		if (x)
			freeReplyObject(x);
		if (c)
			redisFree(c);
	}
}

/* Run one command as a client that AUTHs with pw first; true on a status. */
static bool cmd_as(const char *pw, const char *fmt, const char *arg)
{
	redisContext *c = admin();
	redisReply *x = c ? redisCommand(c, "AUTH %s", pw) : NULL;
	bool ok;

	if (x)
		freeReplyObject(x);
	x = c ? redisCommand(c, fmt, arg) : NULL;
	ok = x && x->type != REDIS_REPLY_ERROR;
	if (x)
		freeReplyObject(x);
	if (c)
		redisFree(c);
	return ok;
}

/* A rotated password (issue 20, B11): CONFIG SET requirepass, the clients
 * dropped, the new password written to the file: the next sync works, with
 * no restart of the client. */
static void test_rotation(void)
{
	char good[192], err[SLUICE_ERR_LEN] = "";
	struct sluice_redis *r;
	__s64 debt;
	__u32 live;
	int ret;

	write_file("pw-good", "first\n", 0600);
	path_in(good, sizeof(good), "pw-good");
	if (!TAP_TRUE(cmd_ok("CONFIG SET requirepass %s", "first"), "requirepass 'first'"))
		return;
	r = client(sock, good);
	ret = r ? sync_one(r, "box-a", 60000, "rot", 5, &debt, &live, err) : -1;
	TAP_TRUE(ret == 0, "rotation: the sync works with the first password");

	TAP_TRUE(cmd_as("first", "CONFIG SET requirepass %s", "second") &&
			 cmd_as("second", "CLIENT KILL TYPE %s", "normal"),
		 "rotation: requirepass 'second', every client dropped");
	ret = r ? sync_one(r, "box-a", 60000, "rot", 5, &debt, &live, err) : -1;
	TAP_TRUE(ret == -ECONNRESET || ret == -EPIPE, "rotation: the dropped connection fails");
	ret = r ? sync_one(r, "box-a", 60000, "rot", 5, &debt, &live, err) : -1;
	if (!TAP_TRUE(ret == -EACCES && strstr(err, "WRONGPASS"),
		      "rotation: the old password in the file: WRONGPASS"))
		tap_diag("  ret %d: %s", ret, err);
	write_file("pw-good", "second\n", 0600);
	ret = r ? sync_one(r, "box-a", 60000, "rot", 5, &debt, &live, err) : -1;
	if (!TAP_TRUE(ret == 0, "rotation: the new password in the file: the next sync works, "
				"with no restart"))
		tap_diag("  ret %d: %s", ret, err);
	sluice_redis_close(r);
	TAP_TRUE(cmd_as("second", "CONFIG SET requirepass %s", ""), "requirepass cleared");
}

static void test_stopped(void)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_redis *r = client_by(sock, NULL, TIMEOUT_NS);
	__u64 t0, took;
	__s64 debt;
	__u32 live;
	int ret;

	ret = sync_one(r, "box-a", 60000, "stop", 10, &debt, &live, err);
	TAP_TRUE(ret == 0, "connected before the stop");
	kill(server, SIGSTOP);

	t0 = mono_ns();
	ret = sync_one(r, "box-a", 60000, "stop", 10, &debt, &live, err);
	took = mono_ns() - t0;
	if (!TAP_TRUE(ret == -ETIMEDOUT && took >= TIMEOUT_NS && took < 3 * TIMEOUT_NS &&
			      strstr(err, sock) && !sluice_redis_connected(r),
		      "a stopped server: the sync gives up at its deadline (-ETIMEDOUT)"))
		tap_diag("  ret %d after %.1f ms (deadline %.0f ms): %s", ret, took / 1e6,
			 TIMEOUT_NS / 1e6, err);

	/* Reconnecting: the kernel takes the connection, SCRIPT LOAD hangs. */
	t0 = mono_ns();
	ret = sync_one(r, "box-a", 60000, "stop", 10, &debt, &live, err);
	took = mono_ns() - t0;
	if (!TAP_TRUE(ret == -ETIMEDOUT && took >= TIMEOUT_NS && took < 3 * TIMEOUT_NS,
		      "a stopped server: a sync that reconnects gives up at the same deadline"))
		tap_diag("  ret %d after %.1f ms: %s", ret, took / 1e6, err);
	t0 = mono_ns();
	ret = sluice_redis_connect(r, err, sizeof(err));
	took = mono_ns() - t0;
	TAP_TRUE(ret == -ETIMEDOUT && took >= TIMEOUT_NS && took < 3 * TIMEOUT_NS,
		 "a stopped server: a connect gives up at its deadline");

	kill(server, SIGCONT);
	ret = sync_one(r, "box-a", 60000, "stop", 10, &debt, &live, err);
	if (!TAP_TRUE(ret == 0 && debt >= 10, "SIGCONT: the next sync reconnects and works"))
		tap_diag("  ret %d: %s", ret, err);
	sluice_redis_close(r);
}

static void test_restart(void)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_redis *r = client(sock, NULL);
	struct sluice_redis_sync_stats st;
	const char *keys[] = { "restart" };
	double used = 5e6; /* 5 s: still owed at the next sync */
	__s64 debt = 0;
	__u32 live;
	int ret;

	ret = sync_one(r, "box-a", 60000, "restart", used, &debt, &live, err);
	ret = ret ?: sync_one(r, "box-a", 60000, "restart", used, &debt, &live, err);
	TAP_TRUE(ret == 0 && debt > 5000000, "before the kill, the key's debt is two usages");

	kill_server();
	ret = sync_one(r, "box-a", 60000, "restart", used, &debt, &live, err);
	if (!TAP_TRUE((ret == -EPIPE || ret == -ECONNRESET) && !sluice_redis_connected(r),
		      "server killed: the sync says it is gone (-EPIPE or -ECONNRESET)"))
		tap_diag("  ret %d: %s", ret, err);
	ret = sync_one(r, "box-a", 60000, "restart", used, &debt, &live, err);
	if (!TAP_TRUE(ret == -ECONNREFUSED && strstr(err, sock),
		      "server down: the sync's reconnect is refused, with the address"))
		tap_diag("  ret %d: %s", ret, err);

	if (!TAP_TRUE(start_server(), "redis-server restarted on the same socket"))
		return;
	ret = sluice_redis_sync(r, FLEET, "box-a", 60000, 1, keys, &used, 0, &debt, &live, &st, err,
				sizeof(err));
	if (!TAP_TRUE(ret == 0 && st.reconnected && debt == 5000000 && live == 1,
		      "restarted: the sync reconnects, and the key starts over (debt 5 s)"))
		tap_diag("  ret %d (%s): debt %lld", ret, err, (long long)debt);
	sluice_redis_close(r);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	snprintf(dir, sizeof(dir), "/tmp/sluice-redis-XXXXXX");
	if (!mkdtemp(dir)) {
		tap_ok(false, "mkdtemp %s: %s", dir, strerror(errno));
		return tap_done();
	}
	path_in(sock, sizeof(sock), "redis.sock");
	path_in(logfile, sizeof(logfile), "redis.log");
	atexit(cleanup);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	/* A sync that blocks past its deadline must not hang the suite. */
	alarm(60);

	test_addresses();
	test_password_files();
	test_connect_errors();

	if (access(REDIS_SERVER, X_OK)) {
		tap_skip(REDIS_SERVER " is missing: install redis-server (scripts/deps.sh)",
			 "the client against a real Redis");
		return tap_done();
	}
	if (!tap_ok(start_server(), "redis-server started on %s", sock))
		return tap_done();
	test_arguments();
	test_debts();
	test_members();
	test_shares();
	test_many();
	test_noscript();
	test_error_reply();
	test_auth();
	test_rotation();
	test_stopped();
	test_restart();
	return tap_done();
}
