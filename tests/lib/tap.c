// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The TAP writer of the C test programs: ok/not ok lines, notes, the plan. */
#include <stdarg.h>
#include <stdio.h>

#include "tap.h"

static int failures;

bool tap_ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok - ", cond ? "" : "not ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		failures++;
	return cond;
}

void tap_skip(const char *why, const char *fmt, ...)
{
	va_list ap;

	printf("ok - ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP %s\n", why);
	fflush(stdout);
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

int tap_failures(void)
{
	return failures;
}

int tap_done(void)
{
	return failures ? 1 : 0;
}
