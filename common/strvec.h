#ifndef COMMON_STRVEC_H
#define COMMON_STRVEC_H

/*
 * Vectors of owned strings, kept NULL-terminated so that v can be handed
 * to execve() and friends as is (after git's strvec.h).
 */
#include <stddef.h>

struct strvec {
	char **v;
	size_t n;
	size_t alloc;
};

#define STRVEC_INIT { NULL, 0, 0 }

/* Appends a copy of str. */
void strvec_push(struct strvec *s, const char *str);

/* Appends a formatted string. */
void strvec_pushf(struct strvec *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Appends the fields of str separated by sep, empty ones included
 * ("a,,b" gives "a", "", "b"; "" gives one empty field).
 */
void strvec_split(struct strvec *s, const char *str, char sep);

/* Frees the strings and the vector; s is empty again. */
void strvec_release(struct strvec *s);

/* Entries of a NULL-terminated vector (v may be NULL). */
size_t strv_len(char *const *v);

/* A deep copy of a NULL-terminated vector (v NULL: an empty one). */
char **strv_dup(char *const *v);

/* Frees a NULL-terminated vector and its strings. NULL is fine. */
void strv_free(char **v);

#endif
