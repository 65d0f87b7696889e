// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Files of editing commands (sluicectl -b, sluice attach --config, sluice
 * reload): read once, whole and settled, checked whole, then applied on top of the live state
 * (sluice_cmd_file_edit) or as the whole desired state
 * (sluice_cmd_file_replace). The commands themselves are cmd.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "array.h"
#include "cmd_edit.h"

#define MAX_WORDS 64

/* ---- files of editing commands ---- */

/*
 * An input is read whole, once, before any of it is used: a pipe, a FIFO or
 * /dev/stdin can be read only once, and a file rewritten between a check
 * and an edit must never be applied half old, half new. The cap keeps a
 * mistaken `-b /dev/zero` from eating the memory.
 */
#define MAX_FILE_SIZE (16U << 20)

/* sluicectl -b -: standard input, named so in messages ("<stdin>:3: ..."). */
#define STDIN_PATH "-"
#define STDIN_NAME "<stdin>"

struct cmd_line {
	unsigned int lineno;
	int argc;
	char **argv; /* into the file's text, NULL-terminated */
};

struct sluice_cmd_file {
	char *path; /* as given, for messages */
	char *text; /* the whole input, split in place into words */
	struct cmd_line *lines; /* the commands: blank and comment lines left out */
	int nr, cap;
};

/* Split line into words in place; a word starting with '#' starts a comment. */
static int split_words(char *line, char **argv, int max)
{
	char *p = line;
	int argc = 0;

	for (;;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p || *p == '#')
			break;
		if (argc == max)
			return -E2BIG;
		argv[argc++] = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		if (*p)
			*p++ = '\0';
	}
	argv[argc] = NULL;
	return argc;
}

/*
 * A file rewritten in place (truncated, then written) can be read between
 * its truncation and its last write: what is read is a whole file to the
 * parser, only fewer rules (a reload would remove the rest). So a file is
 * read only while no process has it open for writing (a read lease is
 * granted only then, and while we hold it no process can open it for
 * writing: its open waits until we give it back), and once it has settled:
 * modified SETTLE_MS ago or more, or not modified for SETTLE_MS while we
 * watch (a writer of several opens; a modification time ahead of the clock).
 * One still open for writing, or changing, after SETTLE_MAX_MS is refused,
 * and so is one that changed while it was read (where no lease can be
 * had). Write-then-rename never meets any of this: the path names the old
 * file or the new one, whole.
 */
#define SETTLE_MS 100
#define SETTLE_MAX_MS 1000
#define SETTLE_POLL_MS 10
#define STR_(x) #x
#define STR(x) STR_(x)
#define SETTLE_MAX_STR STR(SETTLE_MAX_MS) " ms"

/* What tells a file changed: the same file, of the same size and
 * modification time. (Not the status change time: renaming a new file
 * over this one, the way to replace it, changes that of this one.) */
static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static long long age_ms(const struct stat *st)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (long long)(now.tv_sec - st->st_mtim.tv_sec) * 1000 +
	       (now.tv_nsec - st->st_mtim.tv_nsec) / 1000000;
}

enum lease { LEASE_HELD, LEASE_WRITER, LEASE_NONE };

/*
 * A read lease on fd (opened read-only): LEASE_HELD; LEASE_WRITER when a
 * process has the file open for writing; LEASE_NONE when this file system or
 * this caller cannot lease it (the other checks then stand alone). A writer
 * that opens the file while we hold it breaks the lease, which signals us:
 * SIGURG, ignored by default, and not SIGIO, whose default kills.
 */
static enum lease take_lease(int fd)
{
	if ((fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY || fcntl(fd, F_SETSIG, SIGURG))
		return LEASE_NONE;
	if (!fcntl(fd, F_SETLEASE, F_RDLCK))
		return LEASE_HELD;
	return errno == EAGAIN ? LEASE_WRITER : LEASE_NONE;
}

static void give_lease(int fd, enum lease l)
{
	if (l == LEASE_HELD)
		fcntl(fd, F_SETLEASE, F_UNLCK);
}

/* -EAGAIN (a runtime condition: try again): the file was being written. */
static int being_written(const char *path, const char *what, char *err, size_t errlen)
{
	return sluice_err(
		err, errlen, -EAGAIN,
		"%s %s: it is being written, and nothing was applied. Write the new file "
		"beside it and rename it into place ('mv FILE.new FILE': the path then names "
		"the old file or the new one, whole), then try again",
		path, what);
}

/* Wait until the file of fd (st: its status now) is open for writing by no
 * process and has settled; *l says whether we hold a lease on it. */
static int wait_settled(int fd, const char *path, struct stat *st, enum lease *l, char *err,
			size_t errlen)
{
	int waited = 0, still = 0;
	struct stat now;

	for (;;) {
		*l = take_lease(fd);
		if (*l != LEASE_WRITER && (age_ms(st) >= SETTLE_MS || still >= SETTLE_MS))
			return 0;
		give_lease(fd, *l);
		*l = LEASE_NONE;
		if (waited >= SETTLE_MAX_MS) {
			const char *how =
				still < SETTLE_MS ?
					"kept changing for " SETTLE_MAX_STR :
					"was open for writing by another process for " SETTLE_MAX_STR;

			return being_written(path, how, err, errlen);
		}
		usleep(SETTLE_POLL_MS * 1000);
		waited += SETTLE_POLL_MS;
		if (fstat(fd, &now))
			return sluice_err(err, errlen, -errno, "Couldn't read %s: %s", path,
					  strerror(errno));
		still = same_file(st, &now) ? still + SETTLE_POLL_MS : 0;
		*st = now;
	}
}

/*
 * All of path into a malloc()ed, NUL-terminated buffer. A config file
 * (!any_input) must be a regular file: it is read again at every reload, and
 * opening a FIFO would block until some writer came (sluice run's reload on
 * SIGHUP with it). Any input (sluicectl -b) may be a pipe, a FIFO, or "-":
 * standard input.
 */
static int read_whole(const char *path, bool any_input, char **out, size_t *len, char *err,
		      size_t errlen)
{
	bool stdin_input = any_input && !strcmp(path, STDIN_PATH);
	enum lease lease = LEASE_NONE;
	size_t cap = 0, n = 0;
	struct stat st, after;
	char *buf = NULL;
	int fd, ret = 0;
	ssize_t r;

	if (stdin_input) {
		fd = STDIN_FILENO;
		path = STDIN_NAME;
	} else
		fd = open(path, O_RDONLY | O_CLOEXEC | (any_input ? 0 : O_NONBLOCK));
	if (fd < 0)
		return sluice_err(err, errlen, errno == ENOENT ? -EINVAL : -errno,
				  "Couldn't open %s: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		ret = sluice_err(err, errlen, -errno, "Couldn't read %s: %s", path,
				 strerror(errno));
		goto out;
	}
	/* A directory opens, and only read() would refuse it. */
	if (S_ISDIR(st.st_mode)) {
		ret = sluice_err(err, errlen, -EINVAL, "Couldn't open %s: %s", path,
				 strerror(EISDIR));
		goto out;
	}
	if (!any_input && !S_ISREG(st.st_mode)) {
		ret = sluice_err(
			err, errlen, -EINVAL,
			"%s is not a regular file (%s): a config file is read whole at every "
			"reload, so it must be a file; write one and give its path",
			path,
			S_ISFIFO(st.st_mode)                       ? "a FIFO" :
			S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" :
			S_ISSOCK(st.st_mode)                       ? "a socket" :
								     "not a file");
		goto out;
	}
	if (S_ISREG(st.st_mode)) {
		ret = wait_settled(fd, path, &st, &lease, err, errlen);
		if (ret)
			goto out;
	}
	for (;;) {
		/* room for what read() gives and a NUL */
		if (sluice_array_room(buf, n + 1, cap, 4096)) {
			ret = sluice_err(err, errlen, -ENOMEM, "Couldn't read %s: %s", path,
					 strerror(ENOMEM));
			break;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = sluice_err(err, errlen, -errno, "Couldn't read %s: %s", path,
					 strerror(errno));
			break;
		}
		if (!r)
			break;
		n += (size_t)r;
		if (n > MAX_FILE_SIZE) {
			ret = sluice_err(
				err, errlen, -EINVAL,
				"%s is larger than %u MiB: is it a file of editing commands?", path,
				MAX_FILE_SIZE >> 20);
			break;
		}
	}
	/* Read whole, and unchanged while it was read. */
	if (!ret && S_ISREG(st.st_mode) &&
	    (fstat(fd, &after) || !same_file(&st, &after) || n != (size_t)st.st_size))
		ret = being_written(path, "changed while it was read", err, errlen);
	give_lease(fd, lease);
out:
	if (!stdin_input)
		close(fd);
	if (ret) {
		free(buf);
		return ret;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static int add_line(struct sluice_cmd_file *f, unsigned int lineno, int argc, char **argv)
{
	struct cmd_line *lines;
	char **words;

	if (sluice_array_room(f->lines, f->nr, f->cap, 64))
		return -ENOMEM;
	lines = f->lines;
	words = malloc((argc + 1) * sizeof(*words));
	if (!words)
		return -ENOMEM;
	memcpy(words, argv, (argc + 1) * sizeof(*words));
	lines[f->nr].lineno = lineno;
	lines[f->nr].argc = argc;
	lines[f->nr].argv = words;
	f->nr++;
	return 0;
}

static int file_read(const char *path, bool any_input, struct sluice_cmd_file **out, char *err,
		     size_t errlen)
{
	char *argv[MAX_WORDS + 1], inner[SLUICE_ERR_LEN], *p, *end, *nl;
	struct sluice_cmd_file *f;
	unsigned int lineno = 0;
	int argc, ret;
	size_t len = 0;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (f)
		f->path = strdup(any_input && !strcmp(path, STDIN_PATH) ? STDIN_NAME : path);
	if (!f || !f->path) {
		free(f);
		return sluice_err(err, errlen, -ENOMEM, "Couldn't read %s: %s", path,
				  strerror(ENOMEM));
	}
	ret = read_whole(path, any_input, &f->text, &len, err, errlen);
	path = f->path; /* for messages: "<stdin>" for "-" */
	if (ret)
		goto out_free;
	for (p = f->text, end = p + len; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end; /* a last line without its newline */
		lineno++;
		if (memchr(p, '\0', (size_t)(nl - p))) {
			ret = sluice_err(err, errlen, -EINVAL,
					 "%s:%u: a NUL byte: is this a text file?", path, lineno);
			goto out_free;
		}
		*nl = '\0';
		argc = split_words(p, argv, MAX_WORDS);
		if (argc < 0) {
			ret = sluice_err(err, errlen, -EINVAL,
					 "%s:%u: more than %d words on one line", path, lineno,
					 MAX_WORDS);
			goto out_free;
		}
		if (!argc)
			continue;
		/* A file is applied to a state later, which checks what
		 * depends on its kind (--delay, --burst 0) line by line. */
		ret = sluice_cmd_check_for(argc, argv, EDIT_FOR_EITHER, inner, sizeof(inner));
		if (ret) {
			sluice_err(err, errlen, ret, "%s:%u: %s", path, lineno, inner);
			goto out_free;
		}
		ret = add_line(f, lineno, argc, argv);
		if (ret) {
			sluice_err(err, errlen, ret, "Couldn't read %s: %s", path, strerror(-ret));
			goto out_free;
		}
	}
	*out = f;
	return 0;

out_free:
	sluice_cmd_file_free(f);
	return ret;
}

int sluice_cmd_file_read(const char *path, struct sluice_cmd_file **out, char *err, size_t errlen)
{
	return file_read(path, false, out, err, errlen);
}

int sluice_cmd_input_read(const char *path, struct sluice_cmd_file **out, char *err, size_t errlen)
{
	return file_read(path, true, out, err, errlen);
}

int sluice_cmd_file_nr(const struct sluice_cmd_file *f)
{
	return f ? f->nr : 0;
}

void sluice_cmd_file_free(struct sluice_cmd_file *f)
{
	int i;

	if (!f)
		return;
	for (i = 0; i < f->nr; i++)
		free(f->lines[i].argv);
	free(f->lines);
	free(f->text);
	free(f->path);
	free(f);
}

/* Every command of f on t's copy, in order; err names the line that failed. */
static int edit_lines(struct sluice_txn *t, const struct sluice_cmd_file *f, char *err,
		      size_t errlen)
{
	char inner[SLUICE_ERR_LEN];
	int i, ret;

	for (i = 0; i < f->nr; i++) {
		const struct cmd_line *l = &f->lines[i];

		ret = sluice_cmd_edit(t, l->argc, l->argv, inner, sizeof(inner));
		if (ret)
			return sluice_err(err, errlen, ret, "%s:%u: %s", f->path, l->lineno, inner);
	}
	return 0;
}

int sluice_cmd_file_edit(struct sluice_txn *t, const struct sluice_cmd_file *f, char *err,
			 size_t errlen)
{
	struct sluice_settings set = t->set;
	bool rules_changed = t->rules_changed, l4_changed = t->l4_changed;
	size_t nr = t->nr_rules, nr_l4 = t->nr_l4;
	struct sluice_txn_rule *saved = NULL;
	struct sluice_txn_l4 *saved_l4 = NULL;
	int ret;

	/* A line that fails (a rule del of a rule that is not there, a set
	 * that does not fit the policy) leaves the copy as it was, so that a
	 * caller may still commit its other edits. */
	if (nr) {
		saved = malloc(nr * sizeof(*saved));
		if (!saved)
			return sluice_err(err, errlen, -ENOMEM, "out of memory");
		memcpy(saved, t->rules, nr * sizeof(*saved));
	}
	if (nr_l4) {
		saved_l4 = malloc(nr_l4 * sizeof(*saved_l4));
		if (!saved_l4) {
			free(saved);
			return sluice_err(err, errlen, -ENOMEM, "out of memory");
		}
		memcpy(saved_l4, t->l4, nr_l4 * sizeof(*saved_l4));
	}
	ret = edit_lines(t, f, err, errlen);
	if (ret) {
		free(t->rules);
		t->rules = saved;
		t->nr_rules = nr;
		t->rules_changed = rules_changed;
		if (nr_l4)
			memcpy(t->l4, saved_l4, nr_l4 * sizeof(*saved_l4));
		t->nr_l4 = nr_l4;
		t->l4_changed = l4_changed;
		t->set = set;
		sluice_txn_rules_replaced(t);
		free(saved_l4);
		return ret;
	}
	free(saved);
	free(saved_l4);
	return 0;
}

/* Everything of a policy the datapath reads, its tag included. */
static bool same_policy(const struct sluice_policy *a, const struct sluice_policy *b)
{
	return a->tag == b->tag && a->algo == b->algo && a->action == b->action &&
	       a->flags == b->flags && a->prefix4 == b->prefix4 && a->prefix6 == b->prefix6 &&
	       sluice_penalty_ds(a) == sluice_penalty_ds(b) &&
	       /* window: a window algorithm's, else a shaper's delays */
	       a->window_limit == b->window_limit && a->window == b->window &&
	       !memcmp(&a->pkt, &b->pkt, sizeof(a->pkt)) &&
	       !memcmp(&a->bytes, &b->bytes, sizeof(a->bytes));
}

/* The settings but the policy and where the rules are (the commit's). */
static bool same_settings(const struct sluice_settings *a, const struct sluice_settings *b)
{
	/* Where the L4 rules are is the commit's too. */
	const __u32 mask = ~(SLUICE_L4_ON | SLUICE_L4_GEN);

	return !memcmp(&a->new_keys, &b->new_keys, sizeof(a->new_keys)) &&
	       (a->flags & mask) == (b->flags & mask) && a->agg4 == b->agg4 && a->agg6 == b->agg6 &&
	       a->event_mask == b->event_mask;
}

/*
 * Give the policies of n (built from nothing) the tags they take over from
 * the live copy t: the default and every rule of a CIDR t has keep their tag
 * while their state format is the same (so their buckets and, for a rule,
 * its stats slot), else get a new generation on the same slot. Rules that
 * share a slot (slots.c) keep it while their policy stays the slot's. A new
 * CIDR gets a slot no rule of t holds when there is one: a slot t held until
 * now keeps counting its old rule's packets until the commit's flip.
 */
static int take_over_tags(struct sluice_txn *t, struct sluice_txn *n, struct sluice_cmd_diff *d,
			  bool *cidr_changed, char *err, size_t errlen)
{
	size_t cidr_same = 0; /* rules of a CIDR alone kept as they were */
	/* Every rule of n, of both kinds: its policy, and the policy of the
	 * same rule in t (NULL: a new rule, or one that must move). */
	size_t nr = n->nr_rules + n->nr_l4, i, kept = 0, moved = 0;
	struct sluice_policy **pol = NULL;
	const struct sluice_policy **old = NULL;
	struct sluice_slots *sl = NULL;
	unsigned char *held = NULL;
	bool *had = NULL;
	struct sluice_policy np;
	int ret = 0;

	np = n->set.def;
	np.tag = t->set.def.tag;
	if (!sluice_txn_same_format(t, &t->set.def, &np))
		sluice_txn_retag(t, &np);
	n->set.def = np;
	d->default_changed = !same_policy(&t->set.def, &n->set.def);
	d->settings_changed = !same_settings(&t->set, &n->set);

	sl = sluice_slots_new();
	held = calloc(SLUICE_MAX_RULES, 1);
	pol = calloc(nr + 1, sizeof(*pol));
	old = calloc(nr + 1, sizeof(*old));
	had = calloc(nr + 1, sizeof(*had));
	if (!sl || !held || !pol || !old || !had) {
		ret = sluice_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < t->nr_rules; i++)
		held[SLUICE_TAG_SLOT(t->rules[i].rule.policy.tag) & (SLUICE_MAX_RULES - 1)] = 1;
	for (i = 0; i < t->nr_l4; i++)
		held[SLUICE_TAG_SLOT(t->l4[i].policy.tag) & (SLUICE_MAX_RULES - 1)] = 1;
	for (i = 0; i < nr; i++) {
		if (i < n->nr_rules) {
			struct sluice_txn_rule *r;
			struct sluice_cidr c;

			sluice_rule_cidr(&n->rules[i], &c);
			pol[i] = &n->rules[i].rule.policy;
			r = sluice_txn_find_rule(t, &c);
			old[i] = r ? &r->rule.policy : NULL;
		} else {
			struct sluice_txn_l4 *l = &n->l4[i - n->nr_rules], *o;
			struct sluice_cidr c;

			sluice_l4_cidr(&l->r, &c);
			pol[i] = &l->policy;
			o = sluice_txn_find_l4(t, &c, &l->r.m);
			old[i] = o ? &o->policy : NULL;
		}
		had[i] = old[i] != NULL;
	}
	/* Kept rules first: their slots are theirs before any new rule picks. */
	for (i = 0; i < nr; i++) {
		__u32 slot;

		if (!old[i])
			continue;
		np = *pol[i];
		np.tag = old[i]->tag;
		slot = SLUICE_TAG_SLOT(np.tag);
		if (sluice_slots_users(sl, slot)) {
			/* A rule of its shared slot was kept already: the
			 * slot's policy is that one's; another moves. */
			if (!sluice_policy_same_but_tag(sluice_slots_policy(sl, slot), &np)) {
				old[i] = NULL;
				continue;
			}
			np.tag = sluice_slots_policy(sl, slot)->tag;
		} else if (!sluice_txn_same_format(t, old[i], &np)) {
			sluice_txn_retag(t, &np);
		}
		kept++;
		*pol[i] = np;
		sluice_slots_add(sl, pol[i]);
		if (same_policy(old[i], pol[i])) {
			d->unchanged++;
			cidr_same += i < n->nr_rules;
		} else {
			d->changed++;
		}
	}
	for (i = 0; i < nr; i++) {
		if (old[i])
			continue;
		ret = sluice_txn_place(t, sl, pol[i], held, err, errlen);
		if (ret)
			goto out;
		if (had[i]) {
			d->changed++; /* a kept rule that left its shared slot */
			moved++;
		} else {
			d->added++;
		}
	}
	d->removed = (unsigned int)(t->nr_rules + t->nr_l4 - kept - moved);
	*cidr_changed = cidr_same != n->nr_rules || cidr_same != t->nr_rules;
out:
	free(had);
	free(old);
	free(pol);
	free(held);
	sluice_slots_free(sl);
	return ret;
}

int sluice_cmd_file_replace(struct sluice_txn *t, const struct sluice_cmd_file *f,
			    struct sluice_cmd_diff *diff, char *err, size_t errlen)
{
	struct sluice_config scratch_cfg = {};
	struct sluice_handle scratch = {};
	struct sluice_cmd_diff d = {};
	struct sluice_txn n = {};
	bool cidr_changed = false;
	int ret;

	/* The desired state is built from the defaults alone, so that what
	 * the file does not say is the default and not the live value; only
	 * the tags are then taken over from the live copy. It is built on a
	 * config of its own: the tags it draws are all replaced, and drawn
	 * from the live tag_seq they would wrap the 13-bit generations in a
	 * few reloads of a big file, bringing back tags of buckets that may
	 * still sit in the table. */
	sluice_handle_init(&scratch);
	snprintf(scratch.ifname, sizeof(scratch.ifname), "%s", t->h->ifname);
	snprintf(scratch.name, sizeof(scratch.name), "%s", t->h->name);
	/* A shaper's file is a shaper's edits: --delay taken, and checked
	 * against the horizon of the shaper's qdisc. */
	scratch.shape = t->h->shape;
	if (t->h->cfg) {
		scratch_cfg.kind = t->h->cfg->kind;
		scratch_cfg.shape_horizon_us = t->h->cfg->shape_horizon_us;
	}
	scratch.cfg = &scratch_cfg;
	n.h = &scratch;
	sluice_settings_init(&n.set);
	/* Its second keys get their indices in the live table. */
	if (sluice_txn_also_share(&n, t))
		return sluice_err(err, errlen, -ENOMEM, "out of memory");
	ret = edit_lines(&n, f, err, errlen);
	if (!ret)
		ret = take_over_tags(t, &n, &d, &cidr_changed, err, errlen);
	if (ret) {
		sluice_txn_end(&n);
		return ret;
	}
	/* Where the rules are (rules_gen, rule_maps, nr_rules) is the
	 * commit's to say: n.set's are the defaults', and never reach the
	 * datapath. */
	free(t->rules);
	t->rules = n.rules;
	t->nr_rules = n.nr_rules;
	if (n.nr_l4 || t->nr_l4) {
		/* Changed unless the file's are the live ones, rule for rule. */
		bool same = n.nr_l4 == t->nr_l4 && !memcmp(n.l4, t->l4, n.nr_l4 * sizeof(*n.l4));

		free(t->l4);
		t->l4 = n.l4;
		t->nr_l4 = n.nr_l4;
		n.l4 = NULL;
		n.nr_l4 = 0;
		t->l4_changed |= !same;
	}
	t->set = n.set;
	sluice_txn_rules_replaced(t);
	n.rules = NULL;
	n.nr_rules = 0;
	sluice_txn_end(&n);
	if (cidr_changed)
		t->rules_changed = true;
	if (diff)
		*diff = d;
	return 0;
}
