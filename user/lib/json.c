// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A tiny streaming JSON writer for -j output. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "libsluice.h"

void json_init(struct sluice_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0. */
static int utf8_len(const unsigned char *s)
{
	int n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0; /* also stops at the NUL */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

/*
 * A JSON string. Input words (a file name, a bad value) may hold any bytes:
 * what is not UTF-8 is written as U+FFFD, so that -j output always parses.
 */
static void put_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		int n = utf8_len(s);

		if (!n) {
			fputs("\\ufffd", f);
			s++;
		} else if (*s == '"' || *s == '\\') {
			fprintf(f, "\\%c", *s++);
		} else if (*s < 0x20 || *s == 0x7f) {
			fprintf(f, "\\u%04x", *s++);
		} else {
			fwrite(s, 1, (size_t)n, f);
			s += n;
		}
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

/*
 * A record: the same named values as JSON (j set) or as text lines of
 * "name value" (j NULL), where a name inside an object is the object's name
 * and its own joined by '_': one function writes both, so that a text name
 * is always its JSON path ("fleet_sync_errors" is fleet.sync_errors).
 */
void sluice_rec_init(struct sluice_rec *r, struct sluice_json *j, FILE *f, int width)
{
	memset(r, 0, sizeof(*r));
	r->j = j;
	r->f = f;
	r->width = width;
}

void sluice_rec_begin(struct sluice_rec *r, const char *name)
{
	size_t n = strlen(r->prefix);

	if (r->j) {
		json_obj_begin(r->j, name);
		return;
	}
	if (r->depth < 8)
		r->mark[r->depth++] = n;
	snprintf(r->prefix + n, sizeof(r->prefix) - n, "%s_", name);
}

void sluice_rec_end(struct sluice_rec *r)
{
	if (r->j) {
		json_obj_end(r->j);
		return;
	}
	if (r->depth > 0)
		r->prefix[r->mark[--r->depth]] = '\0';
}

static void rec_name(const struct sluice_rec *r, const char *name)
{
	char full[128];

	snprintf(full, sizeof(full), "%s%s", r->prefix, name);
	fprintf(r->f, "%-*s ", r->width, full);
}

void sluice_rec_str(struct sluice_rec *r, const char *name, const char *v)
{
	if (r->j) {
		json_str(r->j, name, v);
		return;
	}
	rec_name(r, name);
	fprintf(r->f, "%s\n", *v ? v : "-");
}

void sluice_rec_u64(struct sluice_rec *r, const char *name, __u64 v)
{
	if (r->j) {
		json_u64(r->j, name, v);
		return;
	}
	rec_name(r, name);
	fprintf(r->f, "%llu\n", (unsigned long long)v);
}

void sluice_rec_f64(struct sluice_rec *r, const char *name, double v)
{
	if (r->j) {
		json_f64(r->j, name, v);
		return;
	}
	rec_name(r, name);
	fprintf(r->f, "%.3f\n", v);
}

void sluice_rec_bool(struct sluice_rec *r, const char *name, bool v)
{
	if (r->j) {
		json_bool(r->j, name, v);
		return;
	}
	rec_name(r, name);
	fprintf(r->f, "%s\n", v ? "true" : "false");
}
