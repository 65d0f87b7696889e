/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * JSON output (json.c): a tiny streaming writer, no allocation, and records
 * written as JSON or as text lines by one call.
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_JSON_H
#define SLUICE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

struct sluice_json {
	FILE *f;
	int depth;
	bool need_comma[16];
};
void json_init(struct sluice_json *j, FILE *f);
void json_obj_begin(struct sluice_json *j, const char *key); /* key NULL in arrays/top */
void json_obj_end(struct sluice_json *j);
void json_arr_begin(struct sluice_json *j, const char *key);
void json_arr_end(struct sluice_json *j);
void json_str(struct sluice_json *j, const char *key, const char *val);
void json_u64(struct sluice_json *j, const char *key, __u64 val);
void json_f64(struct sluice_json *j, const char *key, double val);
void json_bool(struct sluice_json *j, const char *key, bool val);
void json_end(struct sluice_json *j); /* newline after the top value */

/*
 * A record of named values, written as JSON into j's open object, or (j
 * NULL) as text lines "name value" to f, the name padded to width, where a
 * name inside an object is the object's and its own joined by '_'
 * ("fleet_sync_errors" for fleet.sync_errors): one function writes both, so
 * the text always says what the JSON says, under the same name.
 */
struct sluice_rec {
	struct sluice_json *j;
	FILE *f;
	int width, depth;
	char prefix[96];
	size_t mark[8];
};
void sluice_rec_init(struct sluice_rec *r, struct sluice_json *j, FILE *f, int width);
void sluice_rec_begin(struct sluice_rec *r, const char *name); /* an object */
void sluice_rec_end(struct sluice_rec *r);
void sluice_rec_str(struct sluice_rec *r, const char *name, const char *v);
void sluice_rec_u64(struct sluice_rec *r, const char *name, __u64 v);
void sluice_rec_f64(struct sluice_rec *r, const char *name, double v);
void sluice_rec_bool(struct sluice_rec *r, const char *name, bool v);

#endif /* SLUICE_JSON_H */
