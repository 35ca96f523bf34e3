#ifndef COMMON_XALLOC_H
#define COMMON_XALLOC_H

#include <stddef.h>

/*
 * Allocation wrappers for the daemons and the CLI: on failure they print a
 * message and exit(1), so they never return NULL. Libraries that run inside
 * somebody else's process (trainer/) must not use them.
 */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Multiplies, exiting like the wrappers above on overflow. */
size_t xmul(size_t a, size_t b);

/* Elements of an array (not of a pointer to one). */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Makes room for at least nr elements in the array p whose allocated count
 * is alloc (as git's ALLOC_GROW): grows it by half again, never to fewer
 * than 16, and updates alloc. p, nr and alloc are evaluated more than once.
 */
#define ALLOC_NR(x) (((x) + 16) * 3 / 2)
#define ALLOC_GROW(p, nr, alloc)                                            \
	do {                                                                \
		if ((nr) > (alloc)) {                                       \
			(alloc) = ALLOC_NR(alloc) < (nr) ? (nr) :           \
							   ALLOC_NR(alloc); \
			(p) = xrealloc((p), xmul((alloc), sizeof(*(p))));   \
		}                                                           \
	} while (0)

/* Frees *pp and sets it to NULL. */
#define FREE_AND_NULL(p)    \
	do {                \
		free(p);    \
		(p) = NULL; \
	} while (0)

#endif
