/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Redis Cluster's key slots (user/lib/crc16.c): CRC16-XMODEM (polynomial
 * 0x1021, initial value 0, no reflection) of the key, or of its hash tag,
 * modulo 16384, as the cluster specification gives it.
 */
#ifndef SLUICE_CRC16_H
#define SLUICE_CRC16_H

#include <stddef.h>
#include <linux/types.h>

#define SLUICE_CLUSTER_SLOTS 16384

__u16 sluice_crc16(const void *p, size_t n);
/* The slot of key (n bytes): a hash tag, the bytes between the first '{'
 * and the first '}' after it when there is at least one between them,
 * hashes instead of the whole key. */
__u16 sluice_key_slot(const char *key, size_t n);

#endif /* SLUICE_CRC16_H */
