// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Whose pinned state this is, and what attach may make of it.
 *
 * A state is resumed without being asked only when it is plainly this
 * interface's: sluice runs on it (an upgrade), or `detach --keep-state` kept
 * it for it. Anything else (an interface that was deleted and made again,
 * another namespace's, an attach that died, a program someone else removed)
 * is refused with the two ways on: --resume adopts it, --fresh drops it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "loader.h"

static void fmt_time(__u64 secs, char *buf, size_t len)
{
	time_t t = (time_t)secs;
	struct tm tm;

	if (!secs || !localtime_r(&t, &tm)) {
		snprintf(buf, len, "an unknown time");
		return;
	}
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

static __u64 now_real(void)
{
	return (__u64)time(NULL);
}

void owner_set(struct sluice_config *cfg, unsigned int ifindex, __u32 life)
{
	struct sluice_netns ns;

	if (sluice_netns_self(&ns, NULL, 0))
		memset(&ns, 0, sizeof(ns));
	cfg->owner.ifindex = ifindex;
	cfg->owner.netns_ino = ns.ino;
	cfg->owner.netns_cookie = ns.cookie;
	if (!cfg->owner.created)
		cfg->owner.created = now_real();
	if (cfg->owner.life != life)
		cfg->owner.since = now_real();
	__atomic_store_n(&cfg->owner.life, life, __ATOMIC_RELEASE);
}

/* Why a pinned state is not plainly this interface's; "" when it is. */
static void foreign_reason(const char *ifname, unsigned int ifindex,
			   const struct sluice_config *cfg, bool prog_attached, char *why,
			   size_t len)
{
	const struct sluice_owner *o = &cfg->owner;
	struct sluice_netns ns;
	char when[32];

	why[0] = '\0';
	if (cfg->layout < SLUICE_LAYOUT_OWNER) {
		if (!prog_attached)
			snprintf(why, len, "it was pinned by an older sluice (layout %u), which "
				 "does not record whose it is", cfg->layout);
		return;
	}
	fmt_time(o->since, when, sizeof(when));
	if (sluice_netns_self(&ns, NULL, 0) == 0 && !sluice_netns_same(&ns, o)) {
		snprintf(why, len, "it was left by a network namespace that is gone (net:[%llu]), "
			 "at %s", (unsigned long long)o->netns_ino, when);
		return;
	}
	if (o->life == SLUICE_LIFE_ATTACHING) {
		snprintf(why, len, "it was left by an attach that did not finish (started %s)",
			 when);
		return;
	}
	if (o->ifindex != ifindex) {
		snprintf(why, len, "it belongs to an earlier %s (ifindex %u, gone; this %s is "
			 "ifindex %u)", ifname, o->ifindex, ifname, ifindex);
		return;
	}
	if (o->life == SLUICE_LIFE_ATTACHED && !prog_attached)
		snprintf(why, len, "its program was removed from %s by something other than "
			 "'sluice detach' (attached since %s)", ifname, when);
}

int plan_resume(const char *ifname, unsigned int ifindex, const struct sluice_config *cfg,
		bool prog_attached, bool resume, bool fresh, struct resume_plan *p, char *err,
		size_t errlen)
{
	memset(p, 0, sizeof(*p));
	if (!cfg) {
		if (resume)
			return sluice_err(err, errlen, -ENOENT,
					  "there is no state of %s to resume: attach without "
					  "--resume", ifname);
		p->kind = RESUME_NONE;
		return 0;
	}
	foreign_reason(ifname, ifindex, cfg, prog_attached, p->why, sizeof(p->why));
	if (fresh) {
		if (prog_attached)
			return sluice_err(err, errlen, -EBUSY,
					  "sluice runs on %s with this state: --fresh cannot drop it "
					  "under a running program; 'sluice detach %s' first (%s is "
					  "not limited until the attach), or attach without --fresh "
					  "to upgrade", ifname, ifname, ifname);
		p->kind = RESUME_DROP;
		return 0;
	}
	if (!p->why[0]) {
		p->kind = prog_attached ? RESUME_UPGRADE : RESUME_KEPT;
		return 0;
	}
	if (resume) {
		p->kind = RESUME_ADOPT;
		return 0;
	}
	return sluice_err(err, errlen, -EEXIST,
			  "%s has a pinned state that sluice will not take over silently: %s. "
			  "Attach with --resume to adopt its rules, policy, buckets and counters, "
			  "or with --fresh to drop it and start empty", ifname, p->why);
}

void describe_state(struct sluice_handle *h, const struct sluice_config *before, char *buf,
		    size_t len)
{
	struct sluice_settings s;
	char since[32];
	long keys = sluice_keytab_count(&h->keys);
	long logs = sluice_count_keys(h->logs_fd);

	sluice_read_settings(h, &s, NULL);
	fmt_time(before ? before->owner.created : h->cfg->owner.created, since, sizeof(since));
	snprintf(buf, len, "%u rule%s, %ld key%s, counters since %s", s.nr_rules,
		 s.nr_rules == 1 ? "" : "s", (keys < 0 ? 0 : keys) + (logs < 0 ? 0 : logs),
		 keys + logs == 1 ? "" : "s", since);
}

void describe_kept(const struct sluice_config *cfg, char *buf, size_t len)
{
	char when[32];

	fmt_time(cfg->owner.since, when, sizeof(when));
	snprintf(buf, len, "kept by 'sluice detach --keep-state' at %s", when);
}

/*
 * One `sluice run` per interface: it binds an abstract unix socket named for
 * the interface. Such names belong to the network namespace and go away
 * with the process, however it ends, so a killed run never blocks the next.
 */
static socklen_t run_addr(unsigned int ifindex, struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "sluice/run/%u", ifindex);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int run_claim(unsigned int ifindex)
{
	struct sockaddr_un sa;
	socklen_t len = run_addr(ifindex, &sa);
	int fd, ret;

	/* Non-blocking: run's loop accepts what is pending and goes on. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, 4)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

int run_holder(unsigned int ifindex)
{
	struct sockaddr_un sa;
	socklen_t len = run_addr(ifindex, &sa);
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd, pid = 0;

	/* Non-blocking: a holder whose backlog is full is still a holder. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return 0;
	if (connect(fd, (struct sockaddr *)&sa, len) == 0) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
			pid = cred.pid;
	} else if (errno == EAGAIN) {
		pid = -1;
	}
	close(fd);
	return pid;
}
