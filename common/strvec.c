#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/strvec.h"
#include "common/buf.h"
#include "common/xalloc.h"
#include "common/banned.h"

void strvec_push(struct strvec *s, const char *str)
{
	ALLOC_GROW(s->v, s->n + 2, s->alloc);
	s->v[s->n++] = xstrdup(str);
	s->v[s->n] = NULL;
}

void strvec_pushf(struct strvec *s, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	(void)buf_vaddf(&b, fmt, ap);
	va_end(ap);
	strvec_push(s, b.data ? b.data : "");
	buf_release(&b);
}

void strvec_split(struct strvec *s, const char *str, char sep)
{
	const char *end;

	for (;; str = end + 1) {
		end = strchr(str, sep);
		if (!end) {
			strvec_push(s, str);
			return;
		}
		ALLOC_GROW(s->v, s->n + 2, s->alloc);
		s->v[s->n++] = xstrndup(str, (size_t)(end - str));
		s->v[s->n] = NULL;
	}
}

void strvec_release(struct strvec *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
	s->alloc = 0;
}

size_t strv_len(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

char **strv_dup(char *const *v)
{
	size_t n = strv_len(v), i;
	char **out = xcalloc(n + 1, sizeof(*out));

	for (i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

void strv_free(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}
