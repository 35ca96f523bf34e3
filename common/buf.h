#ifndef COMMON_BUF_H
#define COMMON_BUF_H

#include <stdarg.h>
#include <stddef.h>

/*
 * A growable byte buffer, after git's strbuf and curl's dynbuf.
 *
 * `data` is never NULL and always NUL-terminated, so it can be used as a C
 * string at any time. `max` caps the length (0 = no cap other than memory):
 * every buffer that network input fills must have one. An append that would
 * pass `max` fails with ERR_TOOBIG and leaves the buffer as it was.
 * Allocation failure exits (xmalloc), so the only error is ERR_TOOBIG;
 * callers filling an error message may ignore it (the text is cut short).
 */
struct buf {
	char *data;
	size_t len;
	size_t cap;
	size_t max;
};

extern char buf__empty[];

#define BUF_INIT                    \
	{                           \
		buf__empty, 0, 0, 0 \
	}
#define BUF_INIT_MAX(m)               \
	{                             \
		buf__empty, 0, 0, (m) \
	}

void buf_init(struct buf *b, size_t max);

/* Makes room for at least n more bytes. Returns 0 or ERR_TOOBIG. */
int buf_grow(struct buf *b, size_t n);

/* Appends n bytes. Returns 0 or ERR_TOOBIG. */
int buf_add(struct buf *b, const void *data, size_t n);

/* Appends a C string. Returns 0 or ERR_TOOBIG. */
int buf_adds(struct buf *b, const char *s);

/* Appends one byte. Returns 0 or ERR_TOOBIG. */
int buf_addch(struct buf *b, char c);

/* Appends formatted text. Returns 0 or ERR_TOOBIG. */
int buf_addf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Empties the buffer, keeping its memory. */
void buf_reset(struct buf *b);

/* Frees the memory and leaves an empty buffer (same max). */
void buf_release(struct buf *b);

/*
 * Detaches the string from the buffer and returns it; you now own the
 * storage and must free(3) it. The buffer is left empty. *len_out, when not
 * NULL, receives the length. Never returns NULL.
 */
char *buf_detach(struct buf *b, size_t *len_out);

#endif
