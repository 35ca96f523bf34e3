#ifndef COMMON_UTF8_H
#define COMMON_UTF8_H

/*
 * The one UTF-8 decoder (RFC 3629): no overlong forms, nothing above
 * U+10FFFF, and no surrogates unless the caller asks for them (Python's
 * "surrogatepass", which the JSON of Python programs may carry).
 */
#include <stddef.h>

#define UTF8_SURROGATES 1u /* accept U+D800..U+DFFF (three bytes) */

/*
 * Decodes the sequence that starts at s (n > 0 bytes readable). Returns
 * its code point and sets *len to its length; NUL decodes to 0. Where s
 * does not start a well-formed sequence returns -1 and sets *len to the
 * length of its maximal ill-formed subpart (at least 1), which is what
 * one U+FFFD stands for when the bytes are repaired (Unicode 3.9, U+FFFD
 * substitution).
 */
long utf8_decode(const unsigned char *s, size_t n, unsigned flags, size_t *len);

#endif
