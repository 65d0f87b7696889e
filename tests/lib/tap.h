/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A small TAP 13 harness for sluice's C tests. Each program prints
 * "ok - name" / "not ok - name" / "ok - name # SKIP why" lines and "# " notes;
 * tests/run.sh numbers them into one stream and counts them.
 */
#ifndef SLUICE_TAP_H
#define SLUICE_TAP_H

#include <stdbool.h>
#include <stdio.h>

/* Report one test; returns cond. */
bool tap_ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_skip(const char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit status for main: 0 when nothing failed. */
int tap_done(void);
/* Count of failures so far (to stop a sequence early). */
int tap_failures(void);

/* Compare two unsigned values; on mismatch say both. */
#define TAP_EQ(got, want, ...)                                                 \
	({                                                                     \
		unsigned long long __g = (unsigned long long)(got);            \
		unsigned long long __w = (unsigned long long)(want);           \
		bool __r = tap_ok(__g == __w, __VA_ARGS__);                    \
		if (!__r)                                                      \
			tap_diag("  %s: got %llu, want %llu", #got, __g, __w); \
		__r;                                                           \
	})

/* Check a condition and, when it fails, print the expression. */
#define TAP_TRUE(cond, ...)                              \
	({                                               \
		bool __r = tap_ok((cond), __VA_ARGS__);  \
		if (!__r)                                \
			tap_diag("  failed: %s", #cond); \
		__r;                                     \
	})

#endif /* SLUICE_TAP_H */
