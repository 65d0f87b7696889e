/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Where pins live (pins.c): the bpffs and the pin directories.
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_PINS_H
#define SLUICE_PINS_H

#include <stdbool.h>
#include <stddef.h>

/* Mount bpffs at /sys/fs/bpf if nothing is mounted there. */
int sluice_ensure_bpffs(char *err, size_t errlen);
/* The pin directory of the caller's namespace, created (with the root
 * above it) when create. */
int sluice_pin_root(char *buf, size_t len, bool create, char *err, size_t errlen);
/* SLUICE_PIN_ROOT[/netns:INODE]/<name> for the caller's namespace (name: a
 * state's, IFACE or shape:IFACE). */
int sluice_pin_dir(const char *name, char *buf, size_t len, char *err, size_t errlen);
/* The config pinned in dir (the whole entry, its owner with it); false when
 * there is none to read. */
struct sluice_config;
bool sluice_pinned_config(const char *dir, struct sluice_config *cfg);

#endif /* SLUICE_PINS_H */
