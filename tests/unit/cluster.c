// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fleet agent's Redis Cluster client (user/lib/redis_cluster.c): the
 * replies it reads (CLUSTER SLOTS, MOVED, ASK), sane, malformed and lying,
 * parsed from RESP bytes through hiredis's reader as the client gets them;
 * then the client against a fake cluster node (tests/lib/fakeredis.c) that
 * lies about the map, redirects to itself forever, asks, answers what no
 * node would, and hangs: no sync crashes or outlives its deadline, the keys
 * of a node that lies are down (-1) and the members' answer still counts.
 * Then two fakes and a failover: the primary of the keys dies, the other
 * is given its slots; the keys follow, and the dead node, a primary no
 * more, is not said down for ever. The fake listens on 198.18.99.1 in a network namespace of this program's
 * own (root; skipped without).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <hiredis/hiredis.h>

#include "libsluice.h"
#include "redis.h"
#include "redis_cluster.h"
#include "../lib/fakeredis.h"
#include "../lib/tap.h"

#define MS (1000ULL * 1000)
#define DEADLINE_NS (400 * MS)
#define HOST "198.18.99.1"

static redisReply *reply_of(const char *resp)
{
	redisReader *rd = redisReaderCreate();
	void *x = NULL;

	redisReaderFeed(rd, resp, strlen(resp));
	if (redisReaderGetReply(rd, &x) != REDIS_OK)
		x = NULL;
	redisReaderFree(rd);
	return x;
}

static struct sluice_slot_range ranges[SLUICE_CLUSTER_RANGES];

/* Parse CLUSTER SLOTS's resp: 0 or -errno, *n ranges, why in err. */
static int slots(const char *resp, size_t *n, char *err)
{
	redisReply *x = reply_of(resp);
	int ret;

	if (!x)
		return -99;
	ret = sluice_cluster_parse_slots(x, "198.18.0.9", ranges, SLUICE_CLUSTER_RANGES, n, err,
					 SLUICE_ERR_LEN);
	freeReplyObject(x);
	return ret;
}

#define NODE(ip, port) "*4\r\n$" #ip "\r\n" ip "\r\n:" #port "\r\n$3\r\nid1\r\n*0\r\n"

static void test_slots(void)
{
	char err[SLUICE_ERR_LEN] = "";
	size_t n = 0;
	int ret;

	/* Redis 7.0's shape: {from, to, {ip, port, id, {}}, replicas...} */
	ret = slots("*2\r\n"
		    "*4\r\n:0\r\n:8191\r\n*4\r\n$10\r\n198.18.0.1\r\n:7001\r\n$2\r\nid\r\n*0\r\n"
		    "*4\r\n$10\r\n198.18.0.4\r\n:7004\r\n$2\r\nid\r\n*0\r\n"
		    "*3\r\n:8192\r\n:16383\r\n*3\r\n$9\r\n2001:2::2\r\n:7002\r\n$2\r\nid\r\n",
		    &n, err);
	TAP_TRUE(!ret && n == 2 && ranges[0].from == 0 && ranges[0].to == 8191 &&
			 !strcmp(ranges[0].host, "198.18.0.1") && !strcmp(ranges[0].port, "7001") &&
			 ranges[1].from == 8192 && ranges[1].to == 16383 &&
			 !strcmp(ranges[1].host, "2001:2::2"),
		 "CLUSTER SLOTS of two ranges, a replica and an IPv6 primary");
	ret = slots("*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$0\r\n\r\n:7000\r\n", &n, err);
	TAP_TRUE(!ret && n == 1 && !strcmp(ranges[0].host, "198.18.0.9"),
		 "an empty ip is the node asked");
	ret = slots("*0\r\n", &n, err);
	TAP_TRUE(!ret && n == 0, "no range: a cluster with no slot assigned yet");

	static const struct {
		const char *resp, *what, *says;
	} bad[] = {
		{ "-ERR This instance has cluster support disabled\r\n", "an error",
		  "cluster-enabled" },
		{ ":5\r\n", "an integer", "no array" },
		{ "*1\r\n:5\r\n", "a range that is no array", "not {from, to" },
		{ "*1\r\n*2\r\n:0\r\n:5\r\n", "a range without its primary", "not {from, to" },
		{ "*1\r\n*3\r\n:9\r\n:5\r\n*2\r\n$7\r\n1.2.3.4\r\n:1\r\n", "a range backwards",
		  "not within" },
		{ "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$7\r\n1.2.3.4\r\n:1\r\n",
		  "a range past slot 16383", "not within" },
		{ "*1\r\n*3\r\n:-1\r\n:5\r\n*2\r\n$7\r\n1.2.3.4\r\n:1\r\n", "a slot below 0",
		  "not within" },
		{ "*2\r\n*3\r\n:0\r\n:100\r\n*2\r\n$7\r\n1.2.3.4\r\n:1\r\n"
		  "*3\r\n:100\r\n:200\r\n*2\r\n$7\r\n1.2.3.5\r\n:1\r\n",
		  "two ranges that share slot 100 (a lying map)", "two primaries" },
		{ "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$11\r\nredis.local\r\n:1\r\n", "a host name",
		  "no address" },
		{ "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$7\r\n1.2.3.4\r\n:0\r\n", "port 0", "port 0" },
		{ "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$7\r\n1.2.3.4\r\n:65536\r\n", "port 65536",
		  "port 65536" },
		{ "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n:1\r\n:1\r\n", "an ip that is a number",
		  "not {ip, port" },
		{ "*1\r\n*3\r\n:0\r\n:5\r\n$3\r\nabc\r\n", "a primary that is a string",
		  "not {ip, port" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ret = slots(bad[i].resp, &n, err);
		if (!TAP_TRUE(ret == -EPROTO && strstr(err, bad[i].says) && n == 0,
			      "CLUSTER SLOTS with %s is refused", bad[i].what))
			tap_diag("  ret %d, err '%s'", ret, err);
	}
}

static void test_redirects(void)
{
	char host[64], port[8];
	__u16 slot = 0;
	bool ask = true;
	int ret;

	ret = sluice_cluster_parse_redirect("MOVED 3999 198.18.0.3:6381", "198.18.0.9", &ask, &slot,
					    host, port);
	TAP_TRUE(!ret && !ask && slot == 3999 && !strcmp(host, "198.18.0.3") &&
			 !strcmp(port, "6381"),
		 "MOVED 3999 198.18.0.3:6381");
	ret = sluice_cluster_parse_redirect("ASK 12739 2001:2::5:7000", "198.18.0.9", &ask, &slot,
					    host, port);
	TAP_TRUE(!ret && ask && slot == 12739 && !strcmp(host, "2001:2::5") &&
			 !strcmp(port, "7000"),
		 "ASK 12739 to an IPv6 node (the port after the last ':')");
	ret = sluice_cluster_parse_redirect("MOVED 1 :7005", "198.18.0.9", &ask, &slot, host, port);
	TAP_TRUE(!ret && !strcmp(host, "198.18.0.9") && !strcmp(port, "7005"),
		 "MOVED to an empty host: the node asked");

	static const char *const bad[] = {
		"MOVED",
		"MOVED 3999",
		"MOVED x 198.18.0.3:6381",
		"MOVED -1 198.18.0.3:6381",
		"MOVED 16384 198.18.0.3:6381",
		"MOVED 99999999999999999999 198.18.0.3:6381",
		"MOVED 1 redis.local:6381",
		"MOVED 1 198.18.0.3",
		"MOVED 1 198.18.0.3:0",
		"MOVED 1 198.18.0.3:65536",
		"MOVED 1 198.18.0.3:63x",
		"MOVED 1 198.18.0.3:6381 extra",
		"MOVEDX 1 198.18.0.3:6381",
		"TRYAGAIN Multiple keys request during rehashing of slot",
		"CLUSTERDOWN The cluster is down",
		"ERR unknown command",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		TAP_TRUE(sluice_cluster_parse_redirect(bad[i], "198.18.0.9", &ask, &slot, host,
						       port) == -EINVAL,
			 "'%s' is no redirection", bad[i]);
}

/* ---- a fake node that lies ---- */

enum mode {
	SANE, /* the map names this node for every slot; answers as Redis */
	MAP_OVERLAP, /* two ranges that share slots */
	MAP_HUGE, /* an aggregate of 2^31 - 1 elements */
	MOVED_SELF, /* every lanes' call: MOVED to this node, again and again */
	ASK_ONCE, /* the first lanes' call: ASK to this node; then sane */
	NEGATIVE, /* debts of -5 */
	SHORT, /* one debt fewer than keys */
	HANG, /* lanes' calls never answered */
};

static struct {
	enum mode mode;
	char self[64]; /* "198.18.99.1:PORT" */
	char port[8];
	int asked; /* ASKING commands seen */
	bool asking; /* the last command was ASKING */
} fx;

static void send_map(struct fakeredis *f)
{
	if (fx.mode == MAP_OVERLAP)
		fr_sendf(f,
			 "*2\r\n*3\r\n:0\r\n:9000\r\n*2\r\n$11\r\n" HOST "\r\n:%s\r\n"
			 "*3\r\n:8000\r\n:16383\r\n*2\r\n$11\r\n" HOST "\r\n:%s\r\n",
			 fx.port, fx.port);
	else if (fx.mode == MAP_HUGE)
		fr_sendf(f, "*2147483647\r\n");
	else
		fr_sendf(f, "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$11\r\n" HOST "\r\n:%s\r\n",
			 fx.port);
}

/* A lanes' call: EVALSHA sha k key... live used... */
static int lanes_keys(const struct fr_cmd *c)
{
	long k;

	if (!fr_is(c, "EVALSHA") || c->argc < 4)
		return -1;
	k = strtol(c->argv[2], NULL, 10);
	return k >= 1 && c->argc == 3 + 2 * k + 1 ? (int)k : -1;
}

static enum fr_action handler(struct fakeredis *f, const struct fr_cmd *c, void *ctx)
{
	static const struct fr_sane sane = { .live = 2 };
	int k = lanes_keys(c), i;
	bool asking = fx.asking;

	(void)ctx;
	fx.asking = false;
	if (fr_is(c, "CLUSTER")) {
		send_map(f);
		return FR_ANSWERED;
	}
	if (fr_is(c, "ASKING")) {
		fx.asked++;
		fx.asking = true;
		fr_sendf(f, "+OK\r\n");
		return FR_ANSWERED;
	}
	if (k < 0)
		return fr_sane(f, c, &sane);
	switch (fx.mode) {
	case MOVED_SELF:
		fr_sendf(f, "-MOVED %u %s\r\n", sluice_key_slot(c->argv[3], c->len[3]), fx.self);
		return FR_ANSWERED;
	case ASK_ONCE:
		if (!asking) {
			fr_sendf(f, "-ASK %u %s\r\n", sluice_key_slot(c->argv[3], c->len[3]),
				 fx.self);
			return FR_ANSWERED;
		}
		break;
	case HANG:
		return FR_HANG;
	default:
		break;
	}
	/* the slot is the caller's to know: any slot the map gives this node */
	fr_sendf(f, "*%d\r\n", fx.mode == SHORT ? k - 1 : k);
	for (i = 0; i < (fx.mode == SHORT ? k - 1 : k); i++)
		fr_sendf(f, ":%d\r\n", fx.mode == NEGATIVE ? -5 : 7);
	return FR_ANSWERED;
}

static __u64 mono_ns(void)
{
	return sluice_now_ns();
}

/* One sync of two keys: its result, their debts, its stats and how long. */
static int sync2(struct sluice_redis *r, __s64 *debt, __u32 *live,
		 struct sluice_redis_sync_stats *st, __u64 *took, char *err)
{
	const char *keys[] = { "p:198.18.0.7/32", "p:198.18.0.8/32" };
	double used[] = { 1000, 2000 };
	__u64 t0 = mono_ns();
	int ret;

	debt[0] = debt[1] = -99;
	*live = 0;
	ret = sluice_redis_sync(r, "fk", "box-a", 60000, 2, keys, used, 0, debt, live, st, err,
				SLUICE_ERR_LEN);
	*took = mono_ns() - t0;
	return ret;
}

static struct sluice_redis *client(const char *seeds)
{
	struct sluice_redis_opts o = { .cluster = seeds, .timeout_ns = DEADLINE_NS };
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_redis *r = NULL;

	if (sluice_redis_open(&o, &r, err, sizeof(err)))
		tap_diag("  open %s: %s", seeds, err);
	return r;
}

static bool own_netns; /* test_fake() made it: HOST is on its lo */

static void test_fake(void)
{
	struct sluice_redis_sync_stats st;
	char err[SLUICE_ERR_LEN];
	struct fakeredis *fk;
	struct sluice_redis *r;
	__s64 debt[2];
	__u32 live;
	__u64 took;
	int ret;

	if (geteuid()) {
		tap_skip("needs root (a network namespace of its own)", "a fake cluster node");
		return;
	}
	if (unshare(CLONE_NEWNET) ||
	    system("ip link set lo up && ip addr add " HOST "/32 dev lo") != 0) {
		tap_skip("no network namespace", "a fake cluster node");
		return;
	}
	own_netns = true;
	if (!tap_ok(!fakeredis_start_tcp(&fk, HOST, handler, NULL), "a fake node on " HOST))
		return;
	snprintf(fx.self, sizeof(fx.self), "%s", fakeredis_addr(fk));
	snprintf(fx.port, sizeof(fx.port), "%s", strchr(fx.self, ':') + 1);

	fx.mode = MAP_OVERLAP;
	r = client(fx.self);
	ret = r ? sluice_redis_connect(r, err, sizeof(err)) : -1;
	TAP_TRUE(ret == -EHOSTUNREACH && strstr(err, "two primaries") && !sluice_redis_connected(r),
		 "a map that gives a slot two primaries is refused, said: %s", err);
	ret = r ? sync2(r, debt, &live, &st, &took, err) : -1;
	TAP_TRUE(ret == -EHOSTUNREACH && took < DEADLINE_NS + 100 * MS,
		 "and a sync without a map fails whole (an outage) within its deadline");
	sluice_redis_close(r);

	fx.mode = MAP_HUGE;
	r = client(fx.self);
	ret = r ? sluice_redis_connect(r, err, sizeof(err)) : -1;
	TAP_TRUE(ret == -EHOSTUNREACH && strstr(err, "2147483647"),
		 "a map of 2^31 - 1 ranges is refused before hiredis reads it: %s", err);
	sluice_redis_close(r);

	fx.mode = SANE;
	r = client(fx.self);
	ret = r ? sync2(r, debt, &live, &st, &took, err) : -1;
	if (!TAP_TRUE(ret == 0 && live == 2 && debt[0] == 7 && debt[1] == 7 && st.shards == 1 &&
			      !st.shards_down && sluice_redis_connected(r) &&
			      !*sluice_redis_fault(r),
		      "a sane node: the members' N and each key's debt"))
		tap_diag("  ret %d live %u debts %lld %lld: %s", ret, live, (long long)debt[0],
			 (long long)debt[1], err);

	fx.mode = ASK_ONCE;
	fx.asked = 0;
	ret = sync2(r, debt, &live, &st, &took, err);
	TAP_TRUE(ret == 0 && debt[0] == 7 && fx.asked >= 1 && st.asked >= 1 && !st.shards_down,
		 "ASK: ASKING, then the call again, answered (%d ASKING)", fx.asked);

	fx.mode = MOVED_SELF;
	ret = sync2(r, debt, &live, &st, &took, err);
	TAP_TRUE(ret == 0 && live == 2 && debt[0] == -1 && debt[1] == -1 && st.shards_down == 1 &&
			 st.moved >= 2 && strstr(sluice_redis_fault(r), "redirected") &&
			 took < DEADLINE_NS,
		 "MOVED to itself forever: followed a few times, then its keys are down (-1), "
		 "the members' answer counts: %s",
		 sluice_redis_fault(r));

	fx.mode = NEGATIVE;
	ret = sync2(r, debt, &live, &st, &took, err);
	TAP_TRUE(ret == 0 && debt[0] == -1 && debt[1] == -1 && st.shards_down == 1 &&
			 strstr(sluice_redis_fault(r), "debt"),
		 "debts below 0 are no answer: the keys are down, said: %s", sluice_redis_fault(r));

	fx.mode = SHORT;
	ret = sync2(r, debt, &live, &st, &took, err);
	TAP_TRUE(ret == 0 && debt[0] == -1 && debt[1] == -1 && st.shards_down == 1,
		 "one debt fewer than keys is no answer: the keys are down");

	fx.mode = HANG;
	ret = sync2(r, debt, &live, &st, &took, err);
	TAP_TRUE(ret == 0 && debt[0] == -1 && st.shards_down == 1 &&
			 took < DEADLINE_NS + 100 * MS &&
			 strstr(sluice_redis_fault(r), "did not answer"),
		 "a node that hangs on the keys: the sync ends at its deadline (%llu ms), the "
		 "keys down",
		 (unsigned long long)(took / MS));

	fx.mode = SANE;
	ret = sync2(r, debt, &live, &st, &took, err);
	TAP_TRUE(ret == 0 && debt[0] == 7 && !st.shards_down && !*sluice_redis_fault(r),
		 "and once it answers again, its keys sync again");
	sluice_redis_close(r);
	fakeredis_stop(fk);
}

/*
 * A failover, as a cluster with replicas makes it: primary A holds every
 * slot but the members' (B's); A dies; the cluster then gives A's slots to
 * B (its replica promoted). The agent must move the keys to B and stop
 * saying the shard down: A, which no longer owns a slot, is no shard.
 */
static struct {
	char a[8], b[8]; /* the two fakes' ports */
	bool promoted;
	__u16 mslot; /* the members' slot */
} fo;

#define RANGE "*3\r\n:%u\r\n:%u\r\n*2\r\n$11\r\n" HOST "\r\n:%s\r\n"

static enum fr_action fo_handler(struct fakeredis *f, const struct fr_cmd *c, void *ctx)
{
	static const struct fr_sane sane = { .live = 2 };
	int k = lanes_keys(c), i;
	char map[512];
	size_t at;

	(void)ctx;
	if (k >= 0) {
		fr_sendf(f, "*%d\r\n", k);
		for (i = 0; i < k; i++)
			fr_sendf(f, ":7\r\n");
		return FR_ANSWERED;
	}
	if (!fr_is(c, "CLUSTER"))
		return fr_sane(f, c, &sane);
	if (fo.promoted) {
		fr_sendf(f, "*1\r\n" RANGE, 0U, SLUICE_CLUSTER_SLOTS - 1U, fo.b);
		return FR_ANSWERED;
	}
	at = (size_t)snprintf(map, sizeof(map), "*%u\r\n",
			      1U + (fo.mslot > 0) + (fo.mslot < SLUICE_CLUSTER_SLOTS - 1));
	if (fo.mslot > 0)
		at += (size_t)snprintf(map + at, sizeof(map) - at, RANGE, 0U, fo.mslot - 1U, fo.a);
	at += (size_t)snprintf(map + at, sizeof(map) - at, RANGE, (unsigned int)fo.mslot,
			       (unsigned int)fo.mslot, fo.b);
	if (fo.mslot < SLUICE_CLUSTER_SLOTS - 1)
		at += (size_t)snprintf(map + at, sizeof(map) - at, RANGE, fo.mslot + 1U,
				       SLUICE_CLUSTER_SLOTS - 1U, fo.a);
	fr_send(f, map, at);
	return FR_ANSWERED;
}

static void test_failover(void)
{
	struct sluice_redis_sync_stats st;
	struct fakeredis *a = NULL, *b = NULL;
	struct sluice_redis *r = NULL;
	char err[SLUICE_ERR_LEN], seeds[64];
	__s64 debt[2];
	__u32 live;
	__u64 took;
	int ret, k;

	if (!own_netns)
		return; /* test_fake() said why */
	fo.mslot = sluice_key_slot("sluice:{fk}:boxes", strlen("sluice:{fk}:boxes"));
	if (!tap_ok(!fakeredis_start_tcp(&a, HOST, fo_handler, NULL) &&
			    !fakeredis_start_tcp(&b, HOST, fo_handler, NULL),
		    "two fake nodes, a primary and its replica-to-be"))
		goto out;
	snprintf(fo.a, sizeof(fo.a), "%s", strchr(fakeredis_addr(a), ':') + 1);
	snprintf(fo.b, sizeof(fo.b), "%s", strchr(fakeredis_addr(b), ':') + 1);
	snprintf(seeds, sizeof(seeds), "%s,%s", fakeredis_addr(a), fakeredis_addr(b));
	r = client(seeds);
	ret = r ? sync2(r, debt, &live, &st, &took, err) : -1;
	if (!TAP_TRUE(ret == 0 && debt[0] == 7 && debt[1] == 7 && st.shards == 2 && !st.shards_down,
		      "before the failover: two shards, the keys on A"))
		tap_diag("  ret %d debts %lld %lld shards %u down %u: %s", ret, (long long)debt[0],
			 (long long)debt[1], st.shards, st.shards_down, err);

	fakeredis_stop(a);
	a = NULL;
	ret = sync2(r, debt, &live, &st, &took, err);
	TAP_TRUE(ret == 0 && debt[0] == -1 && debt[1] == -1 && st.shards_down == 1,
		 "A dies: its keys are down (-1), the members' answer counts: %s",
		 sluice_redis_fault(r));

	fo.promoted = true;
	for (k = 1; k <= 3; k++) {
		ret = sync2(r, debt, &live, &st, &took, err);
		if (!TAP_TRUE(ret == 0 && debt[0] == 7 && debt[1] == 7 && st.shards == 1 &&
				      !st.shards_down && !*sluice_redis_fault(r),
			      "B promoted, sync %d: the map read again, the keys on B, no shard "
			      "down (A, no primary now, is not asked)",
			      k))
			tap_diag("  ret %d debts %lld %lld shards %u down %u: %s", ret,
				 (long long)debt[0], (long long)debt[1], st.shards, st.shards_down,
				 sluice_redis_fault(r));
	}
out:
	sluice_redis_close(r);
	if (a)
		fakeredis_stop(a);
	if (b)
		fakeredis_stop(b);
}

int main(void)
{
	test_slots();
	test_redirects();
	test_fake();
	test_failover();
	return tap_done();
}
