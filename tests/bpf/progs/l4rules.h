/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* What tests/bpf/l4rules.c gives tests/bpf/progs/l4rules.bpf.c. */
#ifndef SLUICE_TEST_L4RULES_H
#define SLUICE_TEST_L4RULES_H

#include <linux/types.h>
#include <sluice/l4.h>

struct l4rules_in {
	struct sluice_l4 l4;
	__u8 addr[16] __attribute__((aligned(8)));
	__u8 gen, family;
	__u8 pad[6];
};

#endif /* SLUICE_TEST_L4RULES_H */
