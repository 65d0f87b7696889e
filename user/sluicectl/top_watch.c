// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluicectl top --watch: the view of top.c again every interval, as top(1):
 * on a terminal redrawn in place, elsewhere as plain blocks or JSON lines,
 * each under a header of where, when and the totals.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "top.h"

/* The totals of the header, and their names in JSON. */
static const struct {
	const char *name;
	size_t off;
} totals[] = {
	{ "rx", offsetof(struct sluice_stats, rx) },
	{ "passed", offsetof(struct sluice_stats, passed) },
	{ "dropped", offsetof(struct sluice_stats, dropped) },
};
#define NR_TOTALS (sizeof(totals) / sizeof(totals[0]))

static __u64 total(const struct sluice_stats *s, size_t i)
{
	__u64 v;

	memcpy(&v, (const char *)s + totals[i].off, sizeof(v));
	return v;
}

static double total_rate(const struct top_frame *fr, size_t i)
{
	return ((double)total(&fr->cur, i) - (double)total(&fr->prev, i)) / fr->dt;
}

void top_frame_json(struct sluice_json *j, const struct top_frame *fr)
{
	size_t i;

	json_str(j, "time", fr->when);
	json_str(j, "interface", fr->ifname);
	for (i = 0; i < NR_TOTALS; i++)
		json_u64(j, totals[i].name, total(&fr->cur, i));
	if (!fr->has_prev)
		return;
	json_f64(j, "interval_s", fr->dt);
	json_obj_begin(j, "per_second");
	for (i = 0; i < NR_TOTALS; i++)
		json_f64(j, totals[i].name, total_rate(fr, i));
	json_obj_end(j);
}

/* "2024-05-01T12:00:00  eth0  every 1s", then the totals (and rates). */
void top_frame_text(FILE *f, const struct top_frame *fr)
{
	char every[32];
	size_t i;

	sluice_format_duration(fr->every_ns, every, sizeof(every));
	fprintf(f, "%s  %s  every %s\n", fr->when, fr->ifname, every);
	for (i = 0; i < NR_TOTALS; i++) {
		fprintf(f, "%s%s %llu", i ? "  " : "", totals[i].name,
			(unsigned long long)total(&fr->cur, i));
		if (fr->has_prev)
			fprintf(f, " (%.1f/s)", total_rate(fr, i));
	}
	fprintf(f, "\n\n");
}

/* How long a fresh attach may take to finish before it is shown as it is. */
#define REOPEN_WAIT_MS 10000

/*
 * SIGINT and SIGTERM end the watch. They are blocked while it runs and
 * waited for in place of sleeping (sigtimedwait()): one that comes during a
 * refresh stays pending and ends the next wait at once, so none is lost
 * between a check and a sleep. The mask is left so: sluicectl exits after
 * the command, and a signal that comes later is one the watch has already
 * answered by ending.
 */
static sigset_t stop_set;
static bool stop; /* one of them came */

/* Wait until the CLOCK_MONOTONIC time *until for a stop signal; true when
 * one came (or had come before). */
static bool wait_stop(const struct timespec *until)
{
	struct timespec now, left;

	while (!stop) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = until->tv_sec - now.tv_sec;
		left.tv_nsec = until->tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0)
			break;
		if (sigtimedwait(&stop_set, NULL, &left) > 0)
			stop = true;
		else if (errno != EINTR) /* EAGAIN: the time is up */
			break;
	}
	return stop;
}

/* now + ns on CLOCK_MONOTONIC, into *t. */
static void after(struct timespec *t, const struct timespec *from, __u64 ns)
{
	t->tv_sec = from->tv_sec + (time_t)(ns / SLUICE_NS_PER_SEC);
	t->tv_nsec = from->tv_nsec + (long)(ns % SLUICE_NS_PER_SEC);
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

/*
 * Follow the live state, as stats --watch does: a detach ends the watch; a
 * fresh attach since the last refresh (new maps) is watched from then on,
 * once it has finished making them, with rates from its own counters.
 * h stays closable when this fails (sluice_close() twice is harmless).
 */
static int follow(struct sluice_handle *h, struct top_frame *fr)
{
	char name[SLUICE_STATE_NAME_MAX], err[SLUICE_ERR_LEN];
	struct timespec now, until;
	int ret = sluice_still_pinned(h), waited;

	if (ret == -ENOENT)
		return sluice_cli_err(ret, "sluice was detached from %s: nothing more to watch",
				      h->name);
	if (ret != -ESTALE)
		return 0;
	snprintf(name, sizeof(name), "%s", h->name);
	sluice_close(h);
	for (waited = 0;; waited += 100) {
		ret = sluice_open(name, h, err, sizeof(err));
		if (!ret &&
		    (h->standing != SLUICE_STANDING_UNFINISHED || waited >= REOPEN_WAIT_MS || stop))
			break;
		if (!ret)
			sluice_close(h);
		else if (waited >= REOPEN_WAIT_MS || stop)
			return sluice_cli_err(ret, "%s", err);
		clock_gettime(CLOCK_MONOTONIC, &now);
		after(&until, &now, 100 * 1000 * 1000ULL);
		wait_stop(&until);
	}
	fprintf(stderr,
		"sluicectl: %s was attached again with a new state: watching that one, "
		"from its own counters\n",
		name);
	fr->has_prev = false;
	return 0;
}

/*
 * Write one refresh. On a terminal over the last one, in one write: the
 * cursor home (the first time the screen cleared too), each line cut to the
 * width and cleared to its end, as many as the screen holds, the rest of
 * the screen cleared; redrawn in place, it does not flicker as a clear of
 * the whole screen would. Elsewhere as it is: JSON lines, or a text block
 * and a blank line.
 */
static void put_frame(const char *buf, size_t len, bool tty, bool first)
{
	const char *p = buf, *end = buf + len, *nl;
	size_t rows = 0, cols = 0, n = 0, w;
	struct winsize ws;
	char *out = NULL;
	size_t outlen;
	FILE *o;

	if (!tty) {
		fwrite(buf, 1, len, stdout);
		if (!ctl.json)
			fputc('\n', stdout);
		fflush(stdout);
		return;
	}
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row > 1 && ws.ws_col > 0) {
		rows = ws.ws_row - 1; /* the last row's newline would scroll */
		cols = ws.ws_col;
	}
	o = open_memstream(&out, &outlen);
	if (!o)
		return;
	fputs(first ? "\033[H\033[2J" : "\033[H", o);
	for (; p < end && (!rows || n < rows); p = nl + 1, n++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (rows && n + 1 == rows && nl + 1 < end) {
			fputs("(more rows than the terminal holds: fewer with -n)\033[K\n", o);
			n++;
			break;
		}
		w = (size_t)(nl - p);
		fwrite(p, 1, cols && w > cols ? cols : w, o);
		fputs("\033[K\n", o);
	}
	fputs("\033[J", o);
	fclose(o);
	if (out) {
		fwrite(out, 1, outlen, stdout);
		fflush(stdout);
	}
	free(out);
}

int top_watch(struct sluice_handle *h, struct top *t, __u64 every_ns, __u64 count)
{
	bool tty = !ctl.json && isatty(STDOUT_FILENO);
	struct top_frame fr = { .every_ns = every_ns };
	__u64 done = 0, t_prev = 0, t_now;
	struct timespec next, now;
	char *buf = NULL;
	size_t len;
	time_t wall;
	struct tm tm;
	FILE *f;
	int ret, st = 0;

	sigemptyset(&stop_set);
	sigaddset(&stop_set, SIGINT);
	sigaddset(&stop_set, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop_set, NULL);
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!stop) {
		st = follow(h, &fr);
		if (st)
			break;
		ret = sluice_read_stats(h, &fr.cur);
		if (ret) {
			st = sluice_cli_err(ret, "Couldn't read the counters of %s: %s", h->name,
					    strerror(-ret));
			break;
		}
		t_now = sluice_now_ns();
		fr.ifname = h->name;
		fr.dt = (double)(t_now - t_prev) / 1e9;
		wall = time(NULL);
		localtime_r(&wall, &tm);
		strftime(fr.when, sizeof(fr.when), "%Y-%m-%dT%H:%M:%S", &tm);
		f = open_memstream(&buf, &len);
		if (!f) {
			st = sluice_cli_err(-errno, "Couldn't make a buffer for the view: %s",
					    strerror(errno));
			break;
		}
		st = top_view(h, t, f, &fr);
		fclose(f);
		if (!st)
			put_frame(buf, len, tty, !done);
		free(buf);
		buf = NULL;
		if (st)
			break;
		fr.prev = fr.cur;
		fr.has_prev = true;
		t_prev = t_now;
		if (++done == count)
			break;
		/* Every every_ns from the first; after a refresh that took
		 * longer than that, the next one at once. */
		after(&next, &next, every_ns);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec ||
		    (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
			next = now;
		wait_stop(&next);
	}
	return st;
}
