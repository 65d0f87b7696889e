// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* What `stats --watch` and `top --watch` share: the refresh's duration. */
#include <errno.h>

#include "sluicectl.h"

#define WATCH_MIN_NS (100ULL * 1000000ULL)
#define WATCH_MAX_NS (3600ULL * SLUICE_NS_PER_SEC)

int ctl_parse_watch(const char *cmd, const char *v, bool optional, __u64 *ns)
{
	char err[SLUICE_ERR_LEN];
	int ret;

	ret = sluice_parse_duration("--watch", v, ns, err, sizeof(err));
	if (ret && ret != -ERANGE)
		return sluice_cli_usage(cmd, "%s", err);
	if (ret || *ns < WATCH_MIN_NS || *ns > WATCH_MAX_NS)
		return sluice_cli_usage(cmd,
					"--watch '%s' is out of range: give 100ms to 1h (a bare "
					"number is seconds: 1, 1.5)%s",
					v, optional ? ", or nothing for 1s" : "");
	return 0;
}
