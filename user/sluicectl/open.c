// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl: the state -i names, opened for a reader or a writer, and its
 * live policies. */
#include <errno.h>
#include <stdio.h>

#include "sluicectl.h"

static int open_iface(struct sluice_handle *h, bool for_write)
{
	char ifname[SLUICE_STATE_NAME_MAX], err[SLUICE_ERR_LEN];
	int ret;

	ret = sluice_pick_iface(ctl.iface, ifname, err, sizeof(err));
	if (!ret)
		ret = sluice_open(ifname, h, err, sizeof(err));
	/* An interface that does not exist is a wrong -i, as for sluice(8):
	 * exit status 2; one without sluice attached is runtime (1). */
	if (ret)
		return sluice_cli_err(ret == -ENODEV ? -EINVAL : ret, "%s", err);
	ctl.shape = h->shape;
	ret = sluice_check_standing(h, for_write, err, sizeof(err));
	if (ret && for_write) {
		sluice_close(h);
		return sluice_cli_err(ret, "%s", err);
	}
	/* A reader still shows what is there, and says whose it is. */
	if (ret)
		fprintf(stderr, "sluicectl: warning: %s\n", err);
	return 0;
}

int ctl_open(struct sluice_handle *h)
{
	return open_iface(h, false);
}

int ctl_open_write(struct sluice_handle *h)
{
	return open_iface(h, true);
}

int ctl_read_policies(struct sluice_handle *h, struct sluice_policies *pol, bool with_stats)
{
	char err[SLUICE_ERR_LEN];
	int ret;

	ret = sluice_read_policies(h, pol, with_stats, err, sizeof(err));
	return ret ? sluice_cli_err(ret, "%s", err) : 0;
}
