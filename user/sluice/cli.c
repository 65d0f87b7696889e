// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The loader's -j and -v. Its errors are log.h's sluice_cli_err() and
 * sluice_cli_usage(), which main() points at json_output. */
#include <stdbool.h>

#include "cli.h"

bool json_output;
bool verbose;

void set_verbose(void)
{
	verbose = true;
	sluice_set_log_level(SLUICE_LOG_DEBUG);
}
