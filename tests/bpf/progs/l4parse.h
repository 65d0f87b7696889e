/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* What tests/bpf/progs/l4parse.bpf.c leaves for tests/bpf/l4parse.c. */
#ifndef SLUICE_TEST_L4PARSE_H
#define SLUICE_TEST_L4PARSE_H

#include <linux/types.h>
#include <sluice/l4.h>

struct l4parse_out {
	struct sluice_l4 l4;
	__s32 parse; /* enum parse_result of bpf/lib/parse.h */
	__u8 family;
	__u8 matched; /* sluice_match_l4(&match, &l4) */
	__u8 pad[2];
};

#endif /* SLUICE_TEST_L4PARSE_H */
