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

#include "owner.h"

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
			snprintf(why, len,
				 "it was pinned by an older sluice (layout %u), which "
				 "does not record whose it is",
				 cfg->layout);
		return;
	}
	fmt_time(o->since, when, sizeof(when));
	if (sluice_netns_self(&ns, NULL, 0) == 0 && !sluice_netns_same(&ns, o)) {
		snprintf(why, len,
			 "it was left by a network namespace that is gone (net:[%llu]), "
			 "at %s",
			 (unsigned long long)o->netns_ino, when);
		return;
	}
	if (o->life == SLUICE_LIFE_ATTACHING) {
		snprintf(why, len, "it was left by an attach that did not finish (started %s)",
			 when);
		return;
	}
	if (o->ifindex != ifindex) {
		snprintf(why, len,
			 "it belongs to an earlier %s (ifindex %u, gone; this %s is "
			 "ifindex %u)",
			 ifname, o->ifindex, ifname, ifindex);
		return;
	}
	if (o->life == SLUICE_LIFE_ATTACHED && !prog_attached)
		snprintf(why, len,
			 "its program was removed from %s by something other than "
			 "'sluice detach' (attached since %s)",
			 ifname, when);
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
					  "--resume",
					  ifname);
		p->kind = RESUME_NONE;
		return 0;
	}
	foreign_reason(ifname, ifindex, cfg, prog_attached, p->why, sizeof(p->why));
	if (fresh) {
		if (prog_attached)
			return sluice_err(
				err, errlen, -EBUSY,
				"sluice runs on %s with this state: --fresh cannot drop it "
				"under a running program; 'sluice detach %s' first (%s is "
				"not limited until the attach), or attach without --fresh "
				"to upgrade",
				ifname, ifname, ifname);
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
			  "or with --fresh to drop it and start empty",
			  ifname, p->why);
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
	snprintf(buf, len, "%u rule%s, %ld key%s, counters since %s", sluice_rules_count(h, &s),
		 sluice_rules_count(h, &s) == 1 ? "" : "s",
		 (keys < 0 ? 0 : keys) + (logs < 0 ? 0 : logs), keys + logs == 1 ? "" : "s", since);
}

void describe_kept(const struct sluice_config *cfg, char *buf, size_t len)
{
	char when[32];

	fmt_time(cfg->owner.since, when, sizeof(when));
	snprintf(buf, len, "kept by 'sluice detach --keep-state' at %s", when);
}

/*
 * One `sluice run` per interface: it holds the claim RUN_CLAIM_PREFIX
 * IFINDEX, a directory in the namespace's pin root flock()ed for the run's
 * life (lock.c's sluice_claim()). The lock goes with the process however it
 * ends, so a killed run never blocks the next; and only root can take it
 * (the pin root is root's, mode 0700), so no other local user can stop the
 * service by taking it first, as one could bind the abstract socket that
 * was the claim before. The name has a ':', which no interface name has:
 * it is never taken for a limiter's directory.
 */
#define RUN_CLAIM_PREFIX "run:"

static int run_claim_path(unsigned int ifindex, bool create, char *buf, size_t len, char *err,
			  size_t errlen)
{
	char root[128];
	int ret;

	ret = create ? sluice_ensure_bpffs(err, errlen) : 0;
	if (!ret)
		ret = sluice_pin_root(root, sizeof(root), create, err, errlen);
	if (ret)
		return ret;
	snprintf(buf, len, "%s/%s%u", root, RUN_CLAIM_PREFIX, ifindex);
	return 0;
}

int run_claim(unsigned int ifindex, char *err, size_t errlen)
{
	char path[160];
	int ret;

	ret = run_claim_path(ifindex, true, path, sizeof(path), err, errlen);
	return ret ? ret : sluice_claim(path, err, errlen);
}

void run_release(unsigned int ifindex, int fd)
{
	struct sluice_netns ns;
	char path[160];

	if (fd < 0)
		return;
	if (run_claim_path(ifindex, false, path, sizeof(path), NULL, 0)) {
		close(fd);
		return;
	}
	sluice_claim_release(path, fd);
	/* As unlock_pin_root(): a namespace's directory goes with the last
	 * of what it holds (rmdir fails, harmlessly, while it holds any). */
	if (sluice_netns_self(&ns, NULL, 0) == 0 && !ns.initial)
		rmdir(ns.root);
}

int run_holder(unsigned int ifindex)
{
	char path[160];

	if (!ifindex || run_claim_path(ifindex, false, path, sizeof(path), NULL, 0))
		return 0;
	return sluice_claim_holder(path);
}

void run_drop_stale(unsigned int ifindex)
{
	char path[160];

	if (ifindex && !run_claim_path(ifindex, false, path, sizeof(path), NULL, 0))
		sluice_claim_drop_stale(path);
}
