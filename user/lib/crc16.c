// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * CRC16-XMODEM and the key slot of Redis Cluster. The table is computed
 * from the polynomial at the first call (one bit at a time, then a byte at a
 * time from the table): a sync hashes every key it pushes, a million of
 * them under a flood.
 */
#include <pthread.h>
#include <string.h>

#include "crc16.h"

static __u16 table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
	unsigned int i, b;

	for (i = 0; i < 256; i++) {
		__u16 c = (__u16)(i << 8);

		for (b = 0; b < 8; b++)
			c = c & 0x8000 ? (__u16)((c << 1) ^ 0x1021) : (__u16)(c << 1);
		table[i] = c;
	}
}

__u16 sluice_crc16(const void *p, size_t n)
{
	const unsigned char *s = p;
	__u16 crc = 0;
	size_t i;

	pthread_once(&table_once, make_table);
	for (i = 0; i < n; i++)
		crc = (__u16)((crc << 8) ^ table[((crc >> 8) ^ s[i]) & 0xff]);
	return crc;
}

__u16 sluice_key_slot(const char *key, size_t n)
{
	const char *open = memchr(key, '{', n), *close;

	if (open) {
		size_t rest = n - (size_t)(open - key) - 1;

		close = memchr(open + 1, '}', rest);
		/* "{}" hashes the whole key: an empty tag is no tag */
		if (close && close > open + 1)
			return sluice_crc16(open + 1, (size_t)(close - open - 1)) &
			       (SLUICE_CLUSTER_SLOTS - 1);
	}
	return sluice_crc16(key, n) & (SLUICE_CLUSTER_SLOTS - 1);
}
