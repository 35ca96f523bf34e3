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
