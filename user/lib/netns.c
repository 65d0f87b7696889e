// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Network namespaces, and where the pins of each one's limiters live.
 *
 * bpffs is one tree for the whole machine, but interface names and indexes
 * are per network namespace: eth0 in one container is not eth0 in another.
 * So every namespace gets its own pin directory. The initial namespace keeps
 * SLUICE_PIN_ROOT/IFACE (what operators and docs/'s bpftool commands
 * use); any other namespace uses SLUICE_PIN_ROOT/netns:INODE/IFACE, INODE
 * being the namespace's nsfs inode as `lsns -t net` and `stat -L
 * /var/run/netns/NAME` show it. A ':' never occurs in an interface name
 * (the kernel refuses it), so the two kinds of directory never collide.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "libsluice.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

/* The fixed nsfs inodes of the initial namespaces: PID's for years
 * (PROC_PID_INIT_INO), the network's on recent kernels (PROC_NET_INIT_INO). */
#define NET_INIT_INO 0xEFFFFFF9ULL
#define PID_INIT_INO 0xEFFFFFFCULL

static __u64 netns_cookie(void)
{
	socklen_t len = sizeof(__u64);
	__u64 cookie = 0;
	int fd;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len))
		cookie = 0; /* before Linux 5.14 */
	close(fd);
	return cookie;
}

/*
 * Is the caller in the initial network namespace? The kernel's fixed inode
 * of init_net says so where it has one. Else PID 1's namespace does, but
 * only from the initial PID namespace: inside a container PID 1 is the
 * container's init, and taking its namespace for the host's would put the
 * container's pins where the host's are. Else the cookie does, which
 * init_net gets first.
 */
static bool is_initial(const struct stat *self, __u64 cookie)
{
	struct stat init, pid;

	if ((__u64)self->st_ino == NET_INIT_INO)
		return true;
	if (stat("/proc/self/ns/pid", &pid) == 0 && (__u64)pid.st_ino == PID_INIT_INO &&
	    stat("/proc/1/ns/net", &init) == 0)
		return init.st_ino == self->st_ino && init.st_dev == self->st_dev;
	return cookie == 1;
}

int sluice_netns_self(struct sluice_netns *ns, char *err, size_t errlen)
{
	static struct sluice_netns cached;
	static bool have;
	struct stat st;

	if (have) {
		*ns = cached;
		return 0;
	}
	if (stat("/proc/self/ns/net", &st))
		return sluice_err(
			err, errlen, -errno,
			"Couldn't tell which network namespace this is (/proc/self/ns/net: "
			"%s): is /proc mounted?",
			strerror(errno));
	memset(&cached, 0, sizeof(cached));
	cached.ino = (__u64)st.st_ino;
	cached.cookie = netns_cookie();
	cached.initial = is_initial(&st, cached.cookie);
	if (cached.initial)
		snprintf(cached.root, sizeof(cached.root), "%s", SLUICE_PIN_ROOT);
	else
		snprintf(cached.root, sizeof(cached.root), "%s/netns:%llu", SLUICE_PIN_ROOT,
			 (unsigned long long)cached.ino);
	have = true;
	*ns = cached;
	return 0;
}

bool sluice_netns_same(const struct sluice_netns *ns, const struct sluice_owner *o)
{
	if (o->netns_cookie && ns->cookie)
		return o->netns_cookie == ns->cookie;
	return o->netns_ino == ns->ino;
}

/* A path that enters namespace ino: a name under /var/run/netns, else a
 * process that lives in it. */
static bool find_ns_path(__u64 ino, char *name, size_t nlen, char *path, size_t plen)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	bool found = false;

	name[0] = path[0] = '\0';
	d = opendir("/var/run/netns");
	while (d && (de = readdir(d))) {
		char p[300];

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/var/run/netns/%s", de->d_name);
		if (stat(p, &st) == 0 && (__u64)st.st_ino == ino) {
			snprintf(name, nlen, "%s", de->d_name);
			snprintf(path, plen, "%s", p);
			found = true;
			break;
		}
	}
	if (d)
		closedir(d);
	if (found)
		return true;
	d = opendir("/proc");
	while (d && (de = readdir(d))) {
		char p[300];

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/ns/net", de->d_name);
		if (stat(p, &st) == 0 && (__u64)st.st_ino == ino) {
			snprintf(path, plen, "%s", p);
			found = true;
			break;
		}
	}
	if (d)
		closedir(d);
	return found;
}

void sluice_netns_where(__u64 ino, bool initial, const char *cmd, char *buf, size_t len)
{
	char name[256], path[300];
	struct stat st;
	bool found;

	if (initial) {
		if (stat("/proc/1/ns/net", &st) == 0)
			snprintf(buf, len,
				 "the initial network namespace: run 'nsenter "
				 "--net=/proc/1/ns/net %s'",
				 cmd);
		else
			snprintf(buf, len, "the initial network namespace: run '%s' there", cmd);
		return;
	}
	found = find_ns_path(ino, name, sizeof(name), path, sizeof(path));
	if (name[0])
		snprintf(buf, len,
			 "network namespace net:[%llu] ('ip netns' name %s): run "
			 "'nsenter --net=%s %s'",
			 (unsigned long long)ino, name, path, cmd);
	else if (found)
		snprintf(buf, len, "network namespace net:[%llu]: run 'nsenter --net=%s %s'",
			 (unsigned long long)ino, path, cmd);
	else
		snprintf(buf, len,
			 "network namespace net:[%llu], which no process and no "
			 "'ip netns' name holds any more: its state is left over ('rm -r %s/"
			 "netns:%llu' removes it)",
			 (unsigned long long)ino, SLUICE_PIN_ROOT, (unsigned long long)ino);
}

static bool has_config(const char *dir)
{
	char path[640];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_MAP_CONFIG);
	return stat(path, &st) == 0;
}

int sluice_netns_elsewhere(const char *ifname, const char *cmd, char *buf, size_t len)
{
	struct sluice_netns self;
	char dir[512];
	struct dirent *de;
	DIR *d;
	int n = 0;

	buf[0] = '\0';
	if (sluice_netns_self(&self, NULL, 0))
		return 0;
	if (!self.initial) {
		snprintf(dir, sizeof(dir), "%s/%s", SLUICE_PIN_ROOT, ifname);
		if (has_config(dir)) {
			sluice_netns_where(0, true, cmd, buf, len);
			n++;
		}
	}
	d = opendir(SLUICE_PIN_ROOT);
	while (d && (de = readdir(d))) {
		unsigned long long ino;
		char *end;

		if (strncmp(de->d_name, "netns:", 6))
			continue;
		ino = strtoull(de->d_name + 6, &end, 10);
		if (*end || ino == self.ino)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s/%s", SLUICE_PIN_ROOT, de->d_name, ifname);
		if (!has_config(dir))
			continue;
		if (!n++)
			sluice_netns_where(ino, false, cmd, buf, len);
	}
	if (d)
		closedir(d);
	if (n > 1) {
		size_t used = strlen(buf);

		snprintf(buf + used, len - used,
			 " (and %d other namespace%s: 'lsns -t net' "
			 "lists them)",
			 n - 1, n > 2 ? "s" : "");
	}
	return n;
}

static char cmdline[512];

void sluice_set_cmdline(int argc, char **argv)
{
	size_t n = 0;
	int i;

	cmdline[0] = '\0';
	for (i = 0; i < argc && n < sizeof(cmdline); i++) {
		const char *a = argv[i];

		if (i == 0) {
			const char *slash = strrchr(a, '/');

			a = slash ? slash + 1 : a;
		}
		n += (size_t)snprintf(cmdline + n, sizeof(cmdline) - n, "%s%s", i ? " " : "", a);
	}
}

const char *sluice_cmdline(void)
{
	return cmdline[0] ? cmdline : "sluice ...";
}
