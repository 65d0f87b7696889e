/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Following a renamed interface (rename.c).
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_RENAME_H
#define SLUICE_RENAME_H

#include <stddef.h>

#define SLUICE_RENAMED_FROM 1 /* name had no state: its interface's moved in from *other */
#define SLUICE_RENAMED_TO 2 /* name's state is the interface now called *other: moved */
/*
 * Follow a rename of the interface of the state `name` (IFACE or
 * shape:IFACE): a state belongs to an ifindex, its directory is named for
 * the interface. Moves the directory (under the pin root's lock) and
 * returns SLUICE_RENAMED_FROM or _TO with the other name in other
 * (SLUICE_STATE_NAME_MAX), 0 when there was nothing to follow, or -errno
 * with err (the new name's directory holds another state).
 */
int sluice_follow_rename(const char *name, char *other, size_t olen, char *err, size_t errlen);
/* name has no state: was its interface renamed, its state moved to the
 * state now called *to? 1 or 0. */
int sluice_renamed_to(const char *name, char *to, size_t len);
/* The state `name` goes (detach): forget the renames that lead to it. */
void sluice_rename_forget(const char *name);

#endif /* SLUICE_RENAME_H */
