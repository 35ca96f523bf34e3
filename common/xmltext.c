#include <string.h>

#include "common/xmltext.h"
#include "common/banned.h"

void xml_add_text(struct buf *b, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&':
			(void)buf_adds(b, "&amp;");
			break;
		case '<':
			(void)buf_adds(b, "&lt;");
			break;
		case '>':
			(void)buf_adds(b, "&gt;");
			break;
		case '"':
			(void)buf_adds(b, "&quot;");
			break;
		case '\r':
			(void)buf_adds(b, "&#13;");
			break;
		default:
			(void)buf_addch(b, *s);
		}
	}
}

/* Whether the len bytes at p hold the string w. */
static int has_bytes(const char *p, size_t len, const char *w)
{
	size_t wl = strlen(w), i;

	for (i = 0; i + wl <= len; i++)
		if (p[i] == w[0] && !memcmp(p + i, w, wl))
			return 1;
	return 0;
}

int xml_declares_dtd(const char *p, size_t len)
{
	return has_bytes(p, len, "<!DOCTYPE") || has_bytes(p, len, "<!ENTITY");
}
