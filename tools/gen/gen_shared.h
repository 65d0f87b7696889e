/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* What sluice-gen's program and its userspace share. */
#ifndef SLUICE_GEN_SHARED_H
#define SLUICE_GEN_SHARED_H

#include <linux/types.h>

/* Value of gen_stamps (per CPU): when the first and the last frame went out,
 * in CLOCK_MONOTONIC ns. */
struct gen_stamp {
	__u64 first_ns;
	__u64 last_ns;
};
_Static_assert(sizeof(struct gen_stamp) == 16, "gen_stamp layout");

#endif /* SLUICE_GEN_SHARED_H */
