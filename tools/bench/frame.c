// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The frames the in-kernel benchmarks run: libsluice's builder, valid UDP. */
#include <errno.h>
#include <string.h>

#include "frame.h"
#include "bench.h"

/* Bytes of UDP payload: a 60-byte minimum Ethernet frame for IPv4. */
static const char payload[] = "sluice-bench-frame";

int bench_frame_build(struct bench_frame *f, const char *src, const char *dst)
{
	struct sluice_frame fr = {
		.dst_mac = { 0x02, 0, 0, 0, 0, 0x02 },
		.src_mac = { 0x02, 0, 0, 0, 0, 0x01 },
		.sport = 40000,
		.dport = 9, /* discard */
		.payload = payload,
		.payload_len = sizeof(payload) - 1,
	};

	memset(f, 0, sizeof(*f));
	/* Only the benchmarking ranges, 198.18.0.0/15 and 2001:2::/48, ever appear. */
	if (sluice_parse_addr(src, &fr.src, NULL, 0) || sluice_parse_addr(dst, &fr.dst, NULL, 0) ||
	    sluice_frame_check_range("source", &fr.src, NULL, 0) ||
	    sluice_frame_check_range("destination", &fr.dst, NULL, 0))
		return -EINVAL;
	fr.len = sluice_frame_min_len(&fr);
	if (fr.len > sizeof(f->data))
		return -EINVAL;
	if (sluice_frame_build(&fr, f->data, NULL, 0))
		return -EINVAL;
	f->len = fr.len;
	return 0;
}
