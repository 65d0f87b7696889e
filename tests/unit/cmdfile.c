// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Files of editing commands (cmd.h), on an in-memory copy with no maps: the
 * settings of `set` (--fail-closed, --new-keys) change nothing else, `rule
 * flush` empties the rules, an input is read once (a pipe, a FIFO and
 * standard input give sluicectl -b what a file gives), a config file is a
 * regular file that has settled (a FIFO refused at once, a file still being
 * written refused), and sluice_cmd_file_replace() makes the copy exactly
 * the file while keeping every tag whose state format did not change.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cmd.h"
#include "../lib/scratch.h"
#include "../lib/tap.h"

/* Run one editing command given as one string of words. */
static int edit(struct sluice_txn *t, const char *line, char *err, size_t errlen)
{
	char buf[512], *argv[32];
	int argc = scratch_words(line, buf, argv);

	return t ? sluice_cmd_edit(t, argc, argv, err, errlen) :
		   sluice_cmd_check(argc, argv, err, errlen);
}

static bool edit_ok(struct sluice_txn *t, const char *line)
{
	char err[SLUICE_ERR_LEN] = "";
	int ret = edit(t, line, err, sizeof(err));

	if (ret)
		tap_diag("  '%s': %d: %s", line, ret, err);
	return !ret;
}

static char tmpdir[64];

/* Written a minute ago, as far as a reader can tell: it need not wait for
 * the file to settle (test_settle() tests the wait). */
static bool settled(const char *path)
{
	struct timespec t[2];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= 60;
	t[1] = t[0];
	if (!utimensat(AT_FDCWD, path, t, 0))
		return true;
	tap_diag("  Couldn't set the times of %s: %s", path, strerror(errno));
	return false;
}

/* A file holding text; the path is static storage, valid until the next call. */
static const char *write_file(const char *name, const char *text)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "we");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		tap_diag("  Couldn't write %s", path);
		return NULL;
	}
	return settled(path) ? path : NULL;
}

static struct sluice_cmd_file *read_text(const char *name, const char *text)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_cmd_file *f = NULL;
	const char *path = write_file(name, text);

	if (path && sluice_cmd_file_read(path, &f, err, sizeof(err)))
		tap_diag("  %s: %s", path, err);
	return f;
}

static struct sluice_txn_rule *rule_of(struct sluice_txn *t, const char *cidr)
{
	struct sluice_cidr c;

	if (sluice_parse_cidr(cidr, &c, NULL, 0))
		return NULL;
	return sluice_txn_find_rule(t, &c);
}

static __u32 tag_of(struct sluice_txn *t, const char *cidr)
{
	struct sluice_txn_rule *r = rule_of(t, cidr);

	return r ? r->rule.policy.tag : 0;
}

/* ---- set --fail-closed, set --new-keys ---- */

/* Everything of the settings but flags and new_keys is as it was. */
static bool only_flags_and_new_keys(const struct sluice_settings *a,
				    const struct sluice_settings *b)
{
	struct sluice_settings x = *a, y = *b;

	x.flags = y.flags = 0;
	memset(&x.new_keys, 0, sizeof(x.new_keys));
	memset(&y.new_keys, 0, sizeof(y.new_keys));
	return !memcmp(&x, &y, sizeof(x));
}

static void test_settings(void)
{
	struct sluice_settings before;
	char err[SLUICE_ERR_LEN] = "";
	struct scratch s;
	int ret;

	scratch_init(&s);
	edit_ok(&s.t, "set --algo sliding-window --rate 6000/m --window 10s");
	edit_ok(&s.t, "rule add 198.18.1.0/24 --rate 10/s");
	before = s.t.set;

	TAP_TRUE(edit_ok(&s.t, "set --fail-closed on") && (s.t.set.flags & SLUICE_FAIL_CLOSED),
		 "set --fail-closed on sets SLUICE_FAIL_CLOSED");
	TAP_EQ(s.t.set.flags, before.flags | SLUICE_FAIL_CLOSED,
	       "set --fail-closed on: no other flag changes");
	TAP_TRUE(!memcmp(&s.t.set.def, &before.def, sizeof(before.def)),
		 "set --fail-closed on leaves the default policy (and its tag) alone");
	TAP_TRUE(only_flags_and_new_keys(&s.t.set, &before) &&
			 !memcmp(&s.t.set.new_keys, &before.new_keys, sizeof(before.new_keys)),
		 "set --fail-closed on changes nothing but the flag");
	TAP_TRUE(edit_ok(&s.t, "set --fail-closed off") && s.t.set.flags == before.flags,
		 "set --fail-closed off clears it");

	TAP_TRUE(edit_ok(&s.t, "set --new-keys 1000/s"), "set --new-keys 1000/s");
	TAP_TRUE(s.t.set.new_keys.rate == 1000 && s.t.set.new_keys.period_ns == SLUICE_NS_PER_SEC &&
			 s.t.set.new_keys.burst == sluice_default_burst(1000, SLUICE_NS_PER_SEC) &&
			 (s.t.set.new_keys.interval || s.t.set.new_keys.interval_frac),
		 "--new-keys: 1000 a second, the default burst of the rate, as attach sets it");
	TAP_TRUE(!memcmp(&s.t.set.def, &before.def, sizeof(before.def)) &&
			 s.t.set.flags == before.flags &&
			 only_flags_and_new_keys(&s.t.set, &before),
		 "set --new-keys changes nothing but new_keys");
	TAP_TRUE(edit_ok(&s.t, "set --new-keys 30/m") && s.t.set.new_keys.rate == 30 &&
			 s.t.set.new_keys.period_ns == 60 * SLUICE_NS_PER_SEC,
		 "set --new-keys 30/m keeps the rate as written");
	TAP_TRUE(edit_ok(&s.t, "set --new-keys off") && !s.t.set.new_keys.interval &&
			 !s.t.set.new_keys.period_ns,
		 "set --new-keys off turns it off");
	TAP_TRUE(edit_ok(&s.t, "set --rate 100/s --new-keys 50/s --fail-closed on") &&
			 s.t.set.def.pkt.rate == 100 && s.t.set.new_keys.rate == 50 &&
			 (s.t.set.flags & SLUICE_FAIL_CLOSED),
		 "set with a policy option and both settings applies all three");
	TAP_EQ(s.t.nr_rules, 1, "the settings leave the rules alone");

	ret = edit(NULL, "set --new-keys 10mbit", err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "counts new sources, not bytes"),
		 "set --new-keys 10mbit is refused: a byte rate");
	ret = edit(NULL, "set --new-keys soon", err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "--new-keys") && strstr(err, "'off'"),
		 "set --new-keys with no rate is refused");
	ret = edit(NULL, "set --fail-closed maybe", err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "'on' or 'off', not 'maybe'"),
		 "set --fail-closed maybe is refused");
	ret = edit(NULL, "set --fail-closed", err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "--fail-closed needs 'on' or 'off'"),
		 "set --fail-closed without a value is refused");
	ret = edit(NULL, "set --fail-closed on --fail-closed off", err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "given twice"), "--fail-closed twice is refused");
	ret = edit(NULL, "rule add 198.18.0.0/24 --rate 1/s --new-keys 5/s", err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "unknown option '--new-keys' for rule add"),
		 "--new-keys is not an option of rule add");
	scratch_free(&s);
}

/* ---- rule flush ---- */

static void test_flush(void)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_cmd_file *f;
	struct sluice_settings before;
	struct scratch s;
	int ret;

	scratch_init(&s);
	edit_ok(&s.t, "rule add 198.18.1.0/24 --rate 10/s");
	edit_ok(&s.t, "rule add 198.18.2.0/24 --exempt");
	edit_ok(&s.t, "rule add 2001:2::/48 --deny");
	s.t.rules_changed = false;
	before = s.t.set;
	TAP_TRUE(edit_ok(&s.t, "rule flush") && s.t.nr_rules == 0 && s.t.rules_changed,
		 "rule flush removes every rule, as one change of the rules");
	TAP_TRUE(!memcmp(&s.t.set, &before, sizeof(before)), "rule flush leaves the settings");
	s.t.rules_changed = false;
	TAP_TRUE(edit_ok(&s.t, "rule flush") && !s.t.rules_changed,
		 "rule flush of no rules is no change");
	ret = edit(NULL, "rule flush extra", err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "rule flush takes no arguments, not 'extra'"),
		 "rule flush extra is refused");
	ret = edit(NULL, "rule flush --exempt", err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "takes no arguments"),
		 "rule flush --exempt is refused");
	ret = edit(NULL, "rule frob", err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "rule flush"),
		 "an unknown rule command names flush");

	f = read_text("flush.conf", "rule add 198.18.1.0/24 --rate 10/s\n"
				    "rule flush   # start over\n"
				    "rule add 198.18.2.0/24 --rate 20/s\n");
	TAP_TRUE(f && sluice_cmd_file_nr(f) == 3, "a file with rule flush reads: 3 commands");
	edit_ok(&s.t, "rule add 198.18.9.0/24 --exempt");
	ret = f ? sluice_cmd_file_edit(&s.t, f, err, sizeof(err)) : -1;
	TAP_TRUE(!ret && s.t.nr_rules == 1 && rule_of(&s.t, "198.18.2.0/24"),
		 "rule flush in a file removes the rules before it, live ones too");
	sluice_cmd_file_free(f);
	scratch_free(&s);
}

/* ---- reading once: pipes, FIFOs, files ---- */

/* A file big enough to need many reads from a pipe (its buffer is 64 KiB). */
static char *big_text(void)
{
	size_t cap = 256 * 1024, n = 0;
	char *buf = malloc(cap);
	int i;

	if (!buf)
		return NULL;
	n += snprintf(buf + n, cap - n, "set --rate 61/s --burst 80\nset --fail-closed on\n");
	for (i = 0; i < 2000; i++)
		n += snprintf(buf + n, cap - n, "# padding comment line %d, to cross reads\n", i);
	for (i = 0; i < 200; i++)
		n += snprintf(buf + n, cap - n, "rule add 198.%d.%d.0/24 --rate %d/s\n",
			      18 + i / 250, i % 250, i + 1);
	n += snprintf(buf + n, cap - n, "rule del 198.18.7.0/24\nset --new-keys 500/s");
	return buf; /* no newline at the end: the last line counts too */
}

static bool write_all(int fd, const char *text)
{
	size_t len = strlen(text), off = 0;

	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w <= 0)
			return false;
		off += (size_t)w;
	}
	return true;
}

/* The copy a file's commands make from the defaults. */
static bool apply_to_fresh(const struct sluice_cmd_file *f, struct scratch *s)
{
	char err[SLUICE_ERR_LEN] = "";

	scratch_init(s);
	if (sluice_cmd_file_edit(&s->t, f, err, sizeof(err))) {
		tap_diag("  %s", err);
		return false;
	}
	return true;
}

static bool same_result(const struct scratch *a, const struct scratch *b)
{
	return !memcmp(&a->t.set, &b->t.set, sizeof(a->t.set)) && a->t.nr_rules == b->t.nr_rules &&
	       !memcmp(a->t.rules, b->t.rules, a->t.nr_rules * sizeof(*a->t.rules));
}

struct fifo_writer {
	const char *path, *text;
	bool ok;
};

static void *fifo_write(void *arg)
{
	struct fifo_writer *w = arg;
	int fd = open(w->path, O_WRONLY | O_CLOEXEC);

	w->ok = fd >= 0 && write_all(fd, w->text);
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void test_read_once(void)
{
	char err[SLUICE_ERR_LEN] = "", path[128], *text = big_text();
	struct sluice_cmd_file *file = NULL, *piped = NULL, *fifo = NULL;
	struct scratch a, b;
	struct fifo_writer w;
	pthread_t thread;
	int fds[2], ret, st;
	pid_t pid;

	if (!text) {
		tap_ok(false, "build a big input");
		return;
	}
	file = read_text("big.conf", text);
	TAP_EQ(sluice_cmd_file_nr(file), 204, "a file: every command is read, the last line too");

	/* A pipe from a child, read as the shell's `... | sluicectl -b /dev/stdin` */
	if (pipe(fds)) {
		tap_ok(false, "pipe: %s", strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		_exit(write_all(fds[1], text) ? 0 : 1);
	}
	close(fds[1]);
	snprintf(path, sizeof(path), "/dev/fd/%d", fds[0]);
	ret = sluice_cmd_input_read(path, &piped, err, sizeof(err));
	close(fds[0]);
	waitpid(pid, &st, 0);
	if (!TAP_TRUE(!ret && piped, "a pipe of 200 KiB is read whole"))
		tap_diag("  %d: %s", ret, err);
	TAP_EQ(sluice_cmd_file_nr(piped), sluice_cmd_file_nr(file),
	       "a pipe gives as many commands as the file");
	if (file && piped && apply_to_fresh(file, &a) && apply_to_fresh(piped, &b)) {
		TAP_TRUE(same_result(&a, &b), "a pipe gives the same settings and rules as a file");
		TAP_TRUE(a.t.set.def.pkt.rate == 61 && (a.t.set.flags & SLUICE_FAIL_CLOSED) &&
				 a.t.set.new_keys.rate == 500 && a.t.nr_rules == 199,
			 "and they are what the input says");
		scratch_free(&a);
		scratch_free(&b);
	} else {
		tap_ok(false, "a pipe gives the same settings and rules as a file");
	}

	/* A FIFO: opened once, so the one writer is all it takes. */
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	if (mkfifo(path, 0600)) {
		tap_ok(false, "mkfifo: %s", strerror(errno));
		goto out;
	}
	w.path = path;
	w.text = text;
	w.ok = false;
	if (pthread_create(&thread, NULL, fifo_write, &w)) {
		tap_ok(false, "start the FIFO's writer");
		goto out;
	}
	ret = sluice_cmd_input_read(path, &fifo, err, sizeof(err));
	pthread_join(thread, NULL);
	if (!TAP_TRUE(!ret && w.ok, "a FIFO is read whole, from one writer"))
		tap_diag("  %d: %s", ret, err);
	if (file && fifo && apply_to_fresh(file, &a) && apply_to_fresh(fifo, &b)) {
		TAP_TRUE(same_result(&a, &b), "a FIFO gives the same settings and rules as a file");
		scratch_free(&a);
		scratch_free(&b);
	} else {
		tap_ok(false, "a FIFO gives the same settings and rules as a file");
	}
out:
	sluice_cmd_file_free(file);
	sluice_cmd_file_free(piped);
	sluice_cmd_file_free(fifo);
	free(text);
}

/* Appends a line every few ms until stop: a file being written. */
struct slow_writer {
	const char *path;
	volatile bool stop;
};

static void *slow_write(void *arg)
{
	struct slow_writer *w = arg;
	int fd = open(w->path, O_WRONLY | O_APPEND | O_CLOEXEC);

	while (fd >= 0 && !w->stop) {
		if (!write_all(fd, "rule add 198.18.9.0/24 --rate 10/s\n"))
			break;
		usleep(3000);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Standard input, config files that are not files, files still written. */
static void test_inputs(void)
{
	char err[SLUICE_ERR_LEN] = "", path[128];
	struct sluice_cmd_file *f = NULL;
	struct slow_writer w;
	pthread_t thread;
	int fds[2], saved, ret;
	double t0 = 0;
	pid_t pid;

	/* sluicectl -b -: standard input, "<stdin>" in messages. */
	saved = dup(STDIN_FILENO);
	if (saved < 0 || pipe(fds)) {
		tap_ok(false, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		_exit(write_all(fds[1], "set --rate 61/s\nrule add 198.18.0.0/24 --rate 0/s\n") ?
			      0 :
			      1);
	}
	close(fds[1]);
	dup2(fds[0], STDIN_FILENO);
	close(fds[0]);
	ret = sluice_cmd_input_read("-", &f, err, sizeof(err));
	dup2(saved, STDIN_FILENO);
	close(saved);
	waitpid(pid, NULL, 0);
	if (!TAP_TRUE(ret == -EINVAL && !f && strstr(err, "<stdin>:2: "),
		      "'-' reads standard input; a bad line is <stdin>:LINE"))
		tap_diag("  %d: %s", ret, err);

	/* A config file must be a file: a FIFO with no writer is refused at
	 * once, not waited on (alarm: a read that blocks fails the test). */
	snprintf(path, sizeof(path), "%s/fifo2", tmpdir);
	if (mkfifo(path, 0600)) {
		tap_ok(false, "mkfifo: %s", strerror(errno));
		return;
	}
	alarm(10);
	ret = sluice_cmd_file_read(path, &f, err, sizeof(err));
	alarm(0);
	if (!TAP_TRUE(ret == -EINVAL && !f && strstr(err, "not a regular file (a FIFO)"),
		      "a config file that is a FIFO is refused at once (-EINVAL)"))
		tap_diag("  %d: %s", ret, err);
	TAP_TRUE(sluice_cmd_file_err_is_usage(ret),
		 "that is the operator's to fix (exit status 2)");
	ret = sluice_cmd_file_read("/dev/null", &f, err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "a device"), "so is a device");

	/* Just written: read once it has settled (not modified for a moment). */
	snprintf(path, sizeof(path), "%s/fresh.conf", tmpdir);
	ret = -1;
	{
		FILE *o = fopen(path, "we");

		if (o && fputs("set --rate 62/s\n", o) >= 0 && !fclose(o)) {
			t0 = now_s();
			ret = sluice_cmd_file_read(path, &f, err, sizeof(err));
		}
	}
	if (!TAP_TRUE(!ret && sluice_cmd_file_nr(f) == 1, "a file just written is read"))
		tap_diag("  %d: %s", ret, err);
	TAP_TRUE(!ret && now_s() - t0 >= 0.05,
		 "once it has not changed for a moment (%.0f ms later)", (now_s() - t0) * 1000);
	sluice_cmd_file_free(f);
	f = NULL;

	/* Still being written: refused, naming write-then-rename, a runtime
	 * condition (exit status 1). */
	w.path = path;
	w.stop = false;
	if (pthread_create(&thread, NULL, slow_write, &w)) {
		tap_ok(false, "start the slow writer");
		return;
	}
	usleep(20000); /* it has begun */
	t0 = now_s();
	ret = sluice_cmd_file_read(path, &f, err, sizeof(err));
	w.stop = true;
	pthread_join(thread, NULL);
	if (!TAP_TRUE(ret == -EAGAIN && !f && strstr(err, "kept changing") &&
			      strstr(err, "rename it into place"),
		      "a file that keeps changing is refused, naming write-then-rename"))
		tap_diag("  %d: %s", ret, err);
	TAP_TRUE(!sluice_cmd_file_err_is_usage(ret), "that is a runtime condition (exit status 1)");
	TAP_TRUE(now_s() - t0 < 5, "after a bounded wait (%.1f s)", now_s() - t0);
	/* Open for writing by someone, though not changing (a writer between
	 * two writes, however long it pauses): refused too. */
	ret = -1;
	if (settled(path)) {
		int wfd = open(path, O_WRONLY | O_CLOEXEC);

		ret = sluice_cmd_file_read(path, &f, err, sizeof(err));
		if (wfd >= 0)
			close(wfd);
	}
	if (!TAP_TRUE(ret == -EAGAIN && !f && strstr(err, "open for writing by another process"),
		      "a file another process has open for writing is refused, though settled"))
		tap_diag("  %d: %s", ret, err);
	/* sluicectl -b takes a pipe, and a file as a config file does. */
	ret = sluice_cmd_input_read(path, &f, err, sizeof(err));
	if (!TAP_TRUE(!ret && f, "sluicectl -b reads the file once it has settled"))
		tap_diag("  %d: %s", ret, err);
	sluice_cmd_file_free(f);
}

static void test_read_errors(void)
{
	char err[SLUICE_ERR_LEN] = "", dir[128];
	struct sluice_cmd_file *f = (struct sluice_cmd_file *)1;
	const char *path;
	int ret;

	path = write_file("bad.conf", "set --rate 200/s\n\nrule add 198.18.0.0/24 --rate 10/x\n");
	ret = path ? sluice_cmd_file_read(path, &f, err, sizeof(err)) : -1;
	TAP_TRUE(ret == -EINVAL && !f && strstr(err, "bad.conf:3: rate '10/x'"),
		 "a bad line: -EINVAL, FILE:LINE, and no file");
	ret = sluice_cmd_file_read("/nonexistent/sluice.conf", &f, err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "Couldn't open /nonexistent/sluice.conf"),
		 "a missing file: -EINVAL, names it");
	snprintf(dir, sizeof(dir), "%s", tmpdir);
	ret = sluice_cmd_file_read(dir, &f, err, sizeof(err));
	TAP_TRUE(ret == -EINVAL && strstr(err, "Is a directory"), "a directory is refused");
}

/* A NUL byte cannot come through fputs: write it with write(). */
static void test_nul(void)
{
	static const char text[] = "set --rate 200/s\nset\0 --rate 1/s\n";
	char err[SLUICE_ERR_LEN] = "", path[128];
	struct sluice_cmd_file *f = NULL;
	int fd, ret = -1;

	snprintf(path, sizeof(path), "%s/nul2.conf", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		bool written = write(fd, text, sizeof(text) - 1) == (ssize_t)sizeof(text) - 1;

		/* Closed first: a file open for writing is not read. */
		if (!close(fd) && written && settled(path))
			ret = sluice_cmd_file_read(path, &f, err, sizeof(err));
	}
	TAP_TRUE(ret == -EINVAL && !f && strstr(err, "nul2.conf:2: a NUL byte"),
		 "a NUL byte is refused with FILE:LINE");
}

/* ---- sluice_cmd_file_replace ---- */

static const char *const live_lines[] = {
	"set --rate 200/s",
	"set --fail-closed on",
	"rule add 198.18.1.0/24 --rate 10/s",
	"rule add 198.18.2.0/24 --rate 10/s",
	"rule add 198.18.3.0/24 --algo sliding-window --rate 10/s",
	"rule add 2001:2::/48 --exempt",
	"rule add 198.18.4.0/24 --rate 10/s --prefix 24",
};

static const char desired[] = "# the desired state\n"
			      "set --rate 300/s\n"
			      "rule add 198.18.1.0/24 --rate 10/s          # as it is\n"
			      "rule add 198.18.2.0/24 --rate 20/s          # a new rate\n"
			      "rule add 198.18.3.0/24 --algo fixed-window --rate 10/s\n"
			      "rule add 198.18.4.0/24 --rate 10/s          # --prefix dropped\n"
			      "rule add 198.18.5.0/24 --rate 5/s\n"
			      "rule add 2001:2:1::/48 --deny\n";

static void live_state(struct scratch *s)
{
	size_t i;

	scratch_init(s);
	for (i = 0; i < sizeof(live_lines) / sizeof(live_lines[0]); i++)
		edit_ok(&s->t, live_lines[i]);
	/* As a live copy would be: one generation of rules is live. */
	s->t.set.rules_gen = 1;
	s->t.set.nr_rules = (__u32)s->t.nr_rules;
	s->t.rules_changed = false;
}

#define SLOT(tag) SLUICE_TAG_SLOT(tag)

static void test_replace(void)
{
	__u32 t1, t2, t3, t4, t6, tdef, slot5, slot6;
	__u64 tag_seq;
	struct sluice_cmd_diff d = { 99, 99, 99, 99, true, true };
	struct sluice_settings init;
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_cmd_file *f;
	struct scratch s;
	int ret;

	live_state(&s);
	t1 = tag_of(&s.t, "198.18.1.0/24");
	t2 = tag_of(&s.t, "198.18.2.0/24");
	t3 = tag_of(&s.t, "198.18.3.0/24");
	t4 = tag_of(&s.t, "198.18.4.0/24");
	t6 = tag_of(&s.t, "2001:2::/48");
	tdef = s.t.set.def.tag;
	tag_seq = s.cfg.tag_seq;
	f = read_text("desired.conf", desired);
	ret = f ? sluice_cmd_file_replace(&s.t, f, &d, err, sizeof(err)) : -1;
	if (!TAP_EQ(ret, 0, "replace with a desired state"))
		tap_diag("  %s", err);

	TAP_EQ(s.t.set.def.tag, tdef, "the default keeps its tag: only its rate changed");
	TAP_EQ(s.t.set.def.pkt.rate, 300, "the default gets the file's rate");
	TAP_TRUE(!(s.t.set.flags & SLUICE_FAIL_CLOSED),
		 "a setting the file does not give is the default again (fail-open)");
	/* Where the rules are (rules_gen, rule_maps, nr_rules) is the commit's
	 * to set, whatever the copy says: tests/net/reload.sh. */
	TAP_TRUE(s.t.rules_changed, "the rules are marked changed");
	TAP_EQ(s.t.nr_rules, 6, "the rules are exactly the file's");
	TAP_EQ(tag_of(&s.t, "198.18.1.0/24"), t1, "an unchanged rule keeps its tag");
	TAP_EQ(tag_of(&s.t, "198.18.2.0/24"), t2,
	       "a rule with a new rate keeps its tag (its buckets and counters)");
	TAP_EQ(rule_of(&s.t, "198.18.2.0/24") ?
		       rule_of(&s.t, "198.18.2.0/24")->rule.policy.pkt.rate :
		       0,
	       20, "and gets the new rate");
	TAP_TRUE(tag_of(&s.t, "198.18.3.0/24") != t3 &&
			 SLOT(tag_of(&s.t, "198.18.3.0/24")) == SLOT(t3),
		 "a rule with a new algorithm gets a new tag on the same slot");
	TAP_TRUE(tag_of(&s.t, "198.18.4.0/24") != t4 &&
			 SLOT(tag_of(&s.t, "198.18.4.0/24")) == SLOT(t4),
		 "a rule with a new key prefix gets a new tag on the same slot");
	TAP_TRUE(!rule_of(&s.t, "2001:2::/48"), "a rule the file does not have is removed");
	slot5 = SLOT(tag_of(&s.t, "198.18.5.0/24"));
	slot6 = SLOT(tag_of(&s.t, "2001:2:1::/48"));
	TAP_TRUE(slot5 && slot6 && slot5 != slot6 && slot5 != SLOT(t1) && slot5 != SLOT(t2) &&
			 slot5 != SLOT(t3) && slot5 != SLOT(t4) && slot6 != SLOT(t1) &&
			 slot6 != SLOT(t2) && slot6 != SLOT(t3) && slot6 != SLOT(t4),
		 "new rules get slots of their own, none of a kept rule");
	TAP_TRUE(slot5 != SLOT(t6) && slot6 != SLOT(t6),
		 "while there are free slots, not the removed rule's either");
	TAP_EQ(d.added, 2, "diff: 2 rules added");
	TAP_EQ(d.removed, 1, "diff: 1 removed");
	TAP_EQ(d.changed, 3, "diff: 3 changed");
	TAP_EQ(d.unchanged, 1, "diff: 1 unchanged");
	TAP_TRUE(d.default_changed, "diff: the default changed");
	TAP_TRUE(d.settings_changed, "diff: the settings changed (fail-closed off)");

	TAP_TRUE(s.cfg.tag_seq > tag_seq && s.cfg.tag_seq <= tag_seq + 4,
		 "replace draws a generation only for each new tag (4), none for kept ones");

	/* The same file again, on the result: nothing to do. */
	s.t.rules_changed = false;
	tag_seq = s.cfg.tag_seq;
	{
		struct sluice_settings set = s.t.set;
		__u32 t3b = tag_of(&s.t, "198.18.3.0/24");

		ret = f ? sluice_cmd_file_replace(&s.t, f, &d, err, sizeof(err)) : -1;
		TAP_TRUE(!ret && d.added == 0 && d.removed == 0 && d.changed == 0 &&
				 d.unchanged == 6 && !d.default_changed && !d.settings_changed,
			 "the same file again: 6 unchanged, nothing else");
		TAP_TRUE(!s.t.rules_changed, "and the rules are not marked changed");
		TAP_TRUE(!memcmp(&set, &s.t.set, sizeof(set)) &&
				 tag_of(&s.t, "198.18.3.0/24") == t3b,
			 "and every tag is kept");
		TAP_EQ(s.cfg.tag_seq, tag_seq, "and no generation is drawn");
	}
	sluice_cmd_file_free(f);
	scratch_free(&s);

	/* A new state format of the default, and the defaults for what is not said. */
	live_state(&s);
	tdef = s.t.set.def.tag;
	f = read_text("window.conf", "set --algo sliding-window --rate 10/s\n");
	ret = f ? sluice_cmd_file_replace(&s.t, f, &d, err, sizeof(err)) : -1;
	TAP_TRUE(!ret && s.t.set.def.tag != tdef && SLOT(s.t.set.def.tag) == 0 &&
			 s.t.set.def.algo == SLUICE_ALGO_SLIDING_WINDOW,
		 "a default with a new algorithm gets a new tag, on slot 0");
	TAP_TRUE(!ret && d.removed == 5 && s.t.nr_rules == 0 && s.t.rules_changed,
		 "a file with no rules removes all of them");
	sluice_cmd_file_free(f);
	scratch_free(&s);

	live_state(&s);
	tdef = s.t.set.def.tag;
	sluice_settings_init(&init);
	f = read_text("empty.conf", "# nothing but a comment\n");
	ret = f ? sluice_cmd_file_replace(&s.t, f, &d, err, sizeof(err)) : -1;
	init.def.tag = tdef;
	TAP_TRUE(!ret && !memcmp(&s.t.set.def, &init.def, sizeof(init.def)) &&
			 s.t.set.flags == init.flags &&
			 !memcmp(&s.t.set.new_keys, &init.new_keys, sizeof(init.new_keys)),
		 "an empty file: the default settings, the default keeping its tag");
	sluice_cmd_file_free(f);
	scratch_free(&s);
}

static bool same_copy(const struct sluice_txn *a, const struct sluice_settings *set,
		      const struct sluice_txn_rule *rules, size_t nr)
{
	return !memcmp(&a->set, set, sizeof(*set)) && a->nr_rules == nr &&
	       !memcmp(a->rules, rules, nr * sizeof(*rules));
}

static void test_nothing_changes(void)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_cmd_diff d = {};
	struct sluice_txn_rule *rules;
	struct sluice_settings set;
	struct sluice_cmd_file *f;
	struct scratch s;
	size_t nr;
	int ret;

	live_state(&s);
	set = s.t.set;
	nr = s.t.nr_rules;
	rules = malloc(nr * sizeof(*rules));
	if (!rules) {
		tap_ok(false, "out of memory");
		return;
	}
	memcpy(rules, s.t.rules, nr * sizeof(*rules));

	/* Read-time: a bad line is refused before any copy is touched. */
	{
		const char *path =
			write_file("bad-desired.conf",
				   "set --rate 300/s\nrule add 198.18.9.0/24 --rate 0/s\n");

		f = NULL;
		ret = path ? sluice_cmd_file_read(path, &f, err, sizeof(err)) : -1;
		TAP_TRUE(ret == -EINVAL && !f && strstr(err, "bad-desired.conf:2: rate '0/s'"),
			 "a desired state with a bad line is refused when read, with FILE:LINE");
	}

	/* Apply-time: a line valid alone that fails on the state before it. */
	f = read_text("late.conf", "set --rate 300/s\nrule add 198.18.7.0/24 --rate 1/s\n"
				   "rule del 198.18.8.0/24\n");
	ret = f ? sluice_cmd_file_replace(&s.t, f, &d, err, sizeof(err)) : -1;
	TAP_TRUE(ret == -ENOENT && strstr(err, "late.conf:3: there is no rule for 198.18.8.0/24"),
		 "replace with a line that fails: the error, with FILE:LINE");
	TAP_TRUE(same_copy(&s.t, &set, rules, nr) && !s.t.rules_changed,
		 "replace that fails changes nothing");
	ret = f ? sluice_cmd_file_edit(&s.t, f, err, sizeof(err)) : -1;
	TAP_TRUE(ret == -ENOENT && same_copy(&s.t, &set, rules, nr) && !s.t.rules_changed,
		 "sluice_cmd_file_edit that fails leaves the copy as it was");
	sluice_cmd_file_free(f);
	free(rules);
	scratch_free(&s);
}

int main(void)
{
	char tmpl[] = "/tmp/sluice-cmdfile.XXXXXX";

	if (!mkdtemp(tmpl)) {
		tap_ok(false, "mkdtemp: %s", strerror(errno));
		return tap_done();
	}
	snprintf(tmpdir, sizeof(tmpdir), "%s", tmpl);
	/* A reader that stops early must fail a test, not kill the FIFO's writer
	 * thread, and with it this program, by SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	test_settings();
	test_flush();
	test_read_once();
	test_inputs();
	test_read_errors();
	test_nul();
	test_replace();
	test_nothing_changes();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			tap_diag("Couldn't remove %s", tmpdir);
	}
	return tap_done();
}
