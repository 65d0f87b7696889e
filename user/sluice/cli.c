// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* How the loader's commands report: errors as sentences, or as JSON under
 * -j, and -v. */
#include <stdarg.h>
#include <stdbool.h>

#include "cli.h"

bool json_output;
bool verbose;

void p_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sluice_report("sluice", json_output, fmt, ap);
	va_end(ap);
}

int usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = sluice_report_usage("sluice", json_output, cmd, fmt, ap);
	va_end(ap);
	return ret;
}

void set_verbose(void)
{
	verbose = true;
	sluice_set_log_level(SLUICE_LOG_DEBUG);
}
