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

/* The pid holding a flock on st, from /proc/locks: 0 when none does, -1
 * when one does whose pid is not seen from here (another PID namespace). */
static int flock_holder(const struct stat *st)
{
	char line[256], want[64];
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
			pid = p > 0 ? p : -1;
			break;
		}
	}
	if (f)
		fclose(f);
	return pid;
}

/* "pid 1234 (sluicectl rule add ...)" for the holder of a flock on st, or
 * "another process" when /proc/locks does not say. */
static void lock_holder(const struct stat *st, char *buf, size_t len)
{
	char path[64], cmd[160];
	FILE *f;
	int pid = flock_holder(st);

	if (pid <= 0) {
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
			return sluice_sys_err(err, errlen, -errno, "Couldn't lock %s", dir);
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
	return sluice_err(
		err, errlen, -EWOULDBLOCK,
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
		return sluice_sys_err(err, errlen, -errno, "Couldn't create %s", dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sluice_sys_err(err, errlen, -errno, "Couldn't open %s", dir);
	ret = sluice_lock_fd(fd, dir, err, errlen);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/*
 * A claim: a directory flock()ed for as long as its holder lives, however it
 * ends (the kernel drops the lock with the last fd). It is made 0700 in a
 * directory of root's (the pin root), so that only root can take it: an
 * abstract socket or a file in a world-writable place could be taken first
 * by any local user, who would then stop sluice from starting.
 */
int sluice_claim(const char *path, char *err, size_t errlen)
{
	struct stat st, now;
	int fd, tries, busy = 0;

	for (tries = 0; tries < 20; tries++) {
		if (mkdir(path, 0700) && errno != EEXIST)
			return sluice_sys_err(err, errlen, -errno, "Couldn't create %s", path);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				continue; /* removed by its last holder meanwhile */
			return sluice_sys_err(err, errlen, -errno, "Couldn't open %s", path);
		}
		if (fstat(fd, &st)) {
			close(fd);
			return sluice_sys_err(err, errlen, -errno, "Couldn't stat %s", path);
		}
		/* Made by someone else than us (root): not a claim of ours. */
		if (st.st_uid != geteuid() || (st.st_mode & 0022)) {
			close(fd);
			return sluice_err(err, errlen, -EPERM,
					  "%s is not sluice's (owner uid %u, mode %o): remove it",
					  path, (unsigned int)st.st_uid,
					  (unsigned int)(st.st_mode & 07777));
		}
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			int ret = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;

			close(fd);
			/* A holder for a moment (sluice_claim_drop_stale()) is
			 * let go of; a claim's holder holds on. */
			if (ret == -EWOULDBLOCK && ++busy < 5) {
				usleep(20 * 1000);
				continue;
			}
			return sluice_err(err, errlen, ret, "Couldn't lock %s: %s", path,
					  strerror(-ret));
		}
		/* Still the directory at path? Its last holder may have removed
		 * it between our open() and flock(): a lock on a removed
		 * directory claims nothing. */
		if (stat(path, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev)
			return fd;
		close(fd);
	}
	return sluice_err(err, errlen, -EAGAIN, "Couldn't claim %s: it keeps being removed", path);
}

void sluice_claim_release(const char *path, int fd)
{
	if (fd < 0)
		return;
	/* Removed while held: whoever opens it next makes a new one. */
	rmdir(path);
	close(fd);
}

int sluice_claim_holder(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return 0;
	return flock_holder(&st);
}

int sluice_claim_drop_stale(const char *path)
{
	int fd;

	if (sluice_claim_holder(path))
		return -EWOULDBLOCK;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return -EWOULDBLOCK;
	}
	rmdir(path);
	close(fd);
	return 0;
}

/*
 * The pin root's lock: attach, detach and reload of any interface of the
 * namespace hold it. It is recorded, so that what runs under it in this
 * process (a rename followed by sluice_open(), rename.c) does not wait for
 * itself: a second flock() on another fd of the same directory would.
 */
static int pin_root_fd = -1;

int sluice_lock_pin_root(char *err, size_t errlen)
{
	char root[128];
	int ret;

	ret = sluice_pin_root(root, sizeof(root), true, err, errlen);
	if (ret)
		return ret;
	ret = sluice_lock_dir(root, false, err, errlen);
	if (ret >= 0 && pin_root_fd < 0)
		pin_root_fd = ret;
	return ret;
}

void sluice_unlock_pin_root(int fd)
{
	if (fd < 0)
		return;
	if (fd == pin_root_fd)
		pin_root_fd = -1;
	close(fd); /* releases the flock */
}

bool sluice_pin_root_locked(void)
{
	return pin_root_fd >= 0;
}
