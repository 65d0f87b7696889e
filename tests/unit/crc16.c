// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Redis Cluster's key slots (user/lib/crc16.c) against what Redis itself
 * answers: the cluster specification's check value (CRC16 of "123456789"
 * is 0x31C3, slot 12739) and CLUSTER KEYSLOT of a Redis 7.0 for keys with
 * and without hash tags, the odd ones included ("{}", "foo{}{bar}",
 * "foo{{bar}}zap", an unclosed '{'); and the fleet's key groups.
 */
#include <string.h>

#include "crc16.h"
#include "redis_cluster.h"
#include "../lib/tap.h"

/* CLUSTER KEYSLOT KEY of redis-server 7.0.15 (Debian 12) */
static const struct {
	const char *key;
	unsigned int slot;
} known[] = {
	{ "123456789", 12739 },
	{ "foo", 12182 },
	{ "bar", 5061 },
	{ "hello", 866 },
	{ "{user1000}.following", 3443 },
	{ "{user1000}.followers", 3443 },
	{ "foo{}{bar}", 8363 }, /* an empty tag: the whole key */
	{ "foo{{bar}}zap", 4015 }, /* the tag is "{bar" */
	{ "foo{bar}{zap}", 5061 }, /* the first tag, "bar" */
	{ "{}", 15257 },
	{ "a{b", 13340 }, /* no '}': the whole key */
	{ "sluice:{edge}:boxes", 3202 },
};

int main(void)
{
	char pre[96], key[128];
	unsigned int i, g, per[3] = { 0 };
	bool same = true;

	TAP_EQ(sluice_crc16("123456789", 9), 0x31C3, "CRC16-XMODEM check value of \"123456789\"");
	TAP_EQ(sluice_crc16("", 0), 0, "CRC16 of nothing is 0");
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		TAP_EQ(sluice_key_slot(known[i].key, strlen(known[i].key)), known[i].slot,
		       "slot of '%s' is Redis's %u", known[i].key, known[i].slot);
	TAP_EQ(sluice_key_slot("{user1000}.following", 20),
	       sluice_key_slot("{user1000}.followers", 20),
	       "{user1000}.following and {user1000}.followers share a slot");
	TAP_EQ(sluice_key_slot("sluice:{edge}:p:198.18.0.7/32", 29),
	       sluice_key_slot("sluice:{edge}:boxes", 19),
	       "a key of one Redis's naming shares the slot of its fleet's members");

	/* The groups: a key's group is fixed by its name, and a group's keys
	 * share one slot whatever the key. */
	for (g = 0; g < 4 && same; g++) {
		sluice_cluster_prefix("edge", g, pre, sizeof(pre));
		snprintf(key, sizeof(key), "%sp:198.18.0.1/32", pre);
		same = sluice_key_slot(key, strlen(key)) == sluice_key_slot(pre, strlen(pre));
		snprintf(key, sizeof(key), "%sb:198.18.9.9/32", pre);
		same &= sluice_key_slot(key, strlen(key)) == sluice_key_slot(pre, strlen(pre));
	}
	TAP_TRUE(same, "the keys of a group share the slot of its hash tag {FLEET#gG}");
	TAP_EQ(sluice_cluster_group("p:198.18.0.7/32"), sluice_cluster_group("p:198.18.0.7/32"),
	       "a key's group is the same at every call");
	/* The groups over three primaries of redis-cli --cluster create's
	 * ranges (0-5460, 5461-10922, 10923-16383): each takes about a third. */
	for (g = 0; g < SLUICE_CLUSTER_GROUPS; g++) {
		unsigned int s;

		sluice_cluster_prefix("edge", g, pre, sizeof(pre));
		s = sluice_key_slot(pre, strlen(pre));
		per[s <= 5460 ? 0 : s <= 10922 ? 1 : 2]++;
	}
	TAP_TRUE(per[0] > 290 && per[1] > 290 && per[2] > 290,
		 "fleet edge's %d groups spread over three shards: %u, %u, %u",
		 SLUICE_CLUSTER_GROUPS, per[0], per[1], per[2]);
	return tap_done();
}
