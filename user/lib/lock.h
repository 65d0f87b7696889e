/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The writers' lock, the pin root's lock and a process's claims (lock.c).
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_LOCK_H
#define SLUICE_LOCK_H

#include <stdbool.h>
#include <stddef.h>

/* flock() dir (mkdir it first when create) within SLUICE_LOCK_TIMEOUT
 * seconds (default 5); on timeout -EWOULDBLOCK and err names the holder.
 * Returns the locked fd (close() unlocks) or -errno. */
int sluice_lock_dir(const char *dir, bool create, char *err, size_t errlen);
/* The same on an open fd of dir; 0 or -errno. */
int sluice_lock_fd(int fd, const char *dir, char *err, size_t errlen);
/* The same, shared: for a reader that must see no writer at work. */
int sluice_lock_fd_shared(int fd, const char *dir, char *err, size_t errlen);

/* The pin root's lock (attach, detach, reload): the locked fd or -errno;
 * unlock closes it. sluice_pin_root_locked(): this process holds it. */
int sluice_lock_pin_root(char *err, size_t errlen);
void sluice_unlock_pin_root(int fd);
bool sluice_pin_root_locked(void);

/* A claim held for a process's life (one `sluice run` per interface): the
 * directory path (made 0700, in a directory only root may write) flock()ed
 * without waiting. Returns the fd to keep, -EWOULDBLOCK when another
 * process holds it, or -errno with err saying why. */
int sluice_claim(const char *path, char *err, size_t errlen);
/* Give it up (removes path). */
void sluice_claim_release(const char *path, int fd);
/* Its holder's pid: 0 none, -1 one whose pid is not seen from here.
 * Looks only (/proc/locks): never takes the claim, even for a moment. */
int sluice_claim_holder(const char *path);
/* Remove path when no one holds it (a claim a killed process left): 0,
 * -EWOULDBLOCK when held, or -errno. */
int sluice_claim_drop_stale(const char *path);

#endif /* SLUICE_LOCK_H */
