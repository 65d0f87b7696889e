/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A transaction on a config in memory, as `sluice attach` checks its edits:
 * no map behind it, so the rule helpers and the editing language run on
 * their own (the unit suite).
 */
#ifndef SLUICE_TEST_SCRATCH_H
#define SLUICE_TEST_SCRATCH_H

#include <stdio.h>
#include <string.h>

#include "libsluice.h"
#include "cmd.h"

struct scratch {
	struct sluice_config cfg;
	struct sluice_handle h;
	struct sluice_txn t;
};

static inline void scratch_init(struct scratch *s)
{
	memset(s, 0, sizeof(*s));
	sluice_handle_init(&s->h);
	snprintf(s->h.ifname, sizeof(s->h.ifname), "scratch0");
	s->cfg.layout = SLUICE_LAYOUT_VERSION;
	sluice_settings_init(&s->cfg.settings[0]);
	s->cfg.settings[1] = s->cfg.settings[0];
	s->h.cfg = &s->cfg;
	s->t.h = &s->h;
	s->t.set = s->cfg.settings[0];
}

/* Split line at spaces into argv (at most 31 words, NULL-terminated) in
 * buf's copy of it, as a shell would hand an editing command its words;
 * returns argc. */
static inline int scratch_words(const char *line, char buf[512], char *argv[32])
{
	int argc = 0;
	char *w;

	snprintf(buf, 512, "%s", line);
	for (w = strtok(buf, " "); w && argc < 31; w = strtok(NULL, " "))
		argv[argc++] = w;
	argv[argc] = NULL;
	return argc;
}

/* One editing command, a string of words: checked alone (no state), or
 * applied to t (sluice_cmd_check(), sluice_cmd_edit()); err emptied first. */
static inline int scratch_check(const char *line, char *err, size_t errlen)
{
	char buf[512], *argv[32];
	int argc = scratch_words(line, buf, argv);

	err[0] = '\0';
	return sluice_cmd_check(argc, argv, err, errlen);
}

static inline int scratch_edit(struct sluice_txn *t, const char *line, char *err, size_t errlen)
{
	char buf[512], *argv[32];
	int argc = scratch_words(line, buf, argv);

	err[0] = '\0';
	return sluice_cmd_edit(t, argc, argv, err, errlen);
}

/* Drop the copy (and its bookkeeping); the scratch may be edited again. */
static inline void scratch_free(struct scratch *s)
{
	sluice_txn_end(&s->t);
	s->t.h = &s->h;
}

#endif /* SLUICE_TEST_SCRATCH_H */
