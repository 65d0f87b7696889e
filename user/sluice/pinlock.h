/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The pin root's lock and a state's pins (pinlock.c). */
#ifndef SLUICE_LOADER_PINLOCK_H
#define SLUICE_LOADER_PINLOCK_H

#include <stddef.h>

/* Serialize attach, detach and reload (of any interface of the caller's
 * namespace) across processes: a timed flock() on the namespace's pin root,
 * created if missing. Returns the fd or -errno. */
int lock_pin_root(char *err, size_t errlen);
void unlock_pin_root(int fd);

/* Remove every pin (maps and program) in the pin directory dir, and dir. */
int remove_pins(const char *dir, char *err, size_t errlen);

#endif /* SLUICE_LOADER_PINLOCK_H */
