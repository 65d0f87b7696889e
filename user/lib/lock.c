// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The writers' lock: flock() on a pin directory, waited for a bounded time.
 *
 * Only writers lock (attach, detach, reload, every sluicectl edit); readers
 * read the live half of the config without it (sluice_read_settings()), and
 * take it shared only to wait out a change they keep meeting, or to read
 * what a writer that died mid-change left (sluice_read_policies()). A
 * writer that was stopped (Ctrl-Z, a debugger) while holding the lock would
 * otherwise hang every other writer silently: after SLUICE_LOCK_TIMEOUT
 * seconds (default 5) the waiter gives up and names the holder, found in
 * /proc/locks by the directory's device and inode.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "libsluice.h"

#define DEFAULT_TIMEOUT_S 5.0

static double lock_timeout(void)
{
	const char *s = getenv("SLUICE_LOCK_TIMEOUT");
	char *end;
	double t;

	if (!s || !*s)
		return DEFAULT_TIMEOUT_S;
	t = strtod(s, &end);
	return (*end || t < 0) ? DEFAULT_TIMEOUT_S : t;
}

/* "pid 1234 (sluicectl rule add ...)" for the holder of a flock on st, or
 * "another process" when /proc/locks does not say. */
static void lock_holder(const struct stat *st, char *buf, size_t len)
{
	char line[256], want[64], path[64], cmd[160];
	FILE *f;
	int pid = 0;

	snprintf(want, sizeof(want), "%02x:%02x:%llu", major(st->st_dev), minor(st->st_dev),
		 (unsigned long long)st->st_ino);
	f = fopen("/proc/locks", "re");
	while (f && fgets(line, sizeof(line), f)) {
		char kind[16], id[64];
		int p;

		/* "1: FLOCK  ADVISORY  WRITE 5617 00:27:11291 0 EOF"; waiters
		 * have a "->" after the number and are not holders. */
		if (strstr(line, "->"))
			continue;
		if (sscanf(line, "%*s %15s %*s %*s %d %63s", kind, &p, id) == 3 &&
		    !strcmp(kind, "FLOCK") && !strcmp(id, want)) {
			pid = p;
			break;
		}
	}
	if (f)
		fclose(f);
	if (!pid) {
		snprintf(buf, len, "another process");
		return;
	}
	cmd[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	f = fopen(path, "re");
	if (f) {
		size_t n = fread(cmd, 1, sizeof(cmd) - 1, f), i;

		fclose(f);
		while (n && !cmd[n - 1])
			n--;
		for (i = 0; i < n; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		cmd[n] = '\0';
	}
	if (cmd[0])
		snprintf(buf, len, "pid %d (%s)", pid, cmd);
	else
		snprintf(buf, len, "pid %d", pid);
}

static int lock_fd_op(int fd, int op, const char *dir, char *err, size_t errlen)
{
	double timeout = lock_timeout(), waited = 0;
	char holder[200];
	struct stat st;

	for (;;) {
		if (flock(fd, op | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return sluice_err(err, errlen, -errno, "Couldn't lock %s: %s", dir,
					  strerror(errno));
		if (waited >= timeout)
			break;
		if (waited == 0)
			pr_debug("%s is locked; waiting up to %.1f s\n", dir, timeout);
		usleep(20 * 1000);
		waited += 0.02;
	}
	if (fstat(fd, &st))
		snprintf(holder, sizeof(holder), "another process");
	else
		lock_holder(&st, holder, sizeof(holder));
	return sluice_err(err, errlen, -EWOULDBLOCK,
			  "%s is locked by %s, which is changing it, and it did not let go in %.0f s: "
			  "wait for it, or stop it if it is stuck (SLUICE_LOCK_TIMEOUT sets the wait)",
			  dir, holder, timeout);
}

int sluice_lock_fd(int fd, const char *dir, char *err, size_t errlen)
{
	return lock_fd_op(fd, LOCK_EX, dir, err, errlen);
}

int sluice_lock_fd_shared(int fd, const char *dir, char *err, size_t errlen)
{
	return lock_fd_op(fd, LOCK_SH, dir, err, errlen);
}

int sluice_lock_dir(const char *dir, bool create, char *err, size_t errlen)
{
	int fd, ret;

	if (create && mkdir(dir, 0700) && errno != EEXIST)
		return sluice_err(err, errlen, -errno, "Couldn't create %s: %s", dir,
				  strerror(errno));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sluice_err(err, errlen, -errno, "Couldn't open %s: %s", dir,
				  strerror(errno));
	ret = sluice_lock_fd(fd, dir, err, errlen);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}
