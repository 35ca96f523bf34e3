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

/* Frees *pp and sets it to NULL. */
#define FREE_AND_NULL(p)    \
	do {                \
		free(p);    \
		(p) = NULL; \
	} while (0)

#endif
