/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A growable array: an element pointer, a count and a capacity that the
 * caller keeps, and room made for one more by doubling. Header only, so
 * that programs that do not link libsluice (sluice-probe) use it too.
 *
 *	if (sluice_array_room(w->rules, w->n, w->cap, 16))
 *		return -ENOMEM;
 *	w->rules[w->n++] = r;
 */
#ifndef SLUICE_ARRAY_H
#define SLUICE_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * arr (of *cap elements of size bytes) with room for element n, which is at
 * most *cap (one more at a time): arr itself while n < *cap, else arr
 * reallocated to twice *cap (first, when *cap is 0) with *cap updated; NULL
 * when that fails, arr and *cap unchanged.
 */
static inline void *sluice_array_grow(void *arr, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return arr;
	ncap = *cap ? 2 * *cap : first;
	if (ncap <= n || (size && ncap > SIZE_MAX / size))
		return NULL;
	p = realloc(arr, ncap * size);
	if (p)
		*cap = ncap;
	return p;
}

/*
 * Room for arr[n] in the array arr of cap elements (any integer type), both
 * lvalues that it updates: 0, or -ENOMEM with both unchanged.
 */
#define sluice_array_room(arr, n, cap, first)                                                     \
	({                                                                                        \
		size_t cap_ = (size_t)(cap);                                                      \
		void *p_ = sluice_array_grow((arr), &cap_, (size_t)(n), sizeof(*(arr)), (first)); \
		if (p_) {                                                                         \
			(arr) = p_;                                                               \
			(cap) = cap_;                                                             \
		}                                                                                 \
		p_ ? 0 : -ENOMEM;                                                                 \
	})

#endif /* SLUICE_ARRAY_H */
