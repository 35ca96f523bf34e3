#include "common/utf8.h"
#include "common/banned.h"

/* The sequence length a lead byte announces, its payload bits and the
 * bounds of the byte after it (the rest are 0x80..0xbf). 0: not a lead. */
static size_t lead(unsigned char c, unsigned flags, long *cp, unsigned char *lo,
		   unsigned char *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf) {
		*cp = c & 0x1f;
		return 2;
	}
	if (c >= 0xe0 && c <= 0xef) {
		*cp = c & 0x0f;
		if (c == 0xe0)
			*lo = 0xa0; /* overlong */
		else if (c == 0xed && !(flags & UTF8_SURROGATES))
			*hi = 0x9f; /* surrogate */
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		*cp = c & 0x07;
		if (c == 0xf0)
			*lo = 0x90; /* overlong */
		else if (c == 0xf4)
			*hi = 0x8f; /* above U+10FFFF */
		return 4;
	}
	return 0;
}

long utf8_decode(const unsigned char *s, size_t n, unsigned flags, size_t *len)
{
	unsigned char lo, hi;
	long cp;
	size_t want, k;

	*len = 1;
	if (s[0] < 0x80)
		return s[0];
	want = lead(s[0], flags, &cp, &lo, &hi);
	if (!want)
		return -1;
	for (k = 1; k < want; k++) {
		if (k >= n || s[k] < lo || s[k] > hi) {
			*len = k;
			return -1;
		}
		cp = (cp << 6) | (s[k] & 0x3f);
		lo = 0x80;
		hi = 0xbf;
	}
	*len = want;
	return cp;
}
