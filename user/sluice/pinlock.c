// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The pin root's lock, and removing a state's pins. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "loader.h"

int lock_pin_root(char *err, size_t errlen)
{
	return sluice_lock_pin_root(err, errlen);
}

void unlock_pin_root(int fd)
{
	struct sluice_netns ns;

	if (fd < 0)
		return;
	sluice_unlock_pin_root(fd);
	/* A namespace's directory goes with its last limiter (rmdir fails,
	 * harmlessly, while it holds any). */
	if (sluice_netns_self(&ns, NULL, 0) == 0 && !ns.initial)
		rmdir(ns.root);
}

int remove_pins(const char *dir, char *err, size_t errlen)
{
	static const char *const extra[] = { SLUICE_PROG_PIN, PROG_PIN_NEW };
	char path[512];
	size_t i;

	for (i = 0; i < sluice_nr_maps + 2; i++) {
		const char *name = i < sluice_nr_maps ? sluice_maps[i].name :
							extra[i - sluice_nr_maps];

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (unlink(path) && errno != ENOENT) {
			snprintf(err, errlen, "Couldn't remove %s: %s", path, strerror(errno));
			return -errno;
		}
	}
	if (rmdir(dir) && errno != ENOENT) {
		int ret = -errno;

		if (ret == -ENOTEMPTY)
			snprintf(err, errlen,
				 "Couldn't remove %s: it holds files sluice did not create; look "
				 "at them and remove them by hand",
				 dir);
		else
			snprintf(err, errlen, "Couldn't remove %s: %s", dir, strerror(-ret));
		return ret;
	}
	return 0;
}
