// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libsluice's messages: the log level and sluice_log(), errors carried as
 * sentences (sluice_err(): the message into the caller's buffer, the -errno
 * returned), and the command-line tools' one way to report them, as text on
 * stderr or as JSON on stdout under -j (sluice_cli_err(), sluice_cli_usage()).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "libsluice.h"

static enum sluice_log_level log_level = SLUICE_LOG_INFO;

void sluice_set_log_level(enum sluice_log_level level)
{
	log_level = level;
}

void sluice_log(enum sluice_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

int sluice_err(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

void sluice_report(const char *prog, bool json, const char *fmt, va_list ap)
{
	char msg[1024];
	struct sluice_json j;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (!json) {
		fprintf(stderr, "%s: %s\n", prog, msg);
		return;
	}
	json_init(&j, stdout);
	json_obj_begin(&j, NULL);
	json_str(&j, "error", msg);
	json_obj_end(&j);
	json_end(&j);
}

static void report_line(const char *prog, bool json, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report_line(const char *prog, bool json, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sluice_report(prog, json, fmt, ap);
	va_end(ap);
}

int sluice_report_usage(const char *prog, bool json, const char *what, const char *fmt, va_list ap)
{
	char msg[768];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (what)
		report_line(prog, json, "%s (see '%s %s help')", msg, prog, what);
	else
		report_line(prog, json, "%s (see '%s help')", msg, prog);
	return SLUICE_EXIT_USAGE;
}

static const char *cli_prog = "sluice";
static const bool *cli_json;

void sluice_cli_init(const char *prog, const bool *json)
{
	cli_prog = prog;
	cli_json = json;
}

int sluice_cli_err(int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sluice_report(cli_prog, cli_json && *cli_json, fmt, ap);
	va_end(ap);
	return ret == -EINVAL ? SLUICE_EXIT_USAGE : SLUICE_EXIT_RUNTIME;
}

int sluice_cli_usage(const char *what, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = sluice_report_usage(cli_prog, cli_json && *cli_json, what, fmt, ap);
	va_end(ap);
	return ret;
}

bool sluice_is_help(const char *word)
{
	return !strcmp(word, "help") || !strcmp(word, "-h") || !strcmp(word, "--help");
}

static int lib_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (log_level < SLUICE_LOG_DEBUG && level != LIBBPF_WARN)
		return 0;
	/* libbpf's own warnings are only worth showing under -v too: every
	 * failure it reports is reported again by us, in words. */
	if (log_level < SLUICE_LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int xdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	if (log_level < SLUICE_LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void sluice_quiet_libs(void)
{
	libbpf_set_print(lib_print);
	libxdp_set_print(xdp_print);
}
