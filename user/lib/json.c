// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A tiny streaming JSON writer for -j output. */
#include <math.h>
#include <stdio.h>

#include "libsluice.h"

void json_init(struct sluice_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
}

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void prefix(struct sluice_json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
	if (key) {
		put_string(j->f, key);
		fputc(':', j->f);
	}
}

static void open_level(struct sluice_json *j, const char *key, char c)
{
	prefix(j, key);
	fputc(c, j->f);
	if (j->depth < 15)
		j->depth++;
	j->need_comma[j->depth] = false;
}

void json_obj_begin(struct sluice_json *j, const char *key)
{
	open_level(j, key, '{');
}

void json_obj_end(struct sluice_json *j)
{
	fputc('}', j->f);
	if (j->depth > 0)
		j->depth--;
}

void json_arr_begin(struct sluice_json *j, const char *key)
{
	open_level(j, key, '[');
}

void json_arr_end(struct sluice_json *j)
{
	fputc(']', j->f);
	if (j->depth > 0)
		j->depth--;
}

void json_str(struct sluice_json *j, const char *key, const char *val)
{
	prefix(j, key);
	put_string(j->f, val);
}

void json_u64(struct sluice_json *j, const char *key, __u64 val)
{
	prefix(j, key);
	fprintf(j->f, "%llu", (unsigned long long)val);
}

void json_f64(struct sluice_json *j, const char *key, double val)
{
	prefix(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.6g", val);
	else
		fputs("null", j->f);
}

void json_bool(struct sluice_json *j, const char *key, bool val)
{
	prefix(j, key);
	fputs(val ? "true" : "false", j->f);
}

void json_end(struct sluice_json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
	j->depth = 0;
	j->need_comma[0] = false;
}
