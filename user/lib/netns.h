/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Network namespaces, and where their pins live (netns.c).
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_NETNS_H
#define SLUICE_NETNS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

struct sluice_netns {
	__u64 ino; /* the nsfs inode of the caller's network namespace */
	__u64 cookie; /* its SO_NETNS_COOKIE; 0 where the kernel has none */
	bool initial; /* the initial namespace: pins in SLUICE_PIN_ROOT/IFACE */
	char root[128]; /* SLUICE_PIN_ROOT, or SLUICE_PIN_ROOT/netns:INODE */
};
/* The caller's network namespace (read once, then cached). */
int sluice_netns_self(struct sluice_netns *ns, char *err, size_t errlen);
/* Is o's namespace this one? */
bool sluice_netns_same(const struct sluice_netns *ns, const struct sluice_owner *o);
/* Where namespace ino (or the initial one) is, and how to run cmd there:
 * "network namespace net:[INO] ('ip netns' name N): run 'nsenter --net=... CMD'". */
void sluice_netns_where(__u64 ino, bool initial, const char *cmd, char *buf, size_t len);
/* How many other namespaces have a limiter on an interface called ifname;
 * buf says where the first one is (sluice_netns_where()). */
int sluice_netns_elsewhere(const char *ifname, const char *cmd, char *buf, size_t len);

/* The command line of this process, for messages that say "run 'nsenter
 * ... <it>' there". Set once by main(). */
void sluice_set_cmdline(int argc, char **argv);
const char *sluice_cmdline(void);

#endif /* SLUICE_NETNS_H */
