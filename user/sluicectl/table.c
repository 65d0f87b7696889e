// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl: text tables with columns sized to fit. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "sluicectl.h"

void ctl_table_init(struct ctl_table *t, const char *const *head, const char *align)
{
	memset(t, 0, sizeof(*t));
	while (t->ncols < CTL_MAX_COLS && head[t->ncols]) {
		t->head[t->ncols] = head[t->ncols];
		t->right[t->ncols] = align && align[t->ncols] == 'r';
		t->ncols++;
	}
}

int ctl_table_row(struct ctl_table *t, ...)
{
	char **cells;
	va_list ap;
	int c;

	/* an element is a row of ncols cells */
	cells = sluice_array_grow(t->cells, &t->cap, t->nrows, t->ncols * sizeof(*cells), 16);
	if (!cells)
		return -ENOMEM;
	t->cells = cells;
	va_start(ap, t);
	for (c = 0; c < t->ncols; c++) {
		const char *s = va_arg(ap, const char *);

		t->cells[t->nrows * t->ncols + c] = strdup(s ? s : "");
	}
	va_end(ap);
	t->nrows++;
	return 0;
}

void ctl_table_print(const struct ctl_table *t, FILE *f)
{
	size_t w[CTL_MAX_COLS], r;
	int c;

	for (c = 0; c < t->ncols; c++) {
		w[c] = strlen(t->head[c]);
		for (r = 0; r < t->nrows; r++) {
			const char *s = t->cells[r * t->ncols + c];
			size_t l = s ? strlen(s) : 0;

			if (l > w[c])
				w[c] = l;
		}
	}
	for (r = 0; r <= t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *s = r ? t->cells[(r - 1) * t->ncols + c] : t->head[c];
			bool last = c == t->ncols - 1;

			if (!s)
				s = "?";
			if (t->right[c])
				fprintf(f, "%*s%s", (int)w[c], s, last ? "" : "  ");
			else if (last)
				fputs(s, f);
			else
				fprintf(f, "%-*s  ", (int)w[c], s);
		}
		fputc('\n', f);
	}
}

void ctl_table_free(struct ctl_table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}
