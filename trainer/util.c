/*
 * The two helpers every trainer/ file uses (internal.h): the error text of
 * a failure and a string copy that reports running out of memory. A leaf:
 * it calls nothing else in trainer/.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/internal.h"
#include "common/banned.h"

int trainer__err(const struct trainer *t, int code, const char *fmt, ...)
{
	va_list ap;

	if (!t || !t->err)
		return code;
	va_start(ap, fmt);
	(void)vsnprintf(t->err, TRAINER__ERRLEN, fmt, ap);
	va_end(ap);
	return code;
}

char *trainer__strdup(const char *s)
{
	size_t n;
	char *p;

	if (!s)
		return NULL;
	n = strlen(s);
	p = malloc(n + 1);
	if (p)
		memcpy(p, s, n + 1);
	return p;
}
