/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Logging, the exit statuses of both binaries, and errors as sentences (log.c).
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_LOG_H
#define SLUICE_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

enum sluice_log_level { SLUICE_LOG_WARN, SLUICE_LOG_INFO, SLUICE_LOG_DEBUG };
void sluice_set_log_level(enum sluice_log_level level);
void sluice_log(enum sluice_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define pr_warn(...) sluice_log(SLUICE_LOG_WARN, __VA_ARGS__)
#define pr_info(...) sluice_log(SLUICE_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) sluice_log(SLUICE_LOG_DEBUG, __VA_ARGS__)
/* Route libbpf's and libxdp's messages through ours: only shown under -v. */
void sluice_quiet_libs(void);

/* Exit statuses of both binaries. */
#define SLUICE_EXIT_OK 0
#define SLUICE_EXIT_RUNTIME 1
#define SLUICE_EXIT_USAGE 2

#define SLUICE_ERR_LEN 512

/* An error for the user: "PROG: MSG" on stderr, or {"error": "MSG"} on stdout
 * under -j (json). */
void sluice_report(const char *prog, bool json, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* A usage error: the message and where to read more, "(see 'PROG WHAT help')",
 * or "(see 'PROG help')" when what is NULL. Returns SLUICE_EXIT_USAGE. */
int sluice_report_usage(const char *prog, bool json, const char *what, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
/*
 * The errors of the two command-line tools, in one idiom: main() names the
 * program and where its -j flag is, once; then
 * `return sluice_cli_err(ret, "%s", err);` reports (sluice_report()) and
 * returns the exit status for ret: SLUICE_EXIT_USAGE for -EINVAL, else
 * SLUICE_EXIT_RUNTIME; sluice_cli_usage() reports a usage error of the
 * command `what` (sluice_report_usage()) and returns SLUICE_EXIT_USAGE.
 */
void sluice_cli_init(const char *prog, const bool *json);
int sluice_cli_err(int ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sluice_cli_usage(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "help", "-h" and "--help" all ask for help. */
bool sluice_is_help(const char *word);

/* Write a message into err (when there is room for one) and return ret:
 * `return sluice_err(err, errlen, -EINVAL, "rate '%s' is zero", s);` */
int sluice_err(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif /* SLUICE_LOG_H */
