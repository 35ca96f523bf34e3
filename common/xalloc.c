#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

static void die_nomem(size_t n)
{
	fprintf(stderr, "fatal: out of memory allocating %zu bytes\n", n);
	exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die_nomem(n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		die_nomem(nmemb * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		die_nomem(n);
	return q;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		die_nomem(strlen(s) + 1);
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (!p)
		die_nomem(n + 1);
	return p;
}

size_t xmul(size_t a, size_t b)
{
	if (b && a > (size_t)-1 / b) {
		fprintf(stderr, "fatal: size overflow: %zu * %zu\n", a, b);
		exit(1);
	}
	return a * b;
}
