#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

char buf__empty[1];

void buf_init(struct buf *b, size_t max)
{
	b->data = buf__empty;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

int buf_grow(struct buf *b, size_t n)
{
	size_t want;

	if (b->max && (n > b->max || b->len > b->max - n))
		return ERR_TOOBIG;
	if (b->len + n + 1 <= b->cap)
		return 0;
	want = b->cap ? b->cap : 64;
	while (want < b->len + n + 1)
		want *= 2;
	if (b->cap == 0) {
		b->data = xmalloc(want);
		b->data[0] = '\0';
	} else {
		b->data = xrealloc(b->data, want);
	}
	b->cap = want;
	return 0;
}

int buf_add(struct buf *b, const void *data, size_t n)
{
	int r = buf_grow(b, n);

	if (r)
		return r;
	if (n)
		memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int buf_addch(struct buf *b, char c)
{
	return buf_add(b, &c, 1);
}

int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;
	int r;

	va_copy(cp, ap);
	n = vsnprintf(b->data + b->len, b->cap ? b->cap - b->len : 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return ERR_INVALID;
	if (b->cap && (size_t)n < b->cap - b->len) {
		if (b->max && b->len + (size_t)n > b->max) {
			b->data[b->len] = '\0';
			return ERR_TOOBIG;
		}
		b->len += (size_t)n;
		return 0;
	}
	r = buf_grow(b, (size_t)n);
	if (r) {
		if (b->cap)
			b->data[b->len] = '\0';
		return r;
	}
	vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = buf_vaddf(b, fmt, ap);
	va_end(ap);
	return r;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->cap)
		b->data[0] = '\0';
}

void buf_release(struct buf *b)
{
	if (b->cap)
		free(b->data);
	b->data = buf__empty;
	b->len = 0;
	b->cap = 0;
}

char *buf_detach(struct buf *b, size_t *len_out)
{
	char *s;

	if (len_out)
		*len_out = b->len;
	if (b->cap == 0)
		s = xstrdup("");
	else
		s = b->data;
	b->data = buf__empty;
	b->len = 0;
	b->cap = 0;
	return s;
}
