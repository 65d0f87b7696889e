// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The fake Redis (tests/lib/fakeredis.c) as a program, for the shell tests:
 *
 *   fakeredis SOCKET CONTROL
 *
 * listens on the unix socket SOCKET until SIGTERM or SIGINT, and answers
 * every command as a real Redis with the agent's script would, with what
 * the file CONTROL says at that moment (read again for every command, so a
 * test changes the answers by rewriting it; write it whole, then rename):
 *
 *   live N       the count of boxes a sync answers (default 1)
 *   debt US      the debt of every key, microseconds (default 0)
 *   password PW  requirepass (default none)
 *   hang         answer no sync call (the deadline's test)
 *   close        close the connection at every command (a restart, CLIENT KILL)
 *
 * It prints "fakeredis: listening on SOCKET" once it listens.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/fakeredis.h"

static const char *control;

static enum fr_action answer(struct fakeredis *f, const struct fr_cmd *c, void *ctx)
{
	static char password[300];
	struct fr_sane s = { .live = 1 };
	bool hang = false, drop = false;
	char line[300];
	FILE *in = fopen(control, "r");

	(void)ctx;
	while (in && fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "live ", 5)) {
			s.live = strtoll(line + 5, NULL, 10);
		} else if (!strncmp(line, "debt ", 5)) {
			s.debt = strtoll(line + 5, NULL, 10);
		} else if (!strncmp(line, "password ", 9)) {
			snprintf(password, sizeof(password), "%s", line + 9);
			s.password = password;
		} else if (!strcmp(line, "hang")) {
			hang = true;
		} else if (!strcmp(line, "close")) {
			drop = true;
		}
	}
	if (in)
		fclose(in);
	if (drop)
		return FR_CLOSE;
	if (hang && fr_sync_keys(c) >= 0)
		return FR_HANG;
	return fr_sane(f, c, &s);
}

int main(int argc, char **argv)
{
	struct fakeredis *f;
	sigset_t set;
	int ret, sig;

	if (argc != 3) {
		fprintf(stderr, "usage: fakeredis SOCKET CONTROL\n");
		return 2;
	}
	control = argv[2];
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	/* Blocked in every thread: the fake's thread inherits the mask. */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	ret = fakeredis_start_at(&f, argv[1], answer, NULL);
	if (ret) {
		fprintf(stderr, "fakeredis: couldn't listen on %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	printf("fakeredis: listening on %s\n", argv[1]);
	fflush(stdout);
	sigwait(&set, &sig);
	fakeredis_stop(f);
	return 0;
}
